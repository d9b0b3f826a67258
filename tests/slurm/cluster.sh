#!/usr/bin/env bash
# The workflow on a real SLURM cluster: a single-node cluster of this test's own (munged, MariaDB, slurmdbd,
# slurmctld, slurmd) runs the tiny pipeline through profiles/slurm, then the same target is built locally
# (--cores 2). It passes when SLURM's accounting (sacct) shows every job Snakemake ran as a COMPLETED sbatch job
# of the test's partition and account, and the two runs' metrics.json files are identical.
#
#   make slurm-test        (as root: it starts daemons, and installs Debian's slurm-wlm, slurmdbd, munge and
#                           mariadb-server when they are missing)
#
# Packages aside, it writes nothing outside its state folder ($HARDNEG_SLURM_STATE, by default
# /var/lib/hardneg-slurm-test): the daemons read configuration files kept there (SLURM_CONF, never /etc/slurm),
# listen on free ports of 127.0.0.1, use a munge key and socket of their own, and are stopped at the end, success
# or not; the folder is then removed (HARDNEG_SLURM_KEEP=1 keeps it, logs included). It refuses to run beside a
# running SLURM daemon it did not start. HARDNEG_SLURM_TIMEOUT (seconds, default 900) bounds each pipeline run.

set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
VENV=${VENV:-$REPO/.venv}
# The SLURM plugin, installed under a prefix of its own beside the environment (the Makefile's SLURM_PREFIX; a
# user's `pip install -e '.[slurm]'` puts it in the environment itself): on PYTHONPATH for Snakemake and its jobs.
SLURM_PREFIX=${SLURM_PREFIX:-$VENV/slurm}
if [[ -d $SLURM_PREFIX ]]; then
    SLURM_SITE=$("$VENV/bin/python" -c 'import sys, sysconfig
print(sysconfig.get_path("purelib", vars={"base": sys.argv[1], "platbase": sys.argv[1]}))' "$SLURM_PREFIX")
    export PYTHONPATH=$SLURM_SITE${PYTHONPATH:+:$PYTHONPATH}
fi
STATE=${HARDNEG_SLURM_STATE:-/var/lib/hardneg-slurm-test}
KEEP=${HARDNEG_SLURM_KEEP:-0}
RUN_TIMEOUT=${HARDNEG_SLURM_TIMEOUT:-900}
CLUSTER=hardnegtest
PARTITION=hardneg
ACCOUNT=hardneg-test
NODE=$(hostname -s)
TARGETS=(results/warmup/metrics.json)  # with BM25 before it: the warm-up trains on BM25 negatives
PACKAGES=(slurm-wlm slurm-client slurmdbd munge mariadb-server)

# The daemons this script started, in order: name → pid, and where each one logs.
declare -A PID LOGFILE
STARTED=()
# The pipeline runs under way: name → pid (of timeout, which passes signals on to Snakemake).
declare -A RUN_PID

say() { printf '[slurm-test %s] %s\n' "$(date +%T)" "$*"; }
die() { printf '[slurm-test %s] ERROR: %s\n' "$(date +%T)" "$*" >&2; exit 1; }

# ------------------------------------------------------------------------------------------------ preconditions
preconditions() {
    [[ $(id -u) == 0 ]] || die "run as root: the test starts SLURM's daemons and may install packages"
    [[ -x $VENV/bin/snakemake ]] || die "no $VENV/bin/snakemake: run 'make setup' first (or 'make slurm-test')"
    "$VENV/bin/python" -c "import snakemake_executor_plugin_slurm" 2>/dev/null ||
        die "snakemake-executor-plugin-slurm is missing from $VENV and $SLURM_PREFIX: 'make slurm-test' installs it"
    local daemon pids
    for daemon in slurmctld slurmd slurmdbd; do
        if pids=$(pgrep -x "$daemon" | paste -sd ' '); [[ -n $pids ]]; then
            die "a $daemon is already running (pid $pids), not started by this test. This test brings up a" \
                "private cluster of its own and never touches another one (nor /etc/slurm/slurm.conf): stop that" \
                "$daemon first, or run the test on another machine."
        fi
    done
    if [[ -e $STATE ]]; then
        # A folder left by a run that was killed outright (its daemons died with it, or are still there); any
        # other folder there is not this test's to remove.
        [[ -f $STATE/.hardneg-slurm-test ]] ||
            die "$STATE exists and is not a state folder of this test: remove it, or set HARDNEG_SLURM_STATE"
        if pids=$(pgrep -f -- "$STATE/" | paste -sd ' '); [[ -n $pids ]]; then
            die "processes still use $STATE (pid $pids), left by an earlier run: stop them, then remove $STATE"
        fi
        say "removing $STATE, left by an earlier run"
        rm -rf "$STATE"
    fi
}

install_packages() {
    local missing=() pkg
    for pkg in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    ((${#missing[@]})) || return 0
    command -v apt-get >/dev/null || die "missing packages ${missing[*]} and no apt-get to install them"
    say "installing ${missing[*]}"
    # Installing must not start the system's own services (munge, mariadb, slurm*): policy-rc.d says no to
    # them, for the time of the installation, where no policy is in place already.
    local policy=/usr/sbin/policy-rc.d own_policy=0
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && own_policy=1
    fi
    local rc=0
    {
        apt-get update -q &&
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
    } || rc=$?
    ((own_policy)) && rm -f "$policy"
    ((rc == 0)) || die "apt-get could not install ${missing[*]}"
}

free_ports() {  # n free TCP ports of 127.0.0.1, one a line
    "$VENV/bin/python" - "$1" <<'EOF'
import socket, sys
sockets = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in sockets:
    s.bind(("127.0.0.1", 0))
print("\n".join(str(s.getsockname()[1]) for s in sockets))
EOF
}

# ------------------------------------------------------------------------------------------------ configuration
write_configs() {
    local ports cpus mem_mb
    mapfile -t ports < <(free_ports 4)
    CTLD_PORT=${ports[0]} SLURMD_PORT=${ports[1]} DBD_PORT=${ports[2]} DB_PORT=${ports[3]}
    cpus=$(nproc)
    mem_mb=$(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo)
    DB_PASSWORD=$(head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')
    MUNGE_SOCKET=$STATE/munge/munge.socket

    cat >"$STATE/etc/slurm.conf" <<EOF
# Written by tests/slurm/cluster.sh: one node, private to the test.
ClusterName=$CLUSTER
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET
StateSaveLocation=$STATE/slurmctld
SlurmdSpoolDir=$STATE/slurmd
SlurmctldPidFile=$STATE/run/slurmctld.pid
SlurmdPidFile=$STATE/run/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
PlugStackConfig=$STATE/etc/plugstack.conf
MailProg=/bin/true
# No cgroups: a container may not offer them.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
# Clients reach slurmdbd with the munge socket named here (AuthInfo serves the other connections)
AccountingStoragePass=$MUNGE_SOCKET
AccountingStoreFlags=job_comment
ReturnToService=2
# The node is what this file says, whatever slurmd finds (CPUs: nproc; memory: MemTotal).
SlurmdParameters=config_overrides
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=$PARTITION Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
    : >"$STATE/etc/plugstack.conf"
    # slurmdbd reads slurmdbd.conf beside SLURM_CONF; it holds a password, so only its owner may read it.
    install -m 600 /dev/null "$STATE/etc/slurmdbd.conf"
    cat >"$STATE/etc/slurmdbd.conf" <<EOF
# Written by tests/slurm/cluster.sh
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
DbdHost=$NODE
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
LogFile=$STATE/log/slurmdbd.log
PidFile=$STATE/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$DB_PASSWORD
StorageLoc=slurm_acct_db
EOF
    export SLURM_CONF=$STATE/etc/slurm.conf
}

# ------------------------------------------------------------------------------------------------ daemons
start_daemon() {  # name logfile command...: started in the foreground mode of each daemon, as our child
    local name=$1 logfile=$2
    shift 2
    "$@" >"$STATE/log/$name.out" 2>&1 &
    PID[$name]=$!
    LOGFILE[$name]=$logfile
    STARTED+=("$name")
    say "started $name (pid ${PID[$name]}), log $logfile"
}

wait_for() {  # name seconds what command...: until the command succeeds, while the daemon lives
    local name=$1 seconds=$2 what=$3
    shift 3
    local deadline=$((SECONDS + seconds))
    until "$@" >/dev/null 2>&1; do
        if ! kill -0 "${PID[$name]}" 2>/dev/null; then
            tail -n 20 "${LOGFILE[$name]}" "$STATE/log/$name.out" 2>/dev/null >&2 || true
            die "daemon $name did not start (it exited), see its log at ${LOGFILE[$name]} and $STATE/log/$name.out"
        fi
        if ((SECONDS >= deadline)); then
            tail -n 20 "${LOGFILE[$name]}" "$STATE/log/$name.out" 2>/dev/null >&2 || true
            die "daemon $name did not start: no $what after ${seconds}s, see its log at ${LOGFILE[$name]}"
        fi
        sleep 1
    done
}

munge_works() { munge -n --socket "$MUNGE_SOCKET" | unmunge --socket "$MUNGE_SOCKET"; }
db_answers() { mariadb-admin --no-defaults --socket="$STATE/mysql.sock" -uroot ping; }
dbd_answers() { sacctmgr -n list cluster; }
ctld_answers() { scontrol ping | grep -q "is UP"; }

make_state() {
    mkdir -p "$STATE"/{etc,log,run,munge,mysql,slurmctld,slurmd,work}
    chmod 700 "$STATE"
    echo "state of tests/slurm/cluster.sh, removed when it ends" >"$STATE/.hardneg-slurm-test"
}

start_cluster() {
    write_configs

    # munge: a key of this test's own, and a socket of its own (slurm.conf's AuthInfo points at it)
    head -c 1024 /dev/urandom >"$STATE/munge/munge.key"
    chmod 400 "$STATE/munge/munge.key"
    start_daemon munged "$STATE/log/munged.log" munged --foreground --force \
        --key-file="$STATE/munge/munge.key" --socket="$MUNGE_SOCKET" --pid-file="$STATE/run/munged.pid" \
        --log-file="$STATE/log/munged.log" --seed-file="$STATE/munge/munged.seed"
    wait_for munged 30 "credential round trip" munge_works

    # MariaDB: a database folder of its own, served on a free port of 127.0.0.1 and a socket in $STATE
    mariadb-install-db --no-defaults --user=root --datadir="$STATE/mysql" --skip-test-db \
        >"$STATE/log/mariadb-install-db.log" 2>&1 ||
        die "mariadb-install-db failed, see $STATE/log/mariadb-install-db.log"
    start_daemon mariadbd "$STATE/log/mariadb.log" mariadbd --no-defaults --user=root --datadir="$STATE/mysql" \
        --socket="$STATE/mysql.sock" --port="$DB_PORT" --bind-address=127.0.0.1 --skip-name-resolve \
        --pid-file="$STATE/run/mariadb.pid" --log-error="$STATE/log/mariadb.log" \
        --innodb-buffer-pool-size=128M --innodb-lock-wait-timeout=900
    wait_for mariadbd 60 "answer to ping" db_answers
    mariadb --no-defaults --socket="$STATE/mysql.sock" -uroot -e "
        CREATE DATABASE slurm_acct_db;
        CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASSWORD';
        GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"

    start_daemon slurmdbd "$STATE/log/slurmdbd.log" slurmdbd -D
    wait_for slurmdbd 90 "answer to sacctmgr" dbd_answers
    sacctmgr -i add cluster "$CLUSTER" >/dev/null
    sacctmgr -i add account "$ACCOUNT" Cluster="$CLUSTER" Description="hardneg SLURM test" Organization=hardneg \
        >/dev/null
    sacctmgr -i add user root Account="$ACCOUNT" Cluster="$CLUSTER" >/dev/null

    start_daemon slurmctld "$STATE/log/slurmctld.log" slurmctld -D -f "$SLURM_CONF"
    wait_for slurmctld 60 "answer to scontrol ping" ctld_answers
    start_daemon slurmd "$STATE/log/slurmd.log" slurmd -D -f "$SLURM_CONF"
    wait_for_idle_node
    say "cluster $CLUSTER is up: node $NODE, partition $PARTITION, account $ACCOUNT"
    sinfo -h -N -o "  node %N: partition %P, %T, %c CPUs, %m MB"
}

wait_for_idle_node() {
    local deadline=$((SECONDS + 60)) state reason
    while :; do
        kill -0 "${PID[slurmd]}" 2>/dev/null ||
            die "daemon slurmd did not start (it exited), see its log at ${LOGFILE[slurmd]} and $STATE/log/slurmd.out"
        state=$(sinfo -h -n "$NODE" -o %T 2>/dev/null || true)
        case $state in
            idle) return 0 ;;
            drain* | down* | fail*)
                reason=$(scontrol show node "$NODE" | sed -n 's/.*Reason=//p')
                die "node $NODE is $state: reason $reason; see ${LOGFILE[slurmd]} and ${LOGFILE[slurmctld]}" ;;
        esac
        ((SECONDS < deadline)) ||
            die "node $NODE is not idle after 60s (state '${state:-unknown}'), see its log at ${LOGFILE[slurmd]}"
        sleep 1
    done
}

stop_daemons() {
    local i name pid waited
    # Jobs still queued or running (a failed or interrupted run) go first, while slurmctld can cancel them.
    if [[ -n ${PID[slurmctld]:-} ]] && kill -0 "${PID[slurmctld]}" 2>/dev/null; then
        scancel --user=root 2>/dev/null || true
        for ((waited = 0; waited < 30; waited++)); do
            [[ -z $(squeue -h 2>/dev/null) ]] && break
            sleep 1
        done
    fi
    for ((i = ${#STARTED[@]} - 1; i >= 0; i--)); do
        name=${STARTED[i]}
        pid=${PID[$name]}
        kill -TERM "$pid" 2>/dev/null || continue
        for ((waited = 0; waited < 30; waited++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 1
        done
        if kill -0 "$pid" 2>/dev/null; then
            say "$name (pid $pid) did not stop in 30s: killing it"
            kill -KILL "$pid" 2>/dev/null || true
        fi
        wait "$pid" 2>/dev/null || true
        say "stopped $name (pid $pid)"
    done
}

cleanup() {
    local rc=$?
    set +e
    trap - EXIT INT TERM
    if ((rc != 0)) && ((${#STARTED[@]})); then
        say "logs of the daemons: $(for name in "${STARTED[@]}"; do printf '%s ' "${LOGFILE[$name]}"; done)"
    fi
    local run
    for run in "${!RUN_PID[@]}"; do
        if kill -0 "${RUN_PID[$run]}" 2>/dev/null; then
            say "interrupting the $run run (pid ${RUN_PID[$run]})"
            kill -INT "${RUN_PID[$run]}"
        fi
        wait "${RUN_PID[$run]}"
    done
    stop_daemons
    if [[ $KEEP == 1 ]]; then
        say "kept $STATE (HARDNEG_SLURM_KEEP=1)"
    elif [[ -f $STATE/.hardneg-slurm-test ]]; then
        rm -rf "$STATE"
    fi
    if ((rc == 0)); then
        say "PASSED in ${SECONDS}s"
    else
        say "FAILED (exit status $rc) after ${SECONDS}s"
    fi
    exit "$rc"
}

# ------------------------------------------------------------------------------------------------ the pipeline
write_pipeline_config() {  # the tiny config of tests/support/configs.py (DENSE_CONFIG): BM25 and a warm-up run (12 jobs)
    mkdir -p "$1/config"
    cat >"$1/config/config.yaml" <<'EOF'
seed: 4
dataset: tiny
datasets:
  tiny: {adapter: synthetic, num_docs: 300, docs_per_cluster: 30, concept_vocab: 200,
         num_queries: {train: 100, test: 30}}
runs:
  bm25: {method: bm25, params: {top_k: 100}}
  warmup:
    method: warmup
    inputs: {negatives: bm25}
    params:
      model: {vocab_size: 3000, doc_max_length: 64, query_max_length: 16,
              builtin: {hidden_size: 32, num_hidden_layers: 1, num_attention_heads: 2, intermediate_size: 64}}
      train: {epochs: 1, batch_size: 16, learning_rate: 0.001}
      encode: {shards: 1, batch_size: 64}
      search: {top_k: 100}
EOF
}

# profiles/slurm as a user would fill it in: the two EDIT lines name the test's partition and account.
write_test_profile() {
    local profile=$STATE/work/profile
    mkdir -p "$profile"
    sed -e "s|^  # slurm_partition: <partition>\$|  slurm_partition: $PARTITION|" \
        -e "s|^  # slurm_account: <account>\$|  slurm_account: $ACCOUNT|" \
        "$REPO/profiles/slurm/config.yaml" >"$profile/config.yaml"
    local changed
    changed=$(diff "$REPO/profiles/slurm/config.yaml" "$profile/config.yaml" | grep -c '^>' || true)
    ((changed == 2)) ||
        die "the EDIT lines of slurm_partition and slurm_account in profiles/slurm/config.yaml have changed:" \
            "update write_test_profile"
    say "profile: profiles/slurm/config.yaml, with slurm_partition: $PARTITION and slurm_account: $ACCOUNT"
}

report_failed_run() {  # log of a failed Snakemake run: the failing rules' logs, SLURM's job logs and queue
    local log=$1 workdir=$2 path
    say "failed jobs, as Snakemake reported them:"
    grep -E "Error in rule|SLURM-job .* failed" "$log" | sort -u | sed 's/^/    /' || true
    # The logs of each failed rule, the rule's own and SLURM's: shown here, as the state folder goes at the end
    awk '/Error in rule/ {failed = 1}
         failed && /^ *log: / {sub(/^ *log: /, ""); sub(/ \(check log.*$/, ""); gsub(/, /, "\n"); print; failed = 0}' \
        "$log" | sort -u | while read -r path; do
        [[ $path == /* ]] || path=$workdir/$path
        if [[ -f $path ]]; then
            say "$path (end):"
            tail -n 30 "$path" | sed 's/^/    /'
        fi
    done
    say "queue at the time of failure:"
    squeue -o "%.8i %.40k %.9T %r" 2>/dev/null | sed 's/^/    /' || true
}

# name workdir args...: one pipeline run, in the background, its output in $STATE/work/<name>.log; finish_run waits
# for it. A signal to this script is handled at once: cleanup interrupts the runs (Snakemake cancels its SLURM jobs).
start_run() {
    local name=$1 workdir=$2
    shift 2
    say "$name run: snakemake --directory $workdir $*"
    timeout --signal=INT --kill-after=60 "$RUN_TIMEOUT" \
        "$VENV/bin/snakemake" --snakefile "$REPO/Snakefile" --directory "$workdir" "$@" "${TARGETS[@]}" \
        >"$STATE/work/$name.log" 2>&1 &
    RUN_PID[$name]=$!
}

finish_run() {  # name workdir
    local name=$1 workdir=$2 log=$STATE/work/$1.log rc=0
    wait "${RUN_PID[$name]}" || rc=$?
    unset "RUN_PID[$name]"
    if ((rc != 0)); then
        tail -n 60 "$log"
        report_failed_run "$log" "$workdir"
        ((rc == 124)) && die "$name run did not finish in ${RUN_TIMEOUT}s (HARDNEG_SLURM_TIMEOUT)"
        die "$name run failed (exit status $rc), its output: $log"
    fi
    say "$name run done: $(grep -h "^Elapsed time" "$log" | tail -n 1)"
}

main() {
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    preconditions
    make_state
    local work=$STATE/work
    write_pipeline_config "$work/local"
    write_pipeline_config "$work/cluster"
    # The local run needs no cluster: it runs while the cluster is installed and started
    start_run local "$work/local" --cores 2
    install_packages
    start_cluster

    write_test_profile
    # Inside each job, the plugin runs the job with srun after removing every SLURM_* variable from the
    # environment, SLURM_CONF included: a site's srun finds its slurm.conf where it was built to look (or from a
    # configless slurmd), but this cluster's lies in $STATE. The srun first on the jobs' PATH is therefore this
    # cluster's: the real srun, told where its configuration is.
    mkdir -p "$STATE/bin"
    printf '#!/bin/sh\nSLURM_CONF=%q exec %q "$@"\n' "$SLURM_CONF" "$(command -v srun)" >"$STATE/bin/srun"
    chmod 755 "$STATE/bin/srun"
    # Status checks every few seconds rather than the plugin's 40 (jobs of the tiny pipeline take seconds)
    PATH=$STATE/bin:$PATH start_run cluster "$work/cluster" --workflow-profile "$work/profile" \
        --slurm-init-seconds-before-status-checks 1
    finish_run cluster "$work/cluster"
    finish_run local "$work/local"

    say "SLURM accounting of the cluster run, and its metrics against the local run's:"
    "$VENV/bin/python" "$REPO/tests/slurm/check_accounting.py" --log "$work/cluster.log" \
        --partition "$PARTITION" --account "$ACCOUNT" \
        --cluster-dir "$work/cluster" --local-dir "$work/local" "${TARGETS[@]}"
}

main "$@"
