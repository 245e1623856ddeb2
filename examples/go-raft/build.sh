#!/bin/sh
# Builds the hashicorp/raft reference node offline, from Debian's packages only:
#   apt-get install -y --no-install-recommends golang-go golang-github-hashicorp-raft-dev golang-github-hashicorp-raft-boltdb-dev
# The two -dev packages put hashicorp/raft 1.1.2, raft-boltdb and their dependencies
# under /usr/share/gocode; the build runs in GOPATH mode with modules off, so nothing
# is fetched from the network. Output: examples/go-raft/bin/go-raft.
set -eu

GOCODE=/usr/share/gocode
if ! command -v go >/dev/null 2>&1 || [ ! -d "$GOCODE/src/github.com/hashicorp/raft" ] || [ ! -d "$GOCODE/src/github.com/hashicorp/raft-boltdb" ]; then
    echo "go-raft: needs Go, hashicorp/raft and raft-boltdb sources: apt-get install -y --no-install-recommends golang-go golang-github-hashicorp-raft-dev golang-github-hashicorp-raft-boltdb-dev" >&2
    exit 2
fi

here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
# GOPATH mode: imports resolve from the private GOPATH first (empty unless you add to
# it), then from Debian's tree. The package itself is built in place.
mkdir -p gopath bin
GOPATH="$here/gopath:$GOCODE" GO111MODULE=off go build -o bin/go-raft .
echo "built $here/bin/go-raft"
