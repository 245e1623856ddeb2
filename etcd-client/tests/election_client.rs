//! etcd's election API (`ElectionClient`) on Baton's simulated 3-member etcd, through
//! etcd-client 0.21's API only.
//!
//! Methodology: three nodes campaign on one election, each with its own 2 s lease kept
//! alive every 500 ms; a fourth observes it. The first to win proclaims a new value after
//! 1 s and resigns after 2 s; the second stops its keep-alives 1 s after it wins, so its
//! lease runs out; the third keeps leading. Each win and release is recorded with its
//! simulated time and the leader key's revision. The check: three wins with rising
//! revisions, each after the previous leader let go (its resign, or its lease's TTL
//! after its last keep-alive) and within a bound of it; the observer saw every leader and
//! the proclaimed value, in order; `leader` names the last winner. The same seed must
//! give the same bytes twice. Canary: campaigners that do not wait (a create-if-absent
//! put, then "leading") must be caught by the same check.
#![cfg(madsim)]

mod common;

use baton_etcd_client::{Client, Compare, CompareOp, PutOptions, ResignOptions, Txn, TxnOp};
use baton_etcd_client::{LeaderKey, ProclaimOptions};
use baton_sim::world::clock::global_now_us;
use common::{client, in_world, patient_client, sleep_ms};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const ELECTION: &str = "/e";
const TTL_S: i64 = 2;
const KEEPALIVE_MS: u64 = 500;

/// What happened, on simulated time (ms).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    Won { node: String, at_ms: i64, rev: i64 },
    Resigned { node: String, at_ms: i64 },
    StoppedKeepAlives { node: String, at_ms: i64 },
    Observed { value: String, rev: i64 },
    LeaderAtEnd(String),
}

type Steps = Arc<Mutex<Vec<Step>>>;

fn now_ms() -> i64 {
    (global_now_us() / 1000) as i64
}

/// Keeps `lease` alive every 500 ms while `on`.
async fn keep_alive(mut c: Client, lease: i64, on: Arc<AtomicBool>) {
    let Ok((mut keeper, mut stream)) = c.lease_keep_alive(lease).await else {
        return;
    };
    while on.load(Ordering::SeqCst) {
        if keeper.keep_alive().await.is_err() || stream.message().await.is_err() {
            return;
        }
        sleep_ms(KEEPALIVE_MS).await;
    }
}

/// A campaign that does not wait: the canary's broken election.
async fn campaign_without_waiting(c: &mut Client, me: &str, lease: i64) -> LeaderKey {
    let key = format!("{ELECTION}/{lease:x}");
    let put = TxnOp::put(key.clone(), me, Some(PutOptions::new().with_lease(lease)));
    let txn = Txn::new()
        .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
        .and_then([put]);
    let r = c.txn(txn).await.expect("txn");
    let rev = r.header().unwrap().revision();
    LeaderKey::new()
        .with_name(ELECTION)
        .with_key(key)
        .with_rev(rev)
        .with_lease(lease)
}

/// One campaigner: campaign, then play the part its place in the order of wins gives.
async fn campaigner(me: String, steps: Steps, wins: Arc<AtomicUsize>, wait: bool) {
    let mut c = patient_client().await;
    let lease = c.lease_grant(TTL_S, None).await.expect("grant").id();
    let on = Arc::new(AtomicBool::new(true));
    madsim::task::spawn(keep_alive(c.clone(), lease, on.clone()));
    let leader = if wait {
        let r = c
            .campaign(ELECTION, me.as_str(), lease)
            .await
            .expect("campaign");
        r.leader().cloned().expect("a leader key")
    } else {
        campaign_without_waiting(&mut c, &me, lease).await
    };
    let (at_ms, rev) = (now_ms(), leader.rev());
    steps.lock().unwrap().push(Step::Won {
        node: me.clone(),
        at_ms,
        rev,
    });
    match wins.fetch_add(1, Ordering::SeqCst) {
        0 => {
            sleep_ms(1_000).await;
            let opts = ProclaimOptions::new().with_leader(leader.clone());
            c.proclaim(format!("{me}-bis"), Some(opts))
                .await
                .expect("proclaim");
            sleep_ms(1_000).await;
            let at_ms = now_ms();
            steps
                .lock()
                .unwrap()
                .push(Step::Resigned { node: me, at_ms });
            let opts = ResignOptions::new().with_leader(leader);
            c.resign(Some(opts)).await.expect("resign");
        }
        1 => {
            sleep_ms(1_000).await;
            on.store(false, Ordering::SeqCst);
            let at_ms = now_ms();
            steps
                .lock()
                .unwrap()
                .push(Step::StoppedKeepAlives { node: me, at_ms });
        }
        _ => {}
    }
}

