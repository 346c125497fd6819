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
# Exit status: traceaudit's (0 done, 1 a finding at or above --fail-on,
# 2 bad input, such as a rank whose analysis is missing), 64 bad usage.
set -euo pipefail

if [ $# -lt 1 ]; then
	echo "usage: reduce.sh OUT [traceaudit job flags...]" >&2
	exit 64
fi
out=$1
shift

mapfile -t ranks < <(find "$out" -maxdepth 1 -type f -name 'rank-*.json' | LC_ALL=C sort -V)
if [ "${#ranks[@]}" -eq 0 ]; then
	echo "reduce.sh: $out holds no rank-*.json analyses" >&2
	exit 2
fi
# The JSON first: it fails, with nothing written, when an analysis is bad.
traceaudit job --format json "${ranks[@]}" >"$out/job.json.tmp"
mv "$out/job.json.tmp" "$out/job.json"
status=0
traceaudit job --out "$out/report" "$@" "${ranks[@]}" >"$out/job.txt" || status=$?
cat "$out/job.txt"
exit "$status"
