#!/usr/bin/env bash
# testcluster.sh: a single-node Slurm cluster on this machine, for the tests
# of the Slurm scripts (deploy_test.go) and for trying them by hand. It runs
# munged, slurmctld and slurmd as background processes, as root, without
# systemd or cgroups, with everything under one folder: slurm.conf, the
# munge key and socket, the controller's state, slurmd's spool, the logs and
# the pid files.
#
#   testcluster.sh start DIR [PORT]   start the cluster; prints SLURM_CONF=DIR/slurm.conf
#   testcluster.sh stop DIR           cancel its jobs, stop the daemons by their pids
#
# PORT is slurmctld's (default 16817); slurmd listens on PORT+1. Slurm's
# commands find this cluster through SLURM_CONF:
#
#   eval "export $(deploy/slurm/testcluster.sh start /tmp/slurm)"
#   sinfo; deploy/slurm/submit.sh TRACES OUT --cpus-per-task=1
#   deploy/slurm/testcluster.sh stop /tmp/slurm
#
# Needs Debian's slurm-wlm and munge packages (slurmctld, slurmd, munged on
# PATH or in /usr/sbin) and root: slurmd starts the jobs' processes as their
# users. Exit status: 0 done, 1 a daemon did not start (its log's end is
# printed), 3 Slurm or munge is not installed or this is not root, 64 bad
# usage.
set -euo pipefail
export PATH="$PATH:/usr/sbin:/sbin"

