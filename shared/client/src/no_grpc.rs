//! A build without the gRPC transport (feature `client-grpc` off): the card's GRPC interfaces are
//! not chosen, so these are never reached; they say what is missing if they are.

use std::time::Duration;

use serde_json::Value;

use super::{Client, ClientError, ClientResult};
use a2a_protocol::types::StreamResponse;

/// No stream is ever opened.
pub(crate) enum Messages {}

fn missing() -> ClientError {
    ClientError::Card("this build has no gRPC transport (feature client-grpc)".into())
}

impl Client {
    pub(crate) async fn grpc_call(&self, _: &str, _: &Value) -> ClientResult<Value> {
        Err(missing())
    }

    pub(crate) async fn grpc_stream(&self, _: &str, _: &Value, _: Option<u64>) -> ClientResult<Messages> {
        Err(missing())
    }
}

impl Messages {
    pub(crate) async fn next(&mut self, _: Duration) -> ClientResult<Option<(Option<u64>, StreamResponse)>> {
        match *self {}
    }
}
