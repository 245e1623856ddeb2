#!/usr/bin/env bash
# The unfenced gc-pause on every live backend (issue 23): writes reports/real-unfenced.md.
# Run from anywhere: bash nightly/real-unfenced.sh [TRIALS]   (3 trials per protocol)
#
# `sim real scenarios/gc-pause-unfenced.toml --set protocol=P --trials TRIALS` for every
# protocol real mode runs: the leader stops itself just before a protected write for
# TTL + 500 ms, the fence is off, and the woken leader's write lands after its
# successor's on the live backend's protocol. Each row counts the trials with a double
# write (a double-leader-acting incident at the resource) and the incidents. A live run
# is a measurement of this machine: the figures are committed with the commit they ran
# on. Needs each backend's server (etcd-server, redis-server, zookeeper, postgresql).
set -euo pipefail
cd "$(dirname "$0")/.."
. nightly/lib.sh
sim_build
trials=${1:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
commit=$(commit_name)
rows=""
for p in etcd-lease redis-naive redis-fenced zk-sequential db-row raft; do
  sim_run real scenarios/gc-pause-unfenced.toml --set "protocol=$p" --trials "$trials" \
    --out "$work/$p" --quiet >/dev/null
  reports=("$work/$p"/trial-*/report.json)
  with=$("$sim" stats "${reports[@]}" --get double_leader_acting_incidents:nonzero)
  total=$("$sim" stats "${reports[@]}" --get double_leader_acting_incidents:sum)
  failed=$("$sim" stats "${reports[@]}" --get verdict:eq=fail)
  rows="$rows| \`$p\` | ${#reports[@]} | $with | $total | $failed |
"
  [ "${#reports[@]}" = "$trials" ] || { echo "error: $p wrote ${#reports[@]} reports of $trials" >&2; exit 3; }
done
out=$work/real-unfenced.md
cat >"$out" <<EOF
# The unfenced gc-pause on live backends

Made by \`bash nightly/real-unfenced.sh $trials\` on commit $commit, on 2 cores. Each row:
\`sim real scenarios/gc-pause-unfenced.toml --set protocol=P --trials $trials\`: the
leader stops itself just before a protected write for TTL + 500 ms (SIGSTOP), the
resource's fence is off, and every other part is live (the protocol's server, started by
Baton on 127.0.0.1; raft among the node processes).

A trial with a double write is one whose woken leader had a write accepted after its
successor's (\`double_leader_acting_incidents\` > 0 in its report.json): what the fence,
switched back on, turns away (\`scenarios/gc-pause.toml\`).

| protocol | trials | trials with a double write | double-leader incidents | trials failed |
|---|---:|---:|---:|---:|
$rows
EOF
replace_file "$out" reports/real-unfenced.md
echo "wrote reports/real-unfenced.md"