usage() {
	echo "usage: testcluster.sh start DIR [PORT] | stop DIR" >&2
	exit 64
}
[ $# -ge 2 ] || usage
cmd=$1
mkdir -p "$2"
dir=$(cd "$2" && pwd)
conf=$dir/slurm.conf

# pidfile_alive FILE: whether FILE names a running process.
pidfile_alive() {
	[ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

# stop_pids NAME=FILE...: stops the processes the pid files name, all at
# once (each takes about 2 s to shut down): TERM, then KILL for any still
# running after 10 s; removes the pid files.
stop_pids() {
	local arg name file pid pids=() names=() files=() i
	for arg in "$@"; do
		name=${arg%%=*} file=${arg#*=}
		pidfile_alive "$file" || { rm -f "$file"; continue; }
		pid=$(cat "$file")
		kill -TERM "$pid" 2>/dev/null || true
		pids+=("$pid") names+=("$name") files+=("$file")
	done
	for i in "${!pids[@]}"; do
		for _ in $(seq 100); do
			kill -0 "${pids[i]}" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "${pids[i]}" 2>/dev/null; then
			echo "testcluster.sh: ${names[i]} (pid ${pids[i]}) ignored SIGTERM for 10 s: killing it" >&2
			kill -KILL "${pids[i]}" 2>/dev/null || true
		fi
		rm -f "${files[i]}"
	done
}

# fail MESSAGE: prints the message and each log's last lines, stops what
# started, and exits 1.
fail() {
	echo "testcluster.sh: $1" >&2
	for f in "$dir"/log/*.log; do
		[ -f "$f" ] || continue
		echo "--- $f" >&2
		tail -n 15 "$f" >&2
	done
	stop_daemons
	exit 1
}

stop_daemons() {
	stop_pids slurmd="$dir/run/slurmd.pid" slurmctld="$dir/run/slurmctld.pid" munged="$dir/munge/munged.pid"
}

case $cmd in
start)
	[ $# -le 3 ] || usage
	port=${3:-16817}
	for tool in munged slurmctld slurmd sinfo sbatch squeue scontrol; do
		if ! command -v "$tool" >/dev/null; then
			echo "testcluster.sh: $tool not found: install Debian's slurm-wlm and munge (apt-get install slurm-wlm munge)" >&2
			exit 3
		fi
	done
	if [ "$(id -u)" != 0 ]; then
		echo "testcluster.sh: slurmd must run as root (it starts each job as its user); this is uid $(id -u)" >&2
		exit 3
	fi
	if pidfile_alive "$dir/run/slurmctld.pid"; then
		echo "testcluster.sh: a cluster already runs from $dir (pid $(cat "$dir/run/slurmctld.pid")): stop it first" >&2
		exit 1
	fi
	mkdir -p "$dir"/{munge,state,spool,log,run}
	# munged refuses a socket whose folders others cannot traverse, or can
	# write: this folder's are set so; --force makes its check of the folders
	# above (a test's 0700 temporary folder) a warning. Slurm's daemons and
	# commands run as root here, and reach the socket anyway.
	chmod 0755 "$dir" "$dir/munge"

	key=$dir/munge/munge.key
	if [ ! -s "$key" ]; then
		mungekey --create --keyfile="$key" 2>/dev/null || dd if=/dev/urandom of="$key" bs=1024 count=1 status=none
	fi
	chmod 0400 "$key"
	socket=$dir/munge/munge.socket
	munged --force --key-file="$key" --socket="$socket" --pid-file="$dir/munge/munged.pid" \
		--seed-file="$dir/munge/munged.seed" --log-file="$dir/log/munged.log" ||
		fail "munged did not start"

	# This host as slurmd sees it (CPUs, sockets, cores, RealMemory), at the
	# loopback address: a node that claims more than it has is drained.
	node=$(slurmd -C | head -n 1)
	case $node in
	NodeName=*) ;;
	*) fail "slurmd -C printed no NodeName line: $node" ;;
	esac
	name=${node%% *}
	name=${name#NodeName=}
	cat >"$conf" <<-EOF
		# A single-node cluster for tests, written by deploy/slurm/testcluster.sh.
		ClusterName=traceaudit-test
		SlurmctldHost=$name(127.0.0.1)
		SlurmctldPort=$port
		SlurmdPort=$((port + 1))
		SlurmUser=root
		SlurmdUser=root
		AuthType=auth/munge
		CredType=cred/munge
		AuthInfo=socket=$socket
		StateSaveLocation=$dir/state
		SlurmdSpoolDir=$dir/spool
		SlurmctldPidFile=$dir/run/slurmctld.pid
		SlurmdPidFile=$dir/run/slurmd.pid
		SlurmctldLogFile=$dir/log/slurmctld.log
		SlurmdLogFile=$dir/log/slurmd.log
		# No systemd and no cgroups: track a job's processes through /proc,
		# bind no CPUs.
		ProctrackType=proctrack/linuxproc
		TaskPlugin=task/none
		SelectType=select/cons_tres
		SelectTypeParameters=CR_Core_Memory
		# Schedule a job as soon as another ends or is submitted (the default
		# batches them for up to 3 s: a test waits on many short jobs).
		SchedulerParameters=batch_sched_delay=0
		DefMemPerCPU=256
		MpiDefault=none
		ReturnToService=2
		KillWait=5
		JobAcctGatherType=jobacct_gather/none
		AccountingStorageType=accounting_storage/none
		$node NodeAddr=127.0.0.1 State=UNKNOWN
		PartitionName=test Nodes=$name Default=YES MaxTime=INFINITE State=UP
	EOF
	export SLURM_CONF=$conf
	slurmctld -f "$conf" || fail "slurmctld did not start"
	slurmd -f "$conf" || fail "slurmd did not start"
	# The node is idle once slurmd registered with the controller.
	state=
	for _ in $(seq 150); do
		state=$(sinfo -h -n "$name" -o %t 2>/dev/null || true)
		[ "$state" = idle ] && break
		sleep 0.2
	done
	[ "$state" = idle ] || fail "node $name is '${state:-unknown}' after 30 s, not idle"
	echo "SLURM_CONF=$conf"
	;;
stop)
	[ $# -eq 2 ] || usage
	# Cancel this cluster's jobs first (SLURM_CONF names only it), so that
	# no job's processes outlive slurmd.
	if [ -f "$conf" ] && pidfile_alive "$dir/run/slurmctld.pid"; then
		export SLURM_CONF=$conf
		mapfile -t jobs < <(squeue -h -o %A 2>/dev/null || true)
		if [ "${#jobs[@]}" -gt 0 ]; then
			scancel "${jobs[@]}" 2>/dev/null || true
			for _ in $(seq 100); do
				[ -z "$(squeue -h -o %A 2>/dev/null || true)" ] && break
				sleep 0.1
			done
		fi
	fi
	stop_daemons
	;;
*) usage ;;
esac
