//! `sqs-push-delivery`: POSTs each event to its webhook (Authorization from the config,
//! A2A-Notification-Token, 10 s timeout); a failure is retried with exponential backoff and jitter
//! through the message's visibility, and lands in the dead-letter queue after the queue's
//! maxReceiveCount. Webhooks on private, loopback, link-local or metadata addresses are refused
//! unless allow-listed (WEBHOOK_ALLOW), checked again at delivery time.

use std::sync::Arc;

use a2a::lambda::sqs::serve_pushes;
use a2a::lambda::{init_tracing, Deps};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    init_tracing();
    let deps = Deps::from_env(agent::CARD, None).await?;
    serve_pushes(Arc::new(deps)).await
}
