//! How long each call of a lease recipe takes against its live server on this machine,
//! for the simulated services' models: a measurement, not a check.
//!
//! `CARGO_ENCODED_RUSTFLAGS= cargo test --release -p baton-real --target-dir target/real --test call_latency -- --ignored --nocapture`
//!
//! Each call runs 60 times on a server Baton starts, through no proxy, one at a time;
//! the test prints each call's median and 90th percentile in ms. It asserts only that
//! every call answered.
#![cfg(not(madsim))]

use baton_protocols::zk_sequential::{CreateMode, ZkApi};
use baton_real::backend::server::Server;
use baton_real::backend::zk::client::RealZk;
use baton_real::backend::zk::server::ZkServer;
use std::time::Instant;

const REPS: usize = 60;

fn show(name: &str, mut ms: Vec<f64>) {
    ms.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let at = |q: f64| ms[((ms.len() as f64 * q).ceil() as usize).clamp(1, ms.len()) - 1];
    println!(
        "{name:<28} median {:>7.2} ms   p90 {:>7.2} ms   ({} calls)",
        at(0.5),
        at(0.9),
        ms.len()
    );
}

/// The zk-sequential recipe's calls on a live ZooKeeper (tickTime 1000 ms, a 3 s
/// session, as the committed scenarios ask), straight to the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run it by hand (see the module doc)"]
async fn zookeeper_calls() {
    zookeeper_calls_with((0, 0)).await;
}

/// The same through a Baton proxy adding the committed scenarios' network latency (1 to
/// 5 ms each way), as a node's calls go in real mode: each call's cost in round trips.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run it by hand (see the module doc)"]
async fn zookeeper_calls_through_a_proxy() {
    zookeeper_calls_with((1, 5)).await;
}

async fn zookeeper_calls_with(latency_ms: (u64, u64)) {
    let dir = tempfile::tempdir().unwrap();
    let kind = ZkServer {
        tick_time_ms: 1000,
        min_session_timeout_ms: 2000,
        max_session_timeout_ms: 20_000,
    };
    let server = Server::start(Box::new(kind), dir.path()).await.unwrap();
    baton_real::backend::zk::client::warm_up(&server.addr().to_string(), 20)
        .await
        .unwrap();
    let proxy = baton_real::supervisor::proxy::Proxy::start(server.addr())
        .await
        .unwrap();
    proxy.set_latency_ms(
        baton_real::supervisor::proxy::Flow::Both,
        latency_ms.0,
        latency_ms.1,
    );
    println!("latency each way: {latency_ms:?} ms");
    let zk = RealZk::new(&proxy.addr().to_string(), 2000);
    let (mut connect, mut parent, mut seq, mut children, mut data, mut ping, mut close) =
        (vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1000.0;
    for _ in 0..REPS {
        let t = Instant::now();
        let s = zk.create_session(3000).await.expect("a session");
        connect.push(ms(t));
        let t = Instant::now();
        let _ = zk
            .create(s.id, "/election", "", CreateMode::Persistent)
            .await;
        parent.push(ms(t));
        let t = Instant::now();
        let (path, _) = zk
            .create(s.id, "/election/n_", "n1", CreateMode::EphemeralSequential)
            .await
            .expect("a znode");
        seq.push(ms(t));
        let t = Instant::now();
        zk.get_children(s.id, "/election").await.expect("children");
        children.push(ms(t));
        let t = Instant::now();
        zk.get_data(s.id, &path).await.expect("data");
        data.push(ms(t));
        let t = Instant::now();
        zk.ping(s.id).await.expect("a ping");
        ping.push(ms(t));
        let t = Instant::now();
        zk.close_session(s.id).await.expect("closed");
        close.push(ms(t));
    }
    println!(
        "first round: connect {:.2} ms, parent {:.2} ms, sequential {:.2} ms, children {:.2} ms",
        connect[0], parent[0], seq[0], children[0]
    );
    show("create_session (connect)", connect);
    show("create parent (exists)", parent);
    show("create ephemeral sequential", seq);
    show("get_children", children);
    show("get_data", data);
    show("ping (sync)", ping);
    show("close_session", close);
}

/// The db-row recipe's statements on a live PostgreSQL at its defaults (`fsync` and
/// `synchronous_commit` on), straight to the server: an UPDATE that changes the row
/// commits, and waits for its WAL to reach the disk; one that changes nothing, and a
/// SELECT, write no WAL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run it by hand (see the module doc)"]
async fn postgres_statements() {
    use baton_protocols::db_row::DbApi;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(
        Box::new(baton_real::backend::pg::server::PgServer),
        dir.path(),
    )
    .await
    .unwrap();
    let conninfo = format!(
        "host={} port={} user={} dbname={}",
        server.addr().ip(),
        server.addr().port(),
        baton_real::backend::pg::server::DB_USER,
        baton_real::backend::pg::server::DB_NAME
    );
    baton_real::backend::pg::client::create_table(&conninfo)
        .await
        .unwrap();
    let db = baton_real::backend::pg::client::RealDb::new(
        &conninfo,
        2000,
        baton_real::RunClock::start(),
    );
    db.connect_now().await;
    let (mut won, mut held, mut renew, mut release, mut select) =
        (vec![], vec![], vec![], vec![], vec![]);
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1000.0;
    for _ in 0..REPS {
        let t = Instant::now();
        let g = db
            .acquire("n1", 3000, None)
            .await
            .unwrap()
            .expect("the row is free");
        won.push(ms(t));
        let t = Instant::now();
        assert_eq!(db.acquire("n2", 3000, None).await.unwrap(), None);
        held.push(ms(t));
        let t = Instant::now();
        assert!(db.renew("n1", g, 3000, None).await.unwrap());
        renew.push(ms(t));
        let t = Instant::now();
        db.select().await.unwrap();
        select.push(ms(t));
        let t = Instant::now();
        assert!(db.release("n1", g).await.unwrap());
        release.push(ms(t));
        // `expires_at = now()` is not yet `< now()` within the same microsecond.
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    // A node's first statement: on a connection just opened (and its statements
    // prepared), as a node that has booted runs its first acquire.
    let mut first = vec![];
    for i in 0..20 {
        let fresh = baton_real::backend::pg::client::RealDb::new(
            &conninfo,
            2000,
            baton_real::RunClock::start(),
        );
        fresh.connect_now().await;
        let t = Instant::now();
        let g = fresh
            .acquire(&format!("f{i}"), 3000, None)
            .await
            .unwrap()
            .expect("the row is free");
        first.push(ms(t));
        assert!(fresh.release(&format!("f{i}"), g).await.unwrap());
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    show("acquire, won, first", first);
    show("acquire, won (commits)", won);
    show("acquire, held (no change)", held);
    show("renew (commits)", renew);
    show("select", select);
    show("release (commits)", release);
}
