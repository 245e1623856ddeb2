#!/usr/bin/python3
"""The library gallery's table (issue 37, part 3), from the committed conformance runs.

    python3 nightly/library_gallery.py [--check] [--root DIR]

Reads reports/conformance/<node>/conformance.json for every node named in NODES (a
node whose run is not committed gets a row saying so) and writes the table between the
markers of docs/src/libraries.md; then the same for the model comparisons, from
reports/compare-libraries/<node>-<experiment>/compare.json (made by
nightly/compare-libraries.sh), between the second pair of markers. --check writes nothing: it exits 1, naming the file,
when the committed table is not what the committed runs give (sim/tests/
library_gallery.rs runs it). Exit 2: a conformance.json that cannot be read. Standard
library only; the same runs give the same bytes.
"""

import json
import os
import sys

# (node, what it is) in the gallery's order: the libraries, then Baton's own node on the
# same backends for reference.
NODES = [
    ("go-etcd", "etcd's Go `concurrency.Election`"),
    ("java-curator", "Apache Curator `LeaderLatch`"),
    ("python-kazoo", "kazoo `Election`"),
    ("python-redis", "redis-py `Lock` + `INCR` token"),
    ("python-psycopg", "psycopg 3, a row lease"),
    ("go-raft", "hashicorp/raft"),
    ("rust-elector", "etcd-client (Rust), `examples/rust-elector`"),
    ("baton-etcd", "Baton's node (reference)"),
    ("baton-zookeeper", "Baton's node (reference)"),
    ("baton-redis", "Baton's node (reference)"),
    ("baton-postgres", "Baton's node (reference)"),
]
# The spec's experiments, each with its fence-off twin.
EXPERIMENTS = ["clean-kill", "partition", "gc-pause", "graceful-stepdown", "churn"]
DOC = os.path.join("docs", "src", "libraries.md")
BEGIN = "<!-- library-gallery: made by `python3 nightly/library_gallery.py`; do not edit -->"
END = "<!-- library-gallery: end -->"
CBEGIN = "<!-- library-compare: made by `python3 nightly/library_gallery.py`; do not edit -->"
CEND = "<!-- library-compare: end -->"


def fenced_cell(e):
    """A fenced experiment: pass, fence-saved or FAIL, over its trials."""
    trials = e["trials"]
    if e["verdict"] != "pass":
        props = sorted({v["property"] for t in trials for v in t["violations"]})
        failed = sum(1 for t in trials if t["verdict"] != "pass")
        return "**FAIL** %d/%d (%s)" % (failed, len(trials), ", ".join(props) or "criteria")
    saved = [t for t in trials if t["protocol_safety"] == "fence-saved"]
    if saved:
        rejected = sum(t["fencing_rejections"] for t in trials)
        return "fence-saved %d/%d (%d rejected)" % (len(saved), len(trials), rejected)
    return "pass"


def unfenced_cell(e):
    """The fence-off twin: whether a stale write landed (for the experiments meant to
    reproduce the bug), else its verdict; an elector fault (acted_past_grant) is named
    whatever the fence did."""
    trials = e["trials"]
    past = sum(1 for t in trials if any(v["property"] == "acted_past_grant" for v in t["violations"]))
    if e["reproduces"]:
        landed = sum(1 for t in trials if t["protocol_safety"] == "unsafe")
        cell = "reproduced %d/%d" % (landed, len(trials)) if landed else "not reproduced"
    else:
        cell = "pass" if e["verdict"] == "pass" else "**FAIL**"
    if past:
        cell += ", **acted_past_grant %d/%d**" % (past, len(trials))
    return cell


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    if n == 0:
        return None
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def row(node, what, run):
    if run is None:
        return "| `%s` | %s | | no conformance run committed |%s" % (node, what, " |" * (len(EXPERIMENTS) + 1))
    by = {e["name"]: e for e in run["experiments"]}
    cells = []
    for name in EXPERIMENTS:
        a, b = by.get(name), by.get(name + "-unfenced")
        cells.append("%s / %s" % (fenced_cell(a) if a else "n/a", unfenced_cell(b) if b else "n/a"))
    kill = by.get("clean-kill")
    fo = median([f for t in kill["trials"] for f in t["failover_ms"]]) if kill else None
    sweep = run.get("ttl_sweep") or {}
    pick = sweep.get("pick_ttl_ms")
    return "| [`%s`](../../reports/conformance/%s/conformance.md) | %s | %s, %s | %s | %s | %s |" % (
        node,
        node,
        what,
        run["backend"],
        run["commit"],
        " | ".join(cells),
        "%.0f ms" % fo if fo is not None else "",
        "%g s" % (pick / 1000) if pick else "",
    )


