//! The embedded server against clients that misbehave, over real sockets on 127.0.0.1 with short
//! deadlines: stalled headers, stalled and trickled bodies, bodies cut short or broken (nothing
//! runs), request-smuggling framing, clients that never read a response, a full connection table,
//! unauthenticated large bodies, and open streams at shutdown. Every wait is bounded.

use crate::harness;

use std::time::{Duration, Instant};

use a2a::server::{serve, ServerLimits};
use harness::*;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const SHORT: Duration = Duration::from_millis(600);

fn limits() -> ServerLimits {
    ServerLimits {
        max_connections: 8,
        header_timeout: SHORT,
        body_timeout: SHORT,
        write_timeout: SHORT,
        grace: Duration::from_secs(3),
        ..ServerLimits::default()
    }
}

struct Server {
    agent: Agent,
    addr: std::net::SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<()>,
}

async fn server_with(setup: Setup, limits: ServerLimits) -> Server {
    let agent = agent_with(setup).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let service = agent.embedded.service.clone();
    let done = tokio::spawn(async move {
        serve(listener, service, async move { rx.await.unwrap_or(()) }, limits).await.unwrap();
    });
    Server { agent, addr, stop: Some(tx), done }
}

async fn server() -> Server {
    server_with(Setup::default(), limits()).await
}

/// Everything the server sends until it closes, or until `wait` passes.
async fn read_all(stream: &mut TcpStream, wait: Duration) -> (String, bool) {
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    let deadline = Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (String::from_utf8_lossy(&out).into_owned(), true),
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
            Err(_) => return (String::from_utf8_lossy(&out).into_owned(), false),
        }
    }
}

impl Server {
    async fn connect(&self) -> TcpStream {
        TcpStream::connect(self.addr).await.unwrap()
    }

    /// A task that sits in INPUT_REQUIRED, to see whether a refused CancelTask ran anyway.
    async fn waiting_task(&self) -> String {
        let v = self.agent.rpc("SendMessage", json!({"message": msg("tck-input-required-lim", "x")})).await;
        v["result"]["task"]["id"].as_str().unwrap().to_string()
    }

    async fn state(&self, id: &str) -> String {
        let v = self.agent.rpc("GetTask", json!({"id": id})).await;
        v["result"]["status"]["state"].as_str().unwrap().to_string()
    }
}

#[tokio::test]
async fn stalled_headers_are_cut_at_the_header_deadline() {
    let s = server().await;
    let mut c = s.connect().await;
    c.write_all(b"POST / HTTP/1.1\r\nHost: x\r\n").await.unwrap();
    let started = Instant::now();
    let (_, closed) = read_all(&mut c, Duration::from_secs(5)).await;
    assert!(closed && started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    // An idle keep-alive connection goes the same way.
    let mut idle = s.connect().await;
    let (_, closed) = read_all(&mut idle, Duration::from_secs(5)).await;
    assert!(closed);
}

#[tokio::test]
async fn stalled_trickled_broken_and_short_bodies_run_nothing() {
    let s = server().await;
    let id = s.waiting_task().await;
    let head = |len: usize| {
        format!("POST /tasks/{id}:cancel HTTP/1.1\r\nHost: x\r\nA2A-Version: 1.0\r\nContent-Type: application/json\r\nContent-Length: {len}\r\n\r\n")
    };

    // Stalled: the body deadline answers 408.
    let mut c = s.connect().await;
    c.write_all(format!("{}{{", head(100)).as_bytes()).await.unwrap();
    let started = Instant::now();
    let (text, _) = read_all(&mut c, Duration::from_secs(5)).await;
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(3));

    // Trickled: one byte every 100 ms never finishes in time either.
    let mut c = s.connect().await;
    c.write_all(head(100).as_bytes()).await.unwrap();
    let trickle = async {
        for _ in 0..50 {
            if c.write_all(b" ").await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(3), trickle).await;
    let (text, _) = read_all(&mut c, Duration::from_secs(2)).await;
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");

    // Cut short: the client closes its side after 2 of 100 bytes.
    let mut c = s.connect().await;
    c.write_all(format!("{}{{}}", head(100)).as_bytes()).await.unwrap();
    c.shutdown().await.unwrap();
    let (text, _) = read_all(&mut c, Duration::from_secs(5)).await;
    assert!(text.starts_with("HTTP/1.1 400"), "{text}");

    // A broken chunked body.
    let mut c = s.connect().await;
    let bad = format!("POST /tasks/{id}:cancel HTTP/1.1\r\nHost: x\r\nA2A-Version: 1.0\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{{}}\r\n0\r\n\r\n");
    c.write_all(bad.as_bytes()).await.unwrap();
    let (text, _) = read_all(&mut c, Duration::from_secs(5)).await;
    assert!(text.starts_with("HTTP/1.1 400"), "{text}");

    assert_eq!(s.state(&id).await, "TASK_STATE_INPUT_REQUIRED", "no refused request ran");
}

#[tokio::test]
async fn request_smuggling_shapes_are_refused() {
    let s = server().await;
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}"#;
    let both = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
        body.len(),
        body.len()
    );
    let mut c = s.connect().await;
    c.write_all(both.as_bytes()).await.unwrap();
    let (text, _) = read_all(&mut c, Duration::from_secs(5)).await;
    assert!(text.starts_with("HTTP/1.1 400"), "{text}");
    assert!(text.to_ascii_lowercase().contains("connection: close"));
    let gzip = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
        body.len()
    );
    let mut c = s.connect().await;
    c.write_all(gzip.as_bytes()).await.unwrap();
    let (text, _) = read_all(&mut c, Duration::from_secs(5)).await;
    assert!(text.starts_with("HTTP/1.1 501"), "{text}");
}

