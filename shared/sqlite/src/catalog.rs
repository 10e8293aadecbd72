//! What the store holds, kept in memory beside the file: each task's row number, placement (owner,
//! context, state, status time), size and claim; the messageId claims; the ListTasks indexes; the
//! totals; and the eviction and fairness bookkeeping of [`Occupancy`], the same rule the memory store
//! follows ([`a2a_engine::admission`]). Loaded from the task rows at start (no JSON is read), changed
//! as the file changes.
//!
//! Keeping this in memory is what lets the file carry no secondary index: every status change moves
//! a task in each ListTasks index, and B-tree indexes in the file made each commit write pages all
//! over them; here a commit writes the last pages of the tasks, history and events tables, and a
//! lookup by id, a claim or a page of ListTasks costs no read (docs/adr/0012-sqlite-store.md).
//!
//! Admission is decided here, in one synchronous step: making room for a create picks the tasks that
//! give way and takes them out of the books at once, and books the new task (and its claim), so that
//! room made for one request is never taken by another ("full" means full, whatever the
//! interleaving). The tasks that give way are deleted in the same transaction as the create; if it
//! does not commit, everything is put back.

use std::collections::HashMap;
use std::sync::Arc;

use a2a_engine::admission::{self, Occupancy, OverShare, Placement, Shares, StoreLimits};
use a2a_engine::task_index::{Key, ListIndex, Scan};
use a2a_protocol::error::Result;

/// One task in the books.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// Its row number in the file.
    pub row: i64,
    pub placement: Placement,
    pub bytes: usize,
    /// The messageId whose claim the task holds.
    pub claim: Option<Arc<str>>,
}

/// Tasks taken out of the books to make room: their rows are to be deleted.
pub(crate) type Victims = Vec<(Arc<str>, Entry)>;

/// A claim moved to a new task, and where it pointed before (to put back).
pub(crate) struct ClaimMove {
    pub owner: Arc<str>,
    pub message_id: Arc<str>,
    pub previous: Option<Arc<str>>,
}

pub(crate) struct Catalog {
    tasks: HashMap<Arc<str>, Entry>,
    /// Owner → messageId → the task that message created (see `MessageClaim`).
    claims: HashMap<Arc<str>, HashMap<Arc<str>, Arc<str>>>,
    index: ListIndex,
    occupancy: Occupancy,
    bytes: usize,
    last_row: i64,
    limits: StoreLimits,
    shares: Shares,
}

impl Catalog {
    pub fn new(limits: StoreLimits) -> Self {
        Self {
            tasks: HashMap::new(),
            claims: HashMap::new(),
            index: ListIndex::default(),
            occupancy: Occupancy::default(),
            bytes: 0,
            last_row: 0,
            shares: limits.shares(),
            limits: StoreLimits { max_tasks: limits.max_tasks.max(1), ..limits },
        }
    }

    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn get(&self, id: &str) -> Option<&Entry> {
        self.tasks.get(id)
    }

    /// The task's row number.
    pub fn row(&self, id: &str) -> Option<i64> {
        self.tasks.get(id).map(|e| e.row)
    }

    /// A row number for a new task.
    pub fn next_row(&mut self) -> i64 {
        self.last_row += 1;
        self.last_row
    }

    /// Every task in a state, by id (recovery at start).
    pub fn in_state(&self, state: a2a_protocol::types::TaskState) -> Vec<Arc<str>> {
        self.tasks.iter().filter(|(_, e)| e.placement.state == state).map(|(id, _)| id.clone()).collect()
    }

    /// The task `(owner, messageId)` was last claimed by.
    pub fn claimed(&self, owner: &str, message_id: &str) -> Option<Arc<str>> {
        self.claims.get(owner)?.get(message_id).cloned()
    }

    /// A page of ListTasks: keys newest first, and the count when asked.
    pub fn scan(&self, scan: &Scan<'_>) -> (Vec<Key>, Option<usize>) {
        self.index.scan(scan)
    }

