//! The embedded default: tasks, event logs and push configs in process memory, a broadcast hub,
//! and (with the `runtime` feature) an in-process work queue and a delaying push queue.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use async_trait::async_trait;
use futures::stream::{self, BoxStream, StreamExt};
use parking_lot::{Mutex, RwLock};
use tokio::sync::{broadcast, mpsc};

use crate::error::{A2aError, Result};
use crate::page_token::PageTokens;
use crate::ports::*;
use crate::types::TaskPushNotificationConfig;

struct Entry {
    record: TaskRecord,
    events: Vec<EventRecord>,
}

/// Tasks and their event logs in memory. Updates lock one task at a time. Past `max_tasks`, the
/// oldest finished tasks are evicted, so a long-running local server keeps a bounded footprint.
pub struct MemoryTaskStore {
    tasks: RwLock<HashMap<String, Arc<Mutex<Entry>>>>,
    /// `(owner, messageId)` → the task that message created (see [`MessageClaim`]).
    claims: Mutex<HashMap<(String, String), String>>,
    /// Task ids in creation order, for eviction.
    order: Mutex<VecDeque<String>>,
    max_tasks: usize,
    tokens: PageTokens,
}

/// Default cap on tasks held by the memory store.
pub const DEFAULT_MAX_TASKS: usize = 100_000;

impl Default for MemoryTaskStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryTaskStore {
    pub fn new() -> Self {
        Self::with_max_tasks(DEFAULT_MAX_TASKS)
    }

    pub fn with_max_tasks(max_tasks: usize) -> Self {
        Self {
            tasks: RwLock::new(HashMap::new()),
            claims: Mutex::new(HashMap::new()),
            order: Mutex::new(VecDeque::new()),
            max_tasks: max_tasks.max(1),
            tokens: PageTokens::random(),
        }
    }

    /// Evicts the oldest finished tasks while over the cap. Unfinished tasks are never evicted; each
    /// call looks at a bounded number of them so creation stays O(1) amortized.
    fn evict(&self) {
        let mut order = self.order.lock();
        let mut budget = 64;
        while self.tasks.read().len() > self.max_tasks && budget > 0 {
            budget -= 1;
            let Some(id) = order.pop_front() else { break };
            let finished = self.entry(&id).filter(|e| e.lock().record.state().is_terminal());
            if let Some(entry) = finished {
                self.tasks.write().remove(&id);
                self.release_claim(&entry.lock().record);
            } else if self.tasks.read().contains_key(&id) {
                order.push_back(id);
            }
        }
    }

    pub fn len(&self) -> usize {
        self.tasks.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops the claim of an evicted task's first message, if it still points at the task.
    fn release_claim(&self, record: &TaskRecord) {
        let Some(first) = record.task.history.first() else { return };
        let key = (record.owner.clone(), first.message_id.clone());
        let mut claims = self.claims.lock();
        if claims.get(&key) == Some(&record.task.id) {
            claims.remove(&key);
        }
    }

    fn entry(&self, task_id: &str) -> Option<Arc<Mutex<Entry>>> {
        self.tasks.read().get(task_id).cloned()
    }
}

#[async_trait]
impl TaskStore for MemoryTaskStore {
    async fn create(&self, record: TaskRecord, claim: Option<&MessageClaim>) -> Result<bool> {
        let id = record.task.id.clone();
        {
            let mut tasks = self.tasks.write();
            let mut claims = self.claims.lock();
            if tasks.contains_key(&id) {
                return Ok(false);
            }
            if let Some(c) = claim {
                let key = (c.owner.clone(), c.message_id.clone());
                if claims.get(&key) != c.replaces.as_ref() {
                    return Ok(false);
                }
                claims.insert(key, id.clone());
            }
            tasks.insert(id.clone(), Arc::new(Mutex::new(Entry { record, events: Vec::new() })));
        }
        self.order.lock().push_back(id);
        if self.len() > self.max_tasks {
            self.evict();
        }
        Ok(true)
    }

    async fn claimed_task(&self, owner: &str, message_id: &str) -> Result<Option<String>> {
        Ok(self.claims.lock().get(&(owner.to_string(), message_id.to_string())).cloned())
    }

    async fn load(&self, task_id: &str) -> Result<Option<TaskRecord>> {
        Ok(self.entry(task_id).map(|e| e.lock().record.clone()))
    }

    async fn update(&self, task_id: &str, mutate: Mutation<'_>) -> Result<Committed> {
        let entry = self.entry(task_id).ok_or_else(|| A2aError::task_not_found(task_id))?;
        let mut entry = entry.lock();
        // Mutate a copy so that a failing mutation leaves the task untouched.
        let mut next = entry.record.clone();
        let produced = mutate(&mut next)?;
        next.version = entry.record.version + 1;
        let mut committed = Vec::with_capacity(produced.len());
        for event in produced {
            next.last_seq += 1;
            committed.push(EventRecord { seq: next.last_seq, event });
        }
        entry.events.extend(committed.iter().cloned());
        let (state, version, has_push) = (next.state(), next.version, next.has_push);
        entry.record = next;
        Ok(Committed { events: committed, state, version, has_push })
    }

    async fn events_after(&self, task_id: &str, after: u64) -> Result<Vec<EventRecord>> {
        let Some(entry) = self.entry(task_id) else {
            return Ok(Vec::new());
        };
        let entry = entry.lock();
        // Sequence numbers are dense and start at 1, so `after` is also an index.
        let start = usize::try_from(after).unwrap_or(usize::MAX).min(entry.events.len());
        Ok(entry.events[start..].to_vec())
    }

