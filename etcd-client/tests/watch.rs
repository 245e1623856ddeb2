//! Watches on Baton's simulated 3-member etcd, through etcd-client 0.21's API only.
//!
//! Methodology: one node writes a known sequence under `/w/` (two puts, a delete, a key
//! outside the prefix, a key on a lease left to expire, a put after a cancel) while one
//! stream watches the prefix (with previous values) and the key `/w/a`; a second stream
//! then watches the prefix from the first write's revision, and a third, after enough
//! writes to push the first revisions out of the member's history, from revision 2. The
//! events each watch must see are derived from the writes' own response revisions; the
//! check compares them with what came, in order, once each. The same seed must give the
//! same bytes twice. Canaries: the same check must flag the transcript of a watch that
//! drops deletes, of one that starts late, and of a cancel that does not stop events.
//! A third watch on the first stream filters puts out (`NoPut`): it must see only the
//! deletes, and the same check must flag a put let through. A second test kills the
//! member a stream is on: the stream must break as a gRPC stream does (an `Unavailable`
//! error, then the end), and must not when another member dies.
#![cfg(madsim)]

mod common;

use baton_etcd_client::{
    Client, Error, EventType, PutOptions, Txn, TxnOp, WatchFilterType, WatchOptions, WatchResponse,
    WatchStream,
};
use common::{client, in_world, kill_member, on_node, sleep_ms};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One event as a watch reported it: (stream and watch, kind, key, value, mod revision,
/// previous value).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Seen {
    watch: String,
    delete: bool,
    key: String,
    value: String,
    mod_rev: i64,
    prev: Option<String>,
}

