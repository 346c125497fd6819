#!/usr/bin/env bash
# submit.sh: analyse a job's rank traces on a Slurm cluster, one array task
# per rank (map), then the job report (reduce) once every task ended,
# failed or not; the reduce judges the ranks itself.
#
#   deploy/slurm/submit.sh TRACES OUT [--parallel N] [--fail-on LEVEL] [--dry-run] [sbatch options...]
#   deploy/slurm/submit.sh --retry-failed OUT [--parallel N] [--dry-run] [sbatch options...]
#
# TRACES is a folder on a file system every node sees, holding the job's
# rank traces (and nothing else with their extensions); OUT receives
# rank-N.json per rank (rank-N.err for a task that failed), then job.txt,
# job.json and report/, and the tasks' logs in OUT/logs/. A new submission
# first removes what an earlier one left in OUT. traceaudit must be on PATH
# on the compute nodes (one static binary: copy bin/traceaudit from `make
# build`). At most --parallel tasks (default 8) run at once. Other
# arguments, before or after these, go to both sbatch calls (--partition,
# --account, ...), after the computed ones, so that they win.
#
# The map tasks ask for the memory the largest of their traces needs
# (--mem; --dry-run prints each trace's, and submits nothing). --retry-failed submits again only
# the tasks whose analysis is missing, with the first submission's traces
# and options (and any given now, which win: --mem=16G after an out of
# memory), and the reduce after them.
#
# Exit status: 0 submitted, 2 no traces or nothing to retry from, 64 bad
# usage; sbatch's when it refuses a job.
set -euo pipefail

usage() {
	echo "usage: submit.sh TRACES OUT [--parallel N] [--fail-on LEVEL] [--dry-run] [sbatch options...]" >&2
	echo "       submit.sh --retry-failed OUT [--parallel N] [--dry-run] [sbatch options...]" >&2
	exit 64
}
retry=
[ $# -ge 2 ] || usage
if [ "$1" = --retry-failed ]; then
	retry=1
	out=$(cd "$2" && pwd)
else
	traces=$(cd "$1" && pwd)
	out=$2
fi
shift 2
# This script's options, wherever they are; the rest go to sbatch.
parallel='' fail_on='' dry='' extra=()
while [ $# -gt 0 ]; do
	case $1 in
	--parallel | --fail-on) [ $# -ge 2 ] || usage ;;
	esac
	case $1 in
	--parallel) parallel=$2; shift 2 ;;
	--fail-on) fail_on=$2; shift 2 ;;
	--dry-run) dry=1; shift ;;
	*) extra+=("$1"); shift ;;
	esac
done
here=$(cd "$(dirname "$0")" && pwd)
deploy=$(cd "$here/.." && pwd)
if [ -z "$retry" ]; then
	# OUT as an absolute path, which the tasks are given; --dry-run does not
	# create it.
	if [ -n "$dry" ]; then
		out=$(realpath -ms "$out")
	else
		mkdir -p "$out"
		out=$(cd "$out" && pwd)
	fi
fi

# What the first submission recorded, for --retry-failed.
state=$out/submit.env
if [ -n "$retry" ]; then
	if [ ! -f "$state" ]; then
		echo "submit.sh: $state not found: $out was not submitted by submit.sh" >&2
		exit 2
	fi
	traces='' saved_n=0 saved_parallel='' saved_fail_on='' sbatch_args=()
	# shellcheck source=/dev/null # written by this script, below
	. "$state"
	[ -n "$parallel" ] || parallel=$saved_parallel
	fail_on=$saved_fail_on
	extra=(${sbatch_args[@]+"${sbatch_args[@]}"} ${extra[@]+"${extra[@]}"})
fi
[ -n "$parallel" ] || parallel=8

# The trace files, in rank-task.sh's order.
mapfile -t files < <(find "$traces" -maxdepth 1 -type f \
	\( -name '*.json' -o -name '*.json.gz' -o -name '*.sqlite' \) -printf '%f\n' | LC_ALL=C sort)
