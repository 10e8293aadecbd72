//! The SQS adapters: the work queue (execute and cancel jobs for the task runner) and the push queue
//! (webhook deliveries), and the pollers that consume them in-process (`a2a-local --store aws`;
//! in Lambda the event source mapping does the polling).
//!
//! Both queues are **FIFO**, for two reasons a standard queue cannot give:
//! - *One run per task at a time, in order*: the message group is the task, so SQS hands out a
//!   task's jobs one after the other and never two at once; a duplicate SendMessage (same messageId
//!   from the same principal) produces the same deduplication id, so SQS drops the second enqueue
//!   within its 5-minute window (and the engine drops it beyond: the derived task id already exists).
//! - *Webhook events in order*: the group is (task, webhook); a failed delivery is retried by
//!   extending the message's visibility (exponential backoff with jitter, at most 900 s a step), which
//!   keeps the rest of the group waiting behind it, and after the queue's `maxReceiveCount` the
//!   message moves to the dead-letter queue. (FIFO queues have no per-message delay, hence
//!   visibility rather than DelaySeconds.)
//!
//! The cost is FIFO throughput (300 API calls/s per action, 3,000 with batching, more in
//! high-throughput mode, which groups-per-task suit well), ample for a per-task workload.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_sqs::operation::send_message::builders::SendMessageFluentBuilder;
use aws_sdk_sqs::types::{
    Message, MessageAttributeValue, MessageSystemAttributeName, MessageSystemAttributeNameForSends,
    MessageSystemAttributeValue,
};
use aws_sdk_sqs::Client;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use a2a_engine::ports::{EventRecord, Job, PushConfigStore, PushJob, PushQueue, TaskStore, WorkQueue};
use a2a_engine::push::{Deliverer, Outcome};
use a2a_engine::runner::Runner;
use a2a_engine::webhook::RetryPolicy;
use a2a_protocol::error::{A2aError, Result};
use a2a_protocol::types::StreamResponse;
use a2a_telemetry::context::{TRACEPARENT, TRACESTATE};
use a2a_telemetry::spans::{self, Queue};
use a2a_telemetry::TraceContext;

/// `messaging.system` of SQS (OpenTelemetry's name).
pub const SQS: &str = "aws_sqs";

fn sqs_err<E>(what: &str, e: aws_sdk_sqs::error::SdkError<E, aws_sdk_sqs::config::http::HttpResponse>) -> A2aError
where
    E: aws_sdk_sqs::error::ProvideErrorMetadata + std::fmt::Debug,
{
    crate::failure::call_failed("queue", what, e)
}

/// Sends the current span's trace context with a message: `traceparent` / `tracestate` message
/// attributes, and X-Ray's `AWSTraceHeader` system attribute (so AWS's service map joins too).
fn with_trace(send: SendMessageFluentBuilder) -> SendMessageFluentBuilder {
    let Some(trace) = a2a_telemetry::context::current() else {
        return send;
    };
    let text = |v: &str| MessageAttributeValue::builder().data_type("String").string_value(v).build().ok();
    let mut send = send;
    if let Some(v) = text(trace.traceparent()) {
        send = send.message_attributes(TRACEPARENT, v);
    }
    if let Some(v) = trace.tracestate().and_then(text) {
        send = send.message_attributes(TRACESTATE, v);
    }
    let xray = MessageSystemAttributeValue::builder().data_type("String").string_value(trace.to_xray()).build();
    if let Ok(v) = xray {
        send = send.message_system_attributes(MessageSystemAttributeNameForSends::AwsTraceHeader, v);
    }
    send
}

/// The trace a received message was sent in: its `traceparent` attribute, else `AWSTraceHeader`.
pub fn trace_of(m: &Message) -> Option<TraceContext> {
    let text = |k: &str| m.message_attributes().and_then(|a| a.get(k)).and_then(|v| v.string_value());
    let xray = m.attributes().and_then(|a| a.get(&MessageSystemAttributeName::AwsTraceHeader));
    TraceContext::from_carrier(text(TRACEPARENT), text(TRACESTATE), xray.map(String::as_str))
}