/// Everything a run saw: each response as a line, and the events.
#[derive(Default, Debug, PartialEq, Eq)]
struct Run {
    lines: Vec<String>,
    events: Vec<Seen>,
    /// The revisions of the writes, in order: /w/a, /w/b, del /w/a, /w/l, /w/a again.
    revs: Vec<i64>,
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

impl Run {
    fn take(&mut self, stream: &str, r: &WatchResponse) {
        let rev = r.header().map_or(0, |h| h.revision());
        let watch = format!("{stream}/w{}", r.watch_id());
        let mut line = format!("{watch} rev={rev}");
        for (flag, word) in [(r.created(), "created"), (r.canceled(), "canceled")] {
            if flag {
                line += &format!(" {word}");
            }
        }
        if r.compact_revision() != 0 {
            line += &format!(" compact={}", r.compact_revision());
        }
        for e in r.events() {
            let kv = e.kv().expect("an event has its key");
            let seen = Seen {
                watch: watch.clone(),
                delete: e.event_type() == EventType::Delete,
                key: text(kv.key()),
                value: text(kv.value()),
                mod_rev: kv.mod_revision(),
                prev: e.prev_kv().map(|p| text(p.value())),
            };
            line += &format!(" | {seen:?}");
            self.events.push(seen);
        }
        self.lines.push(line);
    }
}

/// The next message of `s` within 10 s of simulated time.
async fn next(s: &mut WatchStream) -> Option<WatchResponse> {
    match madsim::time::timeout(Duration::from_secs(10), s.message()).await {
        Ok(Ok(r)) => r,
        _ => None,
    }
}

/// Takes the messages of `s` until one holds an event at `until_rev` or none comes, and
/// then those that follow within a second.
async fn drain(run: &Arc<Mutex<Run>>, name: &str, s: &mut WatchStream, until_rev: i64) {
    while let Some(r) = next(s).await {
        run.lock().unwrap().take(name, &r);
        if r.events()
            .iter()
            .any(|e| e.kv().unwrap().mod_revision() >= until_rev)
        {
            break;
        }
    }
    while let Ok(Ok(Some(r))) = madsim::time::timeout(Duration::from_secs(1), s.message()).await {
        run.lock().unwrap().take(name, &r);
    }
}

async fn put(c: &mut Client, k: &str, v: &str, opts: Option<PutOptions>) -> i64 {
    let r = c.put(k, v, opts).await.expect("put");
    r.header().unwrap().revision()
}

/// The writer and the watches of the methodology, on one node.
async fn watch_script(run: Arc<Mutex<Run>>) {
    let mut c = client().await;
    let prefix = WatchOptions::new().with_prefix().with_prev_key();
    let mut s1 = c.watch("/w/", Some(prefix)).await.expect("watch");
    s1.watch("/w/a", None).await.expect("a second watch");
    let deletes_only = WatchOptions::new()
        .with_prefix()
        .with_filters([WatchFilterType::NoPut]);
    s1.watch("/w/", Some(deletes_only))
        .await
        .expect("a third watch");
    for _ in 0..3 {
        let r = next(&mut s1).await.expect("created");
        run.lock().unwrap().take("s1", &r);
    }
    let mut revs = vec![put(&mut c, "/w/a", "1", None).await];
    revs.push(put(&mut c, "/w/b", "2", None).await);
    put(&mut c, "/x", "9", None).await;
    let del = c.delete("/w/a", None).await.expect("delete");
    revs.push(del.header().unwrap().revision());
    let lease = c.lease_grant(2, None).await.expect("grant").id();
    let with_lease = Some(PutOptions::new().with_lease(lease));
    revs.push(put(&mut c, "/w/l", "L", with_lease).await);
    // The lease runs out (2 s, a 500 ms expiry check): its key's delete is an event.
    sleep_ms(4_000).await;
    s1.cancel(1).await.expect("cancel");
    s1.request_progress().await.expect("progress");
    revs.push(put(&mut c, "/w/a", "again", None).await);
    drain(&run, "s1", &mut s1, revs[4]).await;
    let from_past = WatchOptions::new()
        .with_prefix()
        .with_start_revision(revs[0]);
    let mut s2 = c.watch("/w/", Some(from_past)).await.expect("watch");
    drain(&run, "s2", &mut s2, revs[4]).await;
    // 101 txns of 100 puts: more events than the history keeps.
    for t in 0..101 {
        let ops: Vec<TxnOp> = (0..100)
            .map(|i| TxnOp::put(format!("/big/{t}/{i}"), "x", None))
            .collect();
        c.txn(Txn::new().and_then(ops)).await.expect("txn");
    }
    let old = WatchOptions::new().with_prefix().with_start_revision(2);
    let mut s3 = c.watch("/w/", Some(old)).await.expect("watch");
    for _ in 0..2 {
        let r = next(&mut s3).await.expect("created, then canceled");
        run.lock().unwrap().take("s3", &r);
    }
    run.lock().unwrap().revs = revs;
}

fn watch_run(seed: u64) -> (Run, String) {
    let run = Arc::new(Mutex::new(Run::default()));
    let r = run.clone();
    let timeline = in_world(seed, move |_| on_node("n1", watch_script(r)));
    let out = std::mem::take(&mut *run.lock().unwrap());
    (out, timeline)
}

fn ev(watch: &str, delete: bool, key: &str, value: &str, rev: i64, prev: Option<&str>) -> Seen {
    Seen {
        watch: watch.into(),
        delete,
        key: key.into(),
        value: value.into(),
        mod_rev: rev,
        prev: prev.map(Into::into),
    }
}

/// What each watch must have seen, from the writes' revisions: the lease's delete is the
/// next revision after its put, as nothing else writes.
fn expected(revs: &[i64]) -> Vec<Seen> {
    let [a, b, del, l, again] = revs else {
        return vec![];
    };
    let p = |s: &'static str| Some(s);
    let mut want = vec![
        ev("s1/w0", false, "/w/a", "1", *a, None),
        ev("s1/w1", false, "/w/a", "1", *a, None),
        ev("s1/w0", false, "/w/b", "2", *b, None),
        ev("s1/w0", true, "/w/a", "", *del, p("1")),
        ev("s1/w1", true, "/w/a", "", *del, None),
        ev("s1/w2", true, "/w/a", "", *del, None),
        ev("s1/w0", false, "/w/l", "L", *l, None),
        ev("s1/w0", true, "/w/l", "", l + 1, p("L")),
        ev("s1/w2", true, "/w/l", "", l + 1, None),
        ev("s1/w0", false, "/w/a", "again", *again, None),
    ];
    let past: Vec<Seen> = want
        .iter()
        .filter(|e| e.watch == "s1/w0")
        .map(|e| Seen {
            watch: "s2/w0".into(),
            prev: None,
            ..e.clone()
        })
        .collect();
    want.extend(past);
    want
}

/// Every way the run's events differ from the expected ones, per watch, in order.
fn violations(run: &Run) -> Vec<String> {
    let want = expected(&run.revs);
    let mut out = vec![];
    for w in ["s1/w0", "s1/w1", "s1/w2", "s2/w0"] {
        let got: Vec<&Seen> = run.events.iter().filter(|e| e.watch == w).collect();
        let exp: Vec<&Seen> = want.iter().filter(|e| e.watch == w).collect();
        if got != exp {
            out.push(format!("{w}: saw {got:?}\nwanted {exp:?}"));
        }
    }
    let s3 = run.lines.iter().filter(|l| l.starts_with("s3/")).count();
    let compacted = run
        .lines
        .iter()
        .any(|l| l.starts_with("s3/w0") && l.contains("canceled compact="));
    if s3 != 2 || !compacted {
        out.push(format!(
            "s3: not created then canceled as compacted: {:?}",
            run.lines
        ));
    }
    if run.revs.len() == 5 && run.revs[4] != run.revs[3] + 2 {
        out.push(format!(
            "the lease's expiry was not one revision: {:?}",
            run.revs
        ));
    }
    out
}

#[test]
fn watches_see_every_event_in_order_once() {
    let (run, timeline) = watch_run(11);
    let v = violations(&run);
    assert!(v.is_empty(), "{v:#?}\n{:#?}", run.lines);
    assert!(
        run.lines
            .iter()
            .any(|l| l.starts_with("s1/w1") && l.contains("canceled")),
        "the cancel was answered: {:#?}",
        run.lines
    );
    assert!(
        run.lines.iter().any(|l| l.starts_with("s1/w-1")),
        "the progress request was answered: {:#?}",
        run.lines
    );
    let again = watch_run(11);
    assert_eq!(again.0, run, "the same seed gives the same watches");
    assert_eq!(again.1, timeline, "the same seed gives the same timeline");
}

#[test]
fn canary_broken_watches_are_caught() {
    let (run, _) = watch_run(11);
    let mut no_deletes = Run {
        events: run.events.clone(),
        lines: run.lines.clone(),
        revs: run.revs.clone(),
    };
    no_deletes.events.retain(|e| !e.delete);
    assert!(
        !violations(&no_deletes).is_empty(),
        "a watch that drops deletes"
    );
    let mut late = Run {
        events: run.events.clone(),
        lines: run.lines.clone(),
        revs: run.revs.clone(),
    };
    late.events
        .retain(|e| e.watch != "s2/w0" || e.mod_rev > run.revs[0]);
    assert!(!violations(&late).is_empty(), "a watch that starts late");
    let mut uncanceled = Run {
        events: run.events.clone(),
        lines: run.lines.clone(),
        revs: run.revs.clone(),
    };
    let after = ev("s1/w1", false, "/w/a", "again", run.revs[4], None);
    uncanceled.events.push(after);
    assert!(
        !violations(&uncanceled).is_empty(),
        "a cancel that does not stop"
    );
    let mut unfiltered = Run {
        events: run.events.clone(),
        lines: run.lines.clone(),
        revs: run.revs.clone(),
    };
    let put = ev("s1/w2", false, "/w/b", "2", run.revs[1], None);
    unfiltered.events.push(put);
    assert!(
        !violations(&unfiltered).is_empty(),
        "a filter that lets a put through"
    );
}

/// A stream on etcd-1 while member `victim` is killed at 1 s: what its next messages
/// were (after a put at 2 s through etcd-2) and whether a send on it still worked.
fn stream_when_killed(seed: u64, victim: &'static str) -> Vec<String> {
    let out = Arc::new(Mutex::new(vec![]));
    let o = out.clone();
    in_world(seed, move |cluster| async move {
        let node = on_node("n1", async move {
            let mut c = client().await;
            let mut s = c.watch("/k", None).await.expect("watch");
            let created = next(&mut s).await.map(|r| r.created());
            let mut seen = vec![format!("created {created:?}")];
            sleep_ms(2_000).await;
            let writer = Client::connect([common::endpoints()[1].clone()], None).await;
            let _ = writer.expect("connect").put("/k", "v", None).await;
            for _ in 0..2 {
                let m = madsim::time::timeout(Duration::from_secs(10), s.message()).await;
                seen.push(match m {
                    Ok(Ok(Some(r))) => format!("events {}", r.events().len()),
                    Ok(Ok(None)) => "ended".into(),
                    Ok(Err(Error::GRpcStatus(st))) => format!("error {:?}", st.code()),
                    Ok(Err(e)) => format!("other error {e}"),
                    Err(_) => "silent".into(),
                });
            }
            seen.push(format!("send ok {}", s.request_progress().await.is_ok()));
            seen
        });
        let killer = async {
            sleep_ms(1_000).await;
            kill_member(&cluster, victim);
        };
        let (seen, ()) = futures::join!(node, killer);
        *o.lock().unwrap() = seen;
    });
    let seen = out.lock().unwrap().clone();
    seen
}

#[test]
fn a_stream_breaks_when_its_member_dies() {
    let seen = stream_when_killed(3, "etcd-1");
    assert_eq!(
        seen,
        [
            "created Some(true)",
            "error Unavailable",
            "ended",
            "send ok false"
        ],
        "the stream on the killed member"
    );
    // Control: another member's death leaves the stream working.
    let seen = stream_when_killed(3, "etcd-3");
    assert_eq!(seen[..2], ["created Some(true)", "events 1"], "{seen:?}");
}

/// A stream on etcd-1 whose node is cut off from etcd-1 from 1 s to 6 s while another
/// node puts `/k` twice (at 2 s and 3 s): what the stream yielded, and when (ms).
fn stream_when_cut(seed: u64) -> Vec<(i64, String)> {
    let out = Arc::new(Mutex::new(vec![]));
    let o = out.clone();
    in_world(seed, move |cluster| async move {
        let handle = madsim::runtime::Handle::current();
        let watcher = handle.create_node().name("n1").build();
        let n1 = watcher.id();
        let seen = watcher.spawn(async move {
            let mut c = client().await;
            let mut s = c.watch("/k", None).await.expect("watch");
            let mut seen = vec![];
            while let Ok(Ok(Some(r))) =
                madsim::time::timeout(Duration::from_secs(12), s.message()).await
            {
                let at_ms = (baton_sim::world::clock::global_now_us() / 1000) as i64;
                for e in r.events() {
                    let kv = e.kv().unwrap();
                    seen.push((
                        at_ms,
                        format!("{} @{}", text(kv.value()), kv.mod_revision()),
                    ));
                }
                if r.created() {
                    seen.push((at_ms, "created".into()));
                }
            }
            seen
        });
        let writer = on_node("n2", async {
            sleep_ms(2_000).await;
            let mut c = client().await;
            put(&mut c, "/k", "one", None).await;
            sleep_ms(1_000).await;
            put(&mut c, "/k", "two", None).await;
        });
        let cut = async {
            sleep_ms(1_000).await;
            let e1 = cluster.by_name("etcd-1").expect("a member").id();
            let net = baton_sim::world::net::Net::current();
            net.cut(n1, e1);
            net.cut(e1, n1);
            sleep_ms(5_000).await;
            net.mend(n1, e1);
            net.mend(e1, n1);
        };
        let (seen, (), ()) = futures::join!(seen, writer, cut);
        *o.lock().unwrap() = seen.expect("the watcher ends");
    });
    let seen = out.lock().unwrap().clone();
    seen
}

/// Methodology: a cut between a stream's node and its member is silence, not an error
/// (an HTTP/2 stream with no keep-alive notices nothing); after the heal the events held
/// back arrive in order, once each, within a poll's wait and slack (7 s) of it.
/// Canary: the same check on the transcript with an event repeated, and with the events
/// delivered during the cut, must fail.
#[test]
fn a_cut_stream_is_silent_then_catches_up_in_order() {
    let seen = stream_when_cut(4);
    let check = |seen: &[(i64, String)]| -> Result<(), String> {
        let values: Vec<&str> = seen
            .iter()
            .map(|(_, v)| v.split(' ').next().unwrap())
            .collect();
        if values != ["created", "one", "two"] {
            return Err(format!("saw {seen:?}"));
        }
        if seen[1..].iter().any(|(at, _)| *at < 6_000 || *at > 13_000) {
            return Err(format!("not after the heal, or too late: {seen:?}"));
        }
        Ok(())
    };
    check(&seen).expect("silent, then in order once each");
    let mut twice = seen.clone();
    twice.push(seen[2].clone());
    assert!(check(&twice).is_err(), "a repeated event is caught");
    let mut early = seen.clone();
    early[1].0 = 2_100;
    assert!(check(&early).is_err(), "an event through the cut is caught");
    assert_eq!(
        stream_when_cut(4),
        seen,
        "the same seed gives the same stream"
    );
}
