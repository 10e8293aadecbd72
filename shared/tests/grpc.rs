//! The gRPC binding on 127.0.0.1 through a real gRPC client (tonic): unary and server-streaming
//! operations from the same engine, errors as `google.rpc.Status` with `ErrorInfo`, the version and
//! API keys from metadata, the health service, message-size limits, deadlines and resuming a stream.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use a2a::auth::AuthSettings;
use a2a::embedded::{start, EmbeddedConfig};
use a2a::executor::{AgentExecutor, ConformanceAgent};
use a2a::grpc::{codec::Raw, decode, encode};
use a2a::http::Limits;
use bytes::Bytes;
use futures::StreamExt;
use http::uri::PathAndQuery;
use serde_json::{json, Value};
use tonic::transport::Channel;
use tonic::Code;
use tonic_types::StatusExt;

async fn server(api_keys: Option<&str>) -> Channel {
    serve(api_keys, Arc::new(a2a::executor::EchoAgent), Limits::default()).await
}

async fn conformance_server(limits: Limits) -> Channel {
    let agent = ConformanceAgent::new(Arc::new(a2a::adapters::memory::SystemClock));
    serve(None, Arc::new(agent), limits).await
}

async fn serve(api_keys: Option<&str>, executor: Arc<dyn AgentExecutor>, limits: Limits) -> Channel {
    let auth = AuthSettings { api_keys: api_keys.map(String::from), ..Default::default() }.build().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let embedded = start(EmbeddedConfig {
        auth,
        limits,
        push_timeout: Duration::from_secs(2),
        grpc_address: Some(addr.to_string()),
        ..EmbeddedConfig::new("http://127.0.0.1", executor)
    })
    .await
    .unwrap();
    // The card declares the gRPC interface as host:port, after the 1.0 HTTP ones.
    let interfaces = &embedded.engine.card.card.supported_interfaces;
    assert_eq!((interfaces[2].protocol_binding.as_str(), interfaces[2].url.clone()), ("GRPC", addr.to_string()));
    let service = embedded.service.clone();
    tokio::spawn(async move { a2a::grpc::serve(listener, service, std::future::pending()).await.unwrap() });
    Channel::from_shared(format!("http://{addr}")).unwrap().connect().await.unwrap()
}

