#!/usr/bin/env bash
# Speed benchmark: writes reports/bench.md from `sim bench` (every named workload, each in
# a fresh process, three times, the median kept). Run from anywhere: bash nightly/bench.sh
# Figures depend on the machine; the file records which one. The report is replaced only
# when the benchmark succeeded.
set -euo pipefail
cd "$(dirname "$0")/.."
. nightly/lib.sh
sim_build
out=reports/bench.md
tmp=$(mktemp reports/.bench.md.XXXXXX)
trap 'rm -f "$tmp"' EXIT
table=$("$sim" bench)
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//' || echo unknown)
# The code measured: the checked-out commit, and whether the tree differed from it.
commit=$(commit_name)
{
  echo "# Baton speed benchmark"
  echo
  echo "Made by \`bash nightly/bench.sh\` (\`sim bench\`) on the code of commit $commit, $(nproc) cores ($cpu), $(rustc --version | cut -d' ' -f1-2)."
  echo "Each workload runs in a fresh process, three times; the table keeps the repetition"
  echo "with the median wall time. \"sim s / wall s\" is the whole run: simulate, with the"
  echo "checkers and the lanes reading every event as it is recorded, then render the summary,"
  echo "report.json, the plot and timeline.html in memory (no timeline file is kept, as for"
  echo "\`sim matrix\`); \"no report\""
  echo "leaves the rendering out. Peak memory is the child"
  echo "process's peak resident set. \`sim bench --list\` names the workloads; the"
  echo "scenario files and overrides are in \`sim/src/cmd/bench/mod.rs\`."
  echo
  echo "$table"
} > "$tmp"
replace_file "$tmp" "$out"
trap - EXIT
cat "$out"
