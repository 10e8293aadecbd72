//! The publisher side of the edge hub: a [`StreamHub`] that fans events out in process as before
//! and also pushes every event to the edge worker's publish endpoint, signed with the shared secret
//! (see [`crate::signature`]).
//!
//! Publishing never blocks the engine: events go to one background sender, which posts them in
//! order (consecutive events of a task in one request), retrying failures with backoff a bounded
//! number of times. The edge takes each sequence number once, so a retried publish is harmless.
//! Short-lived hosts (Lambda) await [`StreamHub::flush`] before their invocation ends.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use tokio::sync::{mpsc, oneshot};

use crate::{signature, PublishBatch, PUBLISH_PATH};
use a2a_engine::ports::{EventRecord, HubMessage, StreamHub};
use a2a_protocol::error::{A2aError, Result};

/// Most events in one publish request.
const MAX_BATCH: usize = 64;

#[derive(Clone)]
pub struct EdgeSettings {
    /// The edge worker's base URL (or its full publish URL).
    pub url: String,
    pub secret: String,
    pub timeout: Duration,
    /// Tries per publish before it is given up (and logged).
    pub max_attempts: u32,
}

impl std::fmt::Debug for EdgeSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EdgeSettings")
            .field("url", &self.url)
            .field("secret", &"<redacted>")
            .field("timeout", &self.timeout)
            .field("max_attempts", &self.max_attempts)
            .finish()
    }
}

impl EdgeSettings {
    pub fn new(url: &str, secret: &str) -> Self {
        Self { url: url.into(), secret: secret.into(), timeout: Duration::from_secs(5), max_attempts: 5 }
    }

    fn publish_url(&self) -> String {
        let base = self.url.trim_end_matches('/');
        if base.ends_with(PUBLISH_PATH) {
            base.to_string()
        } else {
            format!("{base}{PUBLISH_PATH}")
        }
    }
}

enum Command {
    /// An event of a task, with the trace it was recorded in (the publish call continues it).
    Publish(String, EventRecord, Option<a2a_telemetry::TraceContext>),
    Flush(oneshot::Sender<()>),
}

pub struct EdgePublisher {
    inner: Arc<dyn StreamHub>,
    tx: mpsc::UnboundedSender<Command>,
}

impl EdgePublisher {
    /// `inner`, publishing to the edge as well when `settings` are given; call inside a tokio runtime.
    pub fn wrap(inner: Arc<dyn StreamHub>, settings: Option<EdgeSettings>) -> Result<Arc<dyn StreamHub>> {
        Ok(match settings {
            Some(settings) => Self::start(inner, settings)?,
            None => inner,
        })
    }

    /// Wraps `inner` and starts the sender; call inside a tokio runtime.
    pub fn start(inner: Arc<dyn StreamHub>, settings: EdgeSettings) -> Result<Arc<Self>> {
        if settings.secret.is_empty() {
            return Err(A2aError::invalid_params("the edge publish secret must not be empty"));
        }
        let client = reqwest::Client::builder()
            .timeout(settings.timeout)
            .build()
            .map_err(|e| A2aError::internal(format!("edge publisher: {e}")))?;
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(Sender { client, url: settings.publish_url(), settings }.run(rx));
        Ok(Arc::new(Self { inner, tx }))
    }
}

impl StreamHub for EdgePublisher {
    fn publish(&self, task_id: &str, event: &EventRecord) {
        self.inner.publish(task_id, event);
        let trace = a2a_telemetry::context::current();
        let _ = self.tx.send(Command::Publish(task_id.to_string(), event.clone(), trace));
    }

