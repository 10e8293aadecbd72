//! [`MemoryStore`]: tasks, their event logs, their push configs and the messageId claims in process
//! memory, bounded by task count and by bytes.
//!
//! - Each task is one entry behind its own lock (updates of different tasks never wait on each
//!   other); its push configs live in the entry, so they go with it.
//! - ListTasks reads per-owner indexes ([`super::index`]): a page costs O(page), and no request holds
//!   a lock across the whole store.
//! - Memory: part contents are shared between a task and its events (see `PartContent`), and every
//!   entry's size is accounted. Past `max_tasks` or `max_bytes` evictable tasks go, and one
//!   principal holds at most a share of the store: the rule is in [`crate::admission`]. A new task,
//!   or an event that adds more than a few KB, that would not fit even then is refused with
//!   ResourceExhausted; submitted and working tasks are never dropped.
//! - Making room and inserting are one step (under the admission lock): room made for one create
//!   is not taken by another, so "full" means full whatever the interleaving.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use chrono::Utc;
use parking_lot::{Mutex, RwLock};

use super::lean::Lean;
use super::log::EventLog;
use crate::admission::{self, Occupancy, OverShare, Placement, Shares, StoreLimits, SMALL_EVENT};
use crate::page_token::PageTokens;
use crate::ports::*;
use crate::task_index::{open_cursor, seal_cursor, ListIndex, Scan};
use a2a_protocol::error::{A2aError, Result};
use a2a_protocol::types::size::{config_size, task_size};
use a2a_protocol::types::{Task, TaskPushNotificationConfig};

/// How often idle interrupted tasks are swept.
const SWEEP_EVERY_SECS: i64 = 60;
/// The maps are sized for up to this many tasks up front: growing a map of n tasks rehashes all of
/// them under the store's lock (about 1 µs each, so 50 ms at 57k tasks, a stall for every request).
/// Only the maps' control bytes are touched until tasks arrive.
const PRESIZED_TASKS: usize = 1 << 20;

struct Entry {
    /// Once the task has ended, without the copies of the ids its placement holds (`lean` says what
    /// was taken): read it through [`Entry::record`].
    record: TaskRecord,
    lean: Option<Lean>,
    events: EventLog,
    /// Boxed slice, not a vector: most tasks have none, and a change of them is rare.
    configs: Box<[TaskPushNotificationConfig]>,
    /// What the task counts for: counted when created, when it ends and when its log reaches a
    /// power of two events, and in between grown by what each update said it may add. So an
    /// update costs O(event), not O(task), and the count stays exact where it matters: for the
    /// finished tasks the store holds until evicted.
    task_bytes: usize,
    placement: Placement,
    /// Taken out of the store: a change made through a handle held from before is not counted.
    removed: bool,
}

impl Entry {
    fn new(record: TaskRecord) -> Self {
        let mut entry = Self {
            placement: placement(&record),
            task_bytes: task_size(&record.task),
            record,
            lean: None,
            events: EventLog::default(),
            configs: Box::default(),
            removed: false,
        };
        entry.lean_if_ended();
        entry
    }

    /// The task's record, whole.
    fn record(&self) -> TaskRecord {
        let mut record = self.record.clone();
        if let Some(lean) = &self.lean {
            lean.restore(&mut record, &self.placement);
        }
        record
    }

    /// The task's id and context id.
    fn ids(&self) -> (&str, &str) {
        (&self.placement.key.1, &self.placement.context)
    }

    /// A list entry: the record without its history and artifacts (a page never copies contents;
    /// `hydrate` gives the full record).
    fn summary(&self) -> TaskRecord {
        let (r, (id, context_id)) = (&self.record, self.ids());
        let mut status = r.task.status.clone();
        if let (Some(lean), Some(message)) = (&self.lean, status.message.as_deref_mut()) {
            lean.status_message(message, &self.placement);
        }
        let task = Task {
            id: id.to_owned(),
            context_id: context_id.to_owned(),
            status,
            artifacts: None,
            history: Vec::new(),
            metadata: r.task.metadata.clone(),
        };
        let mut turn = r.turn.clone();
        if let (Some(lean), Some(turn)) = (&self.lean, turn.as_mut()) {
            lean.turn(turn, &r.task.history);
        }
        TaskRecord { task, owner: self.placement.owner.to_string(), turn, ..*r }
    }

