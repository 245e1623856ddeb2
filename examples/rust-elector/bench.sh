#!/bin/sh
# The example's speed, pinned to one core (taskset -c 0): writes bench.md.
# Run it on a quiet machine from a clean tree: `sh examples/rust-elector/bench.sh`.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
cargo bench --locked --target-dir ../../target --bench clean_kill --no-run
commit=$(git rev-parse --short HEAD)
dirty=""
git diff --quiet HEAD -- ../.. || dirty=" plus uncommitted changes"
{
    echo "# rust-elector: simulated speed"
    echo
    echo "Made by \`sh examples/rust-elector/bench.sh\` on commit $commit$dirty, $(nproc) CPUs, pinned to one core."
    echo
    taskset -c 0 cargo bench --locked --target-dir ../../target --bench clean_kill 2>/dev/null
} > bench.md.new
mv bench.md.new bench.md
cat bench.md