n=${#files[@]}
if [ "$n" -eq 0 ]; then
	echo "submit.sh: no traces in $traces" >&2
	exit 2
fi

# Memory per map task. `make bench` (docs/performance.md) measured the
# peak RSS of `traceaudit analyze` at 0.48x a 252 MB Chrome trace, 0.50x
# the same trace's uncompressed size as .json.gz, 0.33x a 1 GB one, and
# 2.64x a 113 MB nsys export. A task asks for its trace's size times that
# factor (a .json.gz by its uncompressed size), times a margin of 1.5, and
# no less than 256 MiB (a small trace's RSS is mostly the binary's own:
# 71 MB for a 61 MB rank).
chrome_factor=0.50 nsys_factor=2.64 margin=1.5 floor_mib=256

# gunzipped_size FILE: the size of a .gz's content. The gzip trailer holds
# it modulo 4 GiB: exact for a file under 64 MiB whose content is at most
# 64 times its size (traces compress 10 to 16 times). Other files (larger
# ones, which could hold more; truncated ones, whose last bytes are no
# trailer) are counted by decompressing them.
gunzipped_size() {
	local c isize
	c=$(stat -c %s "$1")
	isize=$(tail -c 4 "$1" | od -An -tu4 --endian=little | tr -d ' ')
	if [ "$c" -lt $((64 << 20)) ] && [ "${isize:-0}" -le $((c * 64)) ]; then
		echo "$isize"
	else
		{ gzip -dc "$1" 2>/dev/null || true; } | wc -c
	fi
}

# One line per trace: its size, what it reads, the memory it needs (MiB).
need=() report=()
for ((i = 0; i < n; i++)); do
	f=$traces/${files[$i]}
	size=$(stat -c %s "$f")
	case $f in
	*.json.gz) bytes=$(gunzipped_size "$f") factor=$chrome_factor kind="Chrome, gzip" ;;
	*.json) bytes=$size factor=$chrome_factor kind=Chrome ;;
	*.sqlite) bytes=$size factor=$nsys_factor kind=nsys ;;
	esac
	need[i]=$(awk -v b="$bytes" -v f="$factor" -v m="$margin" -v lo="$floor_mib" \
		'BEGIN { x = b * f * m / 1048576; c = int(x); if (x - c > 1e-6) c++; print (c < lo) ? lo : c }')
	report+=("$(printf '%6d  %-14s %10d %12d %8d MiB  %s' "$i" "$kind" "$size" "$bytes" "${need[i]}" "${files[$i]}")")
done

# The tasks to submit: all, or on a retry those without an analysis.
if [ -n "$retry" ]; then
	if [ "$n" -ne "$saved_n" ]; then
		echo "submit.sh: $traces holds $n traces, but $saved_n when $out was submitted: the tasks' numbers would not match; submit it again" >&2
		exit 2
	fi
	todo=()
	for ((i = 0; i < n; i++)); do
		[ -f "$out/rank-$i.json" ] || todo+=("$i")
	done
	if [ "${#todo[@]}" -eq 0 ] && [ -f "$out/job.json" ]; then
		echo "submit.sh: nothing to retry: all $n rank analyses and the job report are in $out"
		exit 0
	fi
	indices=$(
		IFS=,
		echo "${todo[*]-}"
	)
else
	indices=0-$((n - 1))
	mapfile -t todo < <(seq 0 $((n - 1)))
fi
# One request for the whole array: what its largest trace needs.
mem=0
for i in ${todo[@]+"${todo[@]}"}; do
	[ "${need[i]}" -le "$mem" ] || mem=${need[i]}
done

