# Shared by the scripts in nightly/ (sourced, not run). They need only bash, cargo and
# coreutils: figures over many reports come from `sim stats`, not jq or python3.

# sim_build: builds sim (release) and sets $sim to the binary cargo built, wherever the
# target directory is (CARGO_TARGET_DIR, a config's build.target-dir, or target/).
# SIM=path uses that binary instead (a copy, so that a rebuild cannot change it mid-run).
sim_build() {
  if [ -n "${SIM:-}" ]; then
    sim=$SIM
    return
  fi
  sim=$(cargo build --release -q -p baton-sim --bin sim --message-format=json-render-diagnostics \
    | grep '"name":"sim"' | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1)
  if [ -z "$sim" ] || [ ! -x "$sim" ]; then
    echo "error: cargo did not report where it built sim" >&2
    exit 3
  fi
}

# sim_run ARGS...: runs sim. 0 (pass) and 1 (fail) are results; any other status (2: bad
# input, 3: internal error, 130: interrupted) stops the script with that status, so that
# no report is made of runs that did not happen.
sim_run() {
  local status=0
  "$sim" "$@" || status=$?
  if [ "$status" -gt 1 ]; then
    echo "error: sim $* exited $status" >&2
    exit "$status"
  fi
}

# replace_file NEW DEST: puts a finished report in place of the committed one. Call it
# last, once everything succeeded; until then the committed file is untouched.
replace_file() {
  mv -f "$1" "$2"
}

# mark_committed DIR WHAT: marks DIR as a committed report (`.baton-committed`, kept in
# git), so that no `sim` command writes into it without --force. WHAT says what makes it.
mark_committed() {
  printf '%s\n' "$2" >"$1/.baton-committed"
}

# commit_name: prints the short HEAD commit a report is made on, "plus uncommitted
# changes" when the code (anything outside reports/) differs from it, or "unknown"
# outside git.
commit_name() {
  local commit
  commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  if [ "$commit" != unknown ] && ! git diff --quiet HEAD -- . ':!reports'; then
    commit="$commit plus uncommitted changes"
  fi
  echo "$commit"
}
