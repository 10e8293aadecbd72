//! `http-agent-card`: the agent card (`GET /.well-known/agent-card.json`, `/.well-known/agent.json`) with Cache-Control, ETag and 304.
//! API Gateway HTTP API (v2) or Function URL events.

use a2a::lambda::http::{serve, Endpoint};
use a2a::lambda::{init_tracing, Deps};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    init_tracing();
    let deps = Deps::from_env(agent::CARD, None).await?;
    serve(deps.service, Endpoint::AgentCard).await
}
