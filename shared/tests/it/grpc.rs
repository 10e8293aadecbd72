//! The gRPC binding on 127.0.0.1 through a real gRPC client (tonic): unary and server-streaming
//! operations from the same engine, errors as `google.rpc.Status` with `ErrorInfo`, the version and
//! API keys from metadata, the health service, message-size limits, deadlines and resuming a stream.

use std::sync::Arc;
use std::time::Duration;

use a2a::auth::AuthSettings;
use a2a::embedded::{start, EmbeddedConfig};
use a2a::executor::{AgentExecutor, ConformanceAgent};
use a2a::grpc::{codec::Raw, decode, encode};
use a2a::http::Limits;
use a2a::server::{Server, ServerLimits};
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
    let (addr, _) = serve_with(api_keys, executor, limits, ServerLimits::default()).await;
    Channel::from_shared(format!("http://{addr}")).unwrap().connect().await.unwrap()
}

/// The agent's gRPC listener (and its HTTP one, sharing the server's limits) on 127.0.0.1.
async fn serve_with(
    api_keys: Option<&str>,
    executor: Arc<dyn AgentExecutor>,
    limits: Limits,
    server_limits: ServerLimits,
) -> (std::net::SocketAddr, std::net::SocketAddr) {
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
    let server = Server::new(embedded.service.clone(), server_limits);
    let http = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let http_addr = http.local_addr().unwrap();
    tokio::spawn(server.clone().serve_http(http, std::future::pending()));
    tokio::spawn(async move { a2a::grpc::listener::serve(server, listener, std::future::pending()).await.unwrap() });
    (addr, http_addr)
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
    assert!(old.message().starts_with("the gRPC binding serves A2A 1.0"), "{}", old.message());
    // An empty version is no version: 1.0.
    let got = unary(&channel, "GetTask", "GetTaskRequest", "Task", json!({"id": id}), &[("a2a-version", "")]).await;
    assert_eq!(got.unwrap()["id"], id);
    // A required field left out (proto3 drops empty strings) is named.
    let unnamed = unary(&channel, "GetTask", "GetTaskRequest", "Task", json!({}), &[]).await.unwrap_err();
    assert_eq!(unnamed.code(), Code::InvalidArgument);
    assert_eq!(unnamed.get_details_error_info().unwrap().metadata["field"], "id", "{unnamed:?}");
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

// The listener's limits, driven by a raw HTTP/2 client (h2) that misbehaves in ways a gRPC library
// would not.

const SHORT: Duration = Duration::from_millis(500);

fn tight() -> ServerLimits {
    ServerLimits {
        max_connections: 64,
        header_timeout: SHORT,
        body_timeout: SHORT,
        write_timeout: SHORT,
        max_streams: 4,
        ..ServerLimits::default()
    }
}

type H2 = (h2::client::SendRequest<Bytes>, tokio::task::JoinHandle<Result<(), h2::Error>>);

/// An HTTP/2 connection whose receive windows stay at the 64 KiB default unless read.
async fn h2_connect(addr: std::net::SocketAddr) -> H2 {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (client, conn) = h2::client::handshake(tcp).await.unwrap();
    (client, tokio::spawn(conn))
}

fn grpc_request(addr: std::net::SocketAddr, method: &str, meta: &[(&str, &str)]) -> http::Request<()> {
    let mut req = http::Request::builder()
        .method("POST")
        .uri(format!("http://{addr}/lf.a2a.v1.A2AService/{method}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    for (k, v) in meta {
        req = req.header(*k, *v);
    }
    req.body(()).unwrap()
}

/// A gRPC length-prefixed message.
fn frame(message: Bytes) -> Bytes {
    let mut out = vec![0u8];
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(&message);
    Bytes::from(out)
}

fn grpc_status(headers: &http::HeaderMap) -> Option<String> {
    headers.get("grpc-status").map(|v| v.to_str().unwrap().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_caller_is_refused_before_its_message_is_read() {
    let (addr, _) = serve_with(Some("alice:ka"), Arc::new(a2a::executor::EchoAgent), Limits::default(), tight()).await;
    let (mut client, _conn) = h2_connect(addr).await;
    // Headers only: the message (which could be megabytes) is never sent.
    let (response, _body) = client.send_request(grpc_request(addr, "SendMessage", &[]), false).unwrap();
    let response = tokio::time::timeout(Duration::from_secs(3), response).await.expect("answered at once").unwrap();
    assert_eq!(grpc_status(response.headers()).as_deref(), Some("16"), "{response:?}");
    // UNAUTHENTICATED
}

/// A request that is not gRPC gets HTTP 415 (the gRPC spec); gRPC with another codec is refused,
/// not read as protobuf.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_protobuf_grpc_is_read() {
    let (addr, _) = serve_with(None, Arc::new(a2a::executor::EchoAgent), Limits::default(), tight()).await;
    let (client, _conn) = h2_connect(addr).await;
    let mut client = client.ready().await.unwrap();
    // (content type, HTTP status, grpc-status): NOT_FOUND means it was read as protobuf.
    let cases = [
        ("application/json", 415, None),
        ("application/grpc+json", 200, Some("3")),
        ("application/grpc", 200, Some("5")),
        ("application/grpc+proto", 200, Some("5")),
        ("application/grpc; charset=utf-8", 200, Some("5")),
    ];
    for (content_type, http_status, grpc) in cases {
        let req = http::Request::builder()
            .method("POST")
            .uri(format!("http://{addr}/lf.a2a.v1.A2AService/GetTask"))
            .header("content-type", content_type)
            .header("te", "trailers")
            .body(())
            .unwrap();
        client = client.ready().await.unwrap();
        let (response, mut body) = client.send_request(req, false).unwrap();
        body.send_data(frame(encode("lf.a2a.v1.GetTaskRequest", json!({"id": "x"})).unwrap()), true).unwrap();
        let response = tokio::time::timeout(Duration::from_secs(5), response).await.expect("answered").unwrap();
        assert_eq!(response.status(), http_status, "{content_type}");
        assert_eq!(grpc_status(response.headers()).as_deref(), grpc, "{content_type}");
    }
}

/// A call that ends without its message, or inside it, or whose compressed-flag is unknown is the
/// client's fault: INVALID_ARGUMENT, not tonic's INTERNAL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_without_its_whole_message_is_invalid_argument() {
    let (addr, _) = serve_with(None, Arc::new(a2a::executor::EchoAgent), Limits::default(), tight()).await;
    let (client, _conn) = h2_connect(addr).await;
    let mut client = client.ready().await.unwrap();
    for (what, sent) in [
        ("no message", None),
        ("cut short", Some(&[0u8, 0, 0, 0, 10, 1, 2][..])),
        ("compressed-flag 2", Some(&[2u8, 0, 0, 0, 1, 0][..])),
    ] {
        client = client.ready().await.unwrap();
        let (response, mut body) = client.send_request(grpc_request(addr, "GetTask", &[]), sent.is_none()).unwrap();
        if let Some(bytes) = sent {
            body.send_data(Bytes::copy_from_slice(bytes), true).unwrap();
        }
        let response = tokio::time::timeout(Duration::from_secs(5), response).await.expect("answered").unwrap();
        let status = match grpc_status(response.headers()) {
            Some(status) => status,
            None => grpc_status(&response.into_body().trailers().await.unwrap().unwrap()).unwrap(),
        };
        assert_eq!(status, "3", "{what}"); // INVALID_ARGUMENT
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_message_is_cut_at_the_body_deadline() {
    let (addr, _) = serve_with(None, Arc::new(a2a::executor::EchoAgent), Limits::default(), tight()).await;
    let (mut client, _conn) = h2_connect(addr).await;
    let (response, mut body) = client.send_request(grpc_request(addr, "SendMessage", &[]), false).unwrap();
    body.send_data(Bytes::from_static(&[0, 0, 0, 4, 0, 1]), false).unwrap(); // 1 of 1024 bytes
    let response = tokio::time::timeout(Duration::from_secs(5), response).await.expect("cut in time").unwrap();
    let status = match grpc_status(response.headers()) {
        Some(status) => status, // trailers-only
        None => grpc_status(&response.into_body().trailers().await.unwrap().unwrap()).unwrap(),
    };
    assert_eq!(status, "4"); // DEADLINE_EXCEEDED
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_connection_opens_at_most_max_streams() {
    let (addr, _) = serve_with(None, Arc::new(a2a::executor::EchoAgent), Limits::default(), tight()).await;
    let (client, _conn) = h2_connect(addr).await;
    let mut client = client.ready().await.unwrap();
    // One whole call first: the server's SETTINGS have arrived after it.
    let (response, mut body) = client.send_request(grpc_request(addr, "GetTask", &[]), false).unwrap();
    body.send_data(frame(encode("lf.a2a.v1.GetTaskRequest", json!({"id": "x"})).unwrap()), true).unwrap();
    let _ = response.await.unwrap();
    let mut open = Vec::new();
    // The server's SETTINGS arrive with its first frames; each stream is opened and left waiting.
    for _ in 0..5 {
        client = client.ready().await.unwrap();
        open.push(client.send_request(grpc_request(addr, "GetTask", &[]), false).unwrap().0);
    }
    // Each served stream waits for its message until the body deadline, then is answered. The
    // fifth is not served beside the first four: when they have their answers, it has none yet.
    let mut fifth = open.pop().unwrap();
    for response in open {
        tokio::time::timeout(Duration::from_secs(3), response).await.expect("answered at the deadline").unwrap();
    }
    use futures::FutureExt;
    assert!((&mut fifth).now_or_never().is_none(), "a fifth stream was served beside four on one connection");
    tokio::time::timeout(Duration::from_secs(3), fifth).await.expect("served once a stream was free").unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_are_closed() {
    let (addr, _) = serve_with(None, Arc::new(a2a::executor::EchoAgent), Limits::default(), tight()).await;
    let (_client, conn) = h2_connect(addr).await;
    let ended = tokio::time::timeout(Duration::from_secs(5), conn).await;
    assert!(ended.is_ok(), "an idle gRPC connection stayed open");
    // A socket that never says anything goes too.
    let mut raw = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut buf = [0u8; 1024];
    let read = tokio::time::timeout(Duration::from_secs(5), async {
        use tokio::io::AsyncReadExt;
        loop {
            match raw.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    });
    assert!(read.await.is_ok(), "a silent socket stayed open");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_listeners_share_one_connection_cap() {
    let limits = ServerLimits { max_connections: 3, header_timeout: Duration::from_secs(10), ..tight() };
    let (addr, http_addr) = serve_with(None, Arc::new(a2a::executor::EchoAgent), Limits::default(), limits).await;
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(h2_connect(addr).await);
    }
    tokio::time::sleep(Duration::from_millis(200)).await; // accepted
                                                          // The HTTP port is full too.
    let mut c = tokio::net::TcpStream::connect(http_addr).await.unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    c.write_all(b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let mut text = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(3), c.read_to_end(&mut text)).await;
    assert!(String::from_utf8_lossy(&text).starts_with("HTTP/1.1 503"), "{}", String::from_utf8_lossy(&text));
    // A fourth gRPC connection is closed without being served.
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let refused = tokio::time::timeout(Duration::from_secs(3), h2::client::handshake(tcp)).await.unwrap();
    let served = match refused {
        Err(_) => false,
        Ok((client, conn)) => {
            let conn = tokio::spawn(conn);
            let ok =
                client.ready().await.is_ok() && tokio::time::timeout(Duration::from_millis(300), conn).await.is_err();
            ok
        }
    };
    assert!(!served, "a connection past the cap was served");
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_does_not_read_its_answer_is_dropped() {
    let limits = Limits { max_body: 8 << 20, ..Limits::default() };
    let (addr, _) = serve_with(None, Arc::new(a2a::executor::EchoAgent), limits, tight()).await;
    let channel = Channel::from_shared(format!("http://{addr}")).unwrap().connect().await.unwrap();
    let big =
        unary(&channel, "SendMessage", "SendMessageRequest", "SendMessageResponse", message(&"z".repeat(1 << 20)), &[])
            .await
            .unwrap();
    let id = big["task"]["id"].as_str().unwrap().to_string();
    for method in ["GetTask", "SubscribeToTask"] {
        let (mut client, conn) = h2_connect(addr).await;
        let request = encode(&format!("lf.a2a.v1.{method}Request"), json!({"id": id})).unwrap();
        let (response, mut body) = client.send_request(grpc_request(addr, method, &[]), false).unwrap();
        body.send_data(frame(request), true).unwrap();
        let _response = response.await.unwrap(); // headers; the 2 MB answer is never read
        let dropped = tokio::time::timeout(Duration::from_secs(5), conn).await;
        assert!(dropped.is_ok(), "{method}: a client that does not read was held on to");
    }
}
