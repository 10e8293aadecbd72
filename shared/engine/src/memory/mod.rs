//! The embedded default: tasks, event logs and push configs in process memory ([`MemoryStore`]), a
//! broadcast hub, and (with the `runtime` feature) an in-process work queue and a delaying push
//! queue.

mod hub;
mod lean;
mod log;
mod store;

pub use hub::MemoryHub;
pub use store::MemoryStore;

use async_trait::async_trait;
use tokio::sync::mpsc;

use crate::ports::*;
use a2a_protocol::error::{A2aError, Result};

/// The in-process work queue: jobs go to a channel that the runner's loop consumes.
pub struct MemoryWorkQueue {
    tx: mpsc::UnboundedSender<Queued>,
}

/// A job handed to the runner in process, with the trace it was sent in (the run continues it).
pub struct Queued {
    pub job: Job,
    pub trace: Option<a2a_telemetry::TraceContext>,
    /// When it was queued (only while metrics are on: the queue lag).
    pub sent: Option<std::time::Instant>,
    /// The delivery count: 1, or more for a job delivered again (after a restart).
    pub attempt: u32,
    /// Called once the run is over (a durable queue then forgets the job); `None` on the memory
    /// queue, which keeps nothing.
    pub done: Option<Done>,
}

/// What a queue runs when the job it handed on is done.
pub type Done = Box<dyn FnOnce() + Send>;

impl std::fmt::Debug for Queued {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queued").field("job", &self.job).field("attempt", &self.attempt).finish_non_exhaustive()
    }
}

/// `messaging.system` of the in-process queues.
pub const IN_PROCESS_QUEUE: &str = "a2a";

impl MemoryWorkQueue {
    pub fn new() -> (Self, mpsc::UnboundedReceiver<Queued>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self { tx }, rx)
    }
}

#[async_trait]
impl WorkQueue for MemoryWorkQueue {
    async fn enqueue(&self, job: Job) -> Result<()> {
        use a2a_telemetry::spans::{queue_send, Queue};
        let trace = queue_send(IN_PROCESS_QUEUE, Queue::Tasks, job.task_id()).in_scope(a2a_telemetry::context::current);
        let sent = a2a_telemetry::metrics::start();
        let queued = Queued { job, trace, sent, attempt: 1, done: None };
        self.tx.send(queued).map_err(|_| A2aError::internal("the task runner has stopped"))
    }
}

/// The in-process push queue: a delayed job is held by a timer, then handed to the consumer.
#[cfg(feature = "push")]
pub struct MemoryPushQueue {
    tx: mpsc::UnboundedSender<crate::push::Delivery>,
}

#[cfg(feature = "push")]
impl MemoryPushQueue {
    pub fn new() -> (Self, mpsc::UnboundedReceiver<crate::push::Delivery>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self { tx }, rx)
    }
}

#[cfg(feature = "push")]
#[async_trait]
impl PushQueue for MemoryPushQueue {
    async fn enqueue(&self, job: PushJob, delay: std::time::Duration) -> Result<()> {
        let delivery = crate::push::Delivery { job, receipt: None };
        if delay.is_zero() {
            return self.tx.send(delivery).map_err(|_| A2aError::internal("the push worker has stopped"));
        }
        let tx = self.tx.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let _ = tx.send(delivery);
        });
        Ok(())
    }
}

/// The system clock with tokio timers.
#[cfg(feature = "runtime")]
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

#[cfg(feature = "runtime")]
impl Clock for SystemClock {
    fn now(&self) -> chrono::DateTime<chrono::Utc> {
        chrono::Utc::now()
    }

    fn sleep(&self, duration: std::time::Duration) -> futures::future::BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}