    /// An ended task's record is held without copies of its ids (see [`Lean`]).
    fn lean_if_ended(&mut self) {
        if self.lean.is_none() && self.record.state().is_terminal() {
            self.lean = Some(Lean::strip(&mut self.record, &self.placement));
        }
    }

    /// What this entry counts for in the store's byte total.
    fn size(&self) -> usize {
        self.task_bytes + self.events.bytes() + self.configs.iter().map(config_size).sum::<usize>()
    }

    /// Applies a mutation in place (one that fails leaves the record as it was, see [`Mutation`])
    /// and logs the events it produced.
    fn apply(&mut self, adds: usize, mutate: Mutation<'_>) -> Result<Vec<EventRecord>> {
        if let Some(lean) = self.lean.take() {
            lean.restore(&mut self.record, &self.placement);
        }
        let applied = self.apply_whole(adds, mutate);
        self.lean_if_ended();
        applied
    }

    fn apply_whole(&mut self, adds: usize, mutate: Mutation<'_>) -> Result<Vec<EventRecord>> {
        let was_terminal = self.record.state().is_terminal();
        let produced = mutate(&mut self.record)?;
        let record = &mut self.record;
        record.version += 1;
        let mut committed = Vec::with_capacity(produced.len());
        for event in produced {
            record.last_seq += 1;
            committed.push(EventRecord { seq: record.last_seq, event });
        }
        let bit_length = |n: usize| usize::BITS - n.leading_zeros();
        let logged = self.events.len();
        self.events.append(&committed, &record.task);
        if record.state().is_terminal() && !was_terminal {
            // A task in a terminal state takes no further events: its artifacts are final.
            self.events.settle(&record.task);
        }
        if record.state().is_terminal() || bit_length(self.events.len()) != bit_length(logged) {
            self.task_bytes = task_size(&record.task);
        } else {
            self.task_bytes += adds;
        }
        Ok(committed)
    }
}

fn placement(record: &TaskRecord) -> Placement {
    Placement {
        owner: Arc::from(record.owner.as_str()),
        context: Arc::from(record.task.context_id.as_str()),
        state: record.state(),
        key: (record.status_time().timestamp_micros(), Arc::from(record.task.id.as_str())),
    }
}

impl Placement {
    /// The same task after a change: only its state and status time can move (owner, context and
    /// id never change, and their strings are shared).
    fn moved(&self, record: &TaskRecord) -> Option<Placement> {
        let (state, time) = (record.state(), record.status_time().timestamp_micros());
        (state != self.state || time != self.key.0).then(|| Placement {
            owner: self.owner.clone(),
            context: self.context.clone(),
            state,
            key: (time, self.key.1.clone()),
        })
    }
}

pub struct MemoryStore {
    /// Keyed by the id string the index holds too (one copy per task).
    tasks: RwLock<HashMap<Arc<str>, Arc<Mutex<Entry>>>>,
    /// `(owner, messageId)` → the task that message created (see [`MessageClaim`]). Ordered, like
    /// the index: no rehash stalls under churn.
    /// Nested by owner so a lookup borrows its strings instead of building a key.
    claims: Mutex<BTreeMap<String, BTreeMap<String, Arc<str>>>>,
    index: Mutex<ListIndex>,
    /// Eviction candidates and each principal's share (see [`crate::admission`]).
    occupancy: Mutex<Occupancy>,
    /// Held while room is made and then taken (a create, a large update): the room one makes is
    /// not taken by another in between.
    admission: Mutex<()>,
    bytes: AtomicUsize,
    limits: StoreLimits,
    shares: Shares,
    tokens: PageTokens,
    last_sweep: AtomicI64,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new(StoreLimits::default())
    }
}