/// A ready client, the request message with its metadata, and the method's path.
async fn prepare(
    channel: &Channel,
    method: &str,
    input: &str,
    body: Value,
    meta: &[(&'static str, &str)],
) -> (tonic::client::Grpc<Channel>, tonic::Request<Bytes>, PathAndQuery) {
    let mut grpc = tonic::client::Grpc::new(channel.clone());
    grpc.ready().await.unwrap();
    let mut req = tonic::Request::new(encode(&format!("lf.a2a.v1.{input}"), body).unwrap());
    for (k, v) in meta {
        req.metadata_mut().append(*k, v.parse().unwrap());
    }
    (grpc, req, PathAndQuery::try_from(format!("/lf.a2a.v1.A2AService/{method}")).unwrap())
}

async fn unary(
    channel: &Channel,
    method: &str,
    input: &str,
    output: &str,
    body: Value,
    meta: &[(&'static str, &str)],
) -> Result<Value, tonic::Status> {
    let (mut grpc, req, path) = prepare(channel, method, input, body, meta).await;
    let resp: tonic::Response<Bytes> = grpc.unary(req, path, Raw).await?;
    Ok(decode(&format!("lf.a2a.v1.{output}"), resp.into_inner()).unwrap())
}

fn message(text: &str) -> Value {
    json!({"message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER", "parts": [{"text": text}]}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unary_and_streaming_operations_and_errors() {
    let channel = server(None).await;
    let sent = unary(&channel, "SendMessage", "SendMessageRequest", "SendMessageResponse", message("hello grpc"), &[])
        .await
        .unwrap();
    let task = &sent["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "hello grpc");
    let id = task["id"].as_str().unwrap();
    let got = unary(&channel, "GetTask", "GetTaskRequest", "Task", json!({"id": id}), &[("a2a-version", "1.0")])
        .await
        .unwrap();
    assert_eq!(got["id"], id);
    let listed = unary(&channel, "ListTasks", "ListTasksRequest", "ListTasksResponse", json!({}), &[]).await.unwrap();
    assert_eq!(listed["tasks"][0]["id"], id);

    // Errors: the code of the error table, an ErrorInfo with the reason and the domain.
    let missing = unary(&channel, "GetTask", "GetTaskRequest", "Task", json!({"id": "nope"}), &[]).await.unwrap_err();
    assert_eq!(missing.code(), Code::NotFound);
    let info = missing.get_details_error_info().unwrap();
    assert_eq!((info.reason.as_str(), info.domain.as_str()), ("TASK_NOT_FOUND", "a2a-protocol.org"));
    assert_eq!(info.metadata["taskId"], "nope");
    let old = unary(&channel, "GetTask", "GetTaskRequest", "Task", json!({"id": id}), &[("a2a-version", "0.3")])
        .await
        .unwrap_err();
    assert_eq!(old.code(), Code::Unimplemented);
    assert_eq!(old.get_details_error_info().unwrap().reason, "VERSION_NOT_SUPPORTED");
    let invalid = unary(
        &channel,
        "SendMessage",
        "SendMessageRequest",
        "SendMessageResponse",
        json!({"message": {"role": "ROLE_USER"}}),
        &[],
    )
    .await
    .unwrap_err();
    assert_eq!(invalid.code(), Code::InvalidArgument, "{invalid:?}");

    // Server streaming.
    let mut grpc = tonic::client::Grpc::new(channel.clone());
    grpc.ready().await.unwrap();
    let req = tonic::Request::new(encode("lf.a2a.v1.SendMessageRequest", message("streamed")).unwrap());
    let path = PathAndQuery::from_static("/lf.a2a.v1.A2AService/SendStreamingMessage");
    let stream = grpc.server_streaming(req, path, Raw).await.unwrap().into_inner();
    let events: Vec<Value> = stream.map(|b| decode("lf.a2a.v1.StreamResponse", b.unwrap()).unwrap()).collect().await;
    assert!(events[0].get("task").is_some(), "{events:?}");
    assert_eq!(events.last().unwrap()["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_says_serving_and_unknown_methods_are_unimplemented() {
    let channel = server(None).await;
    let mut grpc = tonic::client::Grpc::new(channel.clone());
    grpc.ready().await.unwrap();
    // grpc.health.v1.HealthCheckRequest { service: "lf.a2a.v1.A2AService" } (field 1, a string).
    let name = b"lf.a2a.v1.A2AService";
    let mut body = vec![0x0a, name.len() as u8];
    body.extend_from_slice(name);
    let path = PathAndQuery::from_static("/grpc.health.v1.Health/Check");
    let resp = grpc.unary(tonic::Request::new(Bytes::from(body)), path, Raw).await.unwrap().into_inner();
    assert_eq!(&resp[..], &[0x08, 0x01], "status: SERVING");
    let missing = unary(&channel, "NoSuchMethod", "GetTaskRequest", "Task", json!({"id": "x"}), &[]).await.unwrap_err();
    assert_eq!(missing.code(), Code::Unimplemented);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_keys_come_from_metadata() {
    let channel = server(Some("alice:k1")).await;
    let refused =
        unary(&channel, "ListTasks", "ListTasksRequest", "ListTasksResponse", json!({}), &[]).await.unwrap_err();
    assert_eq!(refused.code(), Code::Unauthenticated);
    assert_eq!(refused.get_details_error_info().unwrap().reason, "UNAUTHENTICATED");
    let ok =
        unary(&channel, "ListTasks", "ListTasksRequest", "ListTasksResponse", json!({}), &[("x-api-key", "k1")]).await;
    assert!(ok.is_ok(), "{ok:?}");
    // One key per call: the header twice is refused, even when both are valid.
    let twice = [("x-api-key", "k1"), ("x-api-key", "k1")];
    let refused =
        unary(&channel, "ListTasks", "ListTasksRequest", "ListTasksResponse", json!({}), &twice).await.unwrap_err();
    assert_eq!(refused.code(), Code::Unauthenticated);
    assert!(refused.message().contains("must be sent once"), "{refused:?}");
}

async fn stream(
    channel: &Channel,
    method: &str,
    input: &str,
    body: Value,
    meta: &[(&'static str, &str)],
) -> Result<(Option<u64>, tonic::Streaming<Bytes>), tonic::Status> {
    let (mut grpc, req, path) = prepare(channel, method, input, body, meta).await;
    let resp = grpc.server_streaming(req, path, Raw).await?;
    let first = resp.metadata().get(a2a::grpc::FIRST_EVENT_ID).map(|v| v.to_str().unwrap().parse().unwrap());
    Ok((first, resp.into_inner()))
}

fn event(bytes: Result<Bytes, tonic::Status>) -> Value {
    decode("lf.a2a.v1.StreamResponse", bytes.unwrap()).unwrap()
}

fn kind(event: &Value) -> &str {
    event.as_object().unwrap().keys().next().unwrap()
}

fn tck_message(prefix: &str) -> Value {
    json!({"message": {"messageId": format!("{prefix}-{}", uuid::Uuid::new_v4()), "role": "ROLE_USER", "parts": [{"text": "x"}]}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_stream_resumes_from_the_first_event_id() {
    let channel = conformance_server(Limits::default()).await;
    let send = tck_message("tck-stream-ordering-001");
    let (_, all) = stream(&channel, "SendStreamingMessage", "SendMessageRequest", send, &[]).await.unwrap();
    let all: Vec<Value> = all.map(event).collect().await;
    assert_eq!(all.iter().map(kind).collect::<Vec<_>>(), ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]);

    // A second run, read up to two messages, then the connection is gone.
    let send = tck_message("tck-stream-ordering-001");
    let (first, mut cut) = stream(&channel, "SendStreamingMessage", "SendMessageRequest", send, &[]).await.unwrap();
    let first = first.expect("a2a-first-event-id in the initial metadata");
    let seen = [event(cut.next().await.unwrap()), event(cut.next().await.unwrap())];
    drop(cut);
    let id = seen[0]["task"]["id"].as_str().unwrap().to_string();
    let last = (first + 1).to_string();
    let (resumed_first, rest) =
        stream(&channel, "SubscribeToTask", "SubscribeToTaskRequest", json!({"id": id}), &[("last-event-id", &last)])
            .await
            .unwrap();
    assert_eq!(resumed_first, Some(first + 2));
    let rest: Vec<Value> = rest.map(event).collect().await;
    // Exactly the missed events, in order: together the same stream as the uncut one.
    assert_eq!(rest.iter().map(kind).collect::<Vec<_>>(), ["artifactUpdate", "statusUpdate"]);
    assert_eq!(rest[1]["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(rest[0]["artifactUpdate"]["taskId"], id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadlines_end_calls_and_streams_and_the_task_goes_on() {
    let channel = conformance_server(Limits::default()).await;
    let sent = unary(
        &channel,
        "SendMessage",
        "SendMessageRequest",
        "SendMessageResponse",
        tck_message("tck-input-required"),
        &[("grpc-timeout", "10S")],
    )
    .await
    .unwrap();
    let id = sent["task"]["id"].as_str().unwrap().to_string();
    assert_eq!(sent["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    // INPUT_REQUIRED is not terminal: a subscription would wait; the deadline ends it after the
    // snapshot, with DEADLINE_EXCEEDED.
    let (_, events) =
        stream(&channel, "SubscribeToTask", "SubscribeToTaskRequest", json!({"id": id}), &[("grpc-timeout", "300m")])
            .await
            .unwrap();
    let events: Vec<Result<Bytes, tonic::Status>> = events.collect().await;
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(kind(&event(events[0].clone())), "task");
    assert_eq!(events[1].as_ref().unwrap_err().code(), Code::DeadlineExceeded);
    let task = unary(&channel, "GetTask", "GetTaskRequest", "Task", json!({"id": id}), &[]).await.unwrap();
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED");

    // A blocking send of a task that stays WORKING for seconds, with a 300 ms deadline.
    let slow = tck_message("test-resubscribe-message-id");
    let err =
        unary(&channel, "SendMessage", "SendMessageRequest", "SendMessageResponse", slow, &[("grpc-timeout", "300m")])
            .await
            .unwrap_err();
    assert_eq!(err.code(), Code::DeadlineExceeded, "{err:?}");
    let listed = unary(&channel, "ListTasks", "ListTasksRequest", "ListTasksResponse", json!({}), &[]).await.unwrap();
    let states: Vec<&Value> = listed["tasks"].as_array().unwrap().iter().map(|t| &t["status"]["state"]).collect();
    assert!(states.contains(&&json!("TASK_STATE_WORKING")), "the task goes on: {states:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_over_the_limit_is_resource_exhausted() {
    let channel = conformance_server(Limits { max_body: 4096, ..Limits::default() }).await;
    let big = json!({"message": {"messageId": "big", "role": "ROLE_USER", "parts": [{"text": "x".repeat(8192)}]}});
    let err = unary(&channel, "SendMessage", "SendMessageRequest", "SendMessageResponse", big, &[]).await.unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted, "{err:?}");
    assert!(err.message().contains("4096 bytes"), "{}", err.message());
    assert_eq!(err.get_details_error_info().unwrap().reason, "PAYLOAD_TOO_LARGE");
    let fits = unary(
        &channel,
        "SendMessage",
        "SendMessageRequest",
        "SendMessageResponse",
        tck_message("tck-complete-task"),
        &[],
    );
    assert!(fits.await.is_ok());
}
