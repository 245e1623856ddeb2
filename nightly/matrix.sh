#!/usr/bin/env bash
# The protocol matrix (docs/src/matrix.md): every committed top-level scenario
# that compares the protocols on the same faults, seeds 0..20, into reports/matrix/.
# About three minutes on 2 cores. Left out, as experiments of one feature with their own
# reports: sharded.toml (sharded leadership runs on etcd-lease only), swim.toml and
# transfer.toml (tuned for the backends their reports compare: reports/swim/,
# reports/transfer.md) and server-restart.toml (a restart of the lease service, which the
# single-server models of ZooKeeper, Consul, Kubernetes and etcd refuse).
# The committed matrix is replaced only when the whole matrix was written.
#
#   bash nightly/matrix.sh [SEEDS] [JOBS]
set -euo pipefail
cd "$(dirname "$0")/.."
. nightly/lib.sh
seeds=${1:-20}
jobs=${2:-2}
sim_build
mkdir -p reports
tmp=$(mktemp -d reports/.matrix.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
scenarios=()
for f in scenarios/*.toml; do
  case "$f" in scenarios/sharded.toml | scenarios/swim.toml | scenarios/transfer.toml) ;;
    scenarios/server-restart.toml) ;; *) scenarios+=("$f") ;; esac
done
"$sim" matrix "${scenarios[@]}" --protocols all --seeds "0..$seeds" --jobs "$jobs" \
  --out "$tmp/matrix" --quiet >/dev/null
mkdir -p reports/matrix
for f in matrix.md matrix.json .baton-report; do
  replace_file "$tmp/matrix/$f" "reports/matrix/$f"
done
mark_committed reports/matrix "made by bash nightly/matrix.sh"
echo "reports/matrix/ written"