/// Records the queue lag of a message first delivered now: from `SentTimestamp` (milliseconds
/// since the epoch, as SQS reports it) to now. A redelivery's lag would count its backoff too: not
/// recorded.
pub fn record_lag(queue: Queue, sent_ms: Option<&str>, receive_count: u32) {
    use a2a_telemetry::metrics::{self, Measurement};
    if !metrics::is_on() || receive_count > 1 {
        return;
    }
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
    if let Some(sent) = sent_ms.and_then(|s| s.parse::<u128>().ok()).filter(|s| *s <= now) {
        #[allow(clippy::cast_precision_loss)] // milliseconds of queue lag fit an f64 exactly
        let seconds = (now - sent) as f64 / 1000.0;
        metrics::record(Measurement::QueueLag { queue, seconds });
    }
}

fn sent_timestamp(m: &Message) -> Option<&str> {
    m.attributes().and_then(|a| a.get(&MessageSystemAttributeName::SentTimestamp)).map(String::as_str)
}

/// A deduplication id: at most 128 characters from a fixed alphabet, so hash the natural key.
fn dedup_id(key: &str) -> String {
    Sha256::digest(key.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// The work queue.
pub struct SqsWorkQueue {
    client: Client,
    url: String,
}

impl SqsWorkQueue {
    pub fn new(client: Client, url: impl Into<String>) -> Self {
        Self { client, url: url.into() }
    }
}

#[async_trait]
impl WorkQueue for SqsWorkQueue {
    async fn enqueue(&self, job: Job) -> Result<()> {
        let (group, dedup) = match &job {
            // One run per turn: the turn's first event tells turns apart (their messageIds may repeat).
            Job::Execute { task_id, turn, .. } => {
                (task_id.clone(), dedup_id(&format!("execute\u{0}{task_id}\u{0}{turn}")))
            }
            // A cancel must not wait behind the run it cancels: its own group, never deduplicated.
            Job::Cancel { task_id } => (format!("cancel-{task_id}"), uuid::Uuid::new_v4().to_string()),
        };
        let body = serde_json::to_string(&job).map_err(|e| A2aError::internal(e.to_string()))?;
        let span = spans::queue_send(SQS, Queue::Tasks, job.task_id());
        send(&self.client, &self.url, span, body, group, dedup).await
    }
}

/// Sends one FIFO message in its PRODUCER span, with the span's trace context attached.
async fn send(
    client: &Client,
    url: &str,
    span: tracing::Span,
    body: String,
    group: String,
    dedup: String,
) -> Result<()> {
    let call = async {
        with_trace(client.send_message())
            .queue_url(url)
            .message_body(body)
            .message_group_id(group)
            .message_deduplication_id(dedup)
            .send()
            .await
    };
    let sent = call.instrument(span.clone()).await.map_err(|e| {
        spans::failed(&span, "SendMessage");
        sqs_err("SendMessage", e)
    })?;
    spans::message_sent(&span, sent.message_id());
    Ok(())
}

/// What a push message carries: references only. The config (with its credentials) and the event
/// stay in the table; a config deleted meanwhile is simply not called.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushRef {
    pub task_id: String,
    pub config_id: String,
    pub seq: u64,
}

/// The push queue.
pub struct SqsPushQueue {
    client: Client,
    url: String,
}

impl SqsPushQueue {
    pub fn new(client: Client, url: impl Into<String>) -> Self {
        Self { client, url: url.into() }
    }
}

#[async_trait]
impl PushQueue for SqsPushQueue {
    async fn enqueue(&self, job: PushJob, delay: Duration) -> Result<()> {
        if !delay.is_zero() {
            return Err(A2aError::internal("the FIFO push queue retries through visibility, not delays"));
        }
        let r = PushRef { task_id: job.config.task_id.clone(), config_id: job.config.id.clone(), seq: job.event.seq };
        let body = serde_json::to_string(&r).map_err(|e| A2aError::internal(e.to_string()))?;
        let span = spans::queue_send(SQS, Queue::Push, &r.task_id);
        a2a_telemetry::context::continue_trace(&span, job.trace.as_ref());
        let group = format!("{}#{}", r.task_id, r.config_id);
        let dedup = dedup_id(&format!("{}\u{0}{}\u{0}{}", r.task_id, r.config_id, r.seq));
        send(&self.client, &self.url, span, body, group, dedup).await
    }
}

/// How the pollers read.
#[derive(Debug, Clone, Copy)]
pub struct PollSettings {
    /// Long-poll wait of one ReceiveMessage (0..=20 s).
    pub wait: Duration,
    /// Visibility of a received job; a running job extends it every third of it (heartbeat).
    pub visibility: Duration,
}

impl Default for PollSettings {
    fn default() -> Self {
        Self { wait: Duration::from_secs(10), visibility: Duration::from_secs(60) }
    }
}

impl PollSettings {
    /// The defaults, with the long-poll wait from `SQS_WAIT_SECONDS` (0..=20) when set. Tests on
    /// moto use 1: moto keeps a FIFO group blocked for a whole long poll if one of its messages was
    /// in flight when the poll began (SQS itself hands the next message out as soon as it may).
    /// `SQS_VISIBILITY_SECONDS` sets the visibility of a received job (heartbeats renew it every
    /// third of it).
    pub fn from_env() -> Self {
        let secs = |k: &str| std::env::var(k).ok().and_then(|v| v.trim().parse::<u64>().ok()).map(Duration::from_secs);
        let d = Self::default();
        Self {
            wait: secs("SQS_WAIT_SECONDS").map_or(d.wait, |w| w.min(Duration::from_secs(20))),
            visibility: secs("SQS_VISIBILITY_SECONDS").map_or(d.visibility, |v| v.max(Duration::from_secs(1))),
        }
    }
}

fn secs(d: Duration) -> i32 {
    i32::try_from(d.as_secs()).unwrap_or(i32::MAX)
}

async fn receive(client: &Client, url: &str, poll: PollSettings, max: i32) -> Result<Vec<Message>> {
    let resp = client
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(max)
        .wait_time_seconds(secs(poll.wait).min(20))
        .visibility_timeout(secs(poll.visibility))
        .message_system_attribute_names(MessageSystemAttributeName::MessageGroupId)
        .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
        .message_system_attribute_names(MessageSystemAttributeName::AwsTraceHeader)
        .message_system_attribute_names(MessageSystemAttributeName::SentTimestamp)
        .message_attribute_names(TRACEPARENT)
        .message_attribute_names(TRACESTATE)
        .send()
        .await
        .map_err(|e| sqs_err("ReceiveMessage", e))?;
    Ok(resp.messages().to_vec())
}

/// Messages grouped by MessageGroupId, each group in the order received.
fn by_group(messages: Vec<Message>) -> Vec<Vec<Message>> {
    let mut order: Vec<String> = Vec::new();
    let mut groups: HashMap<String, Vec<Message>> = HashMap::new();
    for m in messages {
        let g = m
            .attributes()
            .and_then(|a| a.get(&MessageSystemAttributeName::MessageGroupId))
            .cloned()
            .unwrap_or_default();
        if !groups.contains_key(&g) {
            order.push(g.clone());
        }
        groups.entry(g).or_default().push(m);
    }
    order.into_iter().filter_map(|g| groups.remove(&g)).collect()
}

fn receive_count(m: &Message) -> u32 {
    m.attributes()
        .and_then(|a| a.get(&MessageSystemAttributeName::ApproximateReceiveCount))
        .and_then(|c| c.parse().ok())
        .unwrap_or(1)
}

async fn delete(client: &Client, url: &str, m: &Message) {
    if let Some(handle) = m.receipt_handle() {
        if let Err(e) = client.delete_message().queue_url(url).receipt_handle(handle).send().await {
            tracing::warn!(error = ?e, "DeleteMessage failed; the message will be seen again");
        }
    }
}

/// How soon a run job that failed is handed out again (instead of after the whole visibility
/// timeout, with its task's group blocked meanwhile): a failure to queue its webhook deliveries, a
/// store that refused a write. A job that keeps failing still reaches the dead-letter queue after
/// `maxReceiveCount` receives.
pub const RUN_RETRY_AFTER: Duration = Duration::from_secs(5);

async fn set_visibility(client: &Client, url: &str, m: &Message, visibility: Duration) {
    if let Some(handle) = m.receipt_handle() {
        let r = client
            .change_message_visibility()
            .queue_url(url)
            .receipt_handle(handle)
            .visibility_timeout(secs(visibility))
            .send()
            .await;
        if let Err(e) = r {
            tracing::warn!(error = ?e, "ChangeMessageVisibility failed");
        }
    }
}

/// Consumes the work queue: each group in order, groups concurrently; a running job keeps its
/// message invisible with heartbeats; a job that fails stays on the queue and comes back (and after
/// `maxReceiveCount` lands in the dead-letter queue).
pub struct WorkPoller {
    pub client: Client,
    pub url: String,
    pub runner: Arc<Runner>,
    pub poll: PollSettings,
}

impl WorkPoller {
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        while !stop.is_cancelled() {
            let batch = tokio::select! {
                () = stop.cancelled() => return,
                b = receive(&self.client, &self.url, self.poll, 10) => b,
            };
            match batch {
                Ok(messages) => {
                    for group in by_group(messages) {
                        let me = self.clone();
                        tokio::spawn(async move {
                            for m in group {
                                me.handle(m).await;
                            }
                        });
                    }
                }
                Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
            }
        }
    }

    async fn handle(&self, m: Message) {
        let job: Job = match serde_json::from_str(m.body().unwrap_or_default()) {
            Ok(j) => j,
            Err(e) => {
                // A poison message: left on the queue, so that after `maxReceiveCount` receives it
                // ends in the dead-letter queue for a look (as the Lambda consumer does).
                tracing::error!(error = %e, receive_count = receive_count(&m), "unreadable job; it goes to the dead-letter queue in the end");
                return;
            }
        };
        let heartbeat = CancellationToken::new();
        let beat = {
            let (client, url, m, stop, every) =
                (self.client.clone(), self.url.clone(), m.clone(), heartbeat.clone(), self.poll.visibility / 3);
            let visibility = self.poll.visibility;
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        () = stop.cancelled() => return,
                        () = tokio::time::sleep(every) => set_visibility(&client, &url, &m, visibility).await,
                    }
                }
            })
        };
        record_lag(Queue::Tasks, sent_timestamp(&m), receive_count(&m));
        let span = spans::queue_process(SQS, Queue::Tasks, job.task_id(), receive_count(&m), trace_of(&m).as_ref());
        spans::message_sent(&span, m.message_id());
        let result = self.runner.handle_attempt(job, receive_count(&m)).instrument(span).await;
        heartbeat.cancel();
        let _ = beat.await;
        match result {
            Ok(()) => delete(&self.client, &self.url, &m).await,
            Err(e) => {
                tracing::error!(error = %e, receive_count = receive_count(&m), "job failed; it will be retried");
                set_visibility(&self.client, &self.url, &m, RUN_RETRY_AFTER).await;
            }
        }
    }
}