    async fn list(&self, query: &TaskQuery) -> Result<TaskPage> {
        let cursor = self.tokens.decode(&query.page_token)?;
        let mut matching: Vec<TaskRecord> = {
            let tasks = self.tasks.read();
            tasks
                .values()
                .filter_map(|e| {
                    let e = e.lock();
                    let r = &e.record;
                    let keep = r.owner == query.owner
                        && query.context_id.as_deref().is_none_or(|c| r.task.context_id == c)
                        && query.status.is_none_or(|s| r.state() == s)
                        && query.status_after.is_none_or(|t| r.status_time() > t);
                    keep.then(|| r.clone())
                })
                .collect()
        };
        matching.sort_by(|a, b| (b.status_time(), &b.task.id).cmp(&(a.status_time(), &a.task.id)));
        let total_size = matching.len();
        let start = match &cursor {
            Some((t, id)) => {
                matching.iter().position(|r| (r.status_time(), &r.task.id) < (*t, id)).unwrap_or(matching.len())
            }
            None => 0,
        };
        let end = (start + query.page_size).min(matching.len());
        let next_page_token = if end < matching.len() {
            let last = &matching[end - 1];
            self.tokens.encode(last.status_time(), &last.task.id)
        } else {
            String::new()
        };
        let records = matching.drain(start..end).collect();
        Ok(TaskPage { records, next_page_token, total_size })
    }
}

/// Push configs in memory, keyed by task then config id.
#[derive(Default)]
pub struct MemoryPushConfigStore {
    configs: RwLock<HashMap<String, Vec<TaskPushNotificationConfig>>>,
}

#[async_trait]
impl PushConfigStore for MemoryPushConfigStore {
    async fn put(&self, config: TaskPushNotificationConfig) -> Result<()> {
        let mut all = self.configs.write();
        let list = all.entry(config.task_id.clone()).or_default();
        match list.iter_mut().find(|c| c.id == config.id) {
            Some(existing) => *existing = config,
            None => list.push(config),
        }
        Ok(())
    }

    async fn get(&self, task_id: &str, id: &str) -> Result<Option<TaskPushNotificationConfig>> {
        Ok(self.configs.read().get(task_id).and_then(|l| l.iter().find(|c| c.id == id).cloned()))
    }

    async fn list(&self, task_id: &str) -> Result<Vec<TaskPushNotificationConfig>> {
        Ok(self.configs.read().get(task_id).cloned().unwrap_or_default())
    }

    async fn delete(&self, task_id: &str, id: &str) -> Result<()> {
        if let Some(list) = self.configs.write().get_mut(task_id) {
            list.retain(|c| c.id != id);
        }
        Ok(())
    }
}

/// An in-process broadcast hub: one channel per task while someone listens.
pub struct MemoryHub {
    channels: Mutex<HashMap<String, broadcast::Sender<EventRecord>>>,
    capacity: usize,
}

impl Default for MemoryHub {
    fn default() -> Self {
        Self { channels: Mutex::new(HashMap::new()), capacity: 128 }
    }
}

impl StreamHub for MemoryHub {
    fn publish(&self, task_id: &str, event: &EventRecord) {
        let mut channels = self.channels.lock();
        if let Some(tx) = channels.get(task_id) {
            if tx.send(event.clone()).is_err() || tx.receiver_count() == 0 {
                channels.remove(task_id);
            }
        }
    }

    fn subscribe(&self, task_id: &str) -> BoxStream<'static, HubMessage> {
        let rx = {
            let mut channels = self.channels.lock();
            let tx = channels.entry(task_id.to_string()).or_insert_with(|| broadcast::channel(self.capacity).0);
            tx.subscribe()
        };
        stream::unfold(rx, |mut rx| async move {
            match rx.recv().await {
                Ok(ev) => Some((HubMessage::Event(ev), rx)),
                Err(broadcast::error::RecvError::Lagged(_)) => Some((HubMessage::Lagged, rx)),
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
    tx: mpsc::UnboundedSender<Job>,
}

impl MemoryWorkQueue {
    pub fn new() -> (Self, mpsc::UnboundedReceiver<Job>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self { tx }, rx)
    }
}

#[async_trait]
impl WorkQueue for MemoryWorkQueue {
    async fn enqueue(&self, job: Job) -> Result<()> {
        self.tx.send(job).map_err(|_| A2aError::internal("the task runner has stopped"))
    }
}

/// The in-process push queue: a delayed job is held by a timer, then handed to the consumer.
#[cfg(feature = "runtime")]
pub struct MemoryPushQueue {
    tx: mpsc::UnboundedSender<PushJob>,
}

#[cfg(feature = "runtime")]
impl MemoryPushQueue {
    pub fn new() -> (Self, mpsc::UnboundedReceiver<PushJob>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self { tx }, rx)
    }
}

#[cfg(feature = "runtime")]
#[async_trait]
impl PushQueue for MemoryPushQueue {
    async fn enqueue(&self, job: PushJob, delay: std::time::Duration) -> Result<()> {
        if delay.is_zero() {
            return self.tx.send(job).map_err(|_| A2aError::internal("the push worker has stopped"));
        }
        let tx = self.tx.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let _ = tx.send(job);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::TaskState;

    fn record(id: &str, state: TaskState) -> TaskRecord {
        TaskRecord::for_test(id, state)
    }

    #[tokio::test]
    async fn evicts_oldest_finished_tasks_only() {
        let store = MemoryTaskStore::with_max_tasks(3);
        store.create(record("running", TaskState::Working), None).await.unwrap();
        for i in 0..10 {
            store.create(record(&format!("done{i}"), TaskState::Completed), None).await.unwrap();
        }
        assert_eq!(store.len(), 3);
        assert!(store.load("running").await.unwrap().is_some(), "unfinished tasks are kept");
        assert!(store.load("done9").await.unwrap().is_some(), "the newest are kept");
        assert!(store.load("done0").await.unwrap().is_none());
    }
}
