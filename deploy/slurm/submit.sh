#!/usr/bin/env bash
# submit.sh: analyse a job's rank traces on a Slurm cluster, one array task
# per rank (map), then the job report (reduce) once they all succeeded.
#
#   deploy/slurm/submit.sh TRACES OUT [--parallel N] [--fail-on LEVEL] [sbatch options...]
#
# TRACES is a folder on a file system every node sees, holding the job's
# rank traces (and nothing else with their extensions); OUT receives
# rank-N.json per rank, then job.txt, job.json and report/. traceaudit must
# be on PATH on the compute nodes (one static binary: copy bin/traceaudit
# from `make build`). At most --parallel tasks (default 8) run at once.
# Extra arguments go to both sbatch calls (--partition, --account, ...).
set -euo pipefail

if [ $# -lt 2 ]; then
	echo "usage: submit.sh TRACES OUT [--parallel N] [--fail-on LEVEL] [sbatch options...]" >&2
	exit 64
fi
traces=$(cd "$1" && pwd)
mkdir -p "$2"
out=$(cd "$2" && pwd)
shift 2
parallel=8 fail_on=
while [ $# -gt 0 ]; do
	case $1 in
	--parallel) parallel=$2; shift 2 ;;
	--fail-on) fail_on=$2; shift 2 ;;
	*) break ;;
	esac
done
here=$(cd "$(dirname "$0")" && pwd)
deploy=$(cd "$here/.." && pwd)

n=$(find "$traces" -maxdepth 1 -type f \( -name '*.json' -o -name '*.json.gz' -o -name '*.sqlite' \) | wc -l)
if [ "$n" -eq 0 ]; then
	echo "submit.sh: no traces in $traces" >&2
	exit 2
fi
env="ALL,TRACES=$traces,OUT=$out,DEPLOY=$deploy,FAIL_ON=$fail_on"
array=$(sbatch --parsable --array="0-$((n - 1))%$parallel" --export="$env" "$@" "$here/rank.sbatch")
array=${array%%;*} # --parsable prints "jobid[;cluster]"
reduce=$(sbatch --parsable --dependency="afterok:$array" --kill-on-invalid-dep=yes --export="$env" "$@" "$here/reduce.sbatch")
echo "submitted: $n rank tasks (job $array), then the reduce (job ${reduce%%;*}); the report will be $out/job.txt"
