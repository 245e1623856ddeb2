#!/usr/bin/env bash
# Election figures of a scenario over a range of seeds, from each run's report.json:
# verdicts, starvation (seeds with a starved node, and which), election latency,
# leaderless spans (the leader's death or step-down to the next win), failover, leader
# changes and election RPCs served per simulated second (backend_requests).
#
# Run from the repository root:
#   bash nightly/storm.sh [SCENARIO] [FIRST..END] [--set KEY=VALUE]...
# Defaults: scenarios/raft/election-storm.toml, seeds 0..100. Reports go to
# reports/storm/<scenario>[+overrides]/<seed>/. Percentiles are nearest-rank over every
# value of every seed, as `sim matrix` computes them.
set -euo pipefail
cd "$(dirname "$0")/.."
scenario=${1:-scenarios/raft/election-storm.toml}
range=${2:-0..100}
shift $(( $# < 2 ? $# : 2 ))
first=${range%..*}
end=${range#*..}
# SIM=path runs another build of sim (a copy, so a rebuild cannot change it mid-run).
if [ -z "${SIM:-}" ]; then
  cargo build --release -q -p baton-sim --bin sim
fi
sim=${SIM:-${CARGO_TARGET_DIR:-target}/release/sim}
tag=$(basename "$scenario" .toml)
for s in "$@"; do
  [ "$s" = "--set" ] && continue
  tag="$tag+$s"
done
dir=reports/storm/$tag
mkdir -p "$dir"
for ((seed = first; seed < end; seed++)); do
  "$sim" run "$scenario" --seed "$seed" --out "$dir/$seed" --force -q "$@" >/dev/null || true
done
echo "bash nightly/storm.sh $scenario $range $*"
reports=()
for ((seed = first; seed < end; seed++)); do reports+=("$dir/$seed/report.json"); done
jq -s -r '
  def p($q): sort as $v | ($v | length) as $n
    | if $n == 0 then null
      else $v[([((($q * $n) + 99) / 100 | floor), 1] | max) - 1] end;
  def stats: "p50 \(p(50)) p99 \(p(99)) max \(max) over \(length)";
  "seeds: \(length), pass \(map(select(.verdict == "pass")) | length)",
  "seeds with a starved node: \(map(select(.elections.starved | length > 0)) | length)"
    + " (" + (map(select(.elections.starved | length > 0)
              | "\(.seed): \(.elections.starved | join(" "))") | join(", ")) + ")",
  "election latency ms: \([.[].election_latencies_ms[]] | stats)",
  "leaderless ms: \([.[].elections.leaderless_spans_ms[]] | stats)",
  "failover ms: \([.[].failover_ms[]] | stats)",
  "leader changes per seed: \([.[].elections.leader_changes] | stats)",
  "election RPCs served per simulated s: \(([.[].backend_requests] | add) * 1000
     / ([.[].simulated_ms] | add) | . * 100 | round / 100)"
' "${reports[@]}"
