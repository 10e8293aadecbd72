//! The gRPC binding on 127.0.0.1 through a real gRPC client (tonic): unary and server-streaming
//! operations from the same engine, errors as `google.rpc.Status` with `ErrorInfo`, the version and
//! API keys from metadata, and the health service.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use a2a::auth::AuthSettings;
use a2a::card::default_card;
use a2a::embedded::{start, EmbeddedConfig};
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
    let auth = AuthSettings { api_keys: api_keys.map(String::from), ..Default::default() }.build().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let embedded = start(EmbeddedConfig {
        public_url: "http://127.0.0.1".into(),
        card: default_card(),
        extended_card: None,
        executor: Arc::new(a2a::executor::EchoAgent),
        auth,
        engine: Default::default(),
        limits: Limits::default(),
        backend: Default::default(),
        memory: Default::default(),
        webhook_allow: Default::default(),
        push_retry: Default::default(),
        push_timeout: Duration::from_secs(2),
        edge: None,
        grpc_address: Some(addr.to_string()),
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

async fn unary(
    channel: &Channel,
    method: &str,
    input: &str,
    output: &str,
    body: Value,
    meta: &[(&'static str, &str)],
) -> Result<Value, tonic::Status> {
    let mut grpc = tonic::client::Grpc::new(channel.clone());
    grpc.ready().await.unwrap();
    let mut req = tonic::Request::new(encode(&format!("lf.a2a.v1.{input}"), body).unwrap());
    for (k, v) in meta {
        req.metadata_mut().insert(*k, v.parse().unwrap());
    }
    let path = PathAndQuery::try_from(format!("/lf.a2a.v1.A2AService/{method}")).unwrap();
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
}
