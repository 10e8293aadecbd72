//! The router-level test harness: an embedded engine with the conformance agent, called through
//! `Service::handle` (no socket), and helpers to read JSON, JSON-RPC and SSE answers.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use a2a::auth::{AuthSettings, Authenticator};
use a2a::card::default_card;
use a2a::embedded::{start, Embedded, EmbeddedConfig};
use a2a::engine::EngineConfig;
use a2a::executor::ConformanceAgent;
use a2a::http::{Body, Limits};
use a2a::types::AgentCard;
use bytes::Bytes;
use futures::StreamExt;
use serde_json::{json, Value};

pub struct Agent {
    pub embedded: Embedded,
}

#[derive(Default)]
pub struct Setup {
    pub api_keys: Option<&'static str>,
    /// Another authenticator (wins over `api_keys`).
    pub auth: Option<Arc<dyn Authenticator>>,
    pub extended: bool,
    pub card: Option<AgentCard>,
    pub max_body: Option<usize>,
    pub blocking_timeout: Option<Duration>,
    /// `--webhook-allow`.
    pub webhook_allow: Option<&'static str>,
    /// The budgets (`--max-answer-bytes`, `--max-request-bytes`) and how long a share is waited for.
    pub answer_bytes: Option<usize>,
    pub request_bytes: Option<usize>,
    pub budget_wait: Option<Duration>,
    /// `--list-page-bytes`.
    pub list_page_bytes: Option<usize>,
}

pub async fn agent() -> Agent {
    agent_with(Setup::default()).await
}

pub async fn agent_with(setup: Setup) -> Agent {
    let auth: Arc<dyn Authenticator> = match setup.auth {
        Some(auth) => auth,
        None => AuthSettings { api_keys: setup.api_keys.map(String::from), ..Default::default() }.build().unwrap(),
    };
    let mut conformance = ConformanceAgent::new(Arc::new(a2a::adapters::memory::SystemClock));
    conformance.long_task = Duration::from_millis(1500);
    let extended = setup.extended.then(|| AgentCard { name: "Extended".into(), ..default_card() });
    let embedded = start(EmbeddedConfig {
        card: setup.card.unwrap_or_else(default_card),
        extended_card: extended,
        auth,
        engine: EngineConfig {
            blocking_timeout: setup.blocking_timeout.unwrap_or(Duration::from_secs(10)),
            cancel_timeout: Duration::from_secs(2),
            list_page_bytes: setup.list_page_bytes.unwrap_or(a2a::engine::DEFAULT_LIST_PAGE_BYTES),
            ..Default::default()
        },
        limits: Limits {
            max_body: setup.max_body.unwrap_or(1 << 20),
            keep_alive: Duration::from_millis(200),
            answer_bytes: setup.answer_bytes.unwrap_or(Limits::default().answer_bytes),
            request_bytes: setup.request_bytes.unwrap_or(Limits::default().request_bytes),
            budget_wait: setup.budget_wait.unwrap_or(Duration::from_secs(10)),
        },
        store_limits: a2a::admission::StoreLimits { max_tasks: 10_000, ..Default::default() },
        webhook_allow: a2a::ssrf::AllowList::parse(setup.webhook_allow.unwrap_or("")).unwrap(),
        push_timeout: Duration::from_secs(2),
        ..EmbeddedConfig::new("http://agent.test", Arc::new(conformance))
    })
    .await
    .unwrap();
    Agent { embedded }
}

pub struct Resp {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: Value,
    pub raw: Bytes,
}

/// One SSE event: (id, event name, data).
pub type Sse = Vec<(Option<u64>, Option<String>, Value)>;

impl Agent {
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> (u16, http::HeaderMap, Body) {
        let mut req = http::Request::builder().method(method).uri(path);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let req = req.body(Bytes::from(body.unwrap_or("").to_string())).unwrap();
        let resp = self.embedded.service.handle(req).await;
        let (parts, body) = resp.into_parts();
        (parts.status.as_u16(), parts.headers, body)
    }

    pub async fn call(&self, method: &str, path: &str, headers: &[(&str, &str)], body: Option<&str>) -> Resp {
        let (status, headers, body) = self.send(method, path, headers, body).await;
        let raw = body.bytes();
        let body = serde_json::from_slice(&raw).unwrap_or(Value::Null);
        Resp { status, headers, body, raw }
    }

    /// JSON-RPC with the 1.0 version header.
    pub async fn rpc(&self, method: &str, params: Value) -> Value {
        self.rpc_with(method, params, &[("A2A-Version", "1.0")]).await
    }

    pub async fn rpc_with(&self, method: &str, params: Value, headers: &[(&str, &str)]) -> Value {
        let mut h = vec![("content-type", "application/json")];
        h.extend_from_slice(headers);
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string();
        let r = self.call("POST", "/", &h, Some(&body)).await;
        assert_eq!(r.body["id"], 7, "{}", r.body);
        r.body
    }

    /// REST with the 1.0 version header.
    pub async fn rest(&self, method: &str, path: &str, body: Option<Value>) -> Resp {
        let body = body.map(|b| b.to_string());
        self.call(method, path, &[("A2A-Version", "1.0"), ("content-type", "application/json")], body.as_deref()).await
    }

    pub async fn sse(&self, method: &str, path: &str, headers: &[(&str, &str)], body: Option<&str>) -> (u16, Sse) {
        let (status, h, body) = self.send(method, path, headers, body).await;
        match body {
            Body::Sse(stream) => {
                assert_eq!(h["content-type"], "text/event-stream");
                let chunks: Vec<Bytes> =
                    tokio::time::timeout(Duration::from_secs(20), stream.collect()).await.expect("stream ended");
                let text: String = chunks.iter().map(|c| String::from_utf8_lossy(c).into_owned()).collect();
                (status, parse_sse(&text))
            }
            Body::Full(b) => {
                (status, vec![(None, Some("body".into()), serde_json::from_slice(&b).unwrap_or(Value::Null))])
            }
        }
    }
}

pub fn parse_sse(text: &str) -> Sse {
    text.split("\n\n")
        .filter(|block| !block.trim().is_empty() && !block.starts_with(':'))
        .map(|block| {
            let (mut id, mut event, mut data) = (None, None, String::new());
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id: ") {
                    id = v.parse().ok();
                } else if let Some(v) = line.strip_prefix("event: ") {
                    event = Some(v.to_string());
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data.push_str(v);
                }
            }
            (id, event, serde_json::from_str(&data).unwrap())
        })
        .collect()
}

pub fn msg(id: &str, text: &str) -> Value {
    json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]})
}

pub fn reason(err: &Value) -> &str {
    err["data"][0]["reason"].as_str().or_else(|| err["error"]["details"][0]["reason"].as_str()).unwrap_or("")
}

/// A server on 127.0.0.1 that keeps the JSON body of every request (`Null` when not JSON) and answers
/// each with `answer(body)`: a content type and the bytes. Returns its base URL and the bodies.
pub async fn recording_server(
    answer: fn(&Value) -> (&'static str, String),
) -> (String, Arc<parking_lot::Mutex<Vec<Value>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let keep = seen.clone();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let keep = keep.clone();
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let keep = keep.clone();
                    async move {
                        use http_body_util::BodyExt;
                        let body = req.into_body().collect().await.unwrap().to_bytes();
                        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                        let (content_type, reply) = answer(&body);
                        keep.lock().push(body);
                        Ok::<_, std::convert::Infallible>(
                            hyper::Response::builder()
                                .header("content-type", content_type)
                                .body(http_body_util::Full::new(Bytes::from(reply)))
                                .unwrap(),
                        )
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    (url, seen)
}
