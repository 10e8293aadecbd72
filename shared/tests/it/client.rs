//! The client library against a2a-local's server on 127.0.0.1, over JSON-RPC, HTTP+JSON and gRPC:
//! every operation, protocol errors read back with their kind, API-key credentials, and a stream cut
//! in the middle by a proxy that drops the connection — the client resumes with `Last-Event-ID`
//! (gRPC: `last-event-id` metadata) and no event is lost or repeated.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use a2a::auth::AuthSettings;
use a2a::client::{request, Binding, Client, ClientError, ClientOptions, Credentials};
use a2a::embedded::{start, EmbeddedConfig};
use a2a::executor::{AgentError, AgentExecutor, EventSink, RequestContext};
use a2a::http::Limits;
use a2a::types::*;
use a2a::ErrorKind;
use async_trait::async_trait;
use futures::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Streams `n` text chunks of one artifact, `gap` apart, then completes.
struct Chunks {
    n: usize,
    gap: Duration,
}

#[async_trait]
impl AgentExecutor for Chunks {
    async fn execute(&self, _ctx: RequestContext, ev: EventSink) -> Result<(), AgentError> {
        ev.working(None).await?;
        let first = Artifact::new(vec![Part::text("0")]);
        for i in 0..self.n {
            let chunk = Artifact { parts: vec![Part::text(i.to_string())], ..first.clone() };
            ev.artifact(chunk, a2a::executor::Chunk::of(i, self.n)).await?;
            tokio::time::sleep(self.gap).await;
        }
        ev.complete(None).await?;
        Ok(())
    }
}

/// Where a proxy cuts the first stream it carries.
#[derive(Clone, Copy)]
enum Cut {
    /// The first event-stream response, after this many SSE events.
    SseEvents(usize),
    /// The first connection (a gRPC channel's first: the stream), after this many bytes to the client.
    Bytes(usize),
}

/// A TCP proxy that cuts the first stream it carries (see [`Cut`]); counts the event-stream
/// responses (SSE) or the connections (gRPC) it sees.
struct Proxy {
    url: String,
    streams: Arc<AtomicUsize>,
}

async fn proxy(listener: TcpListener, upstream: std::net::SocketAddr, cut: Cut) -> Proxy {
    let url = format!("http://{}", listener.local_addr().unwrap());
    let streams = Arc::new(AtomicUsize::new(0));
    let seen = streams.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let server = TcpStream::connect(upstream).await.unwrap();
                let (mut cr, mut cw) = client.into_split();
                let (mut sr, mut sw) = server.into_split();
                let up = tokio::spawn(async move { tokio::io::copy(&mut cr, &mut sw).await });
                let mut buf = vec![0u8; 16 * 1024];
                let (mut events, mut bytes) = (0, 0);
                let mut cutting = matches!(cut, Cut::Bytes(_)) && seen.fetch_add(1, Ordering::SeqCst) == 0;
                loop {
                    let n = match sr.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    let text = String::from_utf8_lossy(&buf[..n]);
                    if matches!(cut, Cut::SseEvents(_)) && text.contains("text/event-stream") {
                        cutting = seen.fetch_add(1, Ordering::SeqCst) == 0;
                    }
                    events += text.matches("\n\n").count();
                    bytes += n;
                    let cut_now = match cut {
                        Cut::SseEvents(after) => events > after,
                        Cut::Bytes(after) => bytes > after,
                    };
                    if cutting && cut_now {
                        break; // drop the connection in the middle of the stream
                    }
                    if cw.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
                up.abort();
            });
        }
    });
    Proxy { url, streams }
}

struct Agent {
    /// The agent's URL (through the proxy).
    url: String,
    /// The proxy in front of the binding under test.
    proxy: Proxy,
}