async fn observer(steps: Steps) {
    let mut c = client().await;
    let Ok(mut stream) = c.observe(ELECTION).await else {
        return;
    };
    while let Ok(Some(r)) = stream.message().await {
        let kv = r.kv().expect("a leader's key");
        steps.lock().unwrap().push(Step::Observed {
            value: String::from_utf8_lossy(kv.value()).into_owned(),
            rev: r.header().map_or(0, |h| h.revision()),
        });
    }
}

/// The election under one seed: its steps and the service's timeline.
fn election(seed: u64, wait: bool) -> (Vec<Step>, String) {
    let steps: Steps = Arc::default();
    let s = steps.clone();
    let timeline = in_world(seed, move |_| async move {
        let handle = madsim::runtime::Handle::current();
        let wins = Arc::new(AtomicUsize::new(0));
        let obs = s.clone();
        handle.create_node().name("n0").build().spawn(observer(obs));
        for i in 1..=3 {
            let (me, s, w) = (format!("n{i}"), s.clone(), wins.clone());
            let node = handle.create_node().name(me.as_str()).build();
            node.spawn(campaigner(me, s, w, wait));
        }
        sleep_ms(9_000).await;
        let end = handle.create_node().name("n9").build().spawn(async {
            let mut c = client().await;
            let r = c.leader(ELECTION).await.expect("a leader");
            String::from_utf8_lossy(r.kv().unwrap().value()).into_owned()
        });
        let last = end.await.expect("the query ends");
        s.lock().unwrap().push(Step::LeaderAtEnd(last));
    });
    let out = steps.lock().unwrap().clone();
    (out, timeline)
}

/// Every way the steps break the election's promises (see the methodology).
fn violations(steps: &[Step]) -> Vec<String> {
    let mut out = vec![];
    let wins: Vec<(&String, i64, i64)> = steps
        .iter()
        .filter_map(|s| match s {
            Step::Won { node, at_ms, rev } => Some((node, *at_ms, *rev)),
            _ => None,
        })
        .collect();
    let releases: Vec<i64> = steps
        .iter()
        .filter_map(|s| match s {
            Step::Resigned { at_ms, .. } => Some(*at_ms),
            // The lease was renewed at most one keep-alive period before.
            Step::StoppedKeepAlives { at_ms, .. } => {
                Some(at_ms - KEEPALIVE_MS as i64 + TTL_S * 1000)
            }
            _ => None,
        })
        .collect();
    if wins.len() != 3 || releases.len() != 2 {
        return vec![format!("not three wins and two releases: {steps:?}")];
    }
    for i in 0..2 {
        let (next, prev) = (wins[i + 1], wins[i]);
        if next.2 <= prev.2 {
            out.push(format!("revision did not rise: {prev:?} then {next:?}"));
        }
        if next.1 < releases[i] {
            out.push(format!(
                "{next:?} won before {prev:?} let go at {}",
                releases[i]
            ));
        }
        if next.1 > releases[i] + 2_500 {
            out.push(format!(
                "{next:?} won long after {prev:?} let go at {}",
                releases[i]
            ));
        }
    }
    let observed: Vec<&Step> = steps
        .iter()
        .filter(|s| matches!(s, Step::Observed { .. }))
        .collect();
    let values: Vec<String> = observed
        .iter()
        .filter_map(|s| match s {
            Step::Observed { value, .. } => Some(value.clone()),
            _ => None,
        })
        .collect();
    let want = [
        wins[0].0.clone(),
        format!("{}-bis", wins[0].0),
        wins[1].0.clone(),
        wins[2].0.clone(),
    ];
    if values != want {
        out.push(format!("observed {values:?}, wanted {want:?}"));
    }
    if steps.last() != Some(&Step::LeaderAtEnd(wins[2].0.clone())) {
        out.push(format!("leader at the end: {:?}", steps.last()));
    }
    out
}