# The scripts' settings travel in the submission's environment
# (--export=ALL). Naming them in --export instead (ALL,TRACES=...) makes
# slurmd load the user's login environment for every task, a login shell
# each time (4 s a task on the test cluster).
env=(env "TRACES=$traces" "OUT=$out" "DEPLOY=$deploy" "FAIL_ON=$fail_on")
array_cmd=("${env[@]}" sbatch --parsable --export=ALL --array="$indices%$parallel" --mem="${mem}M"
	--output="$out/logs/rank-%A_%a.log" ${extra[@]+"${extra[@]}"} "$here/rank.sbatch")
# reduce_cmd ARRAY: the reduce's sbatch call, after every task of job ARRAY
# ended (afterany: afterok would cancel it when one task fails), or at once
# when ARRAY is empty.
reduce_cmd() {
	local after=()
	[ -z "$1" ] || after=(--dependency="afterany:$1" --kill-on-invalid-dep=yes)
	cmd=("${env[@]}" "ARRAY_JOB=$1" sbatch --parsable --export=ALL ${after[@]+"${after[@]}"}
		--output="$out/logs/reduce-%j.log" ${extra[@]+"${extra[@]}"} "$here/reduce.sbatch")
}
if [ -n "$dry" ]; then
	echo "submit.sh --dry-run: $n traces in $traces; a map task's memory: the trace's size (a gzip's content) x $chrome_factor (Chrome) or x $nsys_factor (nsys), x $margin, at least $floor_mib MiB; the array asks for the most its tasks need"
	printf '%6s  %-14s %10s %12s %12s  %s\n' task format bytes "bytes read" memory trace
	printf '%s\n' "${report[@]}"
	if [ "${#todo[@]}" -eq 0 ]; then
		echo "all $n rank analyses are in $out: nothing to retry but the reduce"
		reduce_cmd ""
	else
		echo "would submit: ${array_cmd[*]}"
		reduce_cmd ARRAY_JOB
	fi
	echo "then:         ${cmd[*]}"
	exit 0
fi

# What the tasks ask for, as the summary says it: a --mem given wins.
asked="--mem=${mem}M each"
for a in ${extra[@]+"${extra[@]}"}; do
	case $a in --mem | --mem=* | --mem-per-cpu | --mem-per-cpu=*) asked="the memory given" ;; esac
done

mkdir -p "$out/logs"
if [ -z "$retry" ]; then
	# A new submission: what an earlier one left would mix with its results.
	rm -f "$out"/rank-*.json "$out"/rank-*.err "$out"/rank-*.state "$out/job.json" "$out/job.txt"
	if [ -f "$out/report/report.json" ]; then rm -rf "$out/report"; fi
	sbatch_args=(${extra[@]+"${extra[@]}"})
fi
array=
if [ "${#todo[@]}" -gt 0 ]; then
	array=$("${array_cmd[@]}")
	array=${array%%;*} # --parsable prints "jobid[;cluster]"
fi
reduce_cmd "$array"
reduce=$("${cmd[@]}")
reduce=${reduce%%;*}
{
	printf '# What submit.sh submitted, for submit.sh --retry-failed %s\n' "$out"
	printf 'traces=%q\nsaved_n=%q\nsaved_parallel=%q\nsaved_fail_on=%q\n' "$traces" "$n" "$parallel" "$fail_on"
	printf 'array=%q\nreduce=%q\n' "$array" "$reduce"
	printf 'sbatch_args=('
	[ "${#sbatch_args[@]}" -eq 0 ] || printf ' %q' "${sbatch_args[@]}"
	printf ' )\n'
} >"$state.tmp"
mv "$state.tmp" "$state"
if [ -z "$array" ]; then
	echo "submitted: the reduce alone (job $reduce; all $n rank analyses are there); the report will be $out/job.txt"
elif [ -n "$retry" ]; then
	echo "submitted: ${#todo[@]} of $n rank tasks again (indices $indices, job $array, $asked), then the reduce (job $reduce); the report will be $out/job.txt"
else
	echo "submitted: $n rank tasks (job $array, $asked), then the reduce (job $reduce, once they all ended); the report will be $out/job.txt"
fi
