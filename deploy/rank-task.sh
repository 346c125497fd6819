#!/usr/bin/env bash
# rank-task.sh: the map step of a traceaudit job analysis. Analyses one rank's
# trace, the INDEX-th trace file (sorted by name) of TRACES, and writes its
# analysis to OUT/rank-INDEX.json, which `traceaudit job` reduces with the
# other ranks' (see reduce.sh). Run one per rank, as tasks of a batch engine:
# a Slurm job array (slurm/), a Kubernetes Indexed Job (kubernetes/), or a
# plain loop.
#
#   rank-task.sh TRACES OUT INDEX
#
# TRACES holds the job's rank traces (PyTorch profiler .json/.json.gz with
# distributedInfo, or Nsight Systems .sqlite exports), and nothing else that
# sorts among them. The file is written under a temporary name and renamed,
# so a failed or killed task leaves no half-written analysis behind. A task
# that fails writes OUT/rank-INDEX.err instead: one line naming the trace
# and why (traceaudit's error line, or the signal that killed it), which
# the reduce reports; a task that runs again removes it (and the engine's
# rank-INDEX.state) first.
# Exit status: 0 done, 2 bad input (traceaudit's), 64 bad usage, 128+N
# killed by signal N (143: SIGTERM, as Slurm sends at scancel and at the
# time limit).
set -euo pipefail

if [ $# -ne 3 ]; then
	echo "usage: rank-task.sh TRACES OUT INDEX" >&2
	exit 64
fi
traces=$1 out=$2 index=$3
case $index in
'' | *[!0-9]*)
	echo "rank-task.sh: INDEX must be a number, got '$index'" >&2
	exit 64
	;;
esac

# The trace files, in a stable order (LC_ALL=C: the same order on every node).
mapfile -t files < <(find "$traces" -maxdepth 1 -type f \
	\( -name '*.json' -o -name '*.json.gz' -o -name '*.sqlite' \) -printf '%f\n' | LC_ALL=C sort)
if [ "$index" -ge "${#files[@]}" ]; then
	echo "rank-task.sh: index $index, but $traces holds ${#files[@]} trace files" >&2
	exit 64
fi
name=${files[$index]}
file=$traces/$name

mkdir -p "$out"
rm -f "$out/rank-$index.err" "$out/rank-$index.state"
tmp=$(mktemp "$out/.rank-$index.XXXXXX")
log=$(mktemp "$out/.rank-$index.log.XXXXXX")
trap 'rm -f "$tmp" "$log"' EXIT

# failed WHY: records why this task made no analysis, in OUT/rank-INDEX.err
# (written whole, then renamed, as the analysis is).
failed() {
	local err
	err=$(mktemp "$out/.rank-$index.err.XXXXXX")
	printf 'task %s (%s): %s\n' "$index" "$name" "$1" >"$err"
	mv "$err" "$out/rank-$index.err"
}
# A batch engine stops a task with SIGTERM (Slurm: scancel, the time limit,
# preemption; Kubernetes: a deleted pod), SIGKILL following a few seconds
# later. traceaudit runs in the background so that the trap runs at once
# (not when traceaudit ends) and passes the signal on.
child=
on_signal() {
	[ -z "$child" ] || kill -TERM "$child" 2>/dev/null || true
	failed "killed by SIG$1 before it finished (a batch engine sends SIGTERM on cancel and at the time limit)"
	exit $((128 + $(kill -l "$1")))
}
trap 'on_signal TERM' TERM
trap 'on_signal INT' INT
trap 'on_signal HUP' HUP

echo "rank-task.sh: task $index analyses $file" >&2
traceaudit analyze --format json "$file" >"$tmp" 2>"$log" &
child=$!
status=0
wait "$child" || status=$?
child=
cat "$log" >&2
if [ "$status" -ne 0 ]; then
	why=$(grep -v '^[[:space:]]*$' "$log" | tail -n 1 || true)
	if [ "$status" -gt 128 ]; then
		sig=$(kill -l $((status - 128)) 2>/dev/null || echo $((status - 128)))
		why="traceaudit killed by SIG$sig (exit $status${why:+; its last line: $why})"
		[ "$sig" = KILL ] && why="$why: out of memory, or the engine's kill after SIGTERM"
	else
		why="exit $status: ${why:-traceaudit printed no error}"
	fi
	failed "$why"
	exit "$status"
fi
mv "$tmp" "$out/rank-$index.json"
