//! Shared test helpers: a DynamoDB table and SQS clients on the moto server that the test command
//! starts (`AWS_ENDPOINT_URL`). Without it, AWS tests are skipped — unless `A2A_REQUIRE_AWS=1`
//! (set by scripts/test), where a missing server is a failure.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use a2a::adapters::aws::{resources, sdk_config, DynamoStore};
use a2a::page_token::PageTokens;

pub fn aws_available() -> bool {
    let set = std::env::var("AWS_ENDPOINT_URL").is_ok_and(|v| !v.is_empty());
    if !set {
        assert!(std::env::var("A2A_REQUIRE_AWS").is_err(), "A2A_REQUIRE_AWS is set but AWS_ENDPOINT_URL is not");
        eprintln!("AWS_ENDPOINT_URL not set: skipping the AWS half of this test (scripts/test runs it on moto)");
    }
    set
}

/// A fresh table (unique name) on moto.
pub async fn dynamo_store(secret: &str) -> Arc<DynamoStore> {
    let sdk = sdk_config().await;
    let client = aws_sdk_dynamodb::Client::new(&sdk);
    let table = format!("t-{}", uuid::Uuid::new_v4().simple());
    resources::ensure_table(&client, &table, true).await.unwrap();
    Arc::new(DynamoStore::new(
        client,
        table,
        PageTokens::new(secret.as_bytes().to_vec()),
        Some(std::time::Duration::from_secs(86_400)),
    ))
}

pub async fn sqs_client() -> aws_sdk_sqs::Client {
    aws_sdk_sqs::Client::new(&sdk_config().await)
}

/// The URL of queue `name` on moto.
pub async fn queue_url(sqs: &aws_sdk_sqs::Client, name: &str) -> String {
    sqs.get_queue_url().queue_name(name).send().await.unwrap().queue_url().unwrap().to_string()
}

/// One request a [`webhook_receiver`] got.
#[derive(Clone, Debug)]
pub struct Hit {
    pub at: std::time::Instant,
    pub path: String,
    pub headers: http::HeaderMap,
    pub body: serde_json::Value,
    /// The body as received (for signature checks).
    pub raw: bytes::Bytes,
}

pub type Hits = Arc<parking_lot::Mutex<Vec<Hit>>>;

/// A webhook receiver on 127.0.0.1: answers the statuses of `script` in turn (then 200) and records
/// every request.
pub async fn webhook_receiver(script: Vec<u16>) -> (String, Hits) {
    use http_body_util::{BodyExt, Full};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let hits: Hits = Arc::default();
    let script = Arc::new(parking_lot::Mutex::new(script.into_iter()));
    let h = hits.clone();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let (h, script) = (h.clone(), script.clone());
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let (h, script) = (h.clone(), script.clone());
                    async move {
                        let (parts, body) = req.into_parts();
                        let bytes = body.collect().await.unwrap().to_bytes();
                        let body = serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
                        let path = parts.uri.path().to_string();
                        let at = std::time::Instant::now();
                        h.lock().push(Hit { at, path, headers: parts.headers, body, raw: bytes.clone() });
                        let status = script.lock().next().unwrap_or(200);
                        let resp =
                            hyper::Response::builder().status(status).body(Full::new(bytes::Bytes::new())).unwrap();
                        Ok::<_, std::convert::Infallible>(resp)
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    (url, hits)
}

/// A fresh directory under the system's temporary one, removed with its contents on drop.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    pub fn new(what: &str) -> Self {
        let path = std::env::temp_dir().join(format!("a2a-it-{what}-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&path).unwrap();
        Self(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The embedded SQL store in a fresh directory (its queues opened and dropped: nothing consumes them).
pub async fn sqlite_store(what: &str) -> (Arc<a2a::adapters::sqlite::SqliteStore>, TempDir) {
    let dir = TempDir::new(what);
    let opened = a2a::adapters::sqlite::open(a2a::adapters::sqlite::SqliteOptions::new(&dir.0)).await.unwrap();
    (opened.store, dir)
}

/// A new SUBMITTED task of `owner` with one message.
pub fn submitted(id: &str, owner: &str) -> a2a::ports::TaskRecord {
    submitted_at(id, owner, "ctx", chrono::Utc::now())
}

/// [`submitted`] in context `ctx`, created `at`.
pub fn submitted_at(id: &str, owner: &str, ctx: &str, at: chrono::DateTime<chrono::Utc>) -> a2a::ports::TaskRecord {
    use a2a::types::{Message, Task, TaskState, TaskStatus};
    let mut first = Message::user_text("hello");
    first.task_id = id.into();
    first.context_id = ctx.into();
    a2a::ports::TaskRecord {
        task: Task {
            id: id.into(),
            context_id: ctx.into(),
            status: TaskStatus::new(TaskState::Submitted, at),
            artifacts: None,
            history: vec![first],
            metadata: None,
        },
        owner: owner.into(),
        version: 1,
        last_seq: 0,
        cancel_requested: false,
        has_push: false,
        created_at: at,
        turn: None,
    }
}
