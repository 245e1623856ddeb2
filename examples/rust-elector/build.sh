#!/bin/sh
# Builds the example's two live artefacts, without `--cfg madsim` (Baton's
# .cargo/config.toml sets it for the simulation; CARGO_ENCODED_RUSTFLAGS= clears it):
#   plain/   the election module against etcd-client 0.21 alone (no Baton in the build);
#   the node the module runs in under Baton's node contract, twice: honest, and with the
#   planted bug (feature no-local-deadline), as bin/rust-elector and
#   bin/rust-elector-no-local-deadline.
# The build shares Baton's real-mode target directory (target/real), whose crates
# (etcd-client, tokio, axum, reqwest) it reuses. Needs protoc (protobuf-compiler), as
# etcd-client's build does.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
target="$here/../../target/real"
export CARGO_ENCODED_RUSTFLAGS=
cd "$here/plain"
cargo build --release --locked --target-dir "$target"
if cargo tree --locked --target all -e normal | grep -q baton; then
    echo "rust-elector: plain/ has a Baton crate in its build" >&2
    exit 1
fi
cd "$here"
mkdir -p bin
cargo build --release --locked --features live --bin rust-elector --target-dir "$target"
cp "$target/release/rust-elector" bin/rust-elector
cargo build --release --locked --features live,no-local-deadline --bin rust-elector --target-dir "$target"
cp "$target/release/rust-elector" bin/rust-elector-no-local-deadline
echo "built $here/bin/rust-elector and $here/bin/rust-elector-no-local-deadline"