#[test]
fn campaigners_wait_their_turn_and_observe_sees_each_leader() {
    let (steps, timeline) = election(5, true);
    let v = violations(&steps);
    assert!(v.is_empty(), "{v:#?}\n{steps:#?}");
    let again = election(5, true);
    assert_eq!(again.0, steps, "the same seed gives the same steps");
    assert_eq!(again.1, timeline, "the same seed gives the same timeline");
}

#[test]
fn canary_an_election_that_does_not_wait_is_caught() {
    let (steps, _) = election(5, false);
    let v = violations(&steps);
    assert!(
        v.iter().any(|v| v.contains("won before")),
        "the broken election is caught: {v:#?}\n{steps:#?}"
    );
}

/// n1 leads; n2 campaigns from 100 ms through a client with `timeout` (or none), given
/// 3 s: how its campaign ended, and how many keys the election holds at 3.5 s.
fn campaign_under(seed: u64, timeout: Option<std::time::Duration>) -> (String, i64) {
    let out = Arc::new(Mutex::new((String::new(), 0)));
    let o = out.clone();
    in_world(seed, move |_| async move {
        let handle = madsim::runtime::Handle::current();
        handle.create_node().name("n1").build().spawn(async {
            let mut c = patient_client().await;
            let lease = c.lease_grant(10, None).await.expect("grant").id();
            c.campaign(ELECTION, "n1", lease).await.expect("n1 leads");
        });
        let n2 = handle.create_node().name("n2").build().spawn(async move {
            sleep_ms(100).await;
            let opts = timeout.map(|t| baton_etcd_client::ConnectOptions::new().with_timeout(t));
            let mut c = Client::connect(common::endpoints(), opts)
                .await
                .expect("connect");
            let lease = c.lease_grant(10, None).await.expect("grant").id();
            let waited = std::time::Duration::from_secs(3);
            match madsim::time::timeout(waited, c.campaign(ELECTION, "n2", lease)).await {
                Ok(Ok(_)) => "won".to_string(),
                Ok(Err(baton_etcd_client::Error::GRpcStatus(s))) => format!("{:?}", s.code()),
                Ok(Err(e)) => format!("{e}"),
                Err(_) => "still waiting".into(),
            }
        });
        let ended = n2.await.expect("n2 ends");
        sleep_ms(400).await;
        let count = handle.create_node().name("n9").build().spawn(async {
            let mut c = client().await;
            let all = baton_etcd_client::GetOptions::new()
                .with_prefix()
                .with_count_only();
            c.get(format!("{ELECTION}/"), Some(all))
                .await
                .expect("get")
                .count()
        });
        *o.lock().unwrap() = (ended, count.await.expect("the count ends"));
    });
    let r = out.lock().unwrap().clone();
    r
}

/// Methodology: a campaign that must wait longer than its client's timeout fails with
/// `Cancelled` and its key is deleted behind it, as etcd's server deletes it when the
/// call's context ends (the election holds only the leader's key). Control: without a
/// timeout the same campaign is still waiting, its key in place, so the count can fail.
#[test]
fn a_campaign_past_its_deadline_is_cancelled_and_its_key_taken_back() {
    let timed = campaign_under(6, Some(std::time::Duration::from_secs(1)));
    assert_eq!(timed, ("Cancelled".to_string(), 1));
    let patient = campaign_under(6, None);
    assert_eq!(patient, ("still waiting".to_string(), 2));
}