impl MemoryStore {
    pub fn new(limits: StoreLimits) -> Self {
        let presized = limits.max_tasks.min(PRESIZED_TASKS);
        Self {
            tasks: RwLock::new(HashMap::with_capacity(presized)),
            claims: Mutex::new(BTreeMap::new()),
            index: Mutex::new(ListIndex::default()),
            occupancy: Mutex::new(Occupancy::default()),
            admission: Mutex::new(()),
            bytes: AtomicUsize::new(0),
            shares: limits.shares(),
            limits: StoreLimits { max_tasks: limits.max_tasks.max(1), ..limits },
            tokens: PageTokens::random(),
            last_sweep: AtomicI64::new(Utc::now().timestamp()),
        }
    }

    pub fn len(&self) -> usize {
        self.tasks.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes the store accounts for.
    pub fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    fn entry(&self, task_id: &str) -> Option<Arc<Mutex<Entry>>> {
        self.tasks.read().get(task_id).cloned()
    }

    fn over(&self, extra_bytes: usize, extra_tasks: usize) -> bool {
        self.bytes() + extra_bytes > self.limits.max_bytes || self.len() + extra_tasks > self.limits.max_tasks
    }

    /// The store is full and nothing can go. The caller learns nothing of what others hold.
    fn exhausted(&self, what: &str) -> A2aError {
        admission::exhausted(self.len(), self.bytes(), &self.limits, what)
    }

    /// A principal at its own share, with no interrupted task of its own to give up.
    fn over_share(&self, unfinished: usize, bytes: usize) -> A2aError {
        admission::over_share(&self.shares, unfinished, bytes)
    }

    /// Removes a task and everything that hangs on it (events, configs, claim, index entries).
    /// Never called with an entry's lock held (it takes the entry's lock). Whether it was there.
    fn remove(&self, task_id: &str) -> bool {
        let Some(entry) = self.tasks.write().remove(task_id) else { return false };
        let mut entry = entry.lock();
        entry.removed = true;
        let size = entry.size();
        self.index.lock().remove(&entry.placement);
        self.occupancy.lock().leave(&entry.placement, size);
        self.bytes.fetch_sub(size, Ordering::Relaxed);
        if let Some(first) = entry.record.task.history.first() {
            let mut claims = self.claims.lock();
            if let Some(mine) = claims.get_mut(entry.placement.owner.as_ref()) {
                if mine.get(&first.message_id).is_some_and(|t| t.as_ref() == task_id) {
                    mine.remove(&first.message_id);
                    if mine.is_empty() {
                        claims.remove(entry.placement.owner.as_ref());
                    }
                }
            }
        }
        true
    }

    /// Before `owner` adds `size` bytes (and a task, with `new_task`): keeps it within its share by
    /// expiring its own oldest interrupted tasks (never `keep`), then makes room in the store by
    /// evicting (see [`crate::admission`]), or refuses. Call with the admission lock held.
    fn make_room(&self, owner: &str, new_task: bool, size: usize, keep: Option<&str>, what: &str) -> Result<()> {
        loop {
            let over = self.occupancy.lock().over_share(owner, new_task, size, keep, &self.shares);
            match over {
                None => break,
                Some(OverShare::Expire(id)) => {
                    tracing::debug!(task_id = %id, "a principal over its share: its oldest interrupted task expired");
                    if !self.remove(&id) {
                        return Err(A2aError::internal("the store's share bookkeeping lost a task"));
                    }
                }
                Some(OverShare::Refuse { unfinished, bytes }) => return Err(self.over_share(unfinished, bytes)),
            }
        }
        self.evict(size, usize::from(new_task), keep);
        if self.over(size, usize::from(new_task)) {
            return Err(self.exhausted(what));
        }
        Ok(())
    }

    /// Evicts until the store fits `extra` more bytes and tasks or nothing evictable is left (each
    /// step finds its candidate in O(log n)).
    fn evict(&self, extra_bytes: usize, extra_tasks: usize, keep: Option<&str>) {
        while self.over(extra_bytes, extra_tasks) {
            let idle_before = self.idle_before();
            let Some(id) = self.occupancy.lock().victim(idle_before) else { return };
            if keep == Some(id.as_ref()) || !self.remove(&id) {
                return;
            }
        }
    }

    /// Status times (µs) before this are idle past the TTL.
    fn idle_before(&self) -> i64 {
        let ttl = chrono::Duration::from_std(self.limits.idle_ttl).unwrap_or(chrono::Duration::MAX);
        Utc::now().checked_sub_signed(ttl).map_or(i64::MIN, |t| t.timestamp_micros())
    }

    /// Interrupted tasks idle past the TTL expire, pressure or not: a look at the oldest of them, a
    /// minute apart at most (O(expired)).
    fn sweep(&self) {
        let now = Utc::now();
        let last = self.last_sweep.load(Ordering::Relaxed);
        if now.timestamp() - last < SWEEP_EVERY_SECS
            || self.last_sweep.compare_exchange(last, now.timestamp(), Ordering::Relaxed, Ordering::Relaxed).is_err()
        {
            return;
        }
        let expired = self.occupancy.lock().idle(self.idle_before());
        for id in expired {
            tracing::debug!(task_id = %id, "interrupted task idle past its TTL: expired");
            self.remove(&id);
        }
    }

    /// Re-indexes an entry whose state or status time changed; keeps the byte totals current (the
    /// entry counted for `counted` before the change). Returns an interrupted task of the same
    /// principal to expire (its interrupted tasks are over their share): the caller removes it once
    /// it holds no entry's lock.
    fn settle(&self, entry: &mut Entry, counted: usize) -> Option<Arc<str>> {
        if entry.removed {
            return None;
        }
        let size = entry.size();
        let old = entry.placement.clone();
        if let Some(mut placement) = entry.placement.moved(&entry.record) {
            {
                let mut index = self.index.lock();
                index.remove(&entry.placement);
                index.insert(&mut placement);
            }
            entry.placement = placement;
        }
        let expire = self.occupancy.lock().moved(&old, counted, &entry.placement, size, &self.shares);
        if size >= counted {
            self.bytes.fetch_add(size - counted, Ordering::Relaxed);
        } else {
            self.bytes.fetch_sub(counted - size, Ordering::Relaxed);
        }
        expire.filter(|id| id.as_ref() != entry.placement.key.1.as_ref())
    }
}

#[async_trait]
impl TaskStore for MemoryStore {
    async fn create(&self, record: TaskRecord, claim: Option<&MessageClaim>) -> Result<bool> {
        self.sweep();
        let mut entry = Entry::new(record);
        let id = entry.placement.key.1.clone();
        let size = entry.size();
        let _admitted = self.admission.lock();
        let owner = entry.placement.owner.clone();
        if !entry.placement.state.is_terminal() {
            self.make_room(&owner, true, size, None, "a new task")?;
        } else {
            self.evict(size, 1, None);
            if self.over(size, 1) {
                return Err(self.exhausted("a new task"));
            }
        }
        let mut tasks = self.tasks.write();
        let mut claims = self.claims.lock();
        if tasks.contains_key(id.as_ref()) {
            return Ok(false);
        }
        if let Some(c) = claim {
            let held = claims.get(c.owner.as_str()).and_then(|mine| mine.get(&c.message_id));
            if held.map(|h| h.as_ref()) != c.replaces.as_deref() {
                return Ok(false);
            }
            claims.entry(c.owner.clone()).or_default().insert(c.message_id.clone(), id.clone());
        }
        self.index.lock().insert(&mut entry.placement);
        self.occupancy.lock().enter(&entry.placement, size);
        self.bytes.fetch_add(size, Ordering::Relaxed);
        tasks.insert(id, Arc::new(Mutex::new(entry)));
        Ok(true)
    }

