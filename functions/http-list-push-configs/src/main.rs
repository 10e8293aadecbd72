//! `http-list-push-configs`: ListTaskPushNotificationConfigs (`GET /tasks/{taskId}/pushNotificationConfigs`).
//! API Gateway HTTP API (v2) or Function URL events.

use a2a::lambda::http::{serve, Endpoint};
use a2a::lambda::{init_tracing, Deps};
use a2a::operation::Operation;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    init_tracing();
    let deps = Deps::from_env(agent::CARD, None).await?;
    serve(deps.service, Endpoint::Operation(Operation::ListTaskPushNotificationConfigs)).await
}
