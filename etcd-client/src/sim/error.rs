//! etcd-client's `Error`, variant for variant, but `TransportError` (its payload is
//! tonic's transport, which the simulation has none of) and `OpenSsl` (a feature of
//! etcd-client's that is off by default). The simulation answers with the variants a
//! live client meets: `GRpcStatus` for what the server or the deadline said,
//! `LeaseKeepAliveError` for a keep-alive, `InvalidArgs` for bad input.

use std::fmt::{Display, Formatter};
use std::str::Utf8Error;

/// etcd-client's `Result`.
pub type Result<T> = std::result::Result<T, Error>;

/// The error type for the `etcd` client.
#[derive(Debug)]
pub enum Error {
    /// Invalid arguments
    InvalidArgs(String),
    /// Invalid URI
    InvalidUri(http::uri::InvalidUri),
    /// IO error
    IoError(std::io::Error),
    /// gRPC status
    GRpcStatus(tonic::Status),
    /// Watch error
    WatchError(String),
    /// Utf8Error
    Utf8Error(Utf8Error),
    /// Lease error
    LeaseKeepAliveError(String),
    /// Election error
    ElectError(String),
    /// Invalid header value
    InvalidMetadataValue(tonic::metadata::errors::InvalidMetadataValue),
    /// Endpoint error
    EndpointError(String),
    /// Endpoint set is not managed by this client
    EndpointsNotManaged,
    /// Internal error
    Internal(String),
}

impl Display for Error {
    fn fmt(&self, f: &mut Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::InvalidArgs(e) => write!(f, "invalid arguments: {e}"),
            Error::InvalidUri(e) => write!(f, "invalid uri: {e}"),
            Error::IoError(e) => write!(f, "io error: {e}"),
            Error::GRpcStatus(e) => write!(f, "grpc request error: {e}"),
            Error::WatchError(e) => write!(f, "watch error: {e}"),
            Error::Utf8Error(e) => write!(f, "utf8 error: {e}"),
            Error::LeaseKeepAliveError(e) => write!(f, "lease keep alive error: {e}"),
            Error::ElectError(e) => write!(f, "election error: {e}"),
            Error::InvalidMetadataValue(e) => write!(f, "invalid metadata value: {e}"),
            Error::EndpointError(e) => write!(f, "endpoint error: {e}"),
            Error::EndpointsNotManaged => write!(f, "endpoints not managed by this client"),
            Error::Internal(e) => write!(f, "internal error: {e}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<http::uri::InvalidUri> for Error {
    fn from(e: http::uri::InvalidUri) -> Self {
        Error::InvalidUri(e)
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::IoError(e)
    }
}

impl From<tonic::Status> for Error {
    fn from(e: tonic::Status) -> Self {
        Error::GRpcStatus(e)
    }
}

impl From<Utf8Error> for Error {
    fn from(e: Utf8Error) -> Self {
        Error::Utf8Error(e)
    }
}

impl From<tonic::metadata::errors::InvalidMetadataValue> for Error {
    fn from(e: tonic::metadata::errors::InvalidMetadataValue) -> Self {
        Error::InvalidMetadataValue(e)
    }
}