/// An agent whose HTTP and gRPC ports are behind proxies (the card declares the proxies); the one
/// of `binding` cuts its first stream after about `cut_after` events.
async fn agent(executor: Arc<dyn AgentExecutor>, api_keys: Option<&str>, binding: Binding, cut_after: usize) -> Agent {
    let (server, front) =
        (TcpListener::bind("127.0.0.1:0").await.unwrap(), TcpListener::bind("127.0.0.1:0").await.unwrap());
    let (grpc, grpc_front) =
        (TcpListener::bind("127.0.0.1:0").await.unwrap(), TcpListener::bind("127.0.0.1:0").await.unwrap());
    let public_url = format!("http://{}", front.local_addr().unwrap());
    let auth = AuthSettings { api_keys: api_keys.map(String::from), ..Default::default() }.build().unwrap();
    let embedded = start(EmbeddedConfig {
        auth,
        limits: Limits { keep_alive: Duration::from_millis(200), ..Default::default() },
        webhook_allow: a2a::ssrf::AllowList::parse("127.0.0.1/32").unwrap(),
        push_timeout: Duration::from_secs(2),
        grpc_address: Some(grpc_front.local_addr().unwrap().to_string()),
        ..EmbeddedConfig::new(public_url, executor)
    })
    .await
    .unwrap();
    let (upstream, grpc_upstream) = (server.local_addr().unwrap(), grpc.local_addr().unwrap());
    let service = embedded.service.clone();
    tokio::spawn(async move {
        a2a::server::serve(server, service, std::future::pending::<()>(), Default::default()).await.unwrap();
    });
    let service = embedded.service.clone();
    tokio::spawn(async move { a2a::grpc::serve(grpc, service, std::future::pending()).await.unwrap() });
    // About 300 bytes a gRPC event, after the connection's preface and headers.
    let (http_cut, grpc_cut) = match binding {
        Binding::Grpc => (Cut::SseEvents(usize::MAX), Cut::Bytes(cut_after.saturating_mul(300).saturating_add(200))),
        _ => (Cut::SseEvents(cut_after), Cut::Bytes(usize::MAX)),
    };
    let http = proxy(front, upstream, http_cut).await;
    let grpc = proxy(grpc_front, grpc_upstream, grpc_cut).await;
    let url = http.url.clone();
    Agent { url, proxy: if binding == Binding::Grpc { grpc } else { http } }
}

fn options(binding: Binding) -> ClientOptions {
    ClientOptions { prefer: Some(binding), timeout: Duration::from_secs(20), ..Default::default() }
}

