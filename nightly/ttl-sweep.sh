#!/usr/bin/env bash
# The TTL sweep (spec section 9 and section 10, experiment 2): scenarios/ttl-sweep.toml at
# TTL 1, 3, 10 and 30 s, for the lease protocols and raft, over seeds 0..SEEDS, into
# reports/ttl-sweep/ (sweep.json, sweep.md with its findings, four SVG plots).
# Run from anywhere: bash nightly/ttl-sweep.sh [SEEDS] [JOBS] (defaults 50 and 2).
# The committed reports/ttl-sweep/ is replaced only when the whole sweep succeeded
# (a sweep interrupted with Ctrl-C exits 130 and replaces nothing).
set -euo pipefail
cd "$(dirname "$0")/.."
. nightly/lib.sh
seeds=${1:-50}
jobs=${2:-2}
sim_build
mkdir -p reports
tmp=$(mktemp -d reports/.ttl-sweep.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
"$sim" sweep scenarios/ttl-sweep.toml \
  --grid ttl_ms=1000,3000,10000,30000 \
  --protocols etcd-lease,consul-session,k8s-lease,zk-sequential,db-row,redis-fenced,raft \
  --seeds "0..$seeds" --jobs "$jobs" --out "$tmp/sweep" --quiet
rm -rf reports/ttl-sweep.old
if [ -d reports/ttl-sweep ]; then mv reports/ttl-sweep reports/ttl-sweep.old; fi
mv "$tmp/sweep" reports/ttl-sweep
rm -rf reports/ttl-sweep.old
mark_committed reports/ttl-sweep "made by bash nightly/ttl-sweep.sh"
echo "reports/ttl-sweep/ written"
