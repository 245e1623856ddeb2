#!/usr/bin/env bash
# The protocol matrix (README, "Reading the matrix"): every committed top-level scenario
# under every protocol, seeds 0..20, into reports/matrix/. About two minutes on 2 cores.
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
"$sim" matrix scenarios/*.toml --protocols all --seeds "0..$seeds" --jobs "$jobs" \
  --out "$tmp/matrix" --quiet >/dev/null
mkdir -p reports/matrix
for f in matrix.md matrix.json .baton-report; do
  replace_file "$tmp/matrix/$f" "reports/matrix/$f"
done
mark_committed reports/matrix "made by bash nightly/matrix.sh"
echo "reports/matrix/ written"
