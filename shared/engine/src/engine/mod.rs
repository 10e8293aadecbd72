//! The engine: the ports an operation needs, the recorder that turns agent events into committed,
//! numbered, broadcast events, and the stream follower. The task runner that drives executors with
//! it is [`crate::runner`].

mod fold;
mod follow;

use std::sync::Arc;
use std::time::Duration;

use crate::auth::{Authenticator, Principal};
use crate::card::CardService;
use crate::ports::*;
use crate::webhook::WebhookPolicy;
use a2a_protocol::error::Result;
use a2a_protocol::types::StreamResponse;
use a2a_protocol::version::Version;

pub use fold::{apply, apply_all, AgentEvent};
pub use follow::{follow, EventStream};

/// Tunables with production defaults.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// How long a blocking SendMessage waits for the turn to end before returning the task as it
    /// stands (keep it under the API Gateway limit of 29 s in Lambda).
    pub blocking_timeout: Duration,
    /// How long CancelTask waits for the executor to stop before recording CANCELED itself.
    pub cancel_timeout: Duration,
    /// Default number of history messages in returned tasks (`None`: all).
    pub default_history_length: Option<usize>,
    /// A ListTasks page stops once its tasks hold this many bytes (history and artifacts
    /// included), with a next page token; a single larger task still makes a page of one.
    pub list_page_bytes: usize,
}

/// Default of [`EngineConfig::list_page_bytes`].
pub const DEFAULT_LIST_PAGE_BYTES: usize = 8 << 20;

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            blocking_timeout: Duration::from_secs(60),
            cancel_timeout: Duration::from_secs(5),
            default_history_length: None,
            list_page_bytes: DEFAULT_LIST_PAGE_BYTES,
        }
    }
}

/// Everything an operation can reach. Cheap to share behind an `Arc`.
pub struct Engine {
    pub store: Arc<dyn TaskStore>,
    pub push_configs: Arc<dyn PushConfigStore>,
    pub queue: Arc<dyn WorkQueue>,
    pub hub: Arc<dyn StreamHub>,
    pub clock: Arc<dyn Clock>,
    pub auth: Arc<dyn Authenticator>,
    pub webhooks: Arc<dyn WebhookPolicy>,
    pub card: Arc<CardService>,
    pub recorder: Arc<Recorder>,
    pub config: EngineConfig,
}

/// The ports an [`Engine`] is built from.
pub struct EnginePorts {
    pub store: Arc<dyn TaskStore>,
    pub push_configs: Arc<dyn PushConfigStore>,
    pub queue: Arc<dyn WorkQueue>,
    pub push_queue: Option<Arc<dyn PushQueue>>,
    pub hub: Arc<dyn StreamHub>,
    pub clock: Arc<dyn Clock>,
    pub auth: Arc<dyn Authenticator>,
    /// Which webhook URLs may be registered.
    pub webhooks: Arc<dyn WebhookPolicy>,
}

impl Engine {
    pub fn new(ports: EnginePorts, card: CardService, config: EngineConfig) -> Self {
        let (store, push_configs) = crate::metered_store::Metered::wrap(ports.store, ports.push_configs);
        let recorder = Arc::new(Recorder {
            store: store.clone(),
            hub: ports.hub.clone(),
            push_configs: push_configs.clone(),
            push_queue: ports.push_queue,
            clock: ports.clock.clone(),
        });
        Self {
            store,
            push_configs,
            queue: ports.queue,
            hub: ports.hub,
            clock: ports.clock,
            auth: ports.auth,
            webhooks: ports.webhooks,
            card: Arc::new(card),
            recorder,
            config,
        }
    }

    /// Loads a task the caller may see. Another principal's task is "not found" (never "forbidden"),
    /// so its existence does not leak.
    pub async fn load_owned(&self, ctx: &CallContext, task_id: &str) -> Result<TaskRecord> {
        match self.store.load(task_id).await? {
            Some(rec) if rec.owner == ctx.principal.id => Ok(rec),
            _ => Err(a2a_protocol::error::A2aError::task_not_found(task_id)),
        }
    }
}

/// Who is calling, with which protocol version and extensions.
#[derive(Debug, Clone)]
pub struct CallContext {
    pub principal: Principal,
    pub version: Version,
    /// Extension URIs the client activated (`A2A-Extensions`).
    pub extensions: Vec<String>,
    /// `Last-Event-ID` of a reconnecting stream.
    pub last_event_id: Option<u64>,
}