    async fn claimed_task(&self, owner: &str, message_id: &str) -> Result<Option<String>> {
        Ok(self.claims.lock().get(owner).and_then(|mine| mine.get(message_id)).map(|id| id.to_string()))
    }

    async fn load(&self, task_id: &str) -> Result<Option<TaskRecord>> {
        Ok(self.entry(task_id).map(|e| e.lock().record()))
    }

    async fn update(&self, task_id: &str, adds: usize, mutate: Mutation<'_>) -> Result<Committed> {
        let entry = self.entry(task_id).ok_or_else(|| A2aError::task_not_found(task_id))?;
        // A large update makes room first (no task's lock held: eviction takes them), or is
        // refused; the room is taken before anyone else may make room.
        let admitted = if adds > SMALL_EVENT {
            let admitted = self.admission.lock();
            let (owner, unfinished) = {
                let e = entry.lock();
                (e.placement.owner.clone(), !e.placement.state.is_terminal())
            };
            if unfinished {
                self.make_room(&owner, false, adds, Some(task_id), "this update")?;
            } else {
                self.evict(adds, 0, Some(task_id));
                if self.over(adds, 0) {
                    return Err(self.exhausted("this update"));
                }
            }
            Some(admitted)
        } else {
            // Small events always go in; a store they pushed over its limits is brought back.
            if self.over(0, 0) {
                let _admitted = self.admission.lock();
                self.evict(0, 0, Some(task_id));
            }
            None
        };
        let (committed, expire) = {
            let mut entry = entry.lock();
            let counted = entry.size();
            let events = entry.apply(adds, mutate)?;
            let record = &entry.record;
            let (state, version, has_push) = (record.state(), record.version, record.has_push);
            let expire = self.settle(&mut entry, counted);
            (Committed { events, state, version, has_push }, expire)
        };
        drop(admitted);
        if let Some(id) = expire {
            tracing::debug!(task_id = %id, "a principal's interrupted tasks over their share: the oldest expired");
            self.remove(&id);
        }
        Ok(committed)
    }

