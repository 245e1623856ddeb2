#!/usr/bin/env bash
# Widens the cut-off raft leader's clock drift until leased reads go stale (issue 4, spec
# section 13), over seeds, and writes reports/read-lease-sweep.md.
# Run from anywhere: bash nightly/read-lease-sweep.sh [SEEDS] (default 20: seeds 0..19).
# Each run is `sim run scenarios/raft/read-lease-inside.toml --seed N
# --set faults.0.drift_ppm=D`; only the drift differs from the committed scenario.
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-20}
cargo build --release -q -p baton-sim --bin sim
sim=${CARGO_TARGET_DIR:-target}/release/sim
out=reports/read-lease-sweep.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
  echo "# Leader lease reads against clock drift"
  echo
  echo "Made by \`bash nightly/read-lease-sweep.sh $seeds\`: scenarios/raft/read-lease-inside.toml"
  echo "over seeds 0..$((seeds - 1)), with the cut-off leader's drift set by"
  echo "\`--set faults.0.drift_ppm=D\`. The leader lease is 100 ms on the leader's clock; the"
  echo "followers refuse other candidates for 300 ms on theirs. The bound the summary names:"
  echo "safe while the drift is no slower than -666,667 ppm (the lease lasts at most 300 ms"
  echo "of real time). Beyond it, stale reads become possible; they appear once the lease"
  echo "outlasts the followers' lease plus a candidate's own election timeout (at least"
  echo "150 ms more) and the time the load takes to find the new leader."
  echo
  echo "| drift (ppm) | lease in real time (ms) | inside the bound | seeds with stale reads | stale reads | most numbers behind |"
  echo "|---:|---:|:---:|---:|---:|---:|"
  for d in -500000 -600000 -650000 -700000 -750000 -800000 -850000 -900000 -950000; do
    runs=0; stale_runs=0; stale=0; behind=0
    for s in $(seq 0 $((seeds - 1))); do
      "$sim" run scenarios/raft/read-lease-inside.toml --seed "$s" \
        --set "faults.0.drift_ppm=$d" --out "$tmp/run" --force -q >/dev/null 2>&1 || true
      read -r n b < <(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["reads"]; print(r["stale"], r["max_numbers_behind"])' "$tmp/run/report.json")
      runs=$((runs + 1))
      if [ "$n" -gt 0 ]; then stale_runs=$((stale_runs + 1)); fi
      stale=$((stale + n))
      if [ "$b" -gt "$behind" ]; then behind=$b; fi
    done
    lease=$(python3 -c "print(round(100 / (1 + $d / 1e6)))")
    inside=$([ "$d" -ge -666667 ] && echo yes || echo no)
    echo "| $d | $lease | $inside | $stale_runs / $runs | $stale | $behind |"
  done
} > "$out"
cat "$out"