#[tokio::test]
async fn a_client_that_never_reads_is_dropped() {
    let s = server().await;
    // A task with a large artifact, so its GetTask answer is far larger than socket buffers.
    let big = "x".repeat(900 * 1024);
    let v = s.agent.rpc("SendMessage", json!({"message": msg("echo-big", &big)})).await;
    let id = v["result"]["task"]["id"].as_str().unwrap().to_string();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut c = socket.connect(s.addr).await.unwrap();
    let req = format!("GET /tasks/{id} HTTP/1.1\r\nHost: x\r\nA2A-Version: 1.0\r\n\r\n");
    for _ in 0..20 {
        c.write_all(req.as_bytes()).await.unwrap(); // pipelined: several answers queue up unread
    }
    tokio::time::sleep(SHORT * 4).await; // never read while the server waits on us
    let (text, closed) = read_all(&mut c, Duration::from_secs(10)).await;
    assert!(closed, "the server closed the connection");
    assert!(text.len() < 20 * big.len(), "it did not get everything: {} bytes", text.len());
}

#[tokio::test]
async fn past_the_connection_cap_new_connections_get_503() {
    let s = server_with(
        Setup::default(),
        ServerLimits { max_connections: 2, header_timeout: Duration::from_secs(5), ..limits() },
    )
    .await;
    let _a = s.connect().await;
    let _b = s.connect().await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut c = s.connect().await;
    let (text, closed) = read_all(&mut c, Duration::from_secs(3)).await;
    assert!(text.starts_with("HTTP/1.1 503"), "{text}");
    assert!(text.contains("retry-after: 1") && closed);
}

#[tokio::test]
async fn an_unknown_caller_cannot_send_a_large_body() {
    let s = server_with(Setup { api_keys: Some("alice:ka"), ..Default::default() }, limits()).await;
    let mut c = s.connect().await;
    let head = "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5000000\r\n\r\n";
    c.write_all(head.as_bytes()).await.unwrap();
    // Answered at once, without waiting for (or reading) the 5 MB.
    let (text, _) = read_all(&mut c, Duration::from_secs(2)).await;
    assert!(text.starts_with("HTTP/1.1 401"), "{text}");
    assert!(text.to_ascii_lowercase().contains("www-authenticate"));
}

