#!/usr/bin/env bash
# Churn for the lease backends (spec section 10, experiment 6): scenarios/storm/
# lease-storm.toml (9 nodes, the leader killed every 5 s and restarted 2.5 s later for 10
# minutes) for etcd-lease, zk-sequential, k8s-lease and consul-session over seeds
# 0..SEEDS, summed up from each run's report.json into reports/lease-storm.md:
# verdicts, incidents, starved nodes, election latency, failover, and the backend's
# requests per second over the run, during the storm and in the second after each kill.
# Run from anywhere: bash nightly/lease-storm.sh [SEEDS] (default 10). Needs jq.
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-10}
command -v jq >/dev/null || { echo "error: nightly/lease-storm.sh needs jq (apt-get install jq)" >&2; exit 2; }
cargo build --release -q -p baton-sim --bin sim
sim=${CARGO_TARGET_DIR:-target}/release/sim
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
  echo "# Lease backends under churn"
  echo
  echo "Made by \`bash nightly/lease-storm.sh $seeds\`: \`sim run scenarios/storm/lease-storm.toml"
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
      status=0
      "$sim" run scenarios/storm/lease-storm.toml --set "protocol=$p" --seed "$s" \
        --out "$tmp/$p/$s" --force -q >/dev/null || status=$?
      # 0 pass and 1 fail are results; 2 (bad input) and 3 (internal error) are not.
      if [ "$status" -gt 1 ]; then echo "error: $p seed $s exited $status" >&2; exit "$status"; fi
      reports+=("$tmp/$p/$s/report.json")
    done
    jq -s -r --arg p "$p" '
      def pct($q): sort as $v | ($v | length) as $n
        | if $n == 0 then "none"
          else $v[([((($q * $n) + 99) / 100 | floor), 1] | max) - 1] | . * 10 | round / 10 | tostring end;
      def r1: . * 10 | round / 10 | tostring;
      "| \($p) | \(map(select(.verdict == "pass")) | length)/\(length)"
      + " | \([.[].double_leader_acting_incidents] | add)"
      + " | \(map(select(.elections.starved | length > 0)) | length)"
      + " | \([.[].election_latencies_ms[]] | "\(pct(50)) / \(pct(99)) / \(pct(100))")"
      + " | \([.[].failover_ms[]] | "\(pct(50)) / \(pct(99))")"
      + " | \(([.[].backend_requests] | add) * 1000 / ([.[].simulated_ms] | add) | r1)"
      + " / \([.[].backend_load.per_s_during_faults] | add / length | r1)"
      + " / \([.[].backend_load.per_s_after_kill_mean] | add / length | r1), \([.[].backend_load.per_s_after_kill_max] | max | r1) |"
    ' "${reports[@]}"
  done
} > "$tmp/lease-storm.md"
cp "$tmp/lease-storm.md" reports/lease-storm.md
cat reports/lease-storm.md
