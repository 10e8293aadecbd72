//! A [`StreamHub`] for processes that do not run the task (Lambda): nothing is published to it; a
//! subscription just says "look again" at a growing interval, and the follower reads the store's
//! event log. Used where no shared hub (the edge's Durable Object) is configured. [`Backstopped`]
//! adds the same look at the store to a hub in process, for processes that share a store.

use std::sync::Arc;
use std::time::Duration;

use futures::future::{self, BoxFuture};
use futures::stream::{self, BoxStream, StreamExt};

use crate::ports::{EventRecord, HubMessage, SharedEvent, StreamHub};

#[derive(Debug, Clone, Copy)]
pub struct PollingHub {
    /// First wait; each later one is 1.5 times longer, up to `max`.
    pub first: Duration,
    pub max: Duration,
}

impl Default for PollingHub {
    fn default() -> Self {
        Self { first: Duration::from_millis(50), max: Duration::from_secs(1) }
    }
}

impl StreamHub for PollingHub {
    fn publish(&self, _task_id: &str, _event: &EventRecord) {}

    fn subscribe(&self, _task_id: &str) -> BoxStream<'static, HubMessage> {
        let max = self.max;
        stream::unfold(self.first, move |wait| async move {
            tokio::time::sleep(wait).await;
            Some((HubMessage::Lagged, wait.mul_f64(1.5).min(max)))
        })
        .boxed()
    }

    fn close(&self, _task_id: &str) {}
}

/// A hub in this process whose subscribers also look at the store every `every`: with several
/// processes on one store (a2a-local replicas on one DynamoDB table), the runner that takes a turn
/// may be another process's, which publishes to its own hub only. Live events of this process's
/// runs still arrive at once; another's arrive within `every` (a read of the event log each).
pub struct Backstopped {
    pub inner: Arc<dyn StreamHub>,
    pub every: Duration,
}

impl StreamHub for Backstopped {
    fn publish(&self, task_id: &str, event: &EventRecord) {
        self.inner.publish(task_id, event);
    }

    fn subscribe(&self, task_id: &str) -> BoxStream<'static, HubMessage> {
        let every = self.every;
        let looks = stream::unfold((), move |()| async move {
            tokio::time::sleep(every).await;
            Some((Some(HubMessage::Lagged), ()))
        });
        // Ends with the live stream (the hub closed the task).
        let live = self.inner.subscribe(task_id).map(Some).chain(stream::once(future::ready(None)));
        stream::select(live, looks).take_while(|m| future::ready(m.is_some())).filter_map(future::ready).boxed()
    }

    fn close(&self, task_id: &str) {
        self.inner.close(task_id);
    }

    fn replay(&self, task_id: &str, after: u64) -> Option<Vec<Arc<SharedEvent>>> {
        self.inner.replay(task_id, after)
    }

    fn share(&self, task_id: &str, events: Vec<EventRecord>) -> Vec<Arc<SharedEvent>> {
        self.inner.share(task_id, events)
    }

    fn flush(&self) -> BoxFuture<'static, ()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemoryHub;
    use crate::ports::TaskRecord;
    use a2a_protocol::types::{StreamResponse, TaskState};

    fn event(seq: u64) -> EventRecord {
        EventRecord { seq, event: StreamResponse::Task(TaskRecord::for_test("t", TaskState::Working).task) }
    }

    #[tokio::test(start_paused = true)]
    async fn live_events_come_at_once_looks_at_the_store_every_period_and_it_ends_with_the_task() {
        let hub = Backstopped { inner: Arc::new(MemoryHub::default()), every: Duration::from_secs(1) };
        let mut sub = hub.subscribe("t");
        hub.publish("t", &event(1));
        assert!(matches!(sub.next().await, Some(HubMessage::Event(e)) if e.seq == 1));
        let before = tokio::time::Instant::now();
        assert!(matches!(sub.next().await, Some(HubMessage::Lagged)));
        assert_eq!(before.elapsed(), Duration::from_secs(1), "a look at the store each period");
        hub.close("t");
        assert!(sub.next().await.is_none(), "closing the task ends the subscription");
    }
}
