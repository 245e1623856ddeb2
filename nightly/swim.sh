#!/usr/bin/env bash
# The SWIM failure detector against lease expiry (spec section 13): scenarios/swim.toml
# (5 etcd-lease nodes, the leader killed five times, GC noise on every node) at lease TTL
# 1, 3 and 10 s, with the detector on and off (`--set swim.enabled=false`), over seeds
# 1..SEEDS, into reports/swim/: README.md (the table, from each run's report.json through
# `sim stats`) and the sweep of the same grid (`sim sweep`: sweep.md, failover_vs_ttl.svg,
# false_failovers_vs_ttl.svg and the other plots). Run from anywhere:
#   bash nightly/swim.sh [SEEDS] [JOBS]   (defaults 10 and 2)
# The committed reports/swim/ is replaced only when every run and every figure succeeded.
set -euo pipefail
cd "$(dirname "$0")/.."
. nightly/lib.sh
seeds=${1:-10}
jobs=${2:-2}
sim_build
commit=$(commit_name)
mkdir -p reports
tmp=$(mktemp -d reports/.swim.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
"$sim" sweep scenarios/swim.toml --grid ttl_ms=1000,3000,10000 --grid swim.enabled=true,false \
  --protocols etcd-lease --seeds "1..$((seeds + 1))" --jobs "$jobs" --out "$tmp/sweep" --quiet
{
  echo "# SWIM failure detection against lease expiry"
  echo
  echo "Made by \`bash nightly/swim.sh $seeds\` on commit $commit: \`sim run scenarios/swim.toml"
  echo "--set etcd-lease.lease_ttl_ms=T [--set swim.enabled=false] --seed N\` for seeds 1..$seeds (5"
  echo "etcd-lease nodes, the leader killed five times a run and restarted 8 s later, GC pauses on"
  echo "every node). Confirmed: a kill to the first node's detector declaring the process down."
  echo "Vacated: a leader's kill to its seat vacated at the lease service (its lease expired, or"
  echo "revoked by a node whose detector declared it down). Failover: the old leader's last"
  echo "accepted write to the new leader's first. False suspicions and downs: of processes that"
  echo "were running (paused by GC, not killed). False failovers: leadership changes no scripted"
  echo "fault explains. Percentiles are nearest-rank over every kill of every seed. The plots in"
  echo "this folder are \`sim sweep\`'s over the same grid and seeds (sweep.md)."
  echo
  echo "| lease TTL | detector | pass | confirmed p50 / p99 / max (ms) | vacated p50 / p99 / max (ms) | failover p50 / p99 (ms) | false suspicions | false downs | false failovers | SWIM messages/s |"
  echo "|---:|---|---:|---|---|---|---:|---:|---:|---:|"
  for ttl in 1000 3000 10000; do
    for on in true false; do
      reports=()
      for ((s = 1; s <= seeds; s++)); do
        sim_run run scenarios/swim.toml --set "etcd-lease.lease_ttl_ms=$ttl" --set "swim.enabled=$on" \
          --seed "$s" --out "$tmp/run" --force -q >/dev/null
        cp "$tmp/run/report.json" "$tmp/$ttl.$on.$s.json"
        reports+=("$tmp/$ttl.$on.$s.json")
      done
      f=()
      mapfile -t f < <("$sim" stats "${reports[@]}" --empty - \
        --get verdict:eq=pass --get seed:count \
        --get swim.detections_ms:p50:0 --get swim.detections_ms:p99:0 --get swim.detections_ms:max:0 \
        --get swim.vacancies_ms:p50:0 --get swim.vacancies_ms:p99:0 --get swim.vacancies_ms:max:0 \
        --get failover_ms:p50:0 --get failover_ms:p99:0 \
        --get swim.false_suspicions:sum --get swim.false_downs:sum --get false_failovers.count:sum \
        --get swim.messages_per_s:mean:1)
      [ "${#f[@]}" -eq 14 ] || { echo "error: sim stats gave ${#f[@]} figures, not 14" >&2; exit 3; }
      detector=on
      [ "$on" = false ] && detector=off
      echo "| $((ttl / 1000)) s | $detector | ${f[0]}/${f[1]} | ${f[2]} / ${f[3]} / ${f[4]} | ${f[5]} / ${f[6]} / ${f[7]} | ${f[8]} / ${f[9]} | ${f[10]} | ${f[11]} | ${f[12]} | ${f[13]} |"
    done
  done
} > "$tmp/sweep/README.md"
rm -rf reports/swim.old
if [ -d reports/swim ]; then mv reports/swim reports/swim.old; fi
mv "$tmp/sweep" reports/swim
rm -rf reports/swim.old
mark_committed reports/swim "made by bash nightly/swim.sh"
cat reports/swim/README.md
