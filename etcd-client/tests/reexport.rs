//! Which crate `etcd_client`'s names are: without `--cfg madsim` they must be etcd-client
//! 0.21's own (the production build is the real client); with it, Baton's.
//!
//! Methodology: a tiny use of the type paths an election names must compile in both
//! builds, and each type's path as rustc names it must be the expected crate's, so that
//! a re-export of the wrong side (or a stray `cfg`) fails here.

use baton_etcd_client::{
    CampaignResponse, ElectionClient, LeaderKey, LeaderResponse, ObserveStream, ProclaimOptions,
    ProclaimResponse, ResignOptions, ResignResponse,
};
use baton_etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, Error, Event, EventType, LeaseKeepAliveStream,
    LeaseKeeper, PutOptions, Txn, TxnOp, WatchClient, WatchFilterType, WatchOptions,
    WatchRequestSender, WatchResponse, WatchResponseStream, WatchStream,
};
use baton_etcd_client::{LockClient, LockOptions, LockResponse, UnlockResponse};

/// The acquire every election writes, built but never sent.
#[allow(dead_code)]
async fn campaign(client: &mut Client, lease: i64) -> Result<bool, Error> {
    let txn = Txn::new()
        .when([Compare::create_revision("k", CompareOp::Equal, 0)])
        .and_then([TxnOp::put(
            "k",
            "me",
            Some(PutOptions::new().with_lease(lease)),
        )]);
    let _options = ConnectOptions::new().with_timeout(std::time::Duration::from_secs(1));
    let _pair: Option<(LeaseKeeper, LeaseKeepAliveStream)> = None;
    Ok(client.txn(txn).await?.succeeded())
}

/// Every watch name and method the simulation has, used with the types it gives.
#[allow(dead_code)]
async fn watch(client: &mut Client) -> Result<(), Error> {
    let opts = WatchOptions::new()
        .with_key("k")
        .with_range("z")
        .with_from_key()
        .with_prefix()
        .with_all_keys()
        .with_start_revision(1)
        .with_progress_notify()
        .with_filters([WatchFilterType::NoPut, WatchFilterType::NoDelete])
        .with_prev_key()
        .with_watch_id(7)
        .with_fragment();
    let mut watches: WatchClient = client.watch_client().max_decoding_message_size(1 << 20);
    let mut stream: WatchStream = watches.watch("k", Some(opts)).await?;
    stream.watch("k2", None).await?;
    stream.cancel(1).await?;
    stream.request_progress().await?;
    let message: Option<WatchResponse> = stream.message().await?;
    if let Some(mut r) = message {
        let _ = (r.header(), r.watch_id(), r.created(), r.canceled());
        let _ = (r.compact_revision(), r.cancel_reason().len());
        let _ = r.take_header();
        let events: &[Event] = r.events();
        for e in events {
            let t: EventType = e.event_type();
            let _ = (
                t == EventType::Put,
                t == EventType::Delete,
                e.kv(),
                e.prev_kv(),
            );
            let _ = (t.as_str_name(), EventType::from_str_name("PUT"));
        }
    }
    let (mut sender, mut responses): (WatchRequestSender, WatchResponseStream) = stream.split();
    sender.watch("k3", None).await?;
    sender.cancel(0).await?;
    sender.request_progress().await?;
    let _: Option<WatchResponse> = responses.message().await?;
    let _: WatchStream = client.watch("k", None).await?;
    Ok(())
}

/// Every election name and method the simulation has, used with the types it gives.
#[allow(dead_code)]
async fn election(client: &mut Client) -> Result<(), Error> {
    let mut elections: ElectionClient = client.election_client();
    let mut won: CampaignResponse = elections.campaign("e", "me", 7).await?;
    let _ = (won.header().is_some(), won.leader().map(|l| l.rev()));
    let _ = won.take_header();
    let leader: LeaderKey = won.take_leader().unwrap_or_default();
    let _ = (
        leader.name(),
        leader.name_str(),
        leader.key(),
        leader.key_str(),
    );
    let _ = (leader.rev(), leader.lease());
    // SAFETY: never run; only the signatures are checked.
    let _ = unsafe { (leader.name_str_unchecked(), leader.key_str_unchecked()) };
    let built = LeaderKey::new()
        .with_name("e")
        .with_key("e/7")
        .with_rev(2)
        .with_lease(7);
    let proclaim = ProclaimOptions::new().with_leader(built.clone());
    let mut p: ProclaimResponse = elections.proclaim("v", Some(proclaim)).await?;
    let _ = (p.header().is_some(), p.take_header());
    let mut l: LeaderResponse = elections.leader("e").await?;
    let _ = (l.header().is_some(), l.kv().is_some());
    let _ = (l.take_kv(), l.take_header());
    let mut stream: ObserveStream = elections.observe("e").await?;
    let _: Option<LeaderResponse> = stream.message().await?;
    let resign = ResignOptions::new().with_leader(built);
    let mut r: ResignResponse = elections.resign(Some(resign)).await?;
    let _ = (r.header().is_some(), r.take_header());
    let _: CampaignResponse = client.campaign("e", "me", 7).await?;
    let _: ProclaimResponse = client.proclaim("v", None).await?;
    let _: LeaderResponse = client.leader("e").await?;
    let _: ObserveStream = client.observe("e").await?;
    let _: ResignResponse = client.resign(None).await?;
    Ok(())
}

/// Every lock name and method the simulation has, used with the types it gives.
#[allow(dead_code)]
async fn lock(client: &mut Client) -> Result<(), Error> {
    let mut locks: LockClient = client.lock_client();
    let options = LockOptions::new().with_lease(7);
    let mut held: LockResponse = locks.lock("l", Some(options)).await?;
    let key: Vec<u8> = held.key().to_vec();
    let _ = held.header().is_some();
    let _ = held.take_header();
    let mut freed: UnlockResponse = locks.unlock(key).await?;
    let _ = (freed.header().is_some(), freed.take_header());
    let _: LockResponse = client.lock("l", None).await?;
    let _: UnlockResponse = client.unlock("l/7").await?;
    Ok(())
}

#[test]
fn the_names_are_the_expected_crates() {
    let client = std::any::type_name::<Client>();
    let error = std::any::type_name::<Error>();
    if cfg!(madsim) {
        assert!(client.starts_with("baton_etcd_client::sim::"), "{client}");
        assert!(error.starts_with("baton_etcd_client::sim::"), "{error}");
    } else {
        assert_eq!(client, "etcd_client::client::Client");
        assert_eq!(error, "etcd_client::error::Error");
    }
}