/// Consumes the push queue: deliveries of one (task, webhook) strictly in order; a failure delays
/// the group by the retry policy's backoff.
///
/// Each receive takes one message: SQS then holds the rest of a group back while its head is in
/// flight, so every receive of a message is a real delivery attempt and `maxReceiveCount` counts
/// attempts exactly (a batch would hand out later messages that must wait, burning their
/// receives). Several receive loops run side by side for parallelism across groups.
pub struct PushPoller {
    pub client: Client,
    pub url: String,
    pub store: Arc<dyn TaskStore>,
    pub configs: Arc<dyn PushConfigStore>,
    pub deliverer: Arc<Deliverer>,
    pub retry: RetryPolicy,
    pub poll: PollSettings,
    /// Receive loops.
    pub concurrency: usize,
}

impl PushPoller {
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        let loops: Vec<_> =
            (0..self.concurrency.max(1)).map(|_| tokio::spawn(self.clone().receive_loop(stop.clone()))).collect();
        for l in loops {
            let _ = l.await;
        }
    }

    async fn receive_loop(self: Arc<Self>, stop: CancellationToken) {
        while !stop.is_cancelled() {
            let batch = tokio::select! {
                () = stop.cancelled() => return,
                b = receive(&self.client, &self.url, self.poll, 1) => b,
            };
            let Ok(messages) = batch else {
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            };
            for m in messages {
                match self.deliver(&m).await {
                    Ok(None) => delete(&self.client, &self.url, &m).await,
                    // The group waits behind this message: order is kept.
                    Ok(Some(backoff)) => set_visibility(&self.client, &self.url, &m, backoff).await,
                    Err(e) => tracing::error!(error = %e, "push delivery could not be attempted; retrying later"),
                }
            }
        }
    }

    async fn deliver(&self, m: &Message) -> Result<Option<Duration>> {
        record_lag(Queue::Push, sent_timestamp(m), receive_count(m));
        let span = spans::queue_process(SQS, Queue::Push, "", receive_count(m), trace_of(m).as_ref());
        spans::message_sent(&span, m.message_id());
        attempt_push(
            self.store.as_ref(),
            self.configs.as_ref(),
            &self.deliverer,
            &self.retry,
            m.body().unwrap_or_default(),
            receive_count(m),
        )
        .instrument(span)
        .await
    }
}

