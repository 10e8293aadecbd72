//! `http-jsonrpc`: the JSON-RPC endpoint: every method, 1.0 and 0.3 (`POST /`); JSON-RPC routes by body, so one function serves them all.
//! API Gateway HTTP API (v2) or Function URL events.

use a2a::lambda::http::{serve, Endpoint};
use a2a::lambda::{init_tracing, Deps};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    init_tracing();
    let deps = Deps::from_env(agent::CARD, None).await?;
    serve(deps.service, Endpoint::JsonRpc).await
}
