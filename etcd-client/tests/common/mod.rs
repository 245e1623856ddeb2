//! What the stage-2 tests share: a seeded world with Baton's 3-member etcd, the
//! members' endpoints, a log on simulated time, and the member kill.
#![allow(dead_code)]

use baton_etcd_client::{Client, ConnectOptions};
use baton_model::scenario::etcd_cluster::EtcdCluster;
use baton_sim::world::clock::global_now_us;
use baton_sim::world::net::Net;
use baton_sim::world::requests::RequestCounter;
use baton_sim::world::service::etcd_cluster::{self, member_addr, Cluster};
use baton_sim::world::timeline::Timeline;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// etcd's minimum TTL and the lessor's expiry check interval, as Baton's defaults.
pub const LESSOR: (u64, u64) = (2_000, 500);

/// What the nodes of a test saw, one line each, on simulated time.
pub type Log = Arc<Mutex<Vec<String>>>;

/// Logs `what` from `who` at the simulated time.
pub fn say(log: &Log, who: &str, what: String) {
    let at_ms = global_now_us() / 1000;
    log.lock().unwrap().push(format!("{at_ms:>6} {who} {what}"));
}

/// The members' client URLs, etcd-1 first.
pub fn endpoints() -> Vec<String> {
    (1..=3)
        .map(|i| format!("http://{}", member_addr(i)))
        .collect()
}

/// Sleeps `ms` of simulated time.
pub async fn sleep_ms(ms: u64) {
    madsim::time::sleep(Duration::from_millis(ms)).await;
}

/// A client from the calling node, after the node's 1 ms boot (the members bind at 0),
/// with a 2 s timeout per call.
pub async fn client() -> Client {
    sleep_ms(1).await;
    let opts = ConnectOptions::new().with_timeout(Duration::from_secs(2));
    Client::connect(endpoints(), Some(opts))
        .await
        .expect("connect sends nothing")
}

/// A client with no timeout: for a call that waits its turn (`campaign`, `lock`), which a
/// timeout would cancel, as tonic's deadline cancels a live one.
pub async fn patient_client() -> Client {
    sleep_ms(1).await;
    Client::connect(endpoints(), None)
        .await
        .expect("connect sends nothing")
}

/// Runs `body` in a fresh seeded world with a 3-member etcd; returns the service's
/// timeline as JSON lines.
pub fn in_world<F, Fut>(seed: u64, body: F) -> String
where
    F: FnOnce(Arc<Cluster>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    in_world_with(seed, LESSOR, body)
}

/// `in_world` with the lessor's minimum TTL and expiry check interval (ms) given.
pub fn in_world_with<F, Fut>(seed: u64, lessor: (u64, u64), body: F) -> String
where
    F: FnOnce(Arc<Cluster>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let runtime = Net::runtime(seed);
    runtime.block_on(async move {
        Net::current().set_config(baton_sim::world::link_config(1, 5, 0));
        let timeline = Timeline::new();
        let cluster = etcd_cluster::start(
            &madsim::runtime::Handle::current(),
            &EtcdCluster::default(),
            timeline.clone(),
            Arc::new(RequestCounter::default()),
            seed,
            lessor,
        );
        body(cluster).await;
        timeline
            .entries()
            .iter()
            .map(|e| serde_json::to_string(e).expect("entries serialise") + "\n")
            .collect()
    })
}

/// Runs `f` on a new simulated node `name` and returns what it returns.
pub async fn on_node<T, Fut>(name: &str, f: Fut) -> T
where
    T: Send + 'static,
    Fut: std::future::Future<Output = T> + Send + 'static,
{
    let handle = madsim::runtime::Handle::current();
    let node = handle.create_node().name(name).build();
    node.spawn(f).await.expect("the node's task ends")
}

/// Kills etcd member `name`, as the world's `kill` does.
pub fn kill_member(cluster: &Cluster, name: &str) {
    let m = cluster.by_name(name).expect("a member");
    madsim::runtime::Handle::current().kill(m.id());
    cluster.killed(name);
}
