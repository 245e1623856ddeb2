#!/usr/bin/env bash
# The gallery's search report (issue 22, part 4): writes reports/gallery.md and
# reports/gallery/<bug>.min.toml. Run from anywhere: bash nightly/gallery.sh
#
# For each bug in scenarios/gallery/, a generic swarm search (scenarios/swarm.toml, no
# hand-written schedule) over the bug's protocol with the bug switched on (the file's
# `# search:` line: the protocol, the bug's switch, and the workload it needs, such as a
# job or reads) looks for the first seed that fails with the bug and passes with the
# fix (`# fixed-by:`): a seed that fails either way found something else, and the search
# goes on after it. The search stops at its first failure (`sim search --first-failure`,
# 2 jobs), so every seed below the one found ran; it is given 60 s of wall time (SIGINT
# after that). The seed found is shrunk (`sim shrink --fixed-by`) to the faults the
# failure needs, keeping only candidates that still pass with the fix.
set -euo pipefail
cd "$(dirname "$0")/.."
. nightly/lib.sh
sim_build
budget_s=${GALLERY_BUDGET_S:-60}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/min"
commit=$(commit_name)
now() { date +%s.%N; }
rows=""
details=""
for file in scenarios/gallery/*.toml; do
  bug=$(basename "$file" .toml)
  source=$(sed -n 's/^# source: //p' "$file")
  fix=$(sed -n 's/^# fixed-by: //p' "$file")
  read -r -a search <<<"$(sed -n 's/^# search: //p' "$file")"
  read -r -a fixset <<<"$fix"
  protocol=$(printf '%s\n' "${search[@]}" | sed -n 's/^protocol=//p')
  protocol=${protocol:-etcd-lease}
  start=0
  found=""
  signature=""
  other=0
  t0=$(now)
  while :; do
    left=$(awk -v t0="$t0" -v t1="$(now)" -v b="$budget_s" 'BEGIN { l = b - (t1 - t0); print (l > 0 ? l : 0) }')
    if awk -v l="$left" 'BEGIN { exit !(l <= 0) }'; then break; fi
    rm -rf "$work/search"
    status=0
    timeout -s INT "$left" "$sim" search scenarios/swarm.toml --seeds "$start..1000000" --first-failure \
      "${search[@]}" --out "$work/search" --force -q >/dev/null 2>&1 || status=$?
    # 0: no failure in the range; 130: the budget ran out. Anything else is an error.
    case "$status" in
      1) ;;
      0 | 130) break ;;
      *) echo "error: sim search for $bug exited $status" >&2; exit "$status" ;;
    esac
    seed=$(sed -n 's/.*"seed":\([0-9]*\).*/\1/p' "$work/search/failures.jsonl" | sort -n | head -n 1)
    sig=$(grep "\"seed\":$seed," "$work/search/failures.jsonl" | sed -n 's/.*"signature":\[\([^]]*\)\].*/\1/p' | tr -d '"')
    fixed=0
    "$sim" run scenarios/swarm.toml --seed "$seed" "${search[@]}" "${fixset[@]}" --out "$work/fixrun" --force -q >/dev/null 2>&1 || fixed=$?
    if [ "$fixed" -gt 1 ]; then
      echo "error: sim run of seed $seed with $fix exited $fixed" >&2
      exit "$fixed"
    fi
    if [ "$fixed" = 0 ]; then
      found=$seed
      signature=$sig
      break
    fi
    other=$((other + 1))
    start=$((seed + 1))
  done
  wall=$(awk -v t0="$t0" -v t1="$(now)" 'BEGIN { printf "%.1f", t1 - t0 }')
  if [ -z "$found" ]; then
    rows+="| [$bug]($source) | $protocol | no, in ${budget_s} s | | $wall | | | |"$'\n'
    continue
  fi
  seeds=$((found + 1))
  rate=$(awk -v n="$seeds" -v w="$wall" 'BEGIN { printf "%.0f", n / w }')
  min="$work/min/$bug.min.toml"
  # Candidates must pass with the fix too: the minimal file reproduces this bug.
  fixedby=("${fixset[@]/#--set/--fixed-by}")
  sim_run shrink scenarios/swarm.toml --seed "$found" "${search[@]}" "${fixedby[@]}" --out "$min" --force -q >/dev/null 2>&1
  # The shrunk file fails (exit 1): its summary's fault lines are the schedule.
  "$sim" run "$min" --out "$work/minrun" --force >"$work/minrun.txt" 2>/dev/null || true
  schedule=$(sed -n 's/^fault [0-9]*: //p' "$work/minrun.txt" | paste -sd ';' - | sed 's/;/; /g')
  minfix=0
  "$sim" run "$min" "${fixset[@]}" --out "$work/minfix" --force -q >/dev/null 2>&1 || minfix=$?
  minfix_word=$([ "$minfix" = 0 ] && echo passes || echo "fails too")
  rows+="| [$bug]($source) | $protocol | yes | $found ($seeds run) | $wall | $rate | $signature | $schedule |"$'\n'
  details+="- **$bug**: seed $found; $other earlier seed(s) failed with the fix on as well (something other than this bug). Shrunk to \`reports/gallery/$bug.min.toml\`: $schedule. With \`$fix\` the shrunk file $minfix_word."$'\n'
done
out=reports/gallery.md
tmp=$(mktemp reports/.gallery.md.XXXXXX)
{
  echo "# The gallery, found by search"
  echo
  echo "Made by \`bash nightly/gallery.sh\` on the code of commit $commit, $(nproc) cores."
  echo
  echo "For each real bug in \`scenarios/gallery/\` (docs/src/gallery.md): a generic swarm"
  echo "search (\`sim search scenarios/swarm.toml --first-failure\` with the file's \`# search:\`"
  echo "switches: the protocol, the bug, and the workload it needs; no hand-written"
  echo "schedule) for the first seed that fails with the bug and passes with its fixed-by"
  echo "switch, given ${budget_s} s of wall time on 2 jobs; then \`sim shrink --fixed-by\` of that"
  echo "seed (a candidate is kept only if it fails as the seed did and passes with the fix)."
  echo "\"seeds/s\" is seeds run (every seed up to the one found) over the wall time, which"
  echo "includes re-running each failure in a fresh process and, when a failure was not this"
  echo "bug's, the run with the fix that said so."
  echo
  echo "| bug | protocol | found | first seed | wall s | seeds/s | signature | shrunk schedule |"
  echo "|---|---|---|---:|---:|---:|---|---|"
  printf '%s' "$rows"
  echo
  printf '%s' "$details"
} >"$tmp"
rm -rf reports/gallery
mkdir -p reports/gallery
# Each shrunk file's header says how to repeat it: from where it is committed, not from
# the scratch directory it was shrunk in.
for f in "$work"/min/*.min.toml; do
  [ -e "$f" ] || continue
  sed "s|$work/min/|reports/gallery/|" "$f" >"reports/gallery/$(basename "$f")"
done
mark_committed reports/gallery "made by bash nightly/gallery.sh"
replace_file "$tmp" "$out"
cat "$out"
