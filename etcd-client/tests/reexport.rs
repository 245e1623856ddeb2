//! Which crate `etcd_client`'s names are: without `--cfg madsim` they must be etcd-client
//! 0.21's own (the production build is the real client); with it, Baton's.
//!
//! Methodology: a tiny use of the type paths an election names must compile in both
//! builds, and each type's path as rustc names it must be the expected crate's, so that
//! a re-export of the wrong side (or a stray `cfg`) fails here.

use baton_etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, Error, LeaseKeepAliveStream, LeaseKeeper,
    PutOptions, Txn, TxnOp,
};

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
