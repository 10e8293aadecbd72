//! Cost per operation of the DynamoDB backend: runs each operation through the engine on the AWS
//! backend (moto, via AWS_ENDPOINT_URL) and prints the DynamoDB requests and capacity units it
//! consumed, as a Markdown table (the cost table of docs/aws.md). Run with `scripts/cost`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::sync::Arc;
use std::time::Duration;

use a2a::adapters::aws::sqs::PollSettings;
use a2a::adapters::aws::{AwsSettings, Usage};
use a2a::embedded::{start, AwsOptions, Backend, Embedded, EmbeddedConfig};
use a2a::executor::{AgentError, AgentExecutor, EventSink, RequestContext};
use a2a::http::Body;
use a2a::prelude::async_trait;
use a2a::types::{Artifact, Part};
use bytes::Bytes;
use futures::StreamExt;
use serde_json::{json, Value};

/// Echo, except `stream10-*`: working, eight artifact chunks, completed (ten events).
struct Agent;

#[async_trait]
impl AgentExecutor for Agent {
    async fn execute(&self, ctx: RequestContext, ev: EventSink) -> Result<(), AgentError> {
        if ctx.message.message_id.starts_with("stream10") {
            ev.working(None).await?;
            let art = Artifact::new(vec![Part::text("chunk ")]);
            for i in 0..8 {
                ev.artifact(
                    Artifact { parts: vec![Part::text(format!("chunk {i} "))], ..art.clone() },
                    a2a::executor::Chunk::of(i, 8),
                )
                .await?;
            }
            ev.complete(None).await?;
        } else {
            ev.complete_with_text(ctx.message.text()).await?;
        }
        Ok(())
    }
}

async fn call(a: &Embedded, method: &str, path: &str, body: Option<Value>) -> Value {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .header("A2A-Version", "1.0")
        .body(Bytes::from(body.map(|b| b.to_string()).unwrap_or_default()))
        .unwrap();
    let resp = a.service.handle(req).await;
    // A failed call would be measured as a cheap one: stop instead.
    assert!(resp.status().is_success(), "{method} {path}: {}", resp.status());
    match resp.into_body() {
        Body::Full(b) => serde_json::from_slice(&b).unwrap_or(Value::Null),
        Body::Sse(s) => {
            let n = s.collect::<Vec<_>>().await.len();
            json!({ "frames": n })
        }
    }
}

fn row(name: &str, u: Usage) {
    println!(
        "| {name} | {} | {:.1} | {} | {:.0} | {:.0} |",
        u.read_requests, u.read_units, u.write_requests, u.write_units, u.gsi_write_units
    );
}

#[tokio::main]
async fn main() {
    let table = format!("cost-{}", uuid::Uuid::new_v4().simple());
    let a = start(EmbeddedConfig {
        backend: Backend::Aws(AwsOptions {
            settings: AwsSettings {
                table_name: table,
                page_token_secret: Some("cost".into()),
                ..AwsSettings::from_env()
            },
            create_resources: true,
            poll: PollSettings { wait: Duration::from_secs(1), ..PollSettings::default() },
        }),
        // Trusted by name: the cost run must not depend on DNS.
        webhook_allow: a2a::ssrf::AllowList::parse("hooks.example.com").unwrap(),
        push_timeout: Duration::from_secs(5),
        ..EmbeddedConfig::new("http://cost.test", Arc::new(Agent))
    })
    .await
    .unwrap();
    let store = a.dynamo.clone().unwrap();
    // Background work (runners finishing) must not be billed to the next operation.
    let settle = || async {
        for _ in 0..100 {
            let before = store.usage();
            tokio::time::sleep(Duration::from_millis(300)).await;
            if store.usage() == before {
                return;
            }
        }
    };
    let msg = |id: &str| json!({"message": {"messageId": id, "role": "ROLE_USER", "parts": [{"text": "hello"}]}});

    println!("| operation | read requests | RCU | write requests | WCU | GSI WCU |");
    println!("|---|---|---|---|---|---|");

    let before = store.usage();
    let sent = call(&a, "POST", "/message:send", Some(msg("cost-echo"))).await;
    settle().await;
    row("SendMessage, blocking (echo agent)", store.usage().since(&before));
    let task_id = sent["task"]["id"].as_str().unwrap().to_string();

    let before = store.usage();
    call(&a, "GET", &format!("/tasks/{task_id}"), None).await;
    row("GetTask", store.usage().since(&before));

    let before = store.usage();
    let streamed = call(&a, "POST", "/message:stream", Some(msg("stream10-a"))).await;
    settle().await;
    assert_eq!(streamed["frames"], 11, "task + 10 events");
    row("SendStreamingMessage, 10 events", store.usage().since(&before));

    for i in 0..60 {
        call(&a, "POST", "/message:send", Some(json!({"message": {"messageId": format!("fill-{i}"), "role": "ROLE_USER", "parts": [{"text": "x"}]}, "configuration": {"returnImmediately": true}}))).await;
    }
    settle().await;
    let before = store.usage();
    let page = call(&a, "GET", "/tasks?pageSize=50", None).await;
    row("ListTasks, first page of 50 (of 62)", store.usage().since(&before));
    let token = page["nextPageToken"].as_str().unwrap().to_string();
    let before = store.usage();
    call(&a, "GET", &format!("/tasks?pageSize=50&pageToken={token}"), None).await;
    row("ListTasks, next page", store.usage().since(&before));
    let before = store.usage();
    call(&a, "GET", "/tasks?pageSize=100", None).await;
    row("ListTasks, one page holding all", store.usage().since(&before));

    let path = format!("/tasks/{task_id}/pushNotificationConfigs");
    let before = store.usage();
    call(&a, "POST", &path, Some(json!({"url": "https://hooks.example.com/a2a", "id": "c1"}))).await;
    row("CreateTaskPushNotificationConfig", store.usage().since(&before));
    let before = store.usage();
    call(&a, "GET", &format!("{path}/c1"), None).await;
    row("GetTaskPushNotificationConfig", store.usage().since(&before));
    let before = store.usage();
    call(&a, "GET", &path, None).await;
    row("ListTaskPushNotificationConfigs", store.usage().since(&before));
    let before = store.usage();
    call(&a, "DELETE", &format!("{path}/c1"), None).await;
    row("DeleteTaskPushNotificationConfig", store.usage().since(&before));
}
