//! The embedded SQL store: a2a-local's tasks, event logs, push configs, messageId claims and its two
//! queues in one SQLite file, so that a restart, a crash or a `kill -9` loses nothing acknowledged
//! (docs/a2a-local.md, "The data directory"; the choice: docs/adr/0012-sqlite-store.md).
//!
//! - [`file`]: the data directory, its lock (one process per directory), the schema and its
//!   migrations, the durability setting.
//! - `writer`: one writing connection on its own thread, committing in groups; readers on the
//!   callers' threads; `checkpoint`: the WAL copied into the file beside the writer.
//! - [`SqliteStore`]: [`TaskStore`](a2a_engine::ports::TaskStore) and
//!   [`PushConfigStore`](a2a_engine::ports::PushConfigStore) (`rows`: how a task sits in the file;
//!   `list`: ListTasks on indexes; `catalog`: the limits and each principal's share, the memory
//!   store's rule).
//! - [`SqliteWorkQueue`], [`SqlitePushQueue`]: the turns and webhook deliveries waiting, kept in
//!   the same file; what was waiting at a crash is done after the restart.

mod catalog;
mod checkpoint;
mod error;
pub mod file;
mod list;
mod push_queue;
mod recent;
mod rows;
mod store;
mod work_queue;
mod writer;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rusqlite::params;
use tokio::sync::mpsc;

pub use file::Durability;
pub use push_queue::{DeadLetter, SqlitePushQueue};
pub use store::SqliteStore;
pub use work_queue::SqliteWorkQueue;

use a2a_engine::admission::StoreLimits;
use a2a_engine::memory::Queued;
use a2a_engine::page_token::PageTokens;
use a2a_engine::push::Delivery;
use a2a_protocol::error::Result;

/// How often idle interrupted tasks and finished tasks past the retention are deleted.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// Where and how the store keeps its file.
#[derive(Debug, Clone)]
pub struct SqliteOptions {
    /// The data directory (created if missing).
    pub data_dir: PathBuf,
    pub durability: Durability,
    /// Finished tasks older than this (by status time) are deleted; `None`: kept until the limits
    /// make them give way.
    pub retention: Option<Duration>,
    pub limits: StoreLimits,
    /// The most the data file may grow to (SQLite's `max_page_count`); past it a change is refused
    /// as on a full disk. `None`: the disk is the limit.
    pub max_file_bytes: Option<u64>,
}

impl SqliteOptions {
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            data_dir: data_dir.into(),
            durability: Durability::default(),
            retention: None,
            limits: StoreLimits::default(),
            max_file_bytes: None,
        }
    }
}

/// An opened store and its queues, with what each queue hands on (the runner consumes `jobs`, the
/// push worker `deliveries`). What was waiting in the file when the last process stopped is already
/// in the channels.
pub struct Opened {
    pub store: Arc<SqliteStore>,
    pub work: Arc<SqliteWorkQueue>,
    pub jobs: mpsc::UnboundedReceiver<Queued>,
    pub push: Arc<SqlitePushQueue>,
    pub deliveries: mpsc::UnboundedReceiver<Delivery>,
    /// Turns and webhook deliveries taken up again from the file.
    pub recovered: (usize, usize),
}

/// Opens (or creates) the store in `options.data_dir`, takes up the work left in it, and starts the
/// sweep of expired tasks. Call inside a tokio runtime.
pub async fn open(options: SqliteOptions) -> Result<Opened> {
    let started = std::time::Instant::now();
    let dir = file::open_dir(&options.data_dir)?;
    let conn = file::open_writer(&dir.db, options.durability, options.max_file_bytes)?;
    let tokens = PageTokens::new(file::page_token_key(&conn)?);
    let catalog = load_catalog(&conn, options.limits)?;
    let tasks = catalog.len();
    let writer = writer::Writer::start(conn, file::open_checkpointer(&dir.db, options.durability)?)?;
    let readers = writer::Readers::new(dir.db.clone());
    let store = Arc::new(SqliteStore::new(writer, readers, catalog, tokens, options.retention, dir));
    let (work, jobs) = SqliteWorkQueue::new(store.clone());
    let (push, deliveries) = SqlitePushQueue::new(store.clone());
    let recovered = (work.recover().await?, push.recover().await?);
    tracing::info!(
        data_dir = %options.data_dir.display(),
        tasks,
        turns_recovered = recovered.0,
        deliveries_recovered = recovered.1,
        millis = started.elapsed().as_millis() as u64,
        "store opened"
    );
    let weak = Arc::downgrade(&store);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(SWEEP_EVERY);
        tick.tick().await;
        loop {
            tick.tick().await;
            let Some(store) = weak.upgrade() else { return };
            match store.sweep().await {
                Ok(0) => {}
                Ok(n) => tracing::debug!(tasks = n, "expired tasks deleted"),
                Err(e) => tracing::warn!(error = %e, "the sweep of expired tasks failed"),
            }
        }
    });
    Ok(Opened { store, work: Arc::new(work), jobs, push: Arc::new(push), deliveries, recovered })
}

/// The books, from the task rows (no JSON is read).
fn load_catalog(conn: &rusqlite::Connection, limits: StoreLimits) -> Result<catalog::Catalog> {
    use a2a_engine::admission::Placement;
    use a2a_protocol::types::TaskState;
    let mut catalog = catalog::Catalog::new(limits);
    let mut owners: std::collections::HashMap<String, Arc<str>> = std::collections::HashMap::new();
    let mut select = conn
        .prepare("SELECT row, id, owner, context_id, state, status_us, bytes, claim FROM tasks")
        .map_err(|e| error::db_error("load", e))?;
    let mut rows = select.query(params![]).map_err(|e| error::db_error("load", e))?;
    while let Some(row) = rows.next().map_err(|e| error::db_error("load", e))? {
        type Columns = (i64, String, String, String, String, i64, usize, Option<String>);
        let read = || -> rusqlite::Result<Columns> {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?, row.get(6)?, row.get(7)?))
        };
        let (number, id, owner, context, state, status_us, bytes, claim) =
            read().map_err(|e| error::db_error("load", e))?;
        let owner = owners.entry(owner).or_insert_with_key(|o| Arc::from(o.as_str())).clone();
        let placement = Placement {
            owner,
            context: Arc::from(context),
            state: TaskState::from_name(&state).unwrap_or(TaskState::Unspecified),
            key: (status_us, Arc::from(id)),
        };
        catalog.insert(catalog::Entry { row: number, placement, bytes, claim: claim.map(Arc::from) });
    }
    Ok(catalog)
}
