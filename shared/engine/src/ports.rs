//! The engine's ports: everything it needs from the platform. The memory adapters (always built)
//! implement them for the embedded server; the AWS adapters (DynamoDB, SQS) and the edge hub
//! implement them for production. Operations take the narrowest port they need.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use futures::stream::BoxStream;

use a2a_protocol::error::{A2aError, Result};
pub use a2a_protocol::sse::SharedEvent;
use a2a_protocol::types::{StreamResponse, Task, TaskPushNotificationConfig, TaskState};

/// A task as stored: the protocol object plus what the server needs to own and order it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRecord {
    pub task: Task,
    /// The principal that created the task; nobody else can see it.
    pub owner: String,
    /// Bumped by every committed change (optimistic concurrency).
    pub version: u64,
    /// Sequence number of the last event in the task's event log (0: none yet).
    pub last_seq: u64,
    /// Set by CancelTask so that a runner in another process stops its executor.
    pub cancel_requested: bool,
    /// The task has (or had) push configs: only then are its events fanned out to webhooks, which
    /// spares every other task a config lookup per event.
    pub has_push: bool,
    pub created_at: DateTime<Utc>,
    /// The request that started the current turn, while the task is still on it: a SendMessage that
    /// repeats it is a retry. A later turn replaces it; a cancel clears it (the task moved on).
    pub turn: Option<TurnKey>,
}

/// What tells a retried SendMessage from a new one: the `messageId` and a fingerprint of the
/// request's content (message, inline push config, metadata).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TurnKey {
    pub message_id: String,
    pub fingerprint: Fingerprint,
    /// The run that took this turn, where runners claim turns before starting the agent (a queue
    /// that may hand one job to two consumers at once: see [`crate::runner::Runner::claiming_turns`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_by: Option<Box<str>>,
}

/// A digest of a request's content (the first 16 bytes of a SHA-256): held as bytes, written (in
/// the stores' records) as 32 lowercase hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Fingerprint(pub [u8; 16]);

impl serde::Serialize for Fingerprint {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut text = [0u8; 32];
        for (i, b) in self.0.iter().enumerate() {
            text[2 * i] = HEX[usize::from(b >> 4)];
            text[2 * i + 1] = HEX[usize::from(b & 15)];
        }
        s.serialize_str(std::str::from_utf8(&text).map_err(serde::ser::Error::custom)?)
    }
}

impl<'de> serde::Deserialize<'de> for Fingerprint {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(d)?;
        let mut bytes = [0u8; 16];
        let digits = text.as_bytes();
        if digits.len() != 32 {
            return Err(serde::de::Error::custom("a fingerprint is 32 hex digits"));
        }
        for (i, pair) in digits.chunks(2).enumerate() {
            let pair = std::str::from_utf8(pair).map_err(serde::de::Error::custom)?;
            bytes[i] = u8::from_str_radix(pair, 16).map_err(serde::de::Error::custom)?;
        }
        Ok(Self(bytes))
    }
}

impl TurnKey {
    /// Whether `other` names the same request (the claim aside).
    pub fn same_request(&self, other: &TurnKey) -> bool {
        self.message_id == other.message_id && self.fingerprint == other.fingerprint
    }
}

/// A new task's claim on its first message: `(owner, messageId)` points at the task, so that a
/// retried SendMessage finds it (in another process too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageClaim {
    pub owner: String,
    pub message_id: String,
    /// The task the claim pointed at when the caller looked (`None`: unclaimed). The claim moves to
    /// the new task only if it still points there.
    pub replaces: Option<String>,
}

impl TaskRecord {
    pub fn state(&self) -> TaskState {
        self.task.status.state
    }

    /// The status timestamp, by which ListTasks orders and filters.
    pub fn status_time(&self) -> DateTime<Utc> {
        self.task.status.timestamp.unwrap_or(self.created_at)
    }
}