    async fn events_after(&self, task_id: &str, after: u64) -> Result<Vec<EventRecord>> {
        let Some(entry) = self.entry(task_id) else {
            return Ok(Vec::new());
        };
        let entry = entry.lock();
        Ok(entry.events.after(after, entry.ids(), &entry.record.task))
    }

    async fn list(&self, query: &TaskQuery) -> Result<TaskPage> {
        let cursor = open_cursor(&self.tokens, &query.page_token)?;
        let scan = Scan {
            owner: &query.owner,
            context: query.context_id.as_deref(),
            state: query.status,
            after: query.status_after.map(|t| t.timestamp_micros()),
            below: cursor.as_ref().map(|(k, _)| k.clone()),
            limit: query.page_size + 1,
            count: cursor.is_none(),
        };
        let (mut keys, counted) = self.index.lock().scan(&scan);
        let total_size = counted.or(cursor.map(|(_, total)| total)).unwrap_or(0);
        let more = keys.len() > query.page_size;
        keys.truncate(query.page_size);
        let next_page_token = match (more, keys.last()) {
            (true, Some(last)) => seal_cursor(&self.tokens, last, total_size),
            _ => String::new(),
        };
        let records = keys.iter().filter_map(|(_, id)| self.entry(id)).map(|e| e.lock().summary()).collect();
        Ok(TaskPage { records, next_page_token, total_size })
    }

    async fn hydrate(&self, record: TaskRecord) -> Result<TaskRecord> {
        Ok(self.load(&record.task.id).await?.unwrap_or(record))
    }
}

#[async_trait]
impl PushConfigStore for MemoryStore {
    async fn put(&self, config: TaskPushNotificationConfig) -> Result<()> {
        let entry = self.entry(&config.task_id).ok_or_else(|| A2aError::task_not_found(&config.task_id))?;
        let mut entry = entry.lock();
        let counted = entry.size();
        match entry.configs.iter_mut().find(|c| c.id == config.id) {
            Some(existing) => *existing = config,
            None => {
                let mut configs = std::mem::take(&mut entry.configs).into_vec();
                configs.push(config);
                entry.configs = configs.into_boxed_slice();
            }
        }
        // A config changes no state: nothing is over a share that was not before.
        let _ = self.settle(&mut entry, counted);
        Ok(())
    }

