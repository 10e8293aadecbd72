//! What an embedded store may hold and who gives way when it is full: the limits (tasks, bytes,
//! the idle lifetime of interrupted tasks, each principal's share) and the bookkeeping that decides
//! ([`Occupancy`]). The memory store and the embedded SQL store follow this one rule.

mod occupancy;

use std::sync::Arc;
use std::time::Duration;

pub use occupancy::{Occupancy, OverShare, Shares};

use a2a_protocol::error::{A2aError, ErrorKind};
use a2a_protocol::types::TaskState;

/// Default cap on tasks held.
pub const DEFAULT_MAX_TASKS: usize = 100_000;
/// Default cap on the bytes held (part contents, events, configs).
pub const DEFAULT_MAX_BYTES: usize = 1 << 30;
/// Default lifetime of an interrupted task nobody answers.
pub const DEFAULT_IDLE_TTL: Duration = Duration::from_secs(24 * 3600);
/// Default share of the store (tasks and bytes) one principal's unfinished tasks may hold, in percent.
pub const DEFAULT_PRINCIPAL_SHARE: u8 = 25;
/// Default share of a principal's task share its interrupted tasks may hold, in percent.
pub const DEFAULT_WAITING_SHARE: u8 = 25;
/// An event that adds at most this much is always taken (a status change that ends a task must
/// never be refused), even over the byte budget.
pub const SMALL_EVENT: usize = 4096;

/// A task's place in the bookkeeping: status time (µs) and id.
pub type Key = (i64, Arc<str>);

/// Where a task sits: what its bookkeeping and index entries are made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub owner: Arc<str>,
    pub context: Arc<str>,
    pub state: TaskState,
    pub key: Key,
}

/// The limits of an embedded store.
#[derive(Debug, Clone)]
pub struct StoreLimits {
    pub max_tasks: usize,
    pub max_bytes: usize,
    /// Interrupted tasks idle longer than this expire.
    pub idle_ttl: Duration,
    /// Share of `max_tasks` and of `max_bytes` one principal's unfinished tasks may hold (percent).
    pub principal_share: u8,
    /// Share of a principal's task share its interrupted tasks may hold (percent); past it, its
    /// oldest interrupted task expires.
    pub waiting_share: u8,
}

impl Default for StoreLimits {
    fn default() -> Self {
        Self {
            max_tasks: DEFAULT_MAX_TASKS,
            max_bytes: DEFAULT_MAX_BYTES,
            idle_ttl: DEFAULT_IDLE_TTL,
            principal_share: DEFAULT_PRINCIPAL_SHARE,
            waiting_share: DEFAULT_WAITING_SHARE,
        }
    }
}

impl StoreLimits {
    /// What one principal may hold (at least one task, and one interrupted task).
    pub fn shares(&self) -> Shares {
        let percent = |n: usize, p: u8| n / 100 * usize::from(p.min(100)) + n % 100 * usize::from(p.min(100)) / 100;
        let tasks = percent(self.max_tasks, self.principal_share).max(1);
        Shares {
            tasks,
            bytes: percent(self.max_bytes, self.principal_share).max(1),
            waiting: percent(tasks, self.waiting_share).max(1),
        }
    }
}

/// The store is full and nothing can go. The caller learns nothing of what others hold (the totals
/// go to the log only).
pub fn exhausted(tasks: usize, bytes: usize, limits: &StoreLimits, what: &str) -> A2aError {
    tracing::warn!(
        tasks,
        bytes,
        max_tasks = limits.max_tasks,
        max_bytes = limits.max_bytes,
        "store full: nothing can be evicted yet"
    );
    A2aError::new(
        ErrorKind::ResourceExhausted,
        format!("{what} does not fit: the server is at its task or memory limit and nothing can be evicted yet; retry later"),
    )
}

/// A principal at its own share, with no interrupted task of its own to give up: told its own
/// numbers only.
pub fn over_share(shares: &Shares, unfinished: usize, bytes: usize) -> A2aError {
    A2aError::new(
        ErrorKind::ResourceExhausted,
        format!(
            "this caller's unfinished tasks hold {unfinished} tasks and {bytes} bytes; one caller may hold {} tasks and {} bytes: wait for some to finish, or cancel some",
            shares.tasks, shares.bytes
        ),
    )
}
