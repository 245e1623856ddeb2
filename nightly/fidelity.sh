#!/usr/bin/env bash
# Fidelity (issues 11 and 23): the simulator's figures beside a live backend's, for the
# committed comparisons in reports/fidelity/: on etcd, clean-kill, gc-pause and partition
# at the scenarios' TTL of 3 s, and clean-kill at a requested TTL of 1 s (etcd grants its
# minimum, 2 s); the same three cases on a live Redis (redis-fenced), ZooKeeper
# (zk-sequential), PostgreSQL (db-row) and raft among the node processes.
#
#   bash nightly/fidelity.sh live [TRIALS [CASE...]]
#                                            measure the live side again: TRIALS (20)
#                                            trials of `sim real` per comparison against its
#                                            live backend on this machine (about 40 s
#                                            each); keeps each trial's report.json,
#                                            summary.txt and scenario.toml, and trials.json,
#                                            in reports/fidelity/<case>/real/ (every case,
#                                            or only the CASEs named)
#   bash nightly/fidelity.sh [SEEDS]         compare: `sim compare --real-dir` on those
#                                            committed live trials against simulator seeds
#                                            0..SEEDS (1000), into compare.md / compare.json
#
# The simulated side is cheap, so it runs 1,000 seeds and its median is pinned to a few
# percent; the live side's 20 trials are what bounds the precision (each compare.md gives
# both medians' 95% intervals).
#
# A live run is a measurement of this machine and cannot repeat byte for byte, so it is
# committed as data; the simulated side is recomputed from the code on every run. Live
# mode needs etcd-server, redis-server, zookeeper, postgresql and protobuf-compiler
# (apt). Committed files are replaced only
# when every run of the step succeeded.
set -euo pipefail
cd "$(dirname "$0")/.."
. nightly/lib.sh
cases=(
  "clean-kill|scenarios/clean-kill.toml|"
  "gc-pause|scenarios/gc-pause.toml|"
  "partition|scenarios/partition.toml|"
  "clean-kill-ttl-1s|scenarios/clean-kill.toml|etcd-lease.lease_ttl_ms=1000"
  # Issue 21: the etcd leader killed at a random moment (12-13 s: the Baton leader
  # refreshes every second) and the Baton leader 300 ms later, on a 3-member cluster.
  "etcd-leader-kill|scenarios/etcd/leader-kill.toml|"
  # Issue 23: the other backends with a real server here, the same three cases each.
  "redis-fenced-clean-kill|scenarios/clean-kill.toml|protocol=redis-fenced"
  "redis-fenced-gc-pause|scenarios/gc-pause.toml|protocol=redis-fenced"
  "redis-fenced-partition|scenarios/partition.toml|protocol=redis-fenced"
  "zk-sequential-clean-kill|scenarios/clean-kill.toml|protocol=zk-sequential"
  "zk-sequential-gc-pause|scenarios/gc-pause.toml|protocol=zk-sequential"
  "zk-sequential-partition|scenarios/partition.toml|protocol=zk-sequential"
  "db-row-clean-kill|scenarios/clean-kill.toml|protocol=db-row"
  "db-row-gc-pause|scenarios/gc-pause.toml|protocol=db-row"
  "db-row-partition|scenarios/partition.toml|protocol=db-row"
  "raft-clean-kill|scenarios/clean-kill.toml|protocol=raft"
  "raft-gc-pause|scenarios/gc-pause.toml|protocol=raft"
  "raft-partition|scenarios/partition.toml|protocol=raft"
)
sim_build
mkdir -p reports/fidelity
tmp=$(mktemp -d reports/.fidelity.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
if [ "${1:-}" = live ]; then
  trials=${2:-20}
  if [ $# -gt 2 ]; then
    only=("${@:3}")
    keep_cases=()
    for c in "${cases[@]}"; do
      for o in "${only[@]}"; do [ "${c%%|*}" = "$o" ] && keep_cases+=("$c"); done
    done
    [ ${#keep_cases[@]} -eq ${#only[@]} ] || { echo "fidelity: unknown case among: ${only[*]}" >&2; exit 2; }
    cases=("${keep_cases[@]}")
  fi
  for c in "${cases[@]}"; do
    IFS='|' read -r name file set <<<"$c"
    args=(real "$file" --trials "$trials" --out "$tmp/$name" --quiet)
    [ -n "$set" ] && args+=(--set "$set")
    sim_run "${args[@]}"
    keep="$tmp/keep/$name"
    mkdir -p "$keep"
    sed "s|$tmp/$name/|reports/fidelity/$name/real/|g" "$tmp/$name/trials.json" >"$keep/trials.json"
    for t in "$tmp/$name"/trial-*; do
      mkdir -p "$keep/$(basename "$t")"
      cp "$t/report.json" "$t/summary.txt" "$t/scenario.toml" "$keep/$(basename "$t")/"
    done
  done
  for c in "${cases[@]}"; do
    IFS='|' read -r name _ <<<"$c"
    rm -rf "reports/fidelity/$name/real"
    mkdir -p "reports/fidelity/$name"
    mv "$tmp/keep/$name" "reports/fidelity/$name/real"
    mark_committed "reports/fidelity/$name/real" "live trials, made by bash nightly/fidelity.sh live"
  done
  echo "fidelity: live trials in reports/fidelity/*/real/; now run: bash nightly/fidelity.sh"
  exit 0
fi
seeds=${1:-1000}
for c in "${cases[@]}"; do
  IFS='|' read -r name file set <<<"$c"
  args=(compare "$file" --sim-seeds "0..$seeds" --real-dir "reports/fidelity/$name/real"
    --out "$tmp/$name" --quiet)
  [ -n "$set" ] && args+=(--set "$set")
  sim_run "${args[@]}"
done
for c in "${cases[@]}"; do
  IFS='|' read -r name _ <<<"$c"
  replace_file "$tmp/$name/compare.md" "reports/fidelity/$name/compare.md"
  replace_file "$tmp/$name/compare.json" "reports/fidelity/$name/compare.json"
  mark_committed "reports/fidelity/$name" "made by bash nightly/fidelity.sh"
done
echo "fidelity: reports/fidelity/*/compare.md"
