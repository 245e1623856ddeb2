#!/usr/bin/env bash
# The TTL sweep (spec section 9 and section 10, experiment 2): scenarios/ttl-sweep.toml at
# TTL 1, 3, 10 and 30 s, for the lease protocols and raft, over seeds 0..SEEDS, into
# reports/ttl-sweep/ (sweep.json, sweep.md with its findings, four SVG plots).
# Run from anywhere: bash nightly/ttl-sweep.sh [SEEDS] [JOBS] (defaults 50 and 2).
# The committed reports/ttl-sweep/ is replaced only when the whole sweep succeeded.
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-50}
jobs=${2:-2}
cargo build --release -q -p baton-sim --bin sim
sim=${CARGO_TARGET_DIR:-target}/release/sim
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$sim" sweep scenarios/ttl-sweep.toml \
  --grid ttl_ms=1000,3000,10000,30000 \
  --protocols etcd-lease,consul-session,k8s-lease,zk-sequential,db-row,redis-fenced,raft \
  --seeds "0..$seeds" --jobs "$jobs" --out "$tmp/sweep" --quiet
rm -rf reports/ttl-sweep
mkdir -p reports
cp -r "$tmp/sweep" reports/ttl-sweep
echo "reports/ttl-sweep/ written"