#[tokio::test]
async fn open_streams_end_cleanly_at_shutdown() {
    let mut s = server().await;
    let v = s
        .agent
        .rpc("SendMessage", json!({"message": msg("test-resubscribe-message-id-down", "x"), "configuration": {"returnImmediately": true}}))
        .await;
    let id = v["result"]["task"]["id"].as_str().unwrap().to_string();
    let mut c = s.connect().await;
    c.write_all(format!("GET /tasks/{id}:subscribe HTTP/1.1\r\nHost: x\r\nA2A-Version: 1.0\r\n\r\n").as_bytes())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    s.stop.take().unwrap().send(()).unwrap();
    let started = Instant::now();
    let (text, closed) = read_all(&mut c, Duration::from_secs(5)).await;
    assert!(closed && started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    assert!(text.contains("transfer-encoding: chunked"), "{text}");
    assert!(text.ends_with("0\r\n\r\n"), "the stream ended with its final chunk: {text:?}");
    let _ = tokio::time::timeout(Duration::from_secs(5), &mut s.done).await;
}

#[tokio::test]
async fn a_declared_length_over_the_limit_is_refused_at_once() {
    let s = server().await;
    let mut c = s.connect().await;
    // The harness allows 1 MiB; the body is never sent. The answer is 413, not a 408 after the
    // body deadline.
    let head = "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1048577\r\n\r\n";
    c.write_all(head.as_bytes()).await.unwrap();
    let (text, closed) = read_all(&mut c, Duration::from_secs(5)).await;
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(closed, "the unread body leaves the connection unusable");
}

#[tokio::test]
async fn an_http_1_1_request_needs_exactly_one_host() {
    let s = server().await;
    for head in [
        "GET /.well-known/agent-card.json HTTP/1.1\r\n\r\n",
        "GET /tasks/x HTTP/1.1\r\nA2A-Version: 1.0\r\n\r\n",
        "GET /tasks/x HTTP/1.1\r\nHost: a\r\nHost: b\r\nA2A-Version: 1.0\r\n\r\n",
    ] {
        let mut c = s.connect().await;
        c.write_all(head.as_bytes()).await.unwrap();
        let (text, _) = read_all(&mut c, Duration::from_secs(5)).await;
        assert!(text.starts_with("HTTP/1.1 400"), "{head:?}: {text}");
        assert!(text.contains("Host"), "{text}");
    }
    // HTTP/1.0 may leave it out.
    let mut c = s.connect().await;
    c.write_all(b"GET /.well-known/agent-card.json HTTP/1.0\r\n\r\n").await.unwrap();
    let (text, _) = read_all(&mut c, Duration::from_secs(5)).await;
    assert!(text.starts_with("HTTP/1.0 200") || text.starts_with("HTTP/1.1 200"), "{text}");
}

#[tokio::test]
async fn request_bodies_in_flight_are_bounded_server_wide() {
    let setup =
        Setup { request_bytes: Some(256 * 1024), budget_wait: Some(Duration::from_millis(200)), ..Default::default() };
    let s = server_with(setup, limits()).await;
    let head = |len: usize| {
        format!("POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len}\r\n\r\n")
    };
    // A holds 200 KiB of the 256 KiB while its body trickles in.
    let mut a = s.connect().await;
    a.write_all(format!("{}{{", head(200 * 1024)).as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    // B does not fit beside it: it waits, then is told to come back.
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}, "pad": "p".repeat(150 * 1024)});
    let body = body.to_string();
    let mut b = s.connect().await;
    b.write_all(format!("{}{body}", head(body.len())).as_bytes()).await.unwrap();
    let (text, _) = read_all(&mut b, Duration::from_secs(5)).await;
    assert!(text.starts_with("HTTP/1.1 503"), "{text}");
    assert!(text.contains("retry-after: 1") && text.contains("request bytes"), "{text}");
    // A's deadline frees its share: the same request goes through.
    let (text, _) = read_all(&mut a, Duration::from_secs(5)).await;
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    let mut b = s.connect().await;
    b.write_all(format!("{}{body}", head(body.len())).as_bytes()).await.unwrap();
    let (text, _) = read_all(&mut b, Duration::from_secs(2)).await;
    assert!(text.starts_with("HTTP/1.1 200") && text.contains("TASK_NOT_FOUND"), "{text}");
}

#[tokio::test]
async fn answers_in_flight_are_bounded_server_wide() {
    let setup =
        Setup { answer_bytes: Some(1 << 20), budget_wait: Some(Duration::from_millis(200)), ..Default::default() };
    let s = server_with(setup, limits()).await;
    let v = s.agent.rpc("SendMessage", json!({"message": msg("echo-big-answer", &"x".repeat(300 * 1024))})).await;
    let id = v["result"]["task"]["id"].as_str().unwrap().to_string();
    let get = |id: String| {
        let agent = &s.agent;
        async move { agent.send("GET", &format!("/tasks/{id}"), &[("A2A-Version", "1.0")], None).await }
    };
    // The first answer (about 600 KB) is held until its bytes are dropped (written).
    let (status, _, first) = get(id.clone()).await;
    assert_eq!(status, 200);
    let (status, _, second) = get(id.clone()).await;
    assert_eq!(status, 503, "{:?}", String::from_utf8_lossy(&second.bytes()));
    assert!(String::from_utf8_lossy(&second.bytes()).contains("RESOURCE_EXHAUSTED"));
    drop(first);
    let (status, _, _) = get(id).await;
    assert_eq!(status, 200, "the first answer's share came back once it was gone");
}

