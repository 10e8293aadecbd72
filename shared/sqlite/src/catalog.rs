//! What the store holds, kept in memory beside the file: each task's placement (owner, context,
//! state, status time) and size, the totals, and the eviction and fairness bookkeeping of
//! [`Occupancy`], the same rule the memory store follows ([`a2a_engine::admission`]). Loaded from
//! the task rows at start (no JSON is read), changed only after the file changed.
//!
//! Admission is decided here, in one synchronous step: making room for a create picks the tasks that
//! give way and takes them out of the books at once, and books the new task, so that room made for
//! one request is never taken by another ("full" means full, whatever the interleaving). The tasks
//! that gave way are deleted in the same transaction as the create; if it does not commit, they are
//! put back.

use std::collections::HashMap;
use std::sync::Arc;

use a2a_engine::admission::{self, Occupancy, OverShare, Placement, Shares, StoreLimits};
use a2a_protocol::error::Result;

/// One task in the books.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub placement: Placement,
    pub bytes: usize,
}

/// Tasks taken out of the books to make room: their rows are to be deleted.
pub(crate) type Victims = Vec<(Arc<str>, Entry)>;

pub(crate) struct Catalog {
    tasks: HashMap<Arc<str>, Entry>,
    occupancy: Occupancy,
    bytes: usize,
    limits: StoreLimits,
    shares: Shares,
}

impl Catalog {
    pub fn new(limits: StoreLimits) -> Self {
        Self {
            tasks: HashMap::new(),
            occupancy: Occupancy::default(),
            bytes: 0,
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

    pub fn contains(&self, id: &str) -> bool {
        self.tasks.contains_key(id)
    }

    pub fn get(&self, id: &str) -> Option<&Entry> {
        self.tasks.get(id)
    }

    /// Every task in a state, by id (recovery at start).
    pub fn in_state(&self, state: a2a_protocol::types::TaskState) -> Vec<Arc<str>> {
        self.tasks.iter().filter(|(_, e)| e.placement.state == state).map(|(id, _)| id.clone()).collect()
    }

    /// Books a task (loaded at start, or admitted).
    pub fn insert(&mut self, placement: Placement, bytes: usize) {
        let id = placement.key.1.clone();
        self.occupancy.enter(&placement, bytes);
        self.bytes += bytes;
        if let Some(old) = self.tasks.insert(id, Entry { placement, bytes }) {
            self.occupancy.leave(&old.placement, old.bytes);
            self.bytes -= old.bytes;
        }
    }

    /// Takes a task out of the books.
    pub fn remove(&mut self, id: &str) -> Option<(Arc<str>, Entry)> {
        let (id, entry) = self.tasks.remove_entry(id)?;
        self.occupancy.leave(&entry.placement, entry.bytes);
        self.bytes -= entry.bytes;
        Some((id, entry))
    }

    /// Puts back tasks taken out for a change that did not commit.
    pub fn put_back(&mut self, victims: Victims) {
        for (_, entry) in victims {
            self.insert(entry.placement, entry.bytes);
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
    pub fn moved(&mut self, placement: Placement, bytes: usize) -> Option<Arc<str>> {
        let id = placement.key.1.clone();
        let entry = self.tasks.get_mut(&id)?;
        let old = std::mem::replace(entry, Entry { placement, bytes });
        self.bytes = self.bytes - old.bytes + bytes;
        let new = &self.tasks[&id].placement;
        let expire = self.occupancy.moved(&old.placement, old.bytes, new, bytes, &self.shares);
        expire.filter(|e| *e != id)
    }

    /// A task's size changed without a move (a push config added or deleted).
    pub fn resized(&mut self, id: &str, bytes: usize) {
        if let Some(entry) = self.tasks.get(id) {
            let placement = entry.placement.clone();
            let _ = self.moved(placement, bytes);
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
