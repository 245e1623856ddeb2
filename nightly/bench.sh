#!/usr/bin/env bash
# Speed benchmark: simulated seconds per wall-clock second, written to reports/bench.md.
# Run from the repository root: bash nightly/bench.sh
# Figures depend on the machine; the file records which one.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p baton-sim --bin sim
sim=target/release/sim
out=reports/bench.md
{
  echo "# Baton speed benchmark"
  echo
  echo "Made by \`bash nightly/bench.sh\` on $(nproc) cores, $(rustc --version | cut -d' ' -f1-2)."
  echo "\"simulation\" is the madsim run alone; \"with checks + report\" adds the checkers and"
  echo "rendering every artifact in memory (not writing files). Each seed runs on a fresh thread."
  echo
  echo "\`$sim bench scenarios/clean-kill.toml scenarios/gc-pause.toml --seeds 0..10\` (1,000 next/s):"
  echo
  $sim bench scenarios/clean-kill.toml scenarios/gc-pause.toml --seeds 0..10
  echo
  echo "\`$sim bench scenarios/clean-kill.toml scenarios/gc-pause.toml --seeds 0..10 --set work.rate_per_s=5000\` (5,000 next/s):"
  echo
  $sim bench scenarios/clean-kill.toml scenarios/gc-pause.toml --seeds 0..10 --set work.rate_per_s=5000
} > "$out"
cat "$out"
