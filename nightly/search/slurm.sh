#!/usr/bin/env bash
# Slurm on this one machine (issue 39): the sharded and the continuous search run as Slurm
# array jobs (nightly/search/slurm.sbatch), checked against the same search on one
# process, and timed. Committed as reports/search-slurm/README.md:
#
#   bash nightly/search/slurm.sh [TASKS [SEEDS]]      (default: 4 tasks, 2000 seeds)
#
# It installs Debian's slurm-wlm and munge when slurmctld, slurmd, sbatch or munged is
# missing (apt-get update first; root, or sudo), and starts, in a temporary directory,
# munged (its own key and socket), slurmctld and slurmd by hand, without systemd: one
# node, localhost on 127.0.0.1, with every CPU of this machine, a localhost slurm.conf
# (proctrack/linuxproc, no cgroups, no accounting), the daemons running as the user
# that runs the script. It stops everything it started when it ends, however it ends.
# Then, every search on scenarios/swarm.toml with the combination canary on
# (etcd-lease.canary=fence-retry-when-cut-off):
#
# 1. Sharded: an array of TASKS tasks over seeds 0..SEEDS (`--partition auto`), merged by
#    `sim search --merge`; the merge must equal one unsharded search apart from wall
#    times (failures.jsonl without wall_ms, search.json's counts, every reproducer file
#    byte for byte) and hold a failure; the merge of all shards but the last must not
#    equal it (the check's canary).
# 2. Continuous: an array of TASKS tasks, each `--budget SEEDS/TASKS seeds` with its task
#    id as draw seed into its own store, merged; it must equal the merge of one store
#    into which one process ran the same TASKS draws in turn (shrunk files included).
# 3. Figures: the continuous search's seeds per second on one core and on every core
#    (the honest protocol, nothing to shrink, --budget 30s each), and the time to the
#    canary's first failure with 1, 2 and 4 tasks: `--first-failure` over seeds
#    R*SEEDS..(R+1)*SEEDS for R = 0, 1, 2, from the first task's start to the first task
#    that ends with a failure (each task writes its times: slurm.sbatch).
#
# Exit 0 when both checks hold (the report is replaced), 1 when one does not (the report
# is left as it was), 2 on bad input or a missing prerequisite, 3 when a daemon or job
# fails. About 4 minutes on 2 cores, plus the build and the install.
set -euo pipefail
cd "$(dirname "$0")/../.."
. nightly/lib.sh
tasks=${1:-4}
seeds=${2:-2000}
if ! [[ "$tasks" =~ ^[1-9][0-9]?$ && "$seeds" =~ ^[1-9][0-9]*$ ]] || [ "$seeds" -lt "$tasks" ]; then
  echo "usage: bash nightly/search/slurm.sh [TASKS [SEEDS]]: TASKS 1..99, SEEDS at least TASKS (default 4 2000)" >&2
  exit 2
fi
scenario=scenarios/swarm.toml
canary=etcd-lease.canary=fence-retry-when-cut-off
say() { echo "slurm: $*" >&2; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo "$@"
  else
    say "installing slurm-wlm and munge needs root or sudo"
    exit 2
  fi
}
missing=0
for c in slurmctld slurmd sbatch squeue scontrol munged; do
  command -v "$c" >/dev/null || missing=1
done
if [ "$missing" -eq 1 ]; then
  say "installing Debian's slurm-wlm and munge (apt-get; about a minute)"
  as_root apt-get update -q >/dev/null
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge >/dev/null
fi
sim_build
export SIM=$sim
commit=$(commit_name)

dir=$(mktemp -d /tmp/baton-slurm.XXXXXX)
chmod 755 "$dir"
mkdir -m 700 "$dir/munge"
mkdir -m 755 "$dir/run" "$dir/state" "$dir/spool" "$dir/log" "$dir/results"
socket=$dir/run/munge.socket
export SLURM_CONF=$dir/slurm.conf

