#!/usr/bin/env bash
# Churn for the lease backends (spec section 10, experiment 6): scenarios/storm/
# lease-storm.toml (9 nodes, the leader killed every 5 s and restarted 2.5 s later for 10
# minutes) for etcd-lease, zk-sequential, k8s-lease and consul-session over seeds
# 0..SEEDS, summed up from each run's report.json (`sim stats`) into
# reports/lease-storm.md: verdicts, incidents, starved nodes, election latency, failover,
# and the backend's requests per second over the run, during the storm and in the second
# after each kill. Run from anywhere: bash nightly/lease-storm.sh [SEEDS] (default 10).
# The committed report is replaced only when every run and every figure succeeded.
set -euo pipefail
cd "$(dirname "$0")/.."
. nightly/lib.sh
seeds=${1:-10}
sim_build
commit=$(commit_name)
mkdir -p reports
tmp=$(mktemp -d reports/.lease-storm.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
{
  echo "# Lease backends under churn"
  echo
  echo "Made by \`bash nightly/lease-storm.sh $seeds\` on commit $commit: \`sim run scenarios/storm/lease-storm.toml"
  echo "--set protocol=P --seed N\` for seeds 0..$((seeds - 1)); 9 nodes, the leader killed every 5 s"
  echo "and restarted 2.5 s later, 120 times. Percentiles are nearest-rank over every value of"
  echo "every seed. Backend requests: what the lease service served per simulated second, over"
  echo "the whole run, while the faults fired, and in the second after each kill (the herd:"
  echo "mean over kills, and the busiest such second)."
  echo
  echo "| protocol | pass | incidents | seeds with a starved node | election latency p50 / p99 / max (ms) | failover p50 / p99 (ms) | backend req/s: run / storm / 1 s after a kill (mean, max) |"
  echo "|---|---:|---:|---:|---|---|---|"
  for p in etcd-lease zk-sequential k8s-lease consul-session; do
    reports=()
    for ((s = 0; s < seeds; s++)); do
      sim_run run scenarios/storm/lease-storm.toml --set "protocol=$p" --seed "$s" \
        --out "$tmp/run" --force -q >/dev/null
      cp "$tmp/run/report.json" "$tmp/$p.$s.json"
      reports+=("$tmp/$p.$s.json")
    done
    f=()
    mapfile -t f < <("$sim" stats "${reports[@]}" --empty none \
      --get verdict:eq=pass --get seed:count \
      --get double_leader_acting_incidents:sum --get elections.starved:nonzero \
      --get election_latencies_ms:p50:1 --get election_latencies_ms:p99:1 \
      --get election_latencies_ms:p100:1 \
      --get failover_ms:p50:1 --get failover_ms:p99:1 \
      --get backend_requests:per_s:1 --get backend_load.per_s_during_faults:mean:1 \
      --get backend_load.per_s_after_kill_mean:mean:1 \
      --get backend_load.per_s_after_kill_max:max:1)
    [ "${#f[@]}" -eq 13 ] || { echo "error: sim stats gave ${#f[@]} figures, not 13" >&2; exit 3; }
    echo "| $p | ${f[0]}/${f[1]} | ${f[2]} | ${f[3]} | ${f[4]} / ${f[5]} / ${f[6]} | ${f[7]} / ${f[8]} | ${f[9]} / ${f[10]} / ${f[11]}, ${f[12]} |"
  done
} > "$tmp/lease-storm.md"
replace_file "$tmp/lease-storm.md" reports/lease-storm.md
cat reports/lease-storm.md
