//! The ListTasks indexes of the memory store: for each owner, the owner's tasks ordered by status
//! time (then id), also per state, per context, and per context and state. A page is a range walk
//! of the one set that matches the filters: O(page), whatever the number of tasks; the count of a
//! first page is the set's size (O(1)), or, with `statusTimestampAfter`, a walk of the keys after it.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::Arc;

use crate::types::TaskState;

/// A task's place in the indexes: status time (µs) and id.
pub type Key = (i64, Arc<str>);

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Filter {
    Owner(Arc<str>),
    State(Arc<str>, TaskState),
    Context(Arc<str>, Arc<str>),
    ContextState(Arc<str>, Arc<str>, TaskState),
}

/// Where a task sits: everything its index entries are made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub owner: Arc<str>,
    pub context: Arc<str>,
    pub state: TaskState,
    pub key: Key,
}

impl Placement {
    fn filters(&self) -> [Filter; 4] {
        let (o, c, s) = (&self.owner, &self.context, self.state);
        [
            Filter::Owner(o.clone()),
            Filter::State(o.clone(), s),
            Filter::Context(o.clone(), c.clone()),
            Filter::ContextState(o.clone(), c.clone(), s),
        ]
    }
}

/// What a page asks for.
#[derive(Debug, Clone)]
pub struct Scan<'a> {
    pub owner: &'a str,
    pub context: Option<&'a str>,
    pub state: Option<TaskState>,
    /// Only tasks whose status time is after this (µs).
    pub after: Option<i64>,
    /// Continue below this key (the last key of the previous page).
    pub below: Option<Key>,
    pub limit: usize,
    /// Count the matching tasks too (first pages).
    pub count: bool,
}

/// Ordered maps throughout: tasks come and go all the time, and a hash map under such churn
/// periodically rehashes every entry (a stall of every request for tens of milliseconds at 100k
/// tasks); a B-tree's cost per change is bounded.
#[derive(Debug, Default)]
pub struct ListIndex {
    sets: BTreeMap<Filter, BTreeSet<Key>>,
}

impl ListIndex {
    pub fn insert(&mut self, p: &Placement) {
        for f in p.filters() {
            self.sets.entry(f).or_default().insert(p.key.clone());
        }
    }

    pub fn remove(&mut self, p: &Placement) {
        for f in p.filters() {
            if let Some(set) = self.sets.get_mut(&f) {
                set.remove(&p.key);
                if set.is_empty() {
                    self.sets.remove(&f);
                }
            }
        }
    }

    /// Up to `limit` keys, newest first, and the number of matching tasks when asked.
    pub fn scan(&self, q: &Scan<'_>) -> (Vec<Key>, Option<usize>) {
        let owner: Arc<str> = Arc::from(q.owner);
        let filter = match (q.context, q.state) {
            (None, None) => Filter::Owner(owner),
            (None, Some(s)) => Filter::State(owner, s),
            (Some(c), None) => Filter::Context(owner, Arc::from(c)),
            (Some(c), Some(s)) => Filter::ContextState(owner, Arc::from(c), s),
        };
        let Some(set) = self.sets.get(&filter) else {
            return (Vec::new(), q.count.then_some(0));
        };
        let lower = match q.after {
            // Keys are (time, id): everything with a time greater than `after`.
            Some(after) => Bound::Excluded((after, Arc::from("\u{10FFFF}"))),
            None => Bound::Unbounded,
        };
        let upper = match &q.below {
            Some(key) => Bound::Excluded(key.clone()),
            None => Bound::Unbounded,
        };
        let page = set
            .range((lower.clone(), upper))
            .rev()
            .filter(|(t, _)| q.after.is_none_or(|a| *t > a))
            .take(q.limit)
            .cloned()
            .collect();
        let count = q.count.then(|| match q.after {
            None => set.len(),
            Some(a) => set.range((lower, Bound::Unbounded)).filter(|(t, _)| *t > a).count(),
        });
        (page, count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(owner: &str, ctx: &str, state: TaskState, t: i64, id: &str) -> Placement {
        Placement { owner: owner.into(), context: ctx.into(), state, key: (t, id.into()) }
    }

    fn scan<'a>(owner: &'a str) -> Scan<'a> {
        Scan { owner, context: None, state: None, after: None, below: None, limit: 10, count: true }
    }

    #[test]
    fn pages_by_filter_newest_first() {
        let mut ix = ListIndex::default();
        ix.insert(&place("a", "c1", TaskState::Completed, 1, "t1"));
        ix.insert(&place("a", "c2", TaskState::Working, 2, "t2"));
        ix.insert(&place("a", "c1", TaskState::Working, 3, "t3"));
        ix.insert(&place("b", "c1", TaskState::Working, 4, "t4"));
        let ids = |(keys, n): (Vec<Key>, Option<usize>)| (keys.iter().map(|k| k.1.to_string()).collect::<Vec<_>>(), n);
        assert_eq!(ids(ix.scan(&scan("a"))), (vec!["t3".into(), "t2".into(), "t1".into()], Some(3)));
        assert_eq!(ids(ix.scan(&Scan { state: Some(TaskState::Working), ..scan("a") })).0, ["t3", "t2"]);
        assert_eq!(ids(ix.scan(&Scan { context: Some("c1"), ..scan("a") })).0, ["t3", "t1"]);
        let both = Scan { context: Some("c1"), state: Some(TaskState::Working), ..scan("a") };
        assert_eq!(ids(ix.scan(&both)), (vec!["t3".into()], Some(1)));
        assert_eq!(ids(ix.scan(&Scan { after: Some(1), ..scan("a") })), (vec!["t3".into(), "t2".into()], Some(2)));
        let second = Scan { below: Some((2, "t2".into())), limit: 1, count: false, ..scan("a") };
        assert_eq!(ids(ix.scan(&second)), (vec!["t1".into()], None));
        ix.remove(&place("a", "c2", TaskState::Working, 2, "t2"));
        assert_eq!(ids(ix.scan(&scan("a"))).1, Some(2));
        assert_eq!(ids(ix.scan(&scan("nobody"))), (vec![], Some(0)));
    }
}