# A port nothing listens on, from 16800 up (bash's /dev/tcp: refused means free).
taken=()
free_port() {
  local p
  for ((p = 16800; p < 16900; p++)); do
    [[ " ${taken[*]} " == *" $p "* ]] && continue
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      taken+=("$p")
      echo "$p"
      return
    fi
  done
  say "no free port in 16800..16899"
  exit 3
}
ctld_port=$(free_port)
taken+=("$ctld_port")
slurmd_port=$(free_port)

started_daemons=0
stop() {
  local status=$?
  if [ "$started_daemons" -eq 1 ]; then
    scontrol shutdown >/dev/null 2>&1 || true
    for pidfile in "$dir/slurmctld.pid" "$dir/slurmd.pid"; do
      [ -f "$pidfile" ] || continue
      pid=$(cat "$pidfile")
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    done
    munged --stop --socket="$socket" >/dev/null 2>&1 || true
  fi
  if [ "$status" -gt 1 ]; then
    say "failed (exit $status); the daemons' logs:"
    tail -n 20 "$dir"/log/*.log >&2 2>/dev/null || true
  fi
  rm -rf "$dir"
  exit "$status"
}
trap stop EXIT
trap 'exit 130' INT TERM

head -c 1024 /dev/urandom >"$dir/munge/munge.key"
chmod 400 "$dir/munge/munge.key"
user=$(id -un)
cat >"$SLURM_CONF" <<EOF
# Written by nightly/search/slurm.sh: one node, this machine, on 127.0.0.1.
ClusterName=baton
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
AuthInfo=socket=$socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=baton Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
say "starting munged, slurmctld and slurmd on 127.0.0.1 (ports $ctld_port, $slurmd_port)"
started_daemons=1
munged --force --socket="$socket" --key-file="$dir/munge/munge.key" \
  --pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/munged.seed" \
  --log-file="$dir/log/munged.log"
slurmctld
slurmd -N localhost
for i in $(seq 60); do
  [ "$(sinfo -h -o %t 2>/dev/null)" = idle ] && break
  [ "$i" -eq 60 ] && { say "the node did not come up in 30 s"; exit 3; }
  sleep 0.5
done
version=$(sinfo --version)

# array N OUT ARGS...: runs slurm.sbatch as an array of N tasks into OUT, waits for it.
array() {
  local n=$1 out=$2
  shift 2
  mkdir -p "$out"
  if ! sbatch --wait --quiet --array="0-$((n - 1))" --chdir="$PWD" --output="$out/task-%a.out" \
    nightly/search/slurm.sbatch "$out" "$@" >/dev/null; then
    say "an array task failed:"
    cat "$out"/task-*.out >&2
    exit 3
  fi
}
# failures.jsonl without wall times, search.json's counts, and the reproducer files.
summary() {
  sed -E 's/,"wall_ms":[0-9]+//' "$1/failures.jsonl"
  grep -E '"(seeds_run|failures)"' "$1/search.json"
  (cd "$1" && shopt -s nullglob && for f in *.toml; do echo "$f $(cksum <"$f")"; done)
}
same() { [ "$(summary "$1")" = "$(summary "$2")" ]; }
count() { grep -E "\"$2\"" "$1/search.json" | tr -dc 0-9; }
fail=0

res=$dir/results
say "1/3 sharded: $tasks tasks over seeds 0..$seeds, then one unsharded search (about a minute)"
array "$tasks" "$res/range" "$scenario" --seeds "0..$seeds" --set "$canary"
sim_run search --merge "$res"/range/shard-* --out "$res/merged" --quiet >/dev/null
sim_run search "$scenario" --seeds "0..$seeds" --set "$canary" --out "$res/one" --quiet >/dev/null
shards=("$res"/range/shard-*)
merged_equal=no
if same "$res/merged" "$res/one" && [ "$(count "$res/one" failures)" -gt 0 ]; then
  merged_equal=yes
else
  say "the merge of $tasks shards differs from one search (or holds no failure)"
  fail=1
fi
canary_caught=yes
if [ "$tasks" -gt 1 ]; then
  sim_run search --merge "${shards[@]:0:$((tasks - 1))}" --out "$res/short" --quiet >/dev/null
  if same "$res/short" "$res/one"; then
    say "canary: a merge missing a shard still equals one search; the check cannot fail"
    canary_caught=no
    fail=1
  fi
fi
range_seeds=$(count "$res/merged" seeds_run)
range_failures=$(count "$res/merged" failures)
range_signatures=$(find "$res/merged" -maxdepth 1 -name '*.toml' | wc -l)

per=$((seeds / tasks))
say "2/3 continuous: $tasks tasks of ${per}seeds each, then the same draws in one process (about 2 minutes)"
array "$tasks" "$res/budget" "$scenario" --budget "${per}seeds" --set "$canary"
sim_run search --merge "$res"/budget/task-*.sqlite --out "$res/cmerged" --quiet >/dev/null
for ((k = 0; k < tasks; k++)); do
  sim_run search "$scenario" --budget "${per}seeds" --draw-seed "$k" --set "$canary" \
    --store "$res/one.sqlite" --quiet >/dev/null
done
sim_run search --merge "$res/one.sqlite" --out "$res/cone" --quiet >/dev/null
stores_equal=no
if same "$res/cmerged" "$res/cone" && [ "$(count "$res/cone" failures)" -gt 0 ]; then
  stores_equal=yes
else
  say "the merge of $tasks stores differs from one store of the same draws"
  fail=1
fi
cont_seeds=$(count "$res/cmerged" seeds_run)
cont_failures=$(count "$res/cmerged" failures)
shrunk=$(find "$res/cmerged" -maxdepth 1 -name '*.min.toml' | wc -l)

say "3/3 figures: the continuous search's rate (1 minute), then time to first failure (about 2 minutes)"
# rate JOBS: seeds per second of a 30 s continuous search of the honest protocol.
rate() {
  local t0 t1 out n
  t0=$(date +%s.%N)
  out=$(sim_run search "$scenario" --budget 30s --jobs "$1" --store "$res/rate-$1.sqlite")
  t1=$(date +%s.%N)
  n=$(sed -n 's/^This run: \([0-9]*\) seeds tried.*/\1/p' <<<"$out")
  [ -n "$n" ] || { say "no seed count in: $out"; exit 3; }
  awk -v n="$n" -v t="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" -v j="$1" \
    'BEGIN { printf "%d seeds in %.1f s: %.1f seeds/s, %.1f per core", n, t, n / t, n / t / j }'
}
cores=$(nproc)
rate_one=$(rate 1)
rate_all=$(rate "$cores")
# first T R: seconds from the first task's start to the first failure found.
first() {
  local out=$res/first-$1-$2 from=$(($2 * seeds)) to=$((($2 + 1) * seeds))
  array "$1" "$out" "$scenario" --seeds "$from..$to" --set "$canary" --first-failure
  awk '/^started/ { s = $2; if (min_s == "" || s < min_s) min_s = s }
       /^ended/ { e = $2 } /^status/ { if ($2 == 1 && (min_e == "" || e < min_e)) min_e = e }
       END { if (min_e == "") print "none"; else printf "%.2f", min_e - min_s }' "$out"/task-*.times
}
rows=()
for t in 1 2 4; do
  row="| $t |"
  for r in 0 1 2; do row="$row $(first "$t" "$r") |"; done
  rows+=("$row")