    fn subscribe(&self, task_id: &str) -> BoxStream<'static, HubMessage> {
        self.inner.subscribe(task_id)
    }

    fn close(&self, task_id: &str) {
        self.inner.close(task_id);
    }

    fn replay(&self, task_id: &str, after: u64) -> Option<Vec<Arc<a2a_engine::ports::SharedEvent>>> {
        self.inner.replay(task_id, after)
    }

    fn share(&self, task_id: &str, events: Vec<EventRecord>) -> Vec<Arc<a2a_engine::ports::SharedEvent>> {
        self.inner.share(task_id, events)
    }

    /// Waits until every event published so far has been sent (or given up on).
    fn flush(&self) -> BoxFuture<'static, ()> {
        let (done, wait) = oneshot::channel();
        let sent = self.tx.send(Command::Flush(done)).is_ok();
        Box::pin(async move {
            if sent {
                let _ = wait.await;
            }
        })
    }
}

struct Sender {
    client: reqwest::Client,
    url: String,
    settings: EdgeSettings,
}

impl Sender {
    async fn run(self, mut rx: mpsc::UnboundedReceiver<Command>) {
        let mut queue = VecDeque::new();
        while let Some(command) = rx.recv().await {
            queue.push_back(command);
            while let Ok(command) = rx.try_recv() {
                queue.push_back(command);
            }
            while let Some(command) = queue.pop_front() {
                match command {
                    Command::Flush(done) => {
                        let _ = done.send(());
                    }
                    Command::Publish(task_id, first, trace) => {
                        let mut events = vec![first];
                        while events.len() < MAX_BATCH {
                            match queue.pop_front() {
                                Some(Command::Publish(t, ev, _)) if t == task_id => events.push(ev),
                                Some(other) => {
                                    queue.push_front(other);
                                    break;
                                }
                                None => break,
                            }
                        }
                        // One CLIENT span per batch, in the trace of its first event.
                        let span = a2a_telemetry::spans::client(a2a_telemetry::spans::Callee::Edge, "POST", &self.url);
                        a2a_telemetry::context::continue_trace(&span, trace.as_ref());
                        let send = self.send(PublishBatch { task_id, events });
                        tracing::Instrument::instrument(send, span).await;
                    }
                }
            }
        }
    }

    async fn send(&self, batch: PublishBatch) {
        let Ok(body) = serde_json::to_vec(&batch).map(bytes::Bytes::from) else { return };
        let seqs = (batch.events.first().map_or(0, |e| e.seq), batch.events.last().map_or(0, |e| e.seq));
        let mut delay = Duration::from_millis(100);
        for attempt in 1..=self.settings.max_attempts {
            let now = chrono::Utc::now().timestamp();
            let mut trace = http::HeaderMap::new();
            a2a_telemetry::context::inject(&mut trace);
            let request = self
                .client
                .post(&self.url)
                .headers(trace)
                .header(http::header::CONTENT_TYPE, "application/json")
                .header(signature::TIMESTAMP_HEADER, now.to_string())
                .header(signature::SIGNATURE_HEADER, signature::sign(self.settings.secret.as_bytes(), now, &body))
                .body(body.clone());
            let span = tracing::Span::current();
            let outcome = match request.send().await {
                Ok(resp) if resp.status().is_success() => {
                    a2a_telemetry::spans::call_outcome(&span, Some(resp.status().as_u16()), None);
                    return;
                }
                Ok(resp) => {
                    let status = resp.status();
                    let retry = status.is_server_error() || status.as_u16() == 408 || status.as_u16() == 429;
                    (format!("HTTP {status}"), retry, Some(status.as_u16()))
                }
                Err(e) => (e.to_string(), true, None),
            };
            let (error, retry, status) = outcome;
            if !retry || attempt == self.settings.max_attempts {
                a2a_telemetry::spans::call_outcome(&span, status, status.is_none().then_some("failed"));
                tracing::warn!(task_id = %batch.task_id, first = seqs.0, last = seqs.1, attempt, %error,
                    "edge publish given up; edge streams of this task may stall until they reconnect");
                return;
            }
            tracing::debug!(task_id = %batch.task_id, attempt, %error, "edge publish failed; retrying");
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(2));
        }
    }
}
