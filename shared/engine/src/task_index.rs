//! The ListTasks indexes of the embedded stores (memory, SQLite), kept in memory: for each owner,
//! the owner's tasks ordered by status time (then id), also per state, per context, and per context
//! and state. A page is a range walk
//! of the one set that matches the filters: O(page), whatever the number of tasks; the count of a
//! first page is the set's size (O(1)), or, with `statusTimestampAfter`, a walk of the keys after it.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{BuildHasher, RandomState};
use std::ops::Bound;
use std::sync::Arc;

use a2a_protocol::types::TaskState;

pub use crate::admission::{Key, Placement};

use crate::page_token::PageTokens;
use a2a_protocol::error::{A2aError, Result};

/// The page token of the page after `key`: its position and the total counted on the first page,
/// sealed (opaque and tamper-evident).
pub fn seal_cursor(tokens: &PageTokens, key: &Key, total: usize) -> String {
    tokens.seal(format!("{}|{total}|{}", key.0, key.1).as_bytes())
}

/// The position and total a page token carries (`None` for the first page, `""`).
pub fn open_cursor(tokens: &PageTokens, token: &str) -> Result<Option<(Key, usize)>> {
    if token.is_empty() {
        return Ok(None);
    }
    let bad = || A2aError::invalid_field("pageToken", "is malformed");
    let payload = String::from_utf8(tokens.open(token)?).map_err(|_| bad())?;
    let mut it = payload.splitn(3, '|');
    let (Some(t), Some(total), Some(id)) = (it.next(), it.next(), it.next()) else { return Err(bad()) };
    let t: i64 = t.parse().map_err(|_| bad())?;
    let total: usize = total.parse().map_err(|_| bad())?;
    Ok(Some(((t, Arc::from(id)), total)))
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

/// One slice of an owner's tasks (all of them, or one context's): ordered by key, and per state.
#[derive(Debug, Default)]
struct Sets {
    all: BTreeSet<Key>,
    by_state: BTreeMap<TaskState, BTreeSet<Key>>,
}

impl Sets {
    fn insert(&mut self, state: TaskState, key: &Key) {
        self.all.insert(key.clone());
        self.by_state.entry(state).or_default().insert(key.clone());
    }

    /// Removes the key; whether the slice is empty afterwards.
    fn remove(&mut self, state: TaskState, key: &Key) -> bool {
        self.all.remove(key);
        if let Some(set) = self.by_state.get_mut(&state) {
            set.remove(key);
            if set.is_empty() {
                self.by_state.remove(&state);
            }
        }
        self.all.is_empty()
    }

    fn get(&self, state: Option<TaskState>) -> Option<&BTreeSet<Key>> {
        match state {
            None => Some(&self.all),
            Some(s) => self.by_state.get(&s),
        }
    }
}

/// A context's tasks. Most contexts hold a task or two (a new context per task is common), and a
/// pair of B-trees costs about 850 bytes even for one key: up to [`FEW`] keys sit in one sorted
/// vector (a page filters it: at most [`FEW`] steps), past that in full [`Sets`].
#[derive(Debug)]
enum ContextSets {
    Few(Vec<(Key, TaskState)>),
    Many(Sets),
}

/// Keys a context holds in its vector before it moves to [`Sets`].
const FEW: usize = 16;

impl Default for ContextSets {
    fn default() -> Self {
        Self::Few(Vec::new())
    }
}

impl ContextSets {
    fn insert(&mut self, state: TaskState, key: &Key) {
        match self {
            Self::Few(few) if few.len() < FEW => {
                let at = few.partition_point(|(k, _)| k < key);
                if few.get(at).is_some_and(|(k, _)| k == key) {
                    few[at].1 = state;
                } else {
                    a2a_protocol::types::reserve_tight(few, 1);
                    few.insert(at, (key.clone(), state));
                }
            }
            Self::Few(few) => {
                let mut sets = Sets::default();
                for (k, s) in few.drain(..) {
                    sets.insert(s, &k);
                }
                sets.insert(state, key);
                *self = Self::Many(sets);
            }
            Self::Many(sets) => sets.insert(state, key),
        }
    }

    /// Removes the key; whether the context is empty afterwards.
    fn remove(&mut self, state: TaskState, key: &Key) -> bool {
        match self {
            Self::Few(few) => {
                few.retain(|(k, _)| k != key);
                few.is_empty()
            }
            Self::Many(sets) => sets.remove(state, key),
        }
    }
}

/// A context in an owner's tree: the context id's keyed hash first, so a search compares integers
/// (the id only breaks a tie; a chosen collision costs nothing but a string compare).
type ContextKey = (u64, Arc<str>);

#[derive(Debug, Default)]
struct OwnerSets {
    tasks: Sets,
    contexts: BTreeMap<ContextKey, ContextSets>,
}

/// Ordered maps throughout: tasks come and go all the time, and a hash map under such churn
/// periodically rehashes every entry (a stall of every request for tens of milliseconds at 100k
/// tasks); a B-tree's cost per change is bounded. Nested by owner (few), then context (one per
/// task, often), whose tree is ordered by a keyed hash so that it compares integers, not ids.
#[derive(Debug, Default)]
pub struct ListIndex {
    owners: BTreeMap<Arc<str>, OwnerSets>,
    hasher: RandomState,
}

impl ListIndex {
    fn context_key(&self, context: &Arc<str>) -> ContextKey {
        (self.hasher.hash_one(context), context.clone())
    }

    /// Indexes a task. The placement's owner and context then share the index's strings (one copy
    /// per owner and per context, not per task).
    pub fn insert(&mut self, p: &mut Placement) {
        if let Some((owner, _)) = self.owners.get_key_value(&p.owner) {
            p.owner = owner.clone();
        }
        let context = self.context_key(&p.context);
        let owner = self.owners.entry(p.owner.clone()).or_default();
        if let Some(((_, shared), _)) = owner.contexts.get_key_value(&context) {
            p.context = shared.clone();
        }
        owner.tasks.insert(p.state, &p.key);
        owner.contexts.entry(context).or_default().insert(p.state, &p.key);
    }

    pub fn remove(&mut self, p: &Placement) {
        let context = self.context_key(&p.context);
        let Some(owner) = self.owners.get_mut(&p.owner) else {
            return;
        };
        if let Some(sets) = owner.contexts.get_mut(&context) {
            if sets.remove(p.state, &p.key) {
                owner.contexts.remove(&context);
            }
        }
        if owner.tasks.remove(p.state, &p.key) {
            self.owners.remove(&p.owner);
        }
    }

    /// Up to `limit` keys, newest first, and the number of matching tasks when asked.
    pub fn scan(&self, q: &Scan<'_>) -> (Vec<Key>, Option<usize>) {
        let Some(owner) = self.owners.get(q.owner) else {
            return (Vec::new(), q.count.then_some(0));
        };
        let set = match q.context {
            None => owner.tasks.get(q.state),
            Some(c) => match owner.contexts.get(&self.context_key(&Arc::from(c))) {
                Some(ContextSets::Many(sets)) => sets.get(q.state),
                Some(ContextSets::Few(few)) => return scan_few(few, q),
                None => None,
            },
        };
        let Some(set) = set else {
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
        // A page token's cursor and a later `statusTimestampAfter` leave nothing between them (and
        // a B-tree's range panics when its start is past its end).
        let empty = match (&lower, &upper) {
            (Bound::Excluded(low), Bound::Excluded(high)) => low >= high,
            _ => false,
        };
        let page = match empty {
            true => Vec::new(),
            false => set
                .range((lower.clone(), upper))
                .rev()
                .filter(|(t, _)| q.after.is_none_or(|a| *t > a))
                .take(q.limit)
                .cloned()
                .collect(),
        };
        let count = q.count.then(|| match q.after {
            None => set.len(),
            Some(a) => set.range((lower, Bound::Unbounded)).filter(|(t, _)| *t > a).count(),
        });
        (page, count)
    }
}

/// [`ListIndex::scan`] of a context's short vector.
fn scan_few(few: &[(Key, TaskState)], q: &Scan<'_>) -> (Vec<Key>, Option<usize>) {
    let matching = few.iter().filter(|(k, s)| q.state.is_none_or(|want| want == *s) && q.after.is_none_or(|a| k.0 > a));
    let page = matching
        .clone()
        .rev()
        .filter(|(k, _)| q.below.as_ref().is_none_or(|below| k < below))
        .take(q.limit)
        .map(|(k, _)| k.clone())
        .collect();
    (page, q.count.then(|| matching.count()))
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
        ix.insert(&mut place("a", "c1", TaskState::Completed, 1, "t1"));
        ix.insert(&mut place("a", "c2", TaskState::Working, 2, "t2"));
        ix.insert(&mut place("a", "c1", TaskState::Working, 3, "t3"));
        ix.insert(&mut place("b", "c1", TaskState::Working, 4, "t4"));
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
        assert_eq!(ids(ix.scan(&Scan { context: Some("c2"), ..scan("a") })), (vec![], Some(0)));
        for (ctx, state, t, id) in [("c1", TaskState::Completed, 1, "t1"), ("c1", TaskState::Working, 3, "t3")] {
            ix.remove(&place("a", ctx, state, t, id));
        }
        ix.remove(&place("b", "c1", TaskState::Working, 4, "t4"));
        assert!(ix.owners.is_empty(), "empty slices are dropped: {:?}", ix.owners);
    }

    /// A cursor (a page token's) at or before a later `after` (`statusTimestampAfter`) leaves an
    /// empty page, in a context's short vector and in the B-trees alike (a B-tree's range with its
    /// start past its end would panic).
    #[test]
    fn a_cursor_before_the_after_bound_gives_an_empty_page() {
        let mut ix = ListIndex::default();
        for t in 0..(FEW as i64 + 4) {
            ix.insert(&mut place("a", "many", TaskState::Working, t, &format!("t{t}")));
        }
        for t in [11, 12] {
            ix.insert(&mut place("a", "few", TaskState::Working, t, &format!("f{t}")));
        }
        // Tasks after time 10: nine in "many", two in "few".
        for (context, count) in [(None, 11), (Some("many"), 9), (Some("few"), 2)] {
            for below in [(2, Arc::from("t2")), (9, Arc::from("t9")), (i64::MIN, Arc::from(""))] {
                let q = Scan { context, after: Some(10), below: Some(below.clone()), ..scan("a") };
                assert_eq!(ix.scan(&q), (Vec::new(), Some(count)), "{context:?} {below:?}");
            }
            // The same time as `after`: still nothing between them.
            let q = Scan { context, after: Some(10), below: Some((10, Arc::from("t10"))), ..scan("a") };
            assert!(ix.scan(&q).0.is_empty());
        }
    }

    /// A context's short vector and its B-trees answer alike, on the way up past [`FEW`] keys and
    /// back down: every filter and page against a plain filter of all the keys.
    #[test]
    fn a_context_answers_the_same_in_either_form() {
        let mut ix = ListIndex::default();
        let mut all: Vec<Placement> = Vec::new();
        let states = [TaskState::Working, TaskState::Completed, TaskState::InputRequired];
        let check = |ix: &ListIndex, all: &[Placement]| {
            for state in [None, Some(TaskState::Working), Some(TaskState::Completed)] {
                for after in [None, Some(5)] {
                    let want: Vec<Key> = all
                        .iter()
                        .rev()
                        .filter(|p| p.context.as_ref() == "c" && state.is_none_or(|s| s == p.state))
                        .filter(|p| after.is_none_or(|a| p.key.0 > a))
                        .map(|p| p.key.clone())
                        .collect();
                    let first = Scan { context: Some("c"), state, after, limit: 3, ..scan("a") };
                    let (page, count) = ix.scan(&first);
                    assert_eq!(count, Some(want.len()), "{state:?} {after:?}");
                    assert_eq!(page, want.iter().take(3).cloned().collect::<Vec<_>>());
                    if let Some(last) = page.last() {
                        let next = Scan { below: Some(last.clone()), count: false, ..first };
                        assert_eq!(ix.scan(&next).0, want.iter().skip(3).take(3).cloned().collect::<Vec<_>>());
                    }
                }
            }
        };
        for t in 0..(FEW as i64 + 8) {
            let mut p = place("a", if t % 5 == 4 { "other" } else { "c" }, states[t as usize % 3], t, &format!("t{t}"));
            ix.insert(&mut p);
            all.push(p);
            check(&ix, &all);
        }
        while let Some(p) = all.pop() {
            ix.remove(&p);
            check(&ix, &all);
        }
        assert!(ix.owners.is_empty());
    }
}