const BINDINGS: [Binding; 3] = [Binding::JsonRpc, Binding::HttpJson, Binding::Grpc];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_stream_resumes_without_losing_or_repeating_events() {
    for binding in BINDINGS {
        let agent = agent(Arc::new(Chunks { n: 20, gap: Duration::from_millis(25) }), None, binding, 4).await;
        let client = Client::connect(&agent.url, options(binding)).await.unwrap();
        assert_eq!(client.binding(), binding);
        let events: Vec<_> = client
            .send_streaming_message(request(Message::user_text("go")))
            .await
            .unwrap()
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(agent.proxy.streams.load(Ordering::SeqCst) >= 2, "{binding:?}: the stream was cut and resumed");
        let seqs: Vec<u64> = events.iter().map(|e| e.seq.unwrap()).collect();
        assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{binding:?}: no gap, no repeat: {seqs:?}");
        let chunks: Vec<String> = events
            .iter()
            .filter_map(|e| match &e.event {
                StreamResponse::ArtifactUpdate(u) => Some(u.artifact.parts[0].as_text().unwrap().to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(chunks, (0..20).map(|i| i.to_string()).collect::<Vec<_>>(), "{binding:?}");
        assert_eq!(events.last().unwrap().event.state(), Some(TaskState::Completed));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_and_error_on_every_binding() {
    for binding in BINDINGS {
        let agent = agent(Arc::new(a2a::executor::EchoAgent), Some("alice:k1"), binding, usize::MAX).await;
        // Without the key: the refusal, read back with its kind.
        let anonymous = Client::connect(&agent.url, options(binding)).await.unwrap();
        match anonymous.send_text("hi").await {
            Err(ClientError::Protocol(e)) => assert_eq!(e.kind, ErrorKind::Unauthenticated, "{binding:?}"),
            other => panic!("{binding:?}: {other:?}"),
        }
        let opts = ClientOptions { credentials: Credentials::ApiKey("k1".into()), ..options(binding) };
        let client = Client::connect(&agent.url, opts).await.unwrap();
        let SendMessageResponse::Task(task) = client.send_text("hello").await.unwrap() else { panic!("a task") };
        assert_eq!(task.status.state, TaskState::Completed);
        let got = client
            .get_task(GetTaskRequest { tenant: String::new(), id: task.id.clone(), history_length: Some(0) })
            .await
            .unwrap();
        assert_eq!((got.id.as_str(), got.history.len()), (task.id.as_str(), 0));
        let list = client
            .list_tasks(ListTasksRequest { context_id: task.context_id.clone(), ..Default::default() })
            .await
            .unwrap();
        assert_eq!(list.tasks.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), [task.id.as_str()]);
        let config = TaskPushNotificationConfig {
            id: "c1".into(),
            task_id: task.id.clone(),
            url: "http://127.0.0.1:9/hook".into(),
            ..Default::default()
        };
        assert_eq!(client.create_push_config(config).await.unwrap().id, "c1");
        let which =
            GetTaskPushNotificationConfigRequest { tenant: String::new(), task_id: task.id.clone(), id: "c1".into() };
        assert_eq!(client.get_push_config(which.clone()).await.unwrap().url, "http://127.0.0.1:9/hook");
        let all = ListTaskPushNotificationConfigsRequest { task_id: task.id.clone(), ..Default::default() };
        assert_eq!(client.list_push_configs(all.clone()).await.unwrap().configs.len(), 1);
        client.delete_push_config(which).await.unwrap();
        assert!(client.list_push_configs(all).await.unwrap().configs.is_empty());
        // A finished task: cancel refused, subscribe refused, each with its kind.
        let cancel =
            client.cancel_task(CancelTaskRequest { tenant: String::new(), id: task.id.clone(), metadata: None });
        match cancel.await {
            Err(ClientError::Protocol(e)) => assert_eq!(e.kind, ErrorKind::TaskNotCancelable, "{binding:?}"),
            other => panic!("{binding:?}: {other:?}"),
        }
        match client.subscribe_to_task(&task.id).await {
            Err(ClientError::Protocol(e)) => assert_eq!(e.kind, ErrorKind::UnsupportedOperation, "{binding:?}"),
            other => panic!("{binding:?}: {:?}", other.map(|_| ())),
        }
        match client.get_task(GetTaskRequest { tenant: String::new(), id: "nope".into(), history_length: None }).await {
            Err(ClientError::Protocol(e)) => {
                assert_eq!(
                    (e.kind, e.metadata.get("taskId").map(String::as_str)),
                    (ErrorKind::TaskNotFound, Some("nope"))
                )
            }
            other => panic!("{binding:?}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn an_unreachable_agent_and_a_missing_card_are_told_apart() {
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap();
    let err = Client::connect(&format!("http://{closed}"), ClientOptions::default()).await.unwrap_err();
    assert!(matches!(err, ClientError::Transport(_)), "{err:?}");
    // A server without a card.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let mut buf = [0u8; 2048];
            let _ = conn.read(&mut buf).await;
            let _ = conn.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").await;
        }
    });
    let err = Client::connect(&url, ClientOptions::default()).await.unwrap_err();
    assert!(matches!(err, ClientError::Card(_)), "{err:?}");
}

/// What the hostile server of [`hostile_server`] does with a request to one of its paths.
enum Reply {
    /// These bytes, then the connection closes.
    Bytes(Vec<u8>),
    /// A 200 with this content type whose body never ends (bounded here: 256 MiB).
    Endless(&'static str),
    /// An event stream: a submitted task, then keep-alive comments every 50 ms (bounded here: 20 s).
    ForeverStream,
}

/// A hostile agent on 127.0.0.1: its card at `/{name}/.well-known/agent-card.json` names the
/// JSON-RPC interface `/{name}`, answered by `reply(name)`; records each request it gets.
async fn hostile_server(
    reply: impl Fn(&str) -> Reply + Send + Sync + 'static,
) -> (String, Arc<std::sync::Mutex<Vec<String>>>) {
    let reply = Arc::new(reply);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (url, log) = (base.clone(), seen.clone());
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let (url, log, reply) = (url.clone(), log.clone(), reply.clone());
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 65536 {
                    match conn.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let request = String::from_utf8_lossy(&request).into_owned();
                log.lock().unwrap().push(request.clone());
                let path = request.split_whitespace().nth(1).unwrap_or("/").to_string();
                let name = path.trim_start_matches('/').split('/').next().unwrap_or("").to_string();
                let reply = if path.ends_with("/.well-known/agent-card.json") {
                    let card = serde_json::json!({
                        "name": "hostile", "description": "", "version": "1",
                        "supportedInterfaces": [{"url": format!("{url}/{name}"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
                        "capabilities": {"streaming": true}, "defaultInputModes": [], "defaultOutputModes": [], "skills": []
                    })
                    .to_string();
                    let head = format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", card.len());
                    Reply::Bytes([head.into_bytes(), card.into_bytes()].concat())
                } else {
                    reply(&name)
                };
                let _ = match reply {
                    Reply::Bytes(bytes) => conn.write_all(&bytes).await,
                    Reply::Endless(content_type) => {
                        let head = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\nconnection: close\r\n\r\n{{\"x\": \""
                        );
                        let mut result = conn.write_all(head.as_bytes()).await;
                        let chunk = vec![b'a'; 64 * 1024];
                        for _ in 0..4096 {
                            if result.is_err() {
                                break;
                            }
                            result = conn.write_all(&chunk).await;
                        }
                        result
                    }
                    Reply::ForeverStream => {
                        let task = r#"{"jsonrpc":"2.0","id":1,"result":{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_SUBMITTED"}}}}"#;
                        let head = format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\ndata: {task}\n\n");
                        let mut result = conn.write_all(head.as_bytes()).await;
                        for _ in 0..400 {
                            if result.is_err() {
                                break;
                            }
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            result = conn.write_all(b": keep-alive\n\n").await;
                        }
                        result
                    }
                };
            });
        }
    });
    (base, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_answers_are_bounded_and_credentials_stay_on_their_origin() {
    let (elsewhere, reached) =
        hostile_server(|_| Reply::Bytes(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n".to_vec())).await;
    let to_elsewhere =
        format!("HTTP/1.1 307 Temporary Redirect\r\nlocation: {elsewhere}/\r\ncontent-length: 0\r\n\r\n");
    let (agent, _) = hostile_server(move |name| match name {
        "redirect" => Reply::Bytes(to_elsewhere.clone().into_bytes()),
        "endless" => Reply::Endless("application/json"),
        _ => Reply::ForeverStream,
    })
    .await;
    let opts = ClientOptions {
        credentials: Credentials::ApiKey("k1-secret".into()),
        timeout: Duration::from_secs(10),
        max_answer_bytes: 1 << 20,
        stream_time: Duration::from_secs(1),
        ..Default::default()
    };
    // A call redirected to another origin (another port): refused, the API key not sent there.
    let redirecting = Client::connect(&format!("{agent}/redirect"), opts.clone()).await.unwrap();
    match redirecting.send_text("hi").await {
        Err(ClientError::Transport(why)) => assert!(why.contains("redirected to another origin"), "{why}"),
        other => panic!("{other:?}"),
    }
    assert!(reached.lock().unwrap().is_empty(), "nothing reached another origin");
    let endless = Client::connect(&format!("{agent}/endless"), opts.clone()).await.unwrap();
    assert_eq!(endless.send_text("hi").await.unwrap_err(), ClientError::TooLarge(1 << 20));
    let stream = endless.send_streaming_message(request(Message::user_text("hi"))).await.map(|_| ()).unwrap_err();
    assert_eq!(stream, ClientError::TooLarge(1 << 20), "a stream answered with endless JSON");
    let forever = Client::connect(&format!("{agent}/forever"), opts).await.unwrap();
    let started = std::time::Instant::now();
    let events: Vec<_> =
        forever.send_streaming_message(request(Message::user_text("hi"))).await.unwrap().collect().await;
    assert!(matches!(events.last(), Some(Err(ClientError::TooLong(_)))), "{events:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
}
