#!/usr/bin/env bash
# The bisect example of docs/src/bisect.md, runnable on a fresh clone: plants a real bug
# (an off-by-one in the fenced resource that lets a token one below max_token through) in
# a scratch clone of this repository, between two harmless commits, and asks
# `sim bisect` which commit made gc-pause fail. Your checkout is not touched. Takes about
# 10 minutes: four builds, the first from scratch, into target/bisect-demo (594 s on a
# fresh clone of commit 5723875 on 2 cores, issue 34).
#
#   bash examples/bisect-demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git clone -q "$root" "$tmp/repo"
cd "$tmp/repo"
commit() { git -c user.name="Baton demo" -c user.email=demo@baton.invalid commit -qam "$1"; }
echo "A scratch clone for the bisect demo." >>README.md
commit "README: a note"
sed -i 's/w\.token < r\.max_token/w.token + 1 < r.max_token/' sim/src/world/service/resource.rs
grep -q 'w.token + 1 < r.max_token' sim/src/world/service/resource.rs || {
  echo "error: the fence check moved; update examples/bisect-demo.sh" >&2
  exit 3
}
commit "resource: let a token one below max_token through"
echo "Another note." >>README.md
commit "README: another note"
cargo build --release -q --manifest-path "$root/Cargo.toml" --bin sim
"$root/target/release/sim" bisect --good HEAD~3 --bad HEAD scenarios/gc-pause.toml --seed 42 \
  --target-dir "$root/target/bisect-demo"
