#!/usr/bin/env bash
# The lease service as a cluster (issue 21): every scenario under scenarios/etcd/, fenced
# (as written) and with `fencing = false`, at seed 1, into reports/etcd/<scenario>/ and
# reports/etcd/<scenario>-unfenced/ (summary.txt, report.json, timeline.html), with an
# index, reports/etcd/README.md: verdict, etcd leader changes, the largest lease overrun,
# Baton failover and double-leader incidents per run. Run from anywhere:
#   bash nightly/etcd-scenarios.sh
# The committed reports are replaced only when every run succeeded (exit 0 or 1: an
# unfenced run may fail its checks, and that is the figure).
set -euo pipefail
cd "$(dirname "$0")/.."
. nightly/lib.sh
sim_build
commit=$(commit_name)
mkdir -p reports
tmp=$(mktemp -d reports/.etcd-scenarios.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
index="$tmp/README.md"
{
  echo "# The lease service as an etcd cluster: scenarios/etcd/"
  echo
  echo "Made by \`bash nightly/etcd-scenarios.sh\` on commit $commit: \`sim run scenarios/etcd/<name>.toml --seed 1\`,"
  echo "and the same with \`--set fencing=false\` (the \`-unfenced\` folders). Each folder holds the"
  echo "run's summary.txt, report.json and timeline.html (the etcd members are lanes there)."
  echo "Lease overrun: how long after its holder's last renewal + TTL the longest-lived expired"
  echo "lease ended."
  echo
  echo "| scenario | fencing | verdict | etcd leader changes | lease overrun max (ms) | failover p50 (ms) | double-leader incidents | stale writes accepted |"
  echo "|---|---|---|---:|---:|---:|---:|---:|"
} >"$index"
names=()
for f in scenarios/etcd/*.toml; do
  name=$(basename "$f" .toml)
  for fencing in true false; do
    dir=$name
    [ "$fencing" = false ] && dir=$name-unfenced
    names+=("$dir")
    sim_run run "$f" --seed 1 --set "fencing=$fencing" --out "$tmp/run/$dir" --force -q >/dev/null
    mkdir -p "$tmp/keep/$dir"
    cp "$tmp/run/$dir/summary.txt" "$tmp/run/$dir/report.json" "$tmp/run/$dir/timeline.html" "$tmp/keep/$dir/"
    v=()
    mapfile -t v < <("$sim" stats "$tmp/run/$dir/report.json" --empty none \
      --get verdict:each --get lease_service.leader_changes:sum \
      --get lease_service.lease_overruns_ms:max:0 --get failover_ms:p50:0 \
      --get double_leader_acting_incidents:sum --get stale_token_accepts:sum)
    [ "${#v[@]}" -eq 6 ] || { echo "error: sim stats gave ${#v[@]} figures, not 6" >&2; exit 3; }
    echo "| [$name]($dir/summary.txt) | $fencing | ${v[0]#*: } | ${v[1]} | ${v[2]} | ${v[3]} | ${v[4]} | ${v[5]} |" >>"$index"
  done
done
rm -rf reports/etcd
mkdir -p reports/etcd
for d in "${names[@]}"; do
  mv "$tmp/keep/$d" "reports/etcd/$d"
done
replace_file "$index" reports/etcd/README.md
mark_committed reports/etcd "made by bash nightly/etcd-scenarios.sh"
cat reports/etcd/README.md
