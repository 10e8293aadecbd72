//! The store with each call timed (`a2a.store.operation.duration`): wraps whichever store the
//! engine was given, while metrics are on.

use std::sync::Arc;

use async_trait::async_trait;

use crate::ports::{
    Committed, EventRecord, MessageClaim, Mutation, PushConfigStore, TaskPage, TaskQuery, TaskRecord, TaskStore,
};
use a2a_protocol::error::Result;
use a2a_protocol::types::TaskPushNotificationConfig;
use a2a_telemetry::metrics::{self, Measurement};

/// A task store and a push-config store, timed.
pub struct Metered {
    tasks: Arc<dyn TaskStore>,
    configs: Arc<dyn PushConfigStore>,
}

impl Metered {
    /// The stores as given while metrics are off; timed ones otherwise.
    pub fn wrap(
        tasks: Arc<dyn TaskStore>,
        configs: Arc<dyn PushConfigStore>,
    ) -> (Arc<dyn TaskStore>, Arc<dyn PushConfigStore>) {
        if !metrics::is_on() {
            return (tasks, configs);
        }
        let metered = Arc::new(Self { tasks, configs });
        (metered.clone(), metered)
    }
}

/// Runs `call` and records its duration as the store operation `operation`.
async fn timed<T>(operation: &'static str, call: impl std::future::Future<Output = T>) -> T {
    let started = metrics::start();
    let out = call.await;
    metrics::record(Measurement::Store { operation, seconds: metrics::seconds_since(started) });
    out
}

#[async_trait]
impl TaskStore for Metered {
    async fn create(&self, record: TaskRecord, claim: Option<&MessageClaim>) -> Result<bool> {
        timed("create", self.tasks.create(record, claim)).await
    }

    async fn claimed_task(&self, owner: &str, message_id: &str) -> Result<Option<String>> {
        timed("claimed_task", self.tasks.claimed_task(owner, message_id)).await
    }

    async fn load(&self, task_id: &str) -> Result<Option<TaskRecord>> {
        timed("load", self.tasks.load(task_id)).await
    }

    async fn update(&self, task_id: &str, adds: usize, mutate: Mutation<'_>) -> Result<Committed> {
        timed("update", self.tasks.update(task_id, adds, mutate)).await
    }

    async fn events_after(&self, task_id: &str, after: u64) -> Result<Vec<EventRecord>> {
        timed("events_after", self.tasks.events_after(task_id, after)).await
    }

    async fn event(&self, task_id: &str, seq: u64) -> Result<Option<EventRecord>> {
        timed("event", self.tasks.event(task_id, seq)).await
    }

    async fn list(&self, query: &TaskQuery) -> Result<TaskPage> {
        timed("list", self.tasks.list(query)).await
    }

    async fn hydrate(&self, record: TaskRecord) -> Result<TaskRecord> {
        timed("hydrate", self.tasks.hydrate(record)).await
    }
}

#[async_trait]
impl PushConfigStore for Metered {
    async fn put(&self, config: TaskPushNotificationConfig) -> Result<()> {
        timed("put_config", self.configs.put(config)).await
    }

    async fn get(&self, task_id: &str, id: &str) -> Result<Option<TaskPushNotificationConfig>> {
        timed("get_config", self.configs.get(task_id, id)).await
    }

    async fn list(&self, task_id: &str) -> Result<Vec<TaskPushNotificationConfig>> {
        timed("list_configs", self.configs.list(task_id)).await
    }

    async fn delete(&self, task_id: &str, id: &str) -> Result<()> {
        timed("delete_config", self.configs.delete(task_id, id)).await
    }
}
