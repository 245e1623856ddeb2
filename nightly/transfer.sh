#!/usr/bin/env bash
# Leadership transfer against resign and crash (spec section 13): scenarios/transfer.toml
# (5 nodes, 5,000 next/s, a job; the leader asked to hand over to the next node every 4 s,
# 13 times) for etcd-lease, k8s-lease, zk-sequential and raft over seeds 1..SEEDS, and the
# same schedule with the transfer replaced by a resign (`faults.0.kind=resign`) and by a
# kill with a restart 1 s later (`faults.0.kind=kill`), summed up from each run's
# report.json (`sim stats`) into reports/transfer.md. Run from anywhere:
#   bash nightly/transfer.sh [SEEDS]   (default 10)
# The committed report is replaced only when every run and every figure succeeded.
set -euo pipefail
cd "$(dirname "$0")/.."
. nightly/lib.sh
seeds=${1:-10}
sim_build
commit=$(commit_name)
mkdir -p reports
tmp=$(mktemp -d reports/.transfer.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
{
  echo "# Leadership transfer, resign and crash, side by side"
  echo
  echo "Made by \`bash nightly/transfer.sh $seeds\` on commit $commit: \`sim run scenarios/transfer.toml"
  echo "--set protocol=P --seed N\` for seeds 1..$seeds (5 nodes, 5,000 \`next\`/s, a compaction job;"
  echo "every 4 s from 8 s to 56 s the leader is asked to act, 13 times a run), with the"
  echo "\`transfer\` (to the next running node) as written, replaced by a \`resign\`"
  echo "(\`--set faults.0.kind=resign\`), or by a \`kill\` of the leader restarted 1 s later"
  echo "(\`--set faults.0.kind=kill --set faults.0.restart_after_ms=1000\`). Gap: the old"
  echo "leader's last accepted write to the new leader's first (report.json's \`failover_ms\`; for"
  echo "a transfer the same as its handover gap). Percentiles are nearest-rank over every change"
  echo "of every seed. Job work lost: the milliseconds of compaction steps thrown away, summed."
  echo
  echo "| protocol | how | pass | double-leader incidents | changes | gap min / p50 / p99 / max (ms) | to the designated successor | job work lost (ms) |"
  echo "|---|---|---:|---:|---:|---|---:|---:|"
  for p in etcd-lease k8s-lease zk-sequential raft; do
    for how in transfer resign crash; do
      sets=(--set "protocol=$p")
      case $how in
        resign) sets+=(--set faults.0.kind=resign --set 'expect.sometimes=["leader-changed","leader-resigned"]') ;;
        crash) sets+=(--set faults.0.kind=kill --set faults.0.restart_after_ms=1000 --set 'expect.sometimes=["leader-changed"]') ;;
      esac
      reports=()
      for ((s = 1; s <= seeds; s++)); do
        sim_run run scenarios/transfer.toml "${sets[@]}" --seed "$s" --out "$tmp/run" --force -q >/dev/null
        cp "$tmp/run/report.json" "$tmp/$p.$how.$s.json"
        reports+=("$tmp/$p.$how.$s.json")
      done
      f=()
      mapfile -t f < <("$sim" stats "${reports[@]}" --empty none \
        --get verdict:eq=pass --get seed:count --get double_leader_acting_incidents:sum \
        --get failover_ms:count --get failover_ms:min:1 --get failover_ms:p50:1 \
        --get failover_ms:p99:1 --get failover_ms:max:1 --get job.abandoned_ms:sum)
      [ "${#f[@]}" -eq 9 ] || { echo "error: sim stats gave ${#f[@]} figures, not 9" >&2; exit 3; }
      honoured="-"
      if [ "$how" = transfer ]; then
        t=()
        mapfile -t t < <("$sim" stats "${reports[@]}" --get transfer.honoured:sum \
          --get transfer.gap_ms.count:sum)
        honoured="${t[0]} of ${t[1]}"
      fi
      echo "| $p | $how | ${f[0]}/${f[1]} | ${f[2]} | ${f[3]} | ${f[4]} / ${f[5]} / ${f[6]} / ${f[7]} | $honoured | ${f[8]} |"
    done
  done
  echo
  echo "How each backend hands over (the summary's \`transfer\` line, from the seed-1 run):"
  echo
  for p in etcd-lease k8s-lease zk-sequential raft; do
    sim_run run scenarios/transfer.toml --set "protocol=$p" --seed 1 --out "$tmp/run" --force -q >/dev/null
    echo "- \`$p\`: $(sed -n 's/^transfer: //p' "$tmp/run/summary.txt")"
  done
} > "$tmp/transfer.md"
replace_file "$tmp/transfer.md" reports/transfer.md
cat reports/transfer.md