#[cfg(test)]
impl TaskRecord {
    /// A fresh record for unit tests.
    pub(crate) fn for_test(id: &str, state: TaskState) -> Self {
        let now = chrono::Utc::now();
        Self {
            task: Task {
                id: id.into(),
                context_id: "c".into(),
                status: a2a_protocol::types::TaskStatus::new(state, now),
                artifacts: None,
                history: vec![],
                metadata: None,
            },
            owner: "o".into(),
            version: 1,
            last_seq: 0,
            cancel_requested: false,
            has_push: false,
            created_at: now,
            turn: None,
        }
    }
}

/// One entry of a task's event log; `seq` is gap-free and starts at 1. Its JSON form
/// (`{"seq": 3, "event": {...}}`) is what the edge publish endpoint takes.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EventRecord {
    pub seq: u64,
    pub event: StreamResponse,
}

impl EventRecord {
    /// The event as streams share it.
    pub fn shared(self) -> Arc<SharedEvent> {
        Arc::new(SharedEvent::new(self.seq, self.event))
    }
}

/// What a committed update produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Committed {
    pub events: Vec<EventRecord>,
    pub state: TaskState,
    pub version: u64,
    pub has_push: bool,
}

/// An update to apply atomically: it mutates the record and returns the events it generated
/// (the store numbers them). It may run more than once when a concurrent writer wins the race,
/// so it must be a pure function of the record it is given. It checks everything before it changes
/// anything: one that fails leaves the record as it was (the memory store applies it in place).
pub type Mutation<'a> = &'a (dyn Fn(&mut TaskRecord) -> Result<Vec<StreamResponse>> + Send + Sync);

/// Filters and cursor of ListTasks, already validated.
#[derive(Debug, Clone, Default)]
pub struct TaskQuery {
    pub owner: String,
    pub context_id: Option<String>,
    pub status: Option<TaskState>,
    pub status_after: Option<DateTime<Utc>>,
    pub page_size: usize,
    /// The opaque token of a previous page ("" for the first page).
    pub page_token: String,
}

#[derive(Debug, Clone)]
pub struct TaskPage {
    pub records: Vec<TaskRecord>,
    /// "" on the last page.
    pub next_page_token: String,
    /// All tasks matching the filters, across pages.
    pub total_size: usize,
}

/// Tasks, their history and their event log.
#[async_trait]
pub trait TaskStore: Send + Sync {
    /// Stores a new task with its first history message and moves `claim` to it, atomically;
    /// `false` (and no change) if the id exists or the claim no longer points where it did.
    async fn create(&self, record: TaskRecord, claim: Option<&MessageClaim>) -> Result<bool>;

    /// The task `(owner, message_id)` was last claimed by.
    async fn claimed_task(&self, owner: &str, message_id: &str) -> Result<Option<String>>;

    async fn load(&self, task_id: &str) -> Result<Option<TaskRecord>>;

    /// Applies `mutate` atomically (with a version check and bounded retries), appends the events it
    /// returns to the log with the next sequence numbers, and reports what was committed. `adds`
    /// bounds what the update adds to the task (in [`a2a_protocol::types::size`] terms): a store with a
    /// byte budget makes room for it, or refuses the update, before applying it.
    async fn update(&self, task_id: &str, adds: usize, mutate: Mutation<'_>) -> Result<Committed>;

    /// Events with `seq > after`, in order.
    async fn events_after(&self, task_id: &str, after: u64) -> Result<Vec<EventRecord>>;

    /// One event of the log.
    async fn event(&self, task_id: &str, seq: u64) -> Result<Option<EventRecord>> {
        Ok(self.events_after(task_id, seq.saturating_sub(1)).await?.into_iter().find(|e| e.seq == seq))
    }

    /// A page of the owner's tasks, newest status first. Records may come without their history and
    /// artifact parts (a store that keeps those apart); [`TaskStore::hydrate`] completes one.
    async fn list(&self, query: &TaskQuery) -> Result<TaskPage>;

    /// The record with its history and artifacts, for a record that [`TaskStore::list`] returned.
    async fn hydrate(&self, record: TaskRecord) -> Result<TaskRecord> {
        Ok(record)
    }
}

/// Push notification configs, per task.
#[async_trait]
pub trait PushConfigStore: Send + Sync {
    /// Creates or replaces the config with the same (task_id, id).
    async fn put(&self, config: TaskPushNotificationConfig) -> Result<()>;
    async fn get(&self, task_id: &str, id: &str) -> Result<Option<TaskPushNotificationConfig>>;
    async fn list(&self, task_id: &str) -> Result<Vec<TaskPushNotificationConfig>>;
    /// Idempotent: deleting a missing config is not an error.
    async fn delete(&self, task_id: &str, id: &str) -> Result<()>;
}

/// A job for the task runner (also its JSON form on a queue).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "type", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum Job {
    /// Run the executor for the message `message_id` of task `task_id`; `turn` is the sequence
    /// number of the event that started the turn (0 for a new task), which tells two turns apart
    /// whose messages share an id.
    Execute {
        task_id: String,
        message_id: String,
        #[serde(default)]
        turn: u64,
        /// Extension URIs the client activated for this turn (`A2A-Extensions`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        extensions: Vec<String>,
        /// The event that opened the turn was committed but not all of its webhook deliveries
        /// could be queued: the run queues them (again) before anything else.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        pushes_owed: bool,
    },
    /// Stop the executor running task `task_id`.
    Cancel { task_id: String },
}