/// One delivery attempt of a push-queue message body (a [`PushRef`]), shared by the poller and the
/// `sqs-push-delivery` Lambda. `Ok(None)`: done with the message (delivered, refused, or obsolete
/// because the config or event is gone); `Ok(Some(d))`: retry it in `d`; `Err`: unreadable or the
/// table is unavailable (retried, and dead-lettered in the end).
pub async fn attempt_push(
    store: &dyn TaskStore,
    configs: &dyn PushConfigStore,
    deliverer: &Deliverer,
    retry: &RetryPolicy,
    body: &str,
    attempt: u32,
) -> Result<Option<Duration>> {
    // A poison message fails (so that it ends in the dead-letter queue for a look).
    let r: PushRef =
        serde_json::from_str(body).map_err(|e| A2aError::internal(format!("unreadable push message: {e}")))?;
    let Some(config) = configs.get(&r.task_id, &r.config_id).await? else {
        tracing::debug!(task_id = r.task_id, config_id = r.config_id, "push config deleted; notification dropped");
        return Ok(None);
    };
    let event = if config.v03_payloads {
        // 0.3 webhooks get the task as it stands (see `TaskPushNotificationConfig::v03_payloads`).
        store.load(&r.task_id).await?.map(|rec| EventRecord { seq: r.seq, event: StreamResponse::Task(rec.task) })
    } else {
        store.event(&r.task_id, r.seq).await?
    };
    let Some(event) = event else {
        tracing::warn!(task_id = r.task_id, seq = r.seq, "event gone; notification dropped");
        return Ok(None);
    };
    let job = PushJob { config, event, attempt, trace: a2a_telemetry::context::current() };
    match deliverer.deliver(&job).await {
        Outcome::Delivered(status) => {
            tracing::debug!(
                task_id = r.task_id,
                config_id = r.config_id,
                seq = r.seq,
                status,
                attempt,
                "push delivered"
            );
            Ok(None)
        }
        Outcome::Refused(why) => {
            tracing::warn!(task_id = r.task_id, config_id = r.config_id, seq = r.seq, %why, "push refused");
            Ok(None)
        }
        Outcome::Failed(why) => {
            let delay = retry.delay(attempt, rand::random::<f64>());
            tracing::info!(task_id = r.task_id, config_id = r.config_id, seq = r.seq, attempt, ?delay, %why, "push failed; retrying");
            Ok(Some(delay))
        }
    }
}

/// Receive count of a message as the Lambda event reports it.
pub fn attempt_of(attributes: &std::collections::HashMap<String, String>) -> u32 {
    attributes.get("ApproximateReceiveCount").and_then(|c| c.parse().ok()).unwrap_or(1)
}
