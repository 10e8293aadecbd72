//! The embedded default: tasks, event logs and push configs in process memory ([`MemoryStore`]), a
//! broadcast hub, and (with the `runtime` feature) an in-process work queue and a delaying push
//! queue.

mod log;
mod store;

pub use store::MemoryStore;

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use futures::stream::{self, BoxStream, StreamExt};
use parking_lot::Mutex;
use tokio::sync::{broadcast, mpsc};

use crate::ports::*;
use a2a_protocol::error::{A2aError, Result};

/// An in-process broadcast hub: one channel per task while someone listens. The channel goes when
/// its last subscriber does (a task left waiting for input keeps nothing here) or the task ends.
/// Slots hold an `Arc`, so a channel costs about 1.5 KiB however large the events are; a blocking
/// SendMessage opens one per request, so it stays small: a subscriber that falls more than
/// `capacity` events behind catches up from the store (see `engine::follow`).
pub struct MemoryHub {
    channels: Arc<Mutex<HashMap<String, broadcast::Sender<Arc<EventRecord>>>>>,
    capacity: usize,
}

impl Default for MemoryHub {
    fn default() -> Self {
        Self { channels: Arc::default(), capacity: 32 }
    }
}

/// A subscription; dropping the last one of a task drops the task's channel.
struct Subscription {
    rx: broadcast::Receiver<Arc<EventRecord>>,
    channels: Arc<Mutex<HashMap<String, broadcast::Sender<Arc<EventRecord>>>>>,
    task_id: String,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut channels = self.channels.lock();
        // This receiver still counts until it is dropped itself, just after.
        if channels.get(&self.task_id).is_some_and(|tx| tx.receiver_count() <= 1) {
            channels.remove(&self.task_id);
        }
    }
}

impl MemoryHub {
    /// Tasks with a channel (someone listening).
    pub fn channels(&self) -> usize {
        self.channels.lock().len()
    }
}

impl StreamHub for MemoryHub {
    fn publish(&self, task_id: &str, event: &EventRecord) {
        let channels = self.channels.lock();
        if let Some(tx) = channels.get(task_id) {
            let _ = tx.send(Arc::new(event.clone()));
        }
    }

    fn subscribe(&self, task_id: &str) -> BoxStream<'static, HubMessage> {
        let rx = {
            let mut channels = self.channels.lock();
            let tx = channels.entry(task_id.to_string()).or_insert_with(|| broadcast::channel(self.capacity).0);
            tx.subscribe()
        };
        let sub = Subscription { rx, channels: self.channels.clone(), task_id: task_id.to_string() };
        stream::unfold(sub, |mut sub| async move {
            match sub.rx.recv().await {
                Ok(ev) => Some((HubMessage::Event(Arc::unwrap_or_clone(ev)), sub)),
                Err(broadcast::error::RecvError::Lagged(_)) => Some((HubMessage::Lagged, sub)),
                Err(broadcast::error::RecvError::Closed) => None,
            }
        })
        .boxed()
    }

    fn close(&self, task_id: &str) {
        self.channels.lock().remove(task_id);
    }
}

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
