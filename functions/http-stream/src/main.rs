//! `http-stream`: SendStreamingMessage and SubscribeToTask (REST `POST /message:stream`,
//! `GET|POST /tasks/{id}:subscribe`, and the JSON-RPC streaming methods) over Lambda response
//! streaming, behind a Function URL with InvokeMode RESPONSE_STREAM. Events come from the DynamoDB
//! event log (polled), with `Last-Event-ID` replay and keep-alives, for deployments without the
//! edge worker. With `PLAYGROUND=on` it serves the playground too (docs/playground.md).

use a2a::lambda::http::serve_streaming;
use a2a::lambda::{init_tracing, Deps};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    init_tracing();
    let deps = Deps::from_env(agent::CARD, None).await?;
    let playground = a2a::lambda::playground::from_env(&deps)?;
    serve_streaming(deps.service, playground).await
}
