//! Who holds what in an embedded store: the tasks that may be evicted, oldest first, and what each
//! principal's unfinished tasks hold. The store's fairness rule is decided here:
//!
//! 1. Finished tasks go first (oldest status first), then interrupted tasks (INPUT_REQUIRED /
//!    AUTH_REQUIRED) idle past the TTL. Submitted and working tasks are never evicted.
//! 2. One principal's unfinished tasks may hold at most a share of the store (tasks and bytes); a
//!    create past it expires that principal's own oldest interrupted task, or is refused if it has
//!    none. Its interrupted tasks have a smaller share still: past it, its oldest interrupted task
//!    expires. So a caller that leaves tasks waiting pushes out its own, not anyone else's.
//! 3. When the store is full and nothing of (1) is left, the oldest interrupted task of the
//!    principal with the most interrupted tasks expires before a create is refused.
//!
//! Candidates sit in ordered sets, so finding one is O(log n) and no unevictable task is ever
//! walked: whenever an evictable task exists, it is found.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use super::{Key, Placement};

/// What one principal's unfinished tasks hold.
#[derive(Debug, Default)]
struct Usage {
    unfinished: usize,
    /// Bytes of the unfinished tasks.
    bytes: usize,
    /// The interrupted ones, oldest first.
    waiting: BTreeSet<Key>,
}

/// The shares of the store one principal may hold (from the store's limits).
#[derive(Debug, Clone, Copy)]
pub struct Shares {
    pub tasks: usize,
    pub bytes: usize,
    pub waiting: usize,
}

/// Why a principal's create (or update) cannot proceed, in the caller's own numbers only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OverShare {
    /// Expire this interrupted task of the same principal, then look again.
    Expire(Arc<str>),
    /// Nothing of the principal's own can go: refuse.
    Refuse { unfinished: usize, bytes: usize },
}

#[derive(Debug, Default)]
pub struct Occupancy {
    /// Finished tasks, oldest status first.
    done: BTreeSet<Key>,
    /// Interrupted tasks of every principal, oldest first (the idle TTL expires from the front).
    waiting: BTreeSet<Key>,
    owners: HashMap<Arc<str>, Usage>,
    /// Principals by how many interrupted tasks they hold (most last).
    by_waiting: BTreeSet<(usize, Arc<str>)>,
}

fn unfinished(p: &Placement) -> bool {
    !p.state.is_terminal()
}

impl Occupancy {
    /// A task enters the store holding `size` bytes.
    pub fn enter(&mut self, p: &Placement, size: usize) {
        self.add(p, size);
    }

    /// A task leaves the store; it held `size` bytes.
    pub fn leave(&mut self, p: &Placement, size: usize) {
        self.take(p, size);
    }

    /// A task changed: it was at `old` holding `old_size`, it is at `new` holding `new_size`. Returns
    /// the principal's oldest interrupted task if its interrupted tasks are now over their share.
    pub fn moved(
        &mut self,
        old: &Placement,
        old_size: usize,
        new: &Placement,
        new_size: usize,
        shares: &Shares,
    ) -> Option<Arc<str>> {
        if old == new {
            if unfinished(new) {
                if let Some(usage) = self.owners.get_mut(&new.owner) {
                    usage.bytes = (usage.bytes + new_size).saturating_sub(old_size);
                }
            }
            return None;
        }
        self.take(old, old_size);
        self.add(new, new_size);
        let usage = self.owners.get(&new.owner)?;
        (new.state.is_interrupted() && usage.waiting.len() > shares.waiting)
            .then(|| usage.waiting.first().map(|(_, id)| id.clone()))
            .flatten()
    }

    fn add(&mut self, p: &Placement, size: usize) {
        if !unfinished(p) {
            self.done.insert(p.key.clone());
            return;
        }
        let usage = self.owners.entry(p.owner.clone()).or_default();
        usage.unfinished += 1;
        usage.bytes += size;
        if p.state.is_interrupted() {
            let before = usage.waiting.len();
            usage.waiting.insert(p.key.clone());
            self.waiting.insert(p.key.clone());
            Self::rank(&mut self.by_waiting, &p.owner, before, before + 1);
        }
    }

    fn take(&mut self, p: &Placement, size: usize) {
        if !unfinished(p) {
            self.done.remove(&p.key);
            return;
        }
        let Some(usage) = self.owners.get_mut(&p.owner) else { return };
        usage.unfinished = usage.unfinished.saturating_sub(1);
        usage.bytes = usage.bytes.saturating_sub(size);
        if p.state.is_interrupted() {
            let before = usage.waiting.len();
            usage.waiting.remove(&p.key);
            self.waiting.remove(&p.key);
            let after = usage.waiting.len();
            Self::rank(&mut self.by_waiting, &p.owner, before, after);
        }
        if usage.unfinished == 0 {
            self.owners.remove(&p.owner);
        }
    }

    fn rank(by_waiting: &mut BTreeSet<(usize, Arc<str>)>, owner: &Arc<str>, before: usize, after: usize) {
        if before == after {
            return;
        }
        if before > 0 {
            by_waiting.remove(&(before, owner.clone()));
        }
        if after > 0 {
            by_waiting.insert((after, owner.clone()));
        }
    }