#[tokio::test]
async fn a_list_page_stops_at_its_byte_budget_and_the_next_page_goes_on() {
    let setup = Setup { list_page_bytes: Some(1 << 20), max_body: Some(2 << 20), ..Default::default() };
    let s = server_with(setup, limits()).await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let v = s
            .agent
            .rpc("SendMessage", json!({"message": msg(&format!("echo-page-{i}"), &"y".repeat(300 * 1024))}))
            .await;
        ids.push(v["result"]["task"]["id"].as_str().unwrap().to_string());
    }
    let mut seen = Vec::new();
    let mut token = String::new();
    let mut pages = 0;
    loop {
        let page =
            s.agent.rpc("ListTasks", json!({"pageSize": 100, "includeArtifacts": true, "pageToken": token})).await;
        let tasks = page["result"]["tasks"].as_array().unwrap();
        assert!(!tasks.is_empty() && tasks.len() < 5, "a page of {} tasks of 300 KB", tasks.len());
        seen.extend(tasks.iter().map(|t| t["id"].as_str().unwrap().to_string()));
        token = page["result"]["nextPageToken"].as_str().unwrap().to_string();
        pages += 1;
        if token.is_empty() || pages > 5 {
            break;
        }
    }
    assert_eq!(pages, 2);
    ids.reverse(); // newest first
    assert_eq!(seen, ids, "every task once, in order");
}

#[tokio::test]
async fn what_a_request_may_make_the_server_build_is_bounded_on_every_binding() {
    let s = server().await;
    let parts = |n: usize| vec![json!({"text": "x"}); n];
    let over = json!({"messageId": "m", "role": "ROLE_USER", "parts": parts(1025)});
    // JSON-RPC: InvalidParams naming the field, before a part past the limit is decoded.
    let v = s.agent.rpc("SendMessage", json!({"message": over})).await;
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().starts_with("params.message.parts"), "{v}");
    // HTTP+JSON, 1.0 and 0.3.
    let r = s.agent.rest("POST", "/message:send", Some(json!({"message": over}))).await;
    assert_eq!((r.status, reason(&r.body)), (400, "INVALID_PARAMS"), "{}", r.body);
    assert!(r.body["error"]["message"].as_str().unwrap().contains("more than 1024 parts"), "{}", r.body);
    let content = vec![json!({"text": "x"}); 1025];
    let old = json!({"message": {"messageId": "m", "role": "ROLE_USER", "content": content}});
    let r =
        s.agent.call("POST", "/v1/message:send", &[("content-type", "application/json")], Some(&old.to_string())).await;
    assert_eq!(r.status, 400, "{}", r.body);
    // A document nested past the limit, or holding too many values: InvalidRequest, nothing decoded.
    let deep = format!("{}{}", "[".repeat(80), "]".repeat(80));
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{"message":{{"messageId":"m","role":"ROLE_USER","parts":[{{"data":{deep}}}]}}}}}}"#
    );
    let r =
        s.agent.call("POST", "/", &[("content-type", "application/json"), ("A2A-Version", "1.0")], Some(&body)).await;
    assert_eq!(r.body["error"]["code"], -32600, "{}", r.body);
    assert!(r.body["error"]["message"].as_str().unwrap().contains("levels deep"), "{}", r.body);
    let wide = format!("[{}0]", "0,".repeat(210_000));
    let body =
        json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]}, "metadata": {"x": "y"}})
            .to_string()
            .replace(r#""y""#, &wide);
    let r = s
        .agent
        .call("POST", "/message:send", &[("content-type", "application/json"), ("A2A-Version", "1.0")], Some(&body))
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body["error"]["message"].as_str().unwrap().contains("200000 JSON values"), "{}", r.body);
}
