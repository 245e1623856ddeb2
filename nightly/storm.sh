#!/usr/bin/env bash
# Election figures of a scenario over a range of seeds, from each run's report.json
# (`sim stats`): verdicts, starvation (seeds with a starved node, and which), election
# latency, leaderless spans (the leader's death or step-down to the next win), failover,
# leader changes and election RPCs served per simulated second (backend_requests).
#
# Run from the repository root:
#   bash nightly/storm.sh [SCENARIO] [FIRST..END] [--set KEY=VALUE]...
# Defaults: scenarios/raft/election-storm.toml, seeds 0..100. Reports go to
# reports/storm/<scenario>[+overrides]/<seed>/. Percentiles are nearest-rank over every
# value of every seed, as `sim matrix` computes them. A run that exits 2 (bad input) or
# 3 (internal error) stops the script with that status.
set -euo pipefail
cd "$(dirname "$0")/.."
. nightly/lib.sh
scenario=${1:-scenarios/raft/election-storm.toml}
range=${2:-0..100}
shift $(( $# < 2 ? $# : 2 ))
first=${range%..*}
end=${range#*..}
sim_build
tag=$(basename "$scenario" .toml)
for s in "$@"; do
  [ "$s" = "--set" ] && continue
  tag="$tag+$s"
done
dir=reports/storm/$tag
mkdir -p "$dir"
for ((seed = first; seed < end; seed++)); do
  sim_run run "$scenario" --seed "$seed" --out "$dir/$seed" --force -q "$@" >/dev/null
done
echo "bash nightly/storm.sh $scenario $range $*"
reports=()
for ((seed = first; seed < end; seed++)); do reports+=("$dir/$seed/report.json"); done
stats() {
  local key=$1
  mapfile -t v < <("$sim" stats "${reports[@]}" --empty null \
    --get "$key:p50" --get "$key:p99" --get "$key:max" --get "$key:count")
  echo "p50 ${v[0]} p99 ${v[1]} max ${v[2]} over ${v[3]}"
}
mapfile -t h < <("$sim" stats "${reports[@]}" --get seed:count --get verdict:eq=pass \
  --get elections.starved:nonzero --get elections.starved:each --get backend_requests:per_s:2)
echo "seeds: ${h[0]}, pass ${h[1]}"
echo "seeds with a starved node: ${h[2]} (${h[3]})"
echo "election latency ms: $(stats election_latencies_ms)"
echo "leaderless ms: $(stats elections.leaderless_spans_ms)"
echo "failover ms: $(stats failover_ms)"
echo "leader changes per seed: $(stats elections.leader_changes)"
echo "election RPCs served per simulated s: ${h[4]}"