    /// Books a task (loaded at start, or admitted).
    pub fn insert(&mut self, mut entry: Entry) {
        let id = entry.placement.key.1.clone();
        self.last_row = self.last_row.max(entry.row);
        self.index.insert(&mut entry.placement);
        self.occupancy.enter(&entry.placement, entry.bytes);
        self.bytes += entry.bytes;
        if let Some(message_id) = &entry.claim {
            let owner = entry.placement.owner.clone();
            self.claims.entry(owner).or_default().insert(message_id.clone(), id.clone());
        }
        if let Some(old) = self.tasks.insert(id, entry) {
            self.index.remove(&old.placement);
            self.occupancy.leave(&old.placement, old.bytes);
            self.bytes -= old.bytes;
        }
    }

    /// Takes a task out of the books (and its claim, if it still points here).
    pub fn remove(&mut self, id: &str) -> Option<(Arc<str>, Entry)> {
        let (id, entry) = self.tasks.remove_entry(id)?;
        self.index.remove(&entry.placement);
        self.occupancy.leave(&entry.placement, entry.bytes);
        self.bytes -= entry.bytes;
        if let Some(message_id) = &entry.claim {
            let owner = entry.placement.owner.as_ref();
            if let Some(mine) = self.claims.get_mut(owner) {
                if mine.get(message_id).is_some_and(|t| *t == id) {
                    mine.remove(message_id);
                    if mine.is_empty() {
                        self.claims.remove(owner);
                    }
                }
            }
        }
        Some((id, entry))
    }

    /// Puts back tasks taken out for a change that did not commit.
    pub fn put_back(&mut self, victims: Victims) {
        for (_, entry) in victims {
            self.insert(entry);
        }
    }

    /// Moves the claim `(owner, message_id)` to `task` if it still points at `replaces`; `None` if it
    /// points elsewhere now.
    pub fn take_claim(
        &mut self,
        owner: &Arc<str>,
        message_id: &str,
        replaces: Option<&str>,
        task: &Arc<str>,
    ) -> Option<ClaimMove> {
        let held = self.claimed(owner, message_id);
        if held.as_deref() != replaces {
            return None;
        }
        let message_id: Arc<str> = Arc::from(message_id);
        self.claims.entry(owner.clone()).or_default().insert(message_id.clone(), task.clone());
        if let Some(previous) = held.as_ref().and_then(|p| self.tasks.get_mut(p)) {
            previous.claim = None;
        }
        Some(ClaimMove { owner: owner.clone(), message_id, previous: held })
    }

    /// Undoes [`Catalog::take_claim`] (its create did not commit).
    pub fn restore_claim(&mut self, moved: ClaimMove) {
        match &moved.previous {
            Some(previous) => {
                if let Some(entry) = self.tasks.get_mut(previous) {
                    entry.claim = Some(moved.message_id.clone());
                }
                self.claims.entry(moved.owner).or_default().insert(moved.message_id, previous.clone());
            }
            None => {
                if let Some(mine) = self.claims.get_mut(&moved.owner) {
                    mine.remove(&moved.message_id);
                }
            }
        }
    }

    fn over(&self, extra_bytes: usize, extra_tasks: usize) -> bool {
        self.bytes + extra_bytes > self.limits.max_bytes || self.tasks.len() + extra_tasks > self.limits.max_tasks
    }

    /// Status times (µs) before this are idle past the TTL.
    fn idle_before(&self) -> i64 {
        let ttl = chrono::Duration::from_std(self.limits.idle_ttl).unwrap_or(chrono::Duration::MAX);
        chrono::Utc::now().checked_sub_signed(ttl).map_or(i64::MIN, |t| t.timestamp_micros())
    }

