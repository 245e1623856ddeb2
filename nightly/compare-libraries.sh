#!/usr/bin/env bash
# Is Baton's model of each library right? (issue 37, part 4.) `sim compare --conform-dir`
# puts the committed live trials of a library's conformance run (reports/conformance/
# <library>/, made by nightly/conformance.sh) beside Baton's protocol set to behave as
# that library does (the library -> protocol table: docs/src/fidelity.md, "Which library
# each protocol models"), per experiment with a failover, into
# reports/compare-libraries/<library>-<experiment>/compare.md and compare.json.
#
#   bash nightly/compare-libraries.sh [SEEDS [LIBRARY...]]
#
# SEEDS: simulator seeds 0..SEEDS (1000). LIBRARY: only that library's cases (go-etcd,
# go-raft, java-curator, python-kazoo, python-redis, python-psycopg), for a library whose
# conformance run was made again; the others' committed files are left as they are.
# Only the simulated side runs (seconds); the live side is the committed conformance
# run, so the same code and trials give the same bytes. Committed files are replaced only
# when every comparison ran (a figure off its target is data here, exit 1; exit 2, 3 or
# 130 stops the script and keeps what is committed).
set -euo pipefail
cd "$(dirname "$0")/.."
. nightly/lib.sh
# go-etcd: examples/go-node on etcd's Go concurrency package (etcd 3.4's clientv3). It
# checks no deadline before acting (session-done), and its lessor sends a keepalive
# TTL/3 after the last answer on a 500 ms send loop: every 1000 ms at the run's TTL of 2 s.
go_etcd="protocol=etcd-lease etcd-lease.local_deadline=session-done etcd-lease.keepalive_interval_ms=1000"
# java-curator, python-kazoo: Curator's LeaderLatch and a kazoo Election stop leading at
# SUSPENDED, when their clients give the connection up: 2/3 of the session timeout after
# the last answer (the read timeout). The conformance run already sets the session
# timeout (the TTL) and ZooKeeper's tick (TTL / 10).
zk="protocol=zk-sequential zk-sequential.local_deadline=suspended"
# python-redis: redis-py's Lock keeps no deadline; the node reacquires every TTL/3 with a
# socket timeout of TTL/3 (666 ms at 2 s) and stops at the first reacquire that fails.
redis_py="protocol=redis-fenced redis-fenced.stop_at_deadline=false redis-fenced.stop_at_failed_renewal=true redis-fenced.rpc_timeout_ms=666"
# python-psycopg: the row lease on the database's clock, statement_timeout TTL/3; it
# polls every TTL/5 (400 ms, the conformance run's db-row poll) without jitter, where
# db-row jitters each wait up to 2.2 times (named in docs/src/fidelity.md).
psycopg="protocol=db-row db-row.statement_timeout_ms=666"
# library|experiment|--set overrides (space-separated)
cases=(
  "go-etcd|clean-kill|$go_etcd"
  "go-etcd|gc-pause|$go_etcd"
  "go-etcd|partition|$go_etcd"
  "go-etcd|graceful-stepdown|$go_etcd"
  "go-etcd|churn|$go_etcd"
)
# go-raft: hashicorp/raft against Baton's raft (openraft with a leader lease), at the
# conformance run's own election timeout, heartbeat and lease (its scenario.toml). No
# churn: 1,000 seeds of the 9-node, 10-minute raft churn take about 17 minutes here.
for experiment in clean-kill gc-pause partition graceful-stepdown; do
  cases+=("go-raft|$experiment|protocol=raft")
done
for library in java-curator python-kazoo python-redis python-psycopg; do
  case $library in
    java-curator|python-kazoo) sets=$zk ;;
    python-redis) sets=$redis_py ;;
    python-psycopg) sets=$psycopg ;;
  esac
  for experiment in clean-kill gc-pause partition graceful-stepdown churn; do
    cases+=("$library|$experiment|$sets")
  done
done
seeds=${1:-1000}
if [ $# -gt 1 ]; then
  keep=()
  for c in "${cases[@]}"; do
    for library in "${@:2}"; do
      [ "${c%%|*}" = "$library" ] && keep+=("$c")
    done
  done
  for library in "${@:2}"; do
    if ! printf '%s\n' "${cases[@]}" | grep -q "^$library|"; then
      echo "compare-libraries: unknown library $library (allowed: go-etcd, go-raft, java-curator, python-kazoo, python-redis, python-psycopg)" >&2
      exit 2
    fi
  done
  cases=("${keep[@]}")
fi
sim_build
mkdir -p reports/compare-libraries
tmp=$(mktemp -d reports/.compare-libraries.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for c in "${cases[@]}"; do
  IFS='|' read -r library experiment sets <<<"$c"
  args=(compare --conform-dir "reports/conformance/$library" --experiment "$experiment"
    --sim-seeds "0..$seeds" --out "$tmp/$library-$experiment" --quiet)
  for s in $sets; do args+=(--set "$s"); done
  sim_run "${args[@]}"
done
for c in "${cases[@]}"; do
  IFS='|' read -r library experiment _ <<<"$c"
  name="$library-$experiment"
  mkdir -p "reports/compare-libraries/$name"
  replace_file "$tmp/$name/compare.md" "reports/compare-libraries/$name/compare.md"
  replace_file "$tmp/$name/compare.json" "reports/compare-libraries/$name/compare.json"
  mark_committed "reports/compare-libraries/$name" "made by bash nightly/compare-libraries.sh"
done
echo "compare-libraries: reports/compare-libraries/*/compare.md"
