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
# so a failed or killed task leaves no half-written analysis behind.
# Exit status: 0 done, 2 bad input (traceaudit's), 64 bad usage.
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
file=$traces/${files[$index]}

mkdir -p "$out"
tmp=$(mktemp "$out/.rank-$index.XXXXXX")
trap 'rm -f "$tmp"' EXIT
echo "rank-task.sh: task $index analyses $file" >&2
traceaudit analyze --format json "$file" >"$tmp"
mv "$tmp" "$out/rank-$index.json"
trap - EXIT