    /// Makes room for `owner` to add `size` bytes (and a task, with `new_task`), as the memory store
    /// does: while the owner is over its share its own oldest interrupted tasks give way (never
    /// `keep`), then the store evicts until it fits; or refuses, with everything put back.
    pub fn make_room(
        &mut self,
        owner: &str,
        new_task: bool,
        size: usize,
        keep: Option<&str>,
        what: &str,
    ) -> Result<Victims> {
        let mut victims = Victims::new();
        loop {
            match self.occupancy.over_share(owner, new_task, size, keep, &self.shares) {
                None => break,
                Some(OverShare::Expire(id)) => match self.remove(&id) {
                    Some(victim) => victims.push(victim),
                    None => break,
                },
                Some(OverShare::Refuse { unfinished, bytes }) => {
                    self.put_back(victims);
                    return Err(admission::over_share(&self.shares, unfinished, bytes));
                }
            }
        }
        match self.room(size, usize::from(new_task), keep, what) {
            Ok(more) => {
                victims.extend(more);
                Ok(victims)
            }
            Err(e) => {
                self.put_back(victims);
                Err(e)
            }
        }
    }

    /// Evicts until the store fits `extra` more bytes and tasks, or nothing evictable is left.
    pub fn evict(&mut self, extra_bytes: usize, extra_tasks: usize, keep: Option<&str>, victims: &mut Victims) {
        while self.over(extra_bytes, extra_tasks) {
            let Some(id) = self.occupancy.victim(self.idle_before()) else { return };
            if keep == Some(id.as_ref()) {
                return;
            }
            match self.remove(&id) {
                Some(victim) => victims.push(victim),
                None => return,
            }
        }
    }

    /// Room for a new task that is already finished (it is never refused a share).
    pub fn make_room_for_finished(&mut self, size: usize) -> Result<Victims> {
        self.room(size, 1, None, "a new task")
    }

    /// Evicts until `extra` more bytes and tasks fit, or refuses with everything put back.
    pub fn room(&mut self, extra_bytes: usize, extra_tasks: usize, keep: Option<&str>, what: &str) -> Result<Victims> {
        let mut victims = Victims::new();
        self.evict(extra_bytes, extra_tasks, keep, &mut victims);
        if self.over(extra_bytes, extra_tasks) {
            self.put_back(victims);
            return Err(admission::exhausted(self.tasks.len(), self.bytes, &self.limits, what));
        }
        Ok(victims)
    }

    /// A committed change moved a task (state, status time, size). Returns an interrupted task of
    /// the same principal to expire when its interrupted tasks are now over their share.
    pub fn moved(
        &mut self,
        id: &str,
        state: a2a_protocol::types::TaskState,
        status_us: i64,
        bytes: usize,
    ) -> Option<Arc<str>> {
        let entry = self.tasks.get_mut(id)?;
        let old = entry.placement.clone();
        let old_bytes = entry.bytes;
        if old.state != state || old.key.0 != status_us {
            self.index.remove(&old);
            entry.placement.state = state;
            entry.placement.key.0 = status_us;
            self.index.insert(&mut entry.placement);
        }
        entry.bytes = bytes;
        self.bytes = self.bytes - old_bytes + bytes;
        let expire = self.occupancy.moved(&old, old_bytes, &entry.placement, bytes, &self.shares);
        expire.filter(|e| e.as_ref() != id)
    }

    /// A task's size changed without a move (a push config added or deleted).
    pub fn resized(&mut self, id: &str, bytes: usize) {
        if let Some(entry) = self.tasks.get(id) {
            let (state, status_us) = (entry.placement.state, entry.placement.key.0);
            let _ = self.moved(id, state, status_us, bytes);
        }
    }

    /// Tasks past their lifetime, taken out of the books: interrupted tasks idle past the idle TTL,
    /// and finished tasks older than `retention` (if set).
    pub fn expired(&mut self, retention: Option<std::time::Duration>) -> Victims {
        let mut ids = self.occupancy.idle(self.idle_before());
        if let Some(retention) = retention {
            let keep = chrono::Duration::from_std(retention).unwrap_or(chrono::Duration::MAX);
            let before = chrono::Utc::now().checked_sub_signed(keep).map_or(i64::MIN, |t| t.timestamp_micros());
            ids.extend(self.occupancy.finished_before(before));
        }
        ids.iter().filter_map(|id| self.remove(id)).collect()
    }
}