    /// What `owner` adding a task of `size` bytes (`new_task`) or `size` bytes to an unfinished
    /// task (`keep`, never the one to expire) would do to its share: `None` if it fits.
    pub fn over_share(
        &self,
        owner: &str,
        new_task: bool,
        size: usize,
        keep: Option<&str>,
        shares: &Shares,
    ) -> Option<OverShare> {
        let usage = self.owners.get(owner)?;
        let tasks = usage.unfinished + usize::from(new_task);
        if tasks <= shares.tasks && usage.bytes + size <= shares.bytes {
            return None;
        }
        Some(match usage.waiting.iter().find(|(_, id)| keep != Some(id.as_ref())) {
            Some((_, id)) => OverShare::Expire(id.clone()),
            None => OverShare::Refuse { unfinished: usage.unfinished, bytes: usage.bytes },
        })
    }

    /// The next task to evict when the store is full: the oldest finished task, else the oldest
    /// interrupted task idle since before `idle_before` (µs), else the oldest interrupted task of
    /// the principal holding the most.
    pub fn victim(&self, idle_before: i64) -> Option<Arc<str>> {
        if let Some((_, id)) = self.done.first() {
            return Some(id.clone());
        }
        if let Some((t, id)) = self.waiting.first() {
            if *t < idle_before {
                return Some(id.clone());
            }
        }
        let (_, owner) = self.by_waiting.last()?;
        self.owners.get(owner)?.waiting.first().map(|(_, id)| id.clone())
    }

    /// Interrupted tasks idle since before `idle_before` (µs), oldest first.
    pub fn idle(&self, idle_before: i64) -> Vec<Arc<str>> {
        self.waiting.iter().take_while(|(t, _)| *t < idle_before).map(|(_, id)| id.clone()).collect()
    }

    /// Finished tasks whose status time is before `before` (µs), oldest first (retention).
    pub fn finished_before(&self, before: i64) -> Vec<Arc<str>> {
        self.done.iter().take_while(|(t, _)| *t < before).map(|(_, id)| id.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_protocol::types::TaskState;

    fn at(owner: &str, id: &str, t: i64, state: TaskState) -> Placement {
        Placement { owner: Arc::from(owner), context: Arc::from("c"), state, key: (t, Arc::from(id)) }
    }

    const SHARES: Shares = Shares { tasks: 3, bytes: 1000, waiting: 2 };

    #[test]
    fn finished_go_first_then_idle_then_the_biggest_waiter() {
        let mut o = Occupancy::default();
        o.enter(&at("alice", "a1", 1, TaskState::InputRequired), 10);
        o.enter(&at("alice", "a2", 2, TaskState::InputRequired), 10);
        o.enter(&at("bob", "b1", 0, TaskState::InputRequired), 10);
        o.enter(&at("bob", "w", 3, TaskState::Working), 10);
        o.enter(&at("carol", "done", 9, TaskState::Completed), 10);
        assert_eq!(o.victim(0).as_deref(), Some("done"));
        o.leave(&at("carol", "done", 9, TaskState::Completed), 10);
        assert_eq!(o.victim(1).as_deref(), Some("b1"), "idle past the TTL: the oldest");
        assert_eq!(o.victim(0).as_deref(), Some("a1"), "then the one holding the most waits first");
    }

    #[test]
    fn a_principal_over_its_share_expires_its_own_waiting_tasks_or_is_refused() {
        let mut o = Occupancy::default();
        o.enter(&at("alice", "w1", 1, TaskState::Working), 10);
        o.enter(&at("alice", "w2", 2, TaskState::Working), 10);
        assert_eq!(o.over_share("alice", true, 10, None, &SHARES), None);
        o.enter(&at("alice", "i1", 3, TaskState::InputRequired), 10);
        assert_eq!(o.over_share("alice", true, 10, None, &SHARES), Some(OverShare::Expire(Arc::from("i1"))));
        assert_eq!(o.over_share("bob", true, 10, None, &SHARES), None, "bob is not alice");
        o.leave(&at("alice", "i1", 3, TaskState::InputRequired), 10);
        o.enter(&at("alice", "w3", 4, TaskState::Working), 10);
        assert_eq!(
            o.over_share("alice", true, 10, None, &SHARES),
            Some(OverShare::Refuse { unfinished: 3, bytes: 30 })
        );
        assert_eq!(
            o.over_share("alice", false, 971, None, &SHARES),
            Some(OverShare::Refuse { unfinished: 3, bytes: 30 })
        );
    }

    #[test]
    fn waiting_past_the_share_names_the_oldest_of_the_same_principal() {
        let mut o = Occupancy::default();
        let mut expire = None;
        for i in 0..3 {
            let working = at("alice", &format!("t{i}"), i, TaskState::Working);
            o.enter(&working, 10);
            let waiting = at("alice", &format!("t{i}"), i, TaskState::InputRequired);
            expire = o.moved(&working, 10, &waiting, 12, &SHARES);
        }
        assert_eq!(expire.as_deref(), Some("t0"));
        let done = at("alice", "t2", 5, TaskState::Completed);
        assert_eq!(o.moved(&at("alice", "t2", 2, TaskState::InputRequired), 12, &done, 12, &SHARES), None);
        assert_eq!(o.owners["alice"].bytes, 24, "a finished task's bytes leave the principal's share");
    }
}
