#!/usr/bin/env bash
# reduce.sh: the reduce step of a traceaudit job analysis. Builds the job
# report from the per-rank analyses that rank-task.sh wrote to OUT:
#
#   OUT/job.txt      the report (per-rank table, the straggler and its cause)
#   OUT/job.json     the same as JSON (the job document of design.md)
#   OUT/report/      report.md, report.json and the rank plot (ranks.png/svg)
#
#   reduce.sh OUT [traceaudit job flags...]     e.g. reduce.sh out --fail-on error
#
# It judges the ranks itself, so that it can run after every task, failed
# or not (Slurm's afterany): with TRACES set to the traces' folder it
# expects one analysis per trace file there, else one per index up to the
# highest rank-N.json or rank-N.err in OUT. When any is missing it names
# each missing task, its trace and why (the task's rank-N.err: traceaudit's
# error line or the signal that killed it; then the batch engine's view of
# the task, rank-N.state, where one wrote it), writes nothing and exits 2.
# Run those tasks again (slurm/submit.sh --retry-failed OUT), then this.
#
# Exit status: traceaudit's (0 done, 1 a finding at or above --fail-on,
# 2 bad input, such as a rank whose analysis is missing), 64 bad usage.
set -euo pipefail

if [ $# -lt 1 ]; then
	echo "usage: reduce.sh OUT [traceaudit job flags...]" >&2
	exit 64
fi
out=$1
shift

if [ -n "${TRACES:-}" ]; then
	# The trace files, in rank-task.sh's order.
	mapfile -t files < <(find "$TRACES" -maxdepth 1 -type f \
		\( -name '*.json' -o -name '*.json.gz' -o -name '*.sqlite' \) -printf '%f\n' | LC_ALL=C sort)
	n=${#files[@]}
	if [ "$n" -eq 0 ]; then
		echo "reduce.sh: no traces in $TRACES" >&2
		exit 2
	fi
else
	n=0
	for f in "$out"/rank-*.json "$out"/rank-*.err; do
		i=${f##*/rank-}
		i=${i%.*}
		case $i in '' | *[!0-9]*) continue ;; esac
		[ "$((i + 1))" -le "$n" ] || n=$((i + 1))
	done
	if [ "$n" -eq 0 ]; then
		echo "reduce.sh: $out holds no rank-*.json analyses" >&2
		exit 2
	fi
fi

ranks=() missing=()
for ((i = 0; i < n; i++)); do
	if [ -f "$out/rank-$i.json" ]; then
		ranks+=("$out/rank-$i.json")
	else
		missing+=("$i")
	fi
done
if [ "${#missing[@]}" -gt 0 ]; then
	echo "reduce.sh: ${#missing[@]} of $n rank analyses are missing, so there is no job report:" >&2
	for i in "${missing[@]}"; do
		if [ -s "$out/rank-$i.err" ]; then
			sed 's/^/  /' "$out/rank-$i.err" >&2
		else
			echo "  task $i${files[$i]+ (${files[$i]})}: no analysis and no error recorded: the task did not run, or was killed before it could say why (its log may)" >&2
		fi
		if [ -s "$out/rank-$i.state" ]; then
			sed 's/^/    /' "$out/rank-$i.state" >&2
		fi
	done
	echo "reduce.sh: fix what failed, run tasks ${missing[*]} again, then this reduce" >&2
	exit 2
fi

# The JSON first: it fails, with nothing written, when an analysis is bad.
# Each file is written under a temporary name and renamed.
tmp=$out/.job.$$ # created by redirection: the umask's mode, not mktemp's 0600
trap 'rm -f "$tmp"' EXIT
traceaudit job --format json "${ranks[@]}" >"$tmp"
mv "$tmp" "$out/job.json"
status=0
traceaudit job --out "$out/report" "$@" "${ranks[@]}" >"$tmp" || status=$?
mv "$tmp" "$out/job.txt"
cat "$out/job.txt"
exit "$status"