def table(root):
    lines = [
        BEGIN,
        "",
        "| node | library | backend, made on | "
        + " | ".join("%s (fenced / fence off)" % x for x in EXPERIMENTS)
        + " | clean-kill failover median | TTL knee |",
        "|---|---|---|" + "---|" * len(EXPERIMENTS) + "---:|---:|",
    ]
    for node, what in NODES:
        path = os.path.join(root, "reports", "conformance", node, "conformance.json")
        run = None
        if os.path.exists(path):
            try:
                with open(path) as f:
                    run = json.load(f)
            except (OSError, ValueError) as e:
                sys.stderr.write("library_gallery: %s: %s\n" % (path, e))
                sys.exit(2)
        lines.append(row(node, what, run))
    lines += ["", END]
    return "\n".join(lines)


def metric(c, name):
    for r in c["rows"]:
        if r["metric"] == name:
            return r
    return None


def judged(r):
    """A median row: simulated / live (error), and whether it holds (within its band or
    inside the live 90% interval)."""
    if r is None or r["sim"] is None or r["real"] is None:
        return "n/a"
    err = "%+.0f%%" % (100 * r["relative_error"]) if r.get("relative_error") is not None else ""
    holds = "holds" if r.get("regression_holds") else "**differs**"
    return "%.0f / %.0f (%s): %s" % (r["sim"], r["real"], err, holds)


def compare_table(root):
    lines = [
        CBEGIN,
        "",
        "| node | protocol, as the library | experiment | failover median, sim / live ms | vacancy election median, sim / live ms |",
        "|---|---|---|---|---|",
    ]
    base = os.path.join(root, "reports", "compare-libraries")
    for node, _ in NODES:
        first = True
        for name in EXPERIMENTS:
            path = os.path.join(base, "%s-%s" % (node, name), "compare.json")
            if not os.path.exists(path):
                continue
            try:
                with open(path) as f:
                    c = json.load(f)
            except (OSError, ValueError) as e:
                sys.stderr.write("library_gallery: %s: %s\n" % (path, e))
                sys.exit(2)
            sets = [w for w in c["command"].split() if "=" in w and not w.startswith("protocol=")]
            proto = [w.split("=", 1)[1] for w in c["command"].split() if w.startswith("protocol=")]
            setting = "`%s` %s" % (proto[0] if proto else "?", " ".join("`%s`" % w for w in sets))
            lines.append(
                "| %s | %s | [%s](../../reports/compare-libraries/%s-%s/compare.md) | %s | %s |"
                % (
                    "`%s`" % node if first else "",
                    setting if first else "the same",
                    name,
                    node,
                    name,
                    judged(metric(c, "failover median (ms)")),
                    judged(metric(c, "election latency median, from a vacancy (ms)")),
                )
            )
            first = False
    lines += ["", CEND]
    return "\n".join(lines)


def splice(text, begin, end, body, doc):
    if begin not in text or end not in text:
        sys.stderr.write("library_gallery: %s: no table markers (%s ... %s)\n" % (doc, begin, end))
        sys.exit(2)
    head, rest = text.split(begin, 1)
    return head + body + rest.split(end, 1)[1]


def main(argv):
    check = "--check" in argv
    root = "."
    if "--root" in argv:
        root = argv[argv.index("--root") + 1]
    doc = os.path.join(root, DOC)
    with open(doc) as f:
        text = f.read()
    new = splice(text, BEGIN, END, table(root), doc)
    new = splice(new, CBEGIN, CEND, compare_table(root), doc)
    if new == text:
        return 0
    if check:
        sys.stderr.write("library_gallery: %s: the table is not what the committed runs give; run python3 nightly/library_gallery.py\n" % doc)
        return 1
    with open(doc, "w") as f:
        f.write(new)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
