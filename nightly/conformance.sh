#!/usr/bin/env bash
# Conformance (issues 24, 36, 37): `sim conform` on the reference nodes, committed in
# reports/conformance/<node>/:
#
#   bash nightly/conformance.sh [TRIALS [NODE...]]
#
#   go-etcd     examples/go-node: Go, etcd's own clientv3/concurrency election (built
#               offline by examples/go-node/build.sh: apt-get install golang-go
#               golang-etcd-server-dev)
#   baton-etcd  Baton's own etcd-lease node, started through the contract
#               (baton-real contract-node, every value from the BATON_* variables)
#   baton-redis, baton-zookeeper, baton-postgres
#               the same node on the contract's other backends (--backend)
#   java-curator    examples/java-curator: Curator's LeaderLatch on ZooKeeper (build.sh)
#   python-kazoo    examples/python-kazoo: kazoo's Election recipe on ZooKeeper
#   python-redis    examples/python-redis: redis-py's Lock on Redis
#   python-psycopg  examples/python-psycopg: a row lease on PostgreSQL, psycopg 3
#   go-raft         examples/go-raft: hashicorp/raft among the nodes (--backend none)
#   rust-elector    examples/rust-elector: a Rust module on etcd-client's election API
#                   (issue 38; built by its build.sh, which needs protoc)
#
# With no NODE: go-etcd and baton-etcd. TRIALS (3) trials of each of the ten
# experiments per node, and the TTL sweep, JOBS trials at a time (the environment's
# JOBS, default conform's own: 4 on a 2-core machine; the report says how many ran at
# once). Each run writes to a temporary directory; the committed copy keeps
# conformance.md, conformance.json and each trial's summary.txt, report.json and
# scenario.toml, with timeline.html and leaders_acting.svg where the command kept them
# (each experiment's first trial, and every failed one). The raw timelines and the
# failed trials' process files (run/: logs, ledger, etcd's logs) are left out: tens of
# megabytes. The commands heading conformance.md name the committed directory as --out.
# A live run is a measurement of this machine: it is committed as data, and replaced
# only when the run finished (exit 0 or 1). A tree that differs from its commit (outside
# reports/) stops the script before the next node, exit 2, unless ALLOW_DIRTY=1.
set -euo pipefail
cd "$(dirname "$0")/.."
. nightly/lib.sh
trials=${1:-3}
nodes=("${@:2}")
[ ${#nodes[@]} -gt 0 ] || nodes=(go-etcd baton-etcd)
jobs=()
[ -n "${JOBS:-}" ] && jobs=(--jobs "$JOBS")
sim_build
mkdir -p reports/conformance
for node in "${nodes[@]}"; do
  case "$node" in
    go-etcd)
      sh examples/go-node/build.sh >/dev/null
      backend=etcd
      cmd='examples/go-node/bin/go-node --id {id} --http-port {http_port} --etcd-endpoints {etcd_endpoints} --election-prefix {election_prefix} --lease-ttl-ms {lease_ttl_ms} --resource-url {resource_url} --peers {peers} --tick-ms {tick_ms} --write-timeout-ms {write_timeout_ms}'
      ;;
    baton-etcd|baton-redis|baton-zookeeper|baton-postgres)
      cmd='target/real/release/baton-real contract-node'
      backend=${node#baton-}
      ;;
    java-curator)
      sh examples/java-curator/build.sh >/dev/null
      cmd='examples/java-curator/bin/curator-node'
      backend=zookeeper
      ;;
    python-kazoo) cmd='examples/python-kazoo/node.py' backend=zookeeper ;;
    python-redis) cmd='examples/python-redis/node.py' backend=redis ;;
    python-psycopg) cmd='examples/python-psycopg/node.py' backend=postgres ;;
    go-raft)
      sh examples/go-raft/build.sh >/dev/null
      cmd='examples/go-raft/bin/go-raft --id {id} --http-port {http_port} --raft-port {raft_port} --raft-peers {raft_peers} --election-timeout-ms {election_timeout_ms} --leader-lease-ms {leader_lease_ms} --resource-url {resource_url} --peers {peers} --tick-ms {tick_ms} --write-timeout-ms {write_timeout_ms} --dir {dir}'
      backend=none
      ;;
    rust-elector)
      sh examples/rust-elector/build.sh >/dev/null 2>&1
      cmd='examples/rust-elector/bin/rust-elector'
      backend=etcd
      ;;
    *)
      echo "conformance: unknown node $node (allowed: go-etcd, baton-etcd, baton-redis, baton-zookeeper, baton-postgres, java-curator, python-kazoo, python-redis, python-psycopg, go-raft, rust-elector)" >&2
      exit 2
      ;;
  esac
  # A report names the tree it ran from; one made from a tree that differs from its
  # commit cannot show criterion 6 (reproducible from a committed command). Checked
  # before each node, since a run of several nodes lasts hours and the checkout may be
  # edited meanwhile: commit first, or set ALLOW_DIRTY=1 for a run not to be committed.
  if [ -z "${ALLOW_DIRTY:-}" ] && [[ "$(commit_name)" == *uncommitted* ]]; then
    echo "conformance: the source tree differs from $(git rev-parse --short HEAD) (git status); commit first, or ALLOW_DIRTY=1 for a run not to be committed; $node not run" >&2
    exit 2
  fi
  tmp=$(mktemp -d reports/.conformance.XXXXXX)
  trap 'rm -rf "$tmp"' EXIT
  start=$(date +%s)
  sim_run conform --node-cmd "$cmd" --backend "$backend" --trials "$trials" "${jobs[@]}" --out "$tmp/$node" --quiet
  echo "conformance: $node took $(($(date +%s) - start)) s" >&2
  out="$tmp/$node"
  find "$out" -mindepth 3 -maxdepth 3 -name run -type d -exec rm -rf {} +
  find "$out" -name timeline.jsonl -delete
  sed -i "s|$out|reports/conformance/$node|g" "$out/conformance.md" "$out/conformance.json"
  mark_committed "$out" "made by bash nightly/conformance.sh"
  rm -rf "reports/conformance/$node"
  mv "$out" "reports/conformance/$node"
  rm -rf "$tmp"
  trap - EXIT
done