impl Job {
    /// The task the job is about.
    pub fn task_id(&self) -> &str {
        match self {
            Self::Execute { task_id, .. } | Self::Cancel { task_id } => task_id,
        }
    }
}

/// Drives task execution (in-process channel locally, SQS in production).
#[async_trait]
pub trait WorkQueue: Send + Sync {
    async fn enqueue(&self, job: Job) -> Result<()>;
}

/// One webhook delivery to attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct PushJob {
    pub config: TaskPushNotificationConfig,
    pub event: EventRecord,
    /// 1 for the first try.
    pub attempt: u32,
    /// The trace the event was recorded in: each delivery attempt continues it.
    pub trace: Option<a2a_telemetry::TraceContext>,
}

/// Queues webhook deliveries (with delays for retries).
#[async_trait]
pub trait PushQueue: Send + Sync {
    async fn enqueue(&self, job: PushJob, delay: Duration) -> Result<()>;
}

/// Fans a task's events out to the streams open on it. Delivery is best-effort: subscribers read
/// the store's event log to fill any gap, so a hub may drop events but never reorder them.
pub trait StreamHub: Send + Sync {
    fn publish(&self, task_id: &str, event: &EventRecord);
    /// Live events of the task from now on.
    fn subscribe(&self, task_id: &str) -> BoxStream<'static, HubMessage>;
    /// The task ended: release what the hub holds for it.
    fn close(&self, task_id: &str);
    /// The events after `after` if the hub still holds all of them (for a subscriber that fell
    /// behind; `None`: read the store).
    fn replay(&self, _task_id: &str, _after: u64) -> Option<Vec<Arc<SharedEvent>>> {
        None
    }
    /// Events a subscriber read back from the store, shared with the task's other subscribers
    /// (those that fall behind as far find them in [`StreamHub::replay`]).
    fn share(&self, _task_id: &str, events: Vec<EventRecord>) -> Vec<Arc<SharedEvent>> {
        events.into_iter().map(EventRecord::shared).collect()
    }
    /// Completes once everything published so far has left the process (hubs that forward events
    /// elsewhere); short-lived hosts await it before an invocation ends.
    fn flush(&self) -> BoxFuture<'static, ()> {
        Box::pin(async {})
    }
}

/// What a hub subscription yields.
#[derive(Debug, Clone, PartialEq)]
pub enum HubMessage {
    /// An event as every subscriber of the task shares it.
    Event(Arc<SharedEvent>),
    /// Events were dropped for this subscriber; read the store to catch up.
    Lagged,
}

/// Wall time and timers, so the engine runs on tokio, in Lambda and in a worker alike.
pub trait Clock: Send + Sync {
    fn now(&self) -> DateTime<Utc>;
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()>;
}

/// Shorthand used by adapters when a backend fails.
pub fn backend_error(what: &str, e: impl std::fmt::Display) -> A2aError {
    A2aError::internal(format!("{what}: {e}"))
}
