//! The tasks written last, kept decoded in memory up to a byte budget, least recently used out
//! first: the runner's turn (load, then one update per event) and the answer that follows read no
//! row. An entry is what the file holds: it is put back only after a commit, taken out while a
//! change to its task is being written, and forgotten when its task is deleted.

use std::sync::Arc;

use hashlink::LinkedHashMap;

use crate::rows::Stored;
use a2a_engine::ports::TaskRecord;

pub(crate) struct Recent {
    map: LinkedHashMap<Arc<str>, Stored>,
    bytes: usize,
    budget: usize,
}

impl Recent {
    pub fn new(budget: usize) -> Self {
        Self { map: LinkedHashMap::new(), bytes: 0, budget }
    }

    /// The task's record, if held (and now the most recently used).
    pub fn record(&mut self, id: &str) -> Option<TaskRecord> {
        self.map.to_back(id).map(|stored| stored.record.clone())
    }

    /// The last event's sequence number of the task, if held.
    pub fn last_seq(&self, id: &str) -> Option<u64> {
        self.map.get(id).map(|stored| stored.record.last_seq)
    }

    /// Takes the task out, to change it.
    pub fn take(&mut self, id: &str) -> Option<Stored> {
        let stored = self.map.remove(id)?;
        self.bytes -= stored.bytes;
        Some(stored)
    }

    /// Holds the task as committed, unless a newer version of it is held; the least recently used
    /// go past the budget.
    pub fn put(&mut self, id: Arc<str>, stored: Stored) {
        if self.map.get(&id).is_some_and(|held| held.record.version > stored.record.version) {
            return;
        }
        if stored.bytes > self.budget {
            self.take(&id);
            return;
        }
        self.bytes += stored.bytes;
        if let Some(old) = self.map.insert(id, stored) {
            self.bytes -= old.bytes;
        }
        while self.bytes > self.budget {
            let Some((_, old)) = self.map.pop_front() else { break };
            self.bytes -= old.bytes;
        }
    }

    /// A config changed the task's byte count.
    pub fn resized(&mut self, id: &str, bytes: usize) {
        if let Some(stored) = self.map.get_mut(id) {
            self.bytes = self.bytes - stored.bytes + bytes;
            stored.bytes = bytes;
        }
    }
}
