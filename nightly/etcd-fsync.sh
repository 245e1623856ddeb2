#!/usr/bin/env bash
# The fsync latency of a live etcd on this machine: the default of the simulated
# cluster's `etcd.fsync_ms` (model/src/scenario/etcd_cluster.rs) comes from here (issue 21).
#
#   bash nightly/etcd-fsync.sh [WRITES]     (default 600)
#
# Starts three members of Debian's etcd (/usr/bin/etcd) on 127.0.0.1 with their data in
# a temporary directory under /tmp (where real mode keeps its members' data), puts
# WRITES keys one after another through the HTTP gateway of member 1, then reads every
# member's `etcd_disk_wal_fsync_duration_seconds` histogram from /metrics and prints the
# pooled count, the bucket counts and the 5th, 50th and 95th percentiles (linear inside
# the bucket, as Prometheus's histogram_quantile does). Nothing is left behind.
# Needs etcd-server and curl.
set -euo pipefail
writes=${1:-600}
[ -x /usr/bin/etcd ] || { echo "etcd-fsync: /usr/bin/etcd not found: apt-get install etcd-server" >&2; exit 2; }
command -v curl >/dev/null || { echo "etcd-fsync: curl not found: apt-get install curl" >&2; exit 2; }
dir=$(mktemp -d /tmp/baton-etcd-fsync.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
# Ports: a block the kernel is unlikely to hand out (below the ephemeral range).
base=$((20000 + RANDOM % 20000))
cluster=""
for i in 1 2 3; do cluster="$cluster${cluster:+,}m$i=http://127.0.0.1:$((base + 10 + i))"; done
for i in 1 2 3; do
  /usr/bin/etcd --name "m$i" --data-dir "$dir/m$i" \
    --listen-client-urls "http://127.0.0.1:$((base + i))" --advertise-client-urls "http://127.0.0.1:$((base + i))" \
    --listen-peer-urls "http://127.0.0.1:$((base + 10 + i))" --initial-advertise-peer-urls "http://127.0.0.1:$((base + 10 + i))" \
    --initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token "fsync-$$" \
    >"$dir/m$i.log" 2>&1 &
  pids+=($!)
done
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$((base + 1))/health" | grep -q '"health":"true"' && break
  sleep 0.2
done
for n in $(seq "$writes"); do
  # key and value base64: "k" and "v"
  curl -sf -XPOST "http://127.0.0.1:$((base + 1))/v3/kv/put" -d '{"key":"aw==","value":"dg=="}' >/dev/null
done
metrics=$(for i in 1 2 3; do curl -sf "http://127.0.0.1:$((base + i))/metrics"; done)
summary() { # metric title
  awk -v writes="$writes" -v metric="$1" -v title="$2" '
    $0 ~ "^" metric "_bucket" {
      match($0, /le="[^"]+"/); le = substr($0, RSTART + 4, RLENGTH - 5)
      c[le] += $2; if (!(le in seen)) { seen[le] = 1; order[++n] = le }
    }
    $0 ~ "^" metric "_count" { total += $2 }
    END {
      printf "%s, 3 members, %d puts: %d samples\n", title, writes, total
      prev_le = 0; prev_c = 0
      for (k = 1; k <= n; k++) {
        le = order[k]; printf "  le %s s: %d\n", le, c[le]
      }
      split("5 50 95", qs, " ")
      for (j = 1; j <= 3; j++) {
        q = qs[j] / 100 * total; prev_le = 0; prev_c = 0
        for (k = 1; k <= n; k++) {
          le = order[k]
          if (c[le] >= q) {
            if (le == "+Inf") { v = prev_le } else { v = prev_le + (le - prev_le) * (q - prev_c) / (c[le] - prev_c) }
            printf "p%s: %.2f ms\n", qs[j], v * 1000; break
          }
          prev_le = le; prev_c = c[le]
        }
      }
    }'
}
summary etcd_disk_wal_fsync_duration_seconds "WAL fsync (etcd_disk_wal_fsync_duration_seconds)" <<<"$metrics"
summary etcd_network_peer_round_trip_time_seconds "peer round trip (etcd_network_peer_round_trip_time_seconds)" <<<"$metrics"
