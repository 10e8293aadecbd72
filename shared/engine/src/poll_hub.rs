//! A [`StreamHub`] for processes that do not run the task (Lambda): nothing is published to it; a
//! subscription just says "look again" at a growing interval, and the follower reads the store's
//! event log. Used where no shared hub (the edge's Durable Object) is configured.

use std::time::Duration;

use futures::stream::{self, BoxStream, StreamExt};

use crate::ports::{EventRecord, HubMessage, StreamHub};

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
