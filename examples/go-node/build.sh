#!/bin/sh
# Builds the reference Go node offline, from Debian's packages only:
#   apt-get install -y --no-install-recommends golang-go golang-etcd-server-dev
# golang-etcd-server-dev puts etcd 3.4's sources (clientv3, concurrency) and their
# dependencies under /usr/share/gocode; the build runs in GOPATH mode with modules off,
# so nothing is fetched from the network. Output: examples/go-node/bin/go-node.
set -eu

GOCODE=/usr/share/gocode
if ! command -v go >/dev/null 2>&1 || [ ! -d "$GOCODE/src/go.etcd.io/etcd/clientv3" ]; then
    echo "go-node: needs Go and etcd's client sources: apt-get install -y --no-install-recommends golang-go golang-etcd-server-dev" >&2
    exit 2
fi

here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
# GOPATH mode: imports resolve from the private GOPATH first (empty unless you add to
# it), then from Debian's tree. The package itself is built in place.
mkdir -p gopath bin
GOPATH="$here/gopath:$GOCODE" GO111MODULE=off go build -o bin/go-node .
echo "built $here/bin/go-node"