    async fn get(&self, task_id: &str, id: &str) -> Result<Option<TaskPushNotificationConfig>> {
        Ok(self.entry(task_id).and_then(|e| e.lock().configs.iter().find(|c| c.id == id).cloned()))
    }

    async fn list(&self, task_id: &str) -> Result<Vec<TaskPushNotificationConfig>> {
        Ok(self.entry(task_id).map(|e| e.lock().configs.to_vec()).unwrap_or_default())
    }

    async fn delete(&self, task_id: &str, id: &str) -> Result<()> {
        if let Some(entry) = self.entry(task_id) {
            let mut entry = entry.lock();
            let counted = entry.size();
            if entry.configs.iter().any(|c| c.id == id) {
                let mut configs = std::mem::take(&mut entry.configs).into_vec();
                configs.retain(|c| c.id != id);
                entry.configs = configs.into_boxed_slice();
            }
            let _ = self.settle(&mut entry, counted);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{apply_all, AgentEvent};
    use a2a_protocol::error::ErrorKind;
    use a2a_protocol::types::{Artifact, Message, Part, TaskState};
    use std::time::Duration;

    fn record(id: &str, state: TaskState) -> TaskRecord {
        TaskRecord::for_test(id, state)
    }

    #[tokio::test]
    async fn evicts_oldest_finished_tasks_only() {
        let store = MemoryStore::new(StoreLimits { max_tasks: 3, ..Default::default() });
        store.create(record("running", TaskState::Working), None).await.unwrap();
        for i in 0..10 {
            store.create(record(&format!("done{i}"), TaskState::Completed), None).await.unwrap();
        }
        assert_eq!(store.len(), 3);
        assert!(store.load("running").await.unwrap().is_some(), "unfinished tasks are kept");
        assert!(store.load("done9").await.unwrap().is_some(), "the newest are kept");
        assert!(store.load("done0").await.unwrap().is_none());
    }

    #[tokio::test]
    async fn bytes_are_bounded_and_counted_back_down() {
        // One principal may hold the whole store here: this is about the store's own bound.
        let store = MemoryStore::new(StoreLimits { max_bytes: 3 << 20, principal_share: 100, ..Default::default() });
        let big = |id: &str, state| {
            let mut r = record(id, state);
            r.task.history.push(Message::user_text("x".repeat(1 << 20)));
            r
        };
        for i in 0..10 {
            store.create(big(&format!("done{i}"), TaskState::Completed), None).await.unwrap();
            assert!(store.bytes() <= 3 << 20, "{}", store.bytes());
        }
        // Live tasks are never evicted: once they fill the budget, new tasks are refused.
        for i in 0..2 {
            store.create(big(&format!("live{i}"), TaskState::Working), None).await.unwrap();
        }
        let mut refused = None;
        for i in 0..3 {
            if let Err(e) = store.create(big(&format!("more{i}"), TaskState::Working), None).await {
                refused = Some(e);
                break;
            }
        }
        assert_eq!(refused.map(|e| e.kind), Some(ErrorKind::ResourceExhausted));
        assert!(store.load("live0").await.unwrap().is_some());
    }

    /// Records `events` the way the engine does.
    async fn record_events(store: &MemoryStore, id: &str, events: &[AgentEvent]) -> Result<Committed> {
        let adds = events.iter().map(AgentEvent::size).sum();
        store.update(id, adds, &|r| apply_all(r, events, Utc::now())).await
    }

    #[tokio::test]
    async fn a_large_update_that_does_not_fit_is_refused_before_it_is_applied() {
        let store = MemoryStore::new(StoreLimits { max_bytes: 3 << 20, principal_share: 100, ..Default::default() });
        let mut live = record("live", TaskState::Working);
        live.task.history.push(Message::user_text("x".repeat(2 << 20)));
        store.create(live, None).await.unwrap();
        let before = store.load("live").await.unwrap().unwrap();
        let big = Artifact::new(vec![Part::text("y".repeat(2 << 20))]);
        let chunk = AgentEvent::Artifact { artifact: big, append: false, last_chunk: true };
        let err = record_events(&store, "live", &[chunk]).await.unwrap_err();
        assert_eq!(err.kind, ErrorKind::ResourceExhausted);
        assert_eq!(store.load("live").await.unwrap().unwrap(), before, "nothing applied");
        assert!(store.events_after("live", 0).await.unwrap().is_empty(), "nothing logged");
        // A small one is always taken.
        let small = AgentEvent::Status { state: TaskState::Completed, message: None };
        record_events(&store, "live", &[small]).await.unwrap();
    }

    #[tokio::test]
    async fn a_streamed_task_is_counted_exactly_once_it_ends() {
        let store = MemoryStore::default();
        store.create(record("t", TaskState::Working), None).await.unwrap();
        let exact = |store: &MemoryStore| {
            let entry = store.entry("t").unwrap();
            let entry = entry.lock();
            (entry.task_bytes, task_size(&entry.record().task), entry.size())
        };
        let answer = Artifact::new(vec![Part::text("You said:")]);
        for i in 0..100 {
            let chunk = Artifact { parts: vec![Part::text(format!(" word{i}"))], ..answer.clone() };
            record_events(&store, "t", &[AgentEvent::Artifact { artifact: chunk, append: i > 0, last_chunk: false }])
                .await
                .unwrap();
            let (counted, real, size) = exact(&store);
            assert!(counted >= real, "an estimate never counts less than the task holds: {counted} < {real}");
            assert_eq!(store.bytes(), size, "the store's total is the one task's");
        }
        record_events(&store, "t", &[AgentEvent::Status { state: TaskState::Completed, message: None }]).await.unwrap();
        let (counted, real, size) = exact(&store);
        assert_eq!(counted, real);
        assert_eq!(store.bytes(), size);
    }

    #[tokio::test]
    async fn idle_interrupted_tasks_expire_and_take_their_configs_along() {
        let store =
            MemoryStore::new(StoreLimits { max_tasks: 1, idle_ttl: Duration::from_millis(1), ..Default::default() });
        let mut waiting = record("waiting", TaskState::InputRequired);
        waiting.task.status.timestamp = Some(Utc::now() - chrono::Duration::seconds(5));
        store.create(waiting, None).await.unwrap();
        let config = TaskPushNotificationConfig {
            task_id: "waiting".into(),
            id: "c".into(),
            url: "https://x".into(),
            ..Default::default()
        };
        store.put(config).await.unwrap();
        store.create(record("next", TaskState::Working), None).await.unwrap();
        assert!(store.load("waiting").await.unwrap().is_none(), "expired under pressure");
        assert!(PushConfigStore::list(&store, "waiting").await.unwrap().is_empty(), "its configs went too");
    }

    fn owned(owner: &str, id: &str, state: TaskState) -> TaskRecord {
        TaskRecord { owner: owner.into(), ..record(id, state) }
    }

    /// Creates a task of `owner` and moves it to `state` the way the engine records a turn.
    async fn started(store: &MemoryStore, owner: &str, id: &str, state: TaskState) -> Result<()> {
        store.create(owned(owner, id, TaskState::Submitted), None).await?;
        record_events(store, id, &[AgentEvent::Status { state, message: None }]).await.map(|_| ())
    }

    #[test]
    fn a_create_succeeds_whenever_an_evictable_task_exists_whatever_the_interleaving() {
        // Eight threads create and finish tasks at a cap of 64: at most eight are unfinished at any
        // moment, so room can always be made. Before making room and inserting were one step, a
        // create could lose the room it made to another and be refused.
        let store =
            Arc::new(MemoryStore::new(StoreLimits { max_tasks: 64, principal_share: 100, ..Default::default() }));
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(8).build().unwrap();
        let refused = runtime.block_on(async {
            let workers = (0..8).map(|w| {
                let store = store.clone();
                tokio::spawn(async move {
                    let mut refused = 0;
                    for i in 0..3000 {
                        match started(&store, "o", &format!("{w}-{i}"), TaskState::Completed).await {
                            Ok(()) => {}
                            Err(e) if e.kind == ErrorKind::ResourceExhausted => refused += 1,
                            Err(e) => panic!("{e:?}"),
                        }
                    }
                    refused
                })
            });
            let mut refused = 0;
            for w in workers.collect::<Vec<_>>() {
                refused += w.await.unwrap();
            }
            refused
        });
        assert_eq!(refused, 0, "spurious \"full\" under concurrency");
        assert_eq!(store.len(), 64);
    }

    #[tokio::test]
    async fn eviction_finds_a_finished_task_behind_any_number_of_unfinished_ones() {
        let store = MemoryStore::new(StoreLimits { max_tasks: 6000, principal_share: 100, ..Default::default() });
        for i in 0..5999 {
            store.create(record(&format!("w{i}"), TaskState::Working), None).await.unwrap();
        }
        store.create(record("done", TaskState::Completed), None).await.unwrap();
        store.create(record("new", TaskState::Working), None).await.expect("the finished task makes room");
        assert!(store.load("done").await.unwrap().is_none());
    }

    #[tokio::test]
    async fn one_principals_waiting_tasks_do_not_lock_out_another() {
        // alice leaves 300 tasks waiting for input at a cap of 300; bob still gets in, and alice's
        // own oldest waits are what expired.
        let store = MemoryStore::new(StoreLimits { max_tasks: 300, ..Default::default() });
        for i in 0..300 {
            started(&store, "alice", &format!("a{i}"), TaskState::InputRequired).await.unwrap();
        }
        started(&store, "bob", "b", TaskState::InputRequired).await.expect("bob is not locked out");
        let shares = store.shares;
        let alive = (0..300).filter(|i| store.entry(&format!("a{i}")).is_some()).count();
        assert!(alive <= shares.waiting, "alice keeps at most her waiting share: {alive} > {}", shares.waiting);
        assert!(store.entry("a299").is_some() && store.entry("a0").is_none(), "the oldest went first");
        // A principal at its share of unfinished work, with nothing waiting to give up, is refused,
        // and told only its own numbers.
        for i in 0..shares.tasks {
            store.create(owned("carol", &format!("c{i}"), TaskState::Working), None).await.unwrap();
        }
        let err = store.create(owned("carol", "one-more", TaskState::Working), None).await.unwrap_err();
        assert_eq!(err.kind, ErrorKind::ResourceExhausted);
        assert!(err.message.contains(&format!("hold {} tasks", shares.tasks)), "{}", err.message);
        let others = store.len().to_string();
        assert!(!err.message.contains(&others), "the store's count leaks: {}", err.message);
        store.create(owned("dave", "d", TaskState::Working), None).await.expect("dave is not carol");
    }

    #[tokio::test]
    async fn when_full_of_waits_the_biggest_waiter_gives_way_and_the_error_tells_no_totals() {
        let store = MemoryStore::new(StoreLimits {
            max_tasks: 8,
            principal_share: 50,
            waiting_share: 100,
            ..Default::default()
        });
        for i in 0..4 {
            started(&store, "alice", &format!("a{i}"), TaskState::InputRequired).await.unwrap();
        }
        for i in 0..3 {
            started(&store, "bob", &format!("b{i}"), TaskState::InputRequired).await.unwrap();
        }
        store.create(owned("carol", "c0", TaskState::Working), None).await.unwrap();
        store.create(owned("carol", "c1", TaskState::Working), None).await.expect("a wait gives way");
        assert!(store.entry("a0").is_none(), "alice holds the most waits: her oldest went");
        assert!(store.entry("b0").is_some());
        // Full of working tasks: refused, with no store-wide numbers.
        let store = MemoryStore::new(StoreLimits { max_tasks: 4, principal_share: 50, ..Default::default() });
        for (owner, id) in [("x", "x0"), ("x", "x1"), ("y", "y0"), ("y", "y1")] {
            store.create(owned(owner, id, TaskState::Working), None).await.unwrap();
        }
        let err = store.create(owned("z", "z0", TaskState::Working), None).await.unwrap_err();
        assert_eq!(err.kind, ErrorKind::ResourceExhausted);
        assert!(!err.message.chars().any(|c| c.is_ascii_digit()), "{}", err.message);
    }
}