done
# The lowest failing seed of each range: the one task of the 1-task run stopped at it.
lowest="| lowest failing seed |"
for r in 0 1 2; do
  seed=$(sed -n '1s/^{"seed":\([0-9]*\),.*/\1/p' "$res/first-1-$r/shard-0/failures.jsonl")
  lowest="$lowest ${seed:-none} |"
done

[ "$fail" -eq 0 ] || exit 1
mkdir -p reports/search-slurm
new=$(mktemp reports/search-slurm/.README.XXXXXX)
{
  echo "# Search on Slurm, on one machine"
  echo
  echo "Made by \`bash nightly/search/slurm.sh $tasks $seeds\` on commit $commit, with $version"
  echo "(Debian's slurm-wlm and munge) started by the script on 127.0.0.1: one node with this"
  echo "machine's $cores CPUs, each task of an array one CPU (\`--cpus-per-task=1\`, \`--jobs 1\`),"
  echo "so $cores tasks run at once and the rest wait. Every search is \`$scenario\` with the"
  echo "combination canary on (\`--set $canary\`)."
  echo
  echo "## Sharded: an array job, one slice of the range per task"
  echo
  echo "    sbatch --wait --array=0-$((tasks - 1)) nightly/search/slurm.sbatch RESULTS $scenario --seeds 0..$seeds --set $canary"
  echo "    sim search --merge RESULTS/shard-* --out RESULTS/merged"
  echo "    sim search $scenario --seeds 0..$seeds --set $canary --out RESULTS/one"
  echo
  echo "The merge of the $tasks shards: $range_seeds seeds run, $range_failures failed, in $range_signatures signatures."
  echo "Equal to the unsharded search apart from wall times (failures.jsonl, the counts,"
  echo "every reproducer byte for byte): $merged_equal. The merge of all shards but the last"
  echo "differs from it (the check's canary): $canary_caught."
  echo
  echo "## Continuous: an array job, one store per task"
  echo
  echo "    sbatch --wait --array=0-$((tasks - 1)) nightly/search/slurm.sbatch RESULTS $scenario --budget ${per}seeds --set $canary"
  echo "    sim search --merge RESULTS/task-*.sqlite --out RESULTS/cmerged"
  echo
  echo "Task K draws with \`--draw-seed K\` into \`RESULTS/task-K.sqlite\`. The merge of the $tasks"
  echo "stores: $cont_seeds seeds tried, $cont_failures failed; signatures shrunk: $shrunk. Equal to the"
  echo "merge of one store into which one process ran draw seeds 0 to $((tasks - 1)) in turn, each"
  echo "\`--budget ${per}seeds\`, apart from wall times (shrunk files included): $stores_equal."
  echo
  echo "## Figures"
  echo
  echo "The continuous search's rate, the honest protocol (nothing fails, nothing is shrunk),"
  echo "\`sim search $scenario --budget 30s --jobs J\`, outside Slurm:"
  echo
  echo "- one core (\`--jobs 1\`): $rate_one;"
  echo "- $cores cores (\`--jobs $cores\`): $rate_all."
  echo
  echo "Time to the canary's first failure, in seconds, from the first task's start to the"
  echo "first task that ends with a failure (\`--first-failure\`: a task stops at its first"
  echo "failure, rerun in a fresh process), over three ranges of $seeds seeds. Slurm's own"
  echo "scheduling before the first task starts is not counted; a task that waits for a CPU"
  echo "(with more tasks than the node's $cores CPUs, those past the first $cores start when one"
  echo "ends) waits inside the figure. Task K runs every T-th seed of the range from the K-th,"
  echo "so the figure follows where the lowest failing seeds fall among the slices."
  echo
  echo "| tasks | seeds 0..$seeds | $seeds..$((2 * seeds)) | $((2 * seeds))..$((3 * seeds)) |"
  echo "|---:|---:|---:|---:|"
  printf '%s\n' "${rows[@]}"
  echo "$lowest"
} >"$new"
replace_file "$new" reports/search-slurm/README.md
mark_committed reports/search-slurm "made by bash nightly/search/slurm.sh"
say "done: reports/search-slurm/README.md"
