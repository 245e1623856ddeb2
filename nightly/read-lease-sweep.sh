#!/usr/bin/env bash
# Widens the cut-off raft leader's clock drift until leased reads go stale (issue 4, spec
# section 13), over seeds, and writes reports/read-lease-sweep.md.
# Run from anywhere: bash nightly/read-lease-sweep.sh [SEEDS] (default 20: seeds 0..19).
# Each run is `sim run scenarios/raft/read-lease-inside.toml --seed N
# --set faults.0.drift_ppm=D`; only the drift differs from the committed scenario.
# The committed report is replaced only when every run succeeded.
set -euo pipefail
cd "$(dirname "$0")/.."
. nightly/lib.sh
seeds=${1:-20}
sim_build
commit=$(commit_name)
out=reports/read-lease-sweep.md
mkdir -p reports
tmp=$(mktemp -d reports/.read-lease-sweep.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
{
  echo "# Leader lease reads against clock drift"
  echo
  echo "Made by \`bash nightly/read-lease-sweep.sh $seeds\` on commit $commit: scenarios/raft/read-lease-inside.toml"
  echo "over seeds 0..$((seeds - 1)), with the cut-off leader's drift set by"
  echo "\`--set faults.0.drift_ppm=D\`. The leader lease is 100 ms on the leader's clock; the"
  echo "followers refuse other candidates for 300 ms on theirs. The bound the summary names:"
  echo "safe while the drift is no slower than -666,667 ppm (the lease lasts at most 300 ms"
  echo "of real time). Beyond it, stale reads become possible, and come more often the longer"
  echo "the lease outlasts the followers' lease: a read the cut-off leader answers from its"
  echo "lease misses the batches the new leader has committed since (its own last batch too,"
  echo "when the new leader committed it and the old one never heard)."
  echo
  echo "| drift (ppm) | lease in real time (ms) | inside the bound | seeds with stale reads | stale reads | most numbers behind |"
  echo "|---:|---:|:---:|---:|---:|---:|"
  for d in -500000 -600000 -650000 -700000 -750000 -800000 -850000 -900000 -950000; do
    reports=()
    for s in $(seq 0 $((seeds - 1))); do
      sim_run run scenarios/raft/read-lease-inside.toml --seed "$s" \
        --set "faults.0.drift_ppm=$d" --out "$tmp/run" --force -q >/dev/null
      cp "$tmp/run/report.json" "$tmp/$d.$s.json"
      reports+=("$tmp/$d.$s.json")
    done
    f=()
    mapfile -t f < <("$sim" stats "${reports[@]}" --empty 0 --get seed:count \
      --get reads.stale:nonzero --get reads.stale:sum --get reads.max_numbers_behind:max)
    [ "${#f[@]}" -eq 4 ] || { echo "error: sim stats gave ${#f[@]} figures, not 4" >&2; exit 3; }
    # 100 ms on a clock running at (1 + d / 1e6) of real time, rounded to the nearest ms.
    lease=$(( (200000000 / (1000000 + d) + 1) / 2 ))
    inside=$([ "$d" -ge -666667 ] && echo yes || echo no)
    echo "| $d | $lease | $inside | ${f[1]} / ${f[0]} | ${f[2]} | ${f[3]} |"
  done
} > "$tmp/read-lease-sweep.md"
replace_file "$tmp/read-lease-sweep.md" "$out"
cat "$out"