/// What [`Recorder::record`] did.
#[derive(Debug)]
pub struct Recorded {
    pub committed: Committed,
    /// A webhook delivery of these events was not queued: whoever recorded them must have them
    /// queued again (a run fails its job so that the queue hands it out again, see
    /// [`crate::runner`]).
    pub pushes_owed: bool,
}

/// Commits agent events and fans them out. Shared by the runner, the executor's sink and the
/// operations that change tasks themselves (SendMessage, CancelTask).
pub struct Recorder {
    store: Arc<dyn TaskStore>,
    hub: Arc<dyn StreamHub>,
    push_configs: Arc<dyn PushConfigStore>,
    push_queue: Option<Arc<dyn PushQueue>>,
    clock: Arc<dyn Clock>,
}

impl Recorder {
    /// Commits `events` and fans them out. A webhook delivery that could not be queued is not an
    /// error (the events are committed): the result says so in [`Recorded::pushes_owed`].
    pub async fn record(&self, task_id: &str, events: Vec<AgentEvent>) -> Result<Recorded> {
        self.record_with(task_id, events, true).await
    }

    /// [`Recorder::record`]; with `queue_pushes` false the events' webhook deliveries are left owed
    /// (a run whose earlier delivery could not be queued holds the later ones back, so that the
    /// requeue of its job delivers them all in order).
    pub async fn record_with(&self, task_id: &str, events: Vec<AgentEvent>, queue_pushes: bool) -> Result<Recorded> {
        let now = self.clock.now();
        let adds = events.iter().map(AgentEvent::size).sum();
        let committed = self.store.update(task_id, adds, &|rec| apply_all(rec, &events, now)).await?;
        let pushes_owed = !self.fan_out(task_id, &committed, queue_pushes).await;
        Ok(Recorded { committed, pushes_owed })
    }

    /// Sends committed events to the streams and webhooks of the task (with `queue_pushes`); false
    /// when a webhook delivery was not queued.
    pub async fn fan_out(&self, task_id: &str, committed: &Committed, queue_pushes: bool) -> bool {
        for ev in &committed.events {
            self.hub.publish(task_id, ev);
        }
        if committed.state.is_terminal() {
            self.hub.close(task_id);
        }
        if !committed.has_push || self.push_queue.is_none() {
            return true;
        }
        if !queue_pushes {
            return false;
        }
        match self.queue_pushes(task_id, &committed.events).await {
            Ok(()) => true,
            Err(e) => {
                tracing::error!(task_id, error = %e, "webhook deliveries not queued");
                false
            }
        }
    }

    /// Queues the webhook deliveries of the task's events from sequence number `from` on again: the
    /// process that recorded them may have stopped (or failed to queue) before queueing them all.
    /// Deliveries already queued are dropped by queues that deduplicate (SQS FIFO: one id per task,
    /// webhook and event, for 5 minutes; SQLite: one row each); past that a receiver may get an
    /// event twice, never out of order, and dedupes by `(taskId, A2A-Event-Id)`.
    pub async fn requeue_pushes(&self, task_id: &str, from: u64) -> Result<()> {
        if self.push_queue.is_none() {
            return Ok(());
        }
        let events = self.store.events_after(task_id, from.saturating_sub(1)).await?;
        match events.is_empty() {
            true => Ok(()),
            false => self.queue_pushes(task_id, &events).await,
        }
    }

    /// Queues one delivery per (webhook, event). A webhook whose delivery cannot be queued gets none
    /// of its later events either, so that a later [`Recorder::requeue_pushes`] keeps them in order.
    async fn queue_pushes(&self, task_id: &str, events: &[EventRecord]) -> Result<()> {
        let Some(queue) = &self.push_queue else {
            return Ok(());
        };
        let configs = self.push_configs.list(task_id).await?;
        // 0.3 webhooks get the task as it stands (see `TaskPushNotificationConfig::v03_payloads`).
        let snapshot = match configs.iter().any(|c| c.v03_payloads) {
            true => self.store.load(task_id).await.ok().flatten().map(|r| r.task),
            false => None,
        };
        let trace = a2a_telemetry::context::current();
        let mut failed = Ok(());
        for config in configs {
            for event in events {
                let event = match (&snapshot, config.v03_payloads) {
                    (Some(task), true) => EventRecord { seq: event.seq, event: StreamResponse::Task(task.clone()) },
                    _ => event.clone(),
                };
                let job = PushJob { config: config.clone(), event, attempt: 1, trace: trace.clone() };
                if let Err(e) = queue.enqueue(job, Duration::ZERO).await {
                    failed = Err(e);
                    break;
                }
            }
        }
        failed
    }
}
