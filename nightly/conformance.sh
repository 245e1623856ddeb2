#!/usr/bin/env bash
# Conformance (issue 24): `sim conform` on the two reference nodes, committed in
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
#
# With no NODE: go-etcd and baton-etcd. TRIALS (3) trials of each of the ten
# experiments per node, and the TTL sweep, four trials at a time on a 2-core machine. Each run writes to a temporary directory; the committed copy keeps
# conformance.md, conformance.json and each trial's summary.txt, report.json and
# scenario.toml, with timeline.html and leaders_acting.svg where the command kept them
# (each experiment's first trial, and every failed one). The raw timelines and the
# failed trials' process files (run/: logs, ledger, etcd's logs) are left out: tens of
# megabytes. The commands heading conformance.md name the committed directory as --out.
# A live run is a measurement of this machine: it is committed as data, and replaced
# only when the run finished (exit 0 or 1).
set -euo pipefail
cd "$(dirname "$0")/.."
. nightly/lib.sh
trials=${1:-3}
nodes=("${@:2}")
[ ${#nodes[@]} -gt 0 ] || nodes=(go-etcd baton-etcd)
sim_build
sh examples/go-node/build.sh >/dev/null
mkdir -p reports/conformance
for node in "${nodes[@]}"; do
  case "$node" in
    go-etcd)
      cmd='examples/go-node/bin/go-node --id {id} --http-port {http_port} --etcd-endpoints {etcd_endpoints} --election-prefix {election_prefix} --lease-ttl-ms {lease_ttl_ms} --resource-url {resource_url} --peers {peers} --tick-ms {tick_ms} --write-timeout-ms {write_timeout_ms}'
      ;;
    baton-etcd|baton-redis|baton-zookeeper|baton-postgres)
      cmd='target/real/release/baton-real contract-node'
      ;;
    *)
      echo "conformance: unknown node $node (allowed: go-etcd, baton-etcd, baton-redis, baton-zookeeper, baton-postgres)" >&2
      exit 2
      ;;
  esac
  backend=etcd
  case "$node" in baton-*) backend=${node#baton-} ;; esac
  tmp=$(mktemp -d reports/.conformance.XXXXXX)
  trap 'rm -rf "$tmp"' EXIT
  start=$(date +%s)
  sim_run conform --node-cmd "$cmd" --backend "$backend" --trials "$trials" --out "$tmp/$node" --quiet
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
