#!/usr/bin/env bash
# Sharded leadership (spec section 13): scenarios/sharded.toml (9 etcd-lease nodes, 64
# partitions, three nodes killed and restarted in turn) over seeds 1..SEEDS, summed up
# from each run's report.json (`sim stats`) into reports/sharded/README.md, with the seed-1
# run's summary.txt, report.json and leaders_acting.svg (the partitions each node leads
# over time). Run from anywhere: bash nightly/sharded.sh [SEEDS] (default 10).
# The committed reports/sharded/ is replaced only when every run and every figure
# succeeded.
set -euo pipefail
cd "$(dirname "$0")/.."
. nightly/lib.sh
seeds=${1:-10}
sim_build
commit=$(commit_name)
mkdir -p reports
tmp=$(mktemp -d reports/.sharded.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/keep"
reports=()
for ((s = 1; s <= seeds; s++)); do
  sim_run run scenarios/sharded.toml --seed "$s" --out "$tmp/run" --force -q >/dev/null
  cp "$tmp/run/report.json" "$tmp/$s.json"
  reports+=("$tmp/$s.json")
  if [ "$s" -eq 1 ]; then
    cp "$tmp/run/summary.txt" "$tmp/run/report.json" "$tmp/run/leaders_acting.svg" "$tmp/keep/"
  fi
done
f=()
mapfile -t f < <("$sim" stats "${reports[@]}" --empty - \
  --get verdict:eq=pass --get seed:count --get double_leader_acting_incidents:sum \
  --get partitions.failover_ms:count --get partitions.failover_ms:p50:0 \
  --get partitions.failover_ms:p99:0 --get partitions.failover_ms:max:0 \
  --get partitions.moved:sum --get partitions.minimum:sum --get partitions.balance_max:max \
  --get backend_requests_per_s:mean:1 --get backend_requests_per_s:max:1)
[ "${#f[@]}" -eq 12 ] || { echo "error: sim stats gave ${#f[@]} figures, not 12" >&2; exit 3; }
{
  echo "# Sharded leadership: 64 partitions over 9 nodes"
  echo
  echo "Made by \`bash nightly/sharded.sh $seeds\` on commit $commit: \`sim run scenarios/sharded.toml"
  echo "--seed N\` for seeds 1..$seeds: 9 etcd-lease nodes lead 64 partitions, spread by rendezvous"
  echo "hashing over the members registered in the lease service; n3, n7 and n1 are killed in turn"
  echo "(at 20, 50 and 80 s) and restarted (20, 20 and 15 s later). Each partition is checked as a"
  echo "run of its own (leaders acting by effect, sequence continuity, handoff, protocol safety,"
  echo "liveness). Failover: a partition's old leader's last accepted write to the new one's first,"
  echo "pooled over every partition and seed (nearest-rank); it mixes the moves after a death (the"
  echo "registry and the partition's lease must expire) with the hand-backs when a node returns"
  echo "(the old leader stops and resigns at its next membership read). Moved: partitions whose"
  echo "leader changed between one membership change and the next; minimum: what any assignment"
  echo "must move (a dead node's partitions; those a returning node takes back). Balance: the most"
  echo "partitions one node led over the mean per live node, once settled. Backend: requests the"
  echo "etcd cluster served per simulated second (9 registry leases and about 64 partition leases"
  echo "kept alive every second, the members read five times a second by every node)."
  echo
  echo "| pass | double-leader incidents | failovers | failover p50 / p99 / max (ms) | moved / minimum | worst balance | backend requests/s (mean, max) |"
  echo "|---:|---:|---:|---|---|---:|---|"
  echo "| ${f[0]}/${f[1]} | ${f[2]} | ${f[3]} | ${f[4]} / ${f[5]} / ${f[6]} | ${f[7]} / ${f[8]} | ${f[9]}x | ${f[10]}, ${f[11]} |"
  echo
  echo "The seed-1 run is in this folder: \`summary.txt\` (each membership change, what it moved,"
  echo "and the balance after it), \`report.json\` (\`partitions\`: every partition's verdict and"
  echo "failovers) and \`leaders_acting.svg\` (the partitions each node led over time)."
} > "$tmp/keep/README.md"
rm -rf reports/sharded.old
if [ -d reports/sharded ]; then mv reports/sharded reports/sharded.old; fi
mv "$tmp/keep" reports/sharded
rm -rf reports/sharded.old
mark_committed reports/sharded "made by bash nightly/sharded.sh"
cat reports/sharded/README.md
