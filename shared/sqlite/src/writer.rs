//! Who touches the file: one writer and a pool of readers.
//!
//! Every change goes through one connection on one thread, which commits whatever queued up while
//! the previous commit ran as one transaction (group commit: under load one commit, and with
//! `synchronous = FULL` one fsync, serves many requests). A change that fails is undone alone (the
//! batch runs again with a savepoint per change); its caller hears back only once the transaction
//! holding it is committed, so an acknowledged change is in the file. Checkpoints run beside the
//! writer ([`crate::checkpoint`]). Readers read committed data only (WAL: a
//! reader never waits for the writer), on the caller's thread: a read is a few B-tree lookups.

use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::mpsc;

use parking_lot::Mutex;
use rusqlite::Connection;
use tokio::sync::oneshot;

use crate::checkpoint::Checkpointer;
use crate::error::db_error;
use a2a_protocol::error::{A2aError, Result};

/// A change waiting for its transaction: run (more than once if the batch it is in is run
/// again), then told how its transaction ended.
trait Pending: Send {
    /// Runs the change, keeping its outcome (in place of an earlier run's); whether it succeeded.
    fn run(&mut self, conn: &Connection) -> bool;
    /// Why its last run failed.
    fn failure(&self) -> Option<A2aError>;
    /// Tells the caller the change's outcome, or `committed`'s error.
    fn reply(self: Box<Self>, committed: Result<()>);
}

/// A change with the caller's reply.
struct Call<T, F, R> {
    what: &'static str,
    change: F,
    outcome: Option<Result<T>>,
    reply: R,
}

impl<T, F, R> Pending for Call<T, F, R>
where
    T: Send,
    F: FnMut(&Connection) -> Result<T> + Send,
    R: FnOnce(Result<T>) + Send,
{
    fn run(&mut self, conn: &Connection) -> bool {
        let what = self.what;
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| (self.change)(conn))).unwrap_or_else(|_| {
            tracing::error!(operation = what, "a change to the store panicked; undone");
            Err(A2aError::internal(format!("storage failure ({what})")))
        });
        let ok = outcome.is_ok();
        self.outcome = Some(outcome);
        ok
    }

    fn failure(&self) -> Option<A2aError> {
        self.outcome.as_ref().and_then(|o| o.as_ref().err().cloned())
    }

    fn reply(self: Box<Self>, committed: Result<()>) {
        let Call { outcome, reply, .. } = *self;
        reply(committed.and_then(|()| outcome.unwrap_or_else(|| Err(not_run()))));
    }
}

type Change = Box<dyn Pending>;

/// Most changes one transaction takes (a bound on the time a batch holds the writer).
const MAX_BATCH: usize = 1024;
/// Idle reader connections kept.
const MAX_IDLE_READERS: usize = 16;

/// The change never ran: the writer could not open a transaction (the failure was logged), or
/// it has stopped.
fn not_run() -> A2aError {
    A2aError::internal("storage unavailable: the change was not recorded")
}

/// The one writing connection, on its own thread.
pub(crate) struct Writer {
    tx: Option<mpsc::Sender<Change>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Writer {
    /// Starts the writer on `conn`, its checkpoints on `checkpoints` (see [`crate::checkpoint`]).
    pub fn start(mut conn: Connection, checkpoints: Connection) -> Result<Self> {
        let checkpointer = Checkpointer::start(checkpoints)?;
        checkpointer.watch(&mut conn)?;
        let (tx, rx) = mpsc::channel::<Change>();
        let thread = std::thread::Builder::new()
            .name("a2a-sqlite-writer".into())
            .spawn(move || {
                commit_loop(&conn, &rx, &checkpointer);
                drop(checkpointer);
                // Stopping: the WAL goes into the file, so that the file alone holds everything.
                if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())) {
                    tracing::warn!(error = %e, "the last checkpoint of the data file failed; the next start replays the WAL");
                }
            })
            .map_err(|e| A2aError::internal(format!("cannot start the store's writer: {e}")))?;
        Ok(Self { tx: Some(tx), thread: Some(thread) })
    }

    /// Runs `change` in the next transaction; its result once that transaction is committed.
    pub async fn run<T: Send + 'static>(
        &self,
        what: &'static str,
        change: impl FnMut(&Connection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let (tx, rx) = oneshot::channel();
        self.enqueue(what, change, move |outcome| {
            let _ = tx.send(outcome);
        })?;
        rx.await.map_err(|_| not_run())?
    }

    /// Runs `change` in the next transaction without waiting for it (a job's acknowledgement: if
    /// it is lost in a crash, the job is only delivered again). A failure is logged.
    pub fn submit(&self, what: &'static str, change: impl FnMut(&Connection) -> Result<()> + Send + 'static) {
        let sent = self.enqueue(what, change, move |outcome| {
            if let Err(e) = outcome {
                tracing::warn!(operation = what, error = %e, "a background change to the store failed");
            }
        });
        if sent.is_err() {
            tracing::warn!(operation = what, "the store's writer has stopped: a background change is lost");
        }
    }

    fn enqueue<T: Send + 'static>(
        &self,
        what: &'static str,
        change: impl FnMut(&Connection) -> Result<T> + Send + 'static,
        reply: impl FnOnce(Result<T>) + Send + 'static,
    ) -> Result<()> {
        let call: Change = Box::new(Call { what, change, outcome: None, reply });
        self.tx.as_ref().ok_or_else(not_run)?.send(call).map_err(|_| not_run())
    }
}

impl Drop for Writer {
    /// Lets the writer commit what it was given, checkpoint and stop.
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Runs one change in a savepoint: released when it succeeds, rolled back when it fails. `Err`:
/// the transaction ended (SQLite rolls back on its own after, for one, a full disk; or the
/// savepoint itself failed and the transaction was rolled back), with why.
fn in_savepoint(conn: &Connection, change: &mut Change) -> Result<()> {
    let exec = |sql: &str| {
        conn.prepare_cached(sql).and_then(|mut s| s.execute([])).map(drop).map_err(|e| db_error("savepoint", e))
    };
    let mut run = || {
        exec("SAVEPOINT change")?;
        let ok = change.run(conn);
        if conn.is_autocommit() {
            return Err(change.failure().unwrap_or_else(not_run));
        }
        if !ok {
            exec("ROLLBACK TO change")?;
        }
        exec("RELEASE change")
    };
    let ran = run();
    if ran.is_err() && !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    ran
}

fn commit_loop(conn: &Connection, rx: &mpsc::Receiver<Change>, checkpointer: &Checkpointer) {
    while let Ok(first) = rx.recv() {
        let mut batch = Vec::with_capacity(16);
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(change) => batch.push(change),
                Err(_) => break,
            }
        }
        // The changes run one after another in one transaction; when one fails (rare: a full disk,
        // a row that is not what it should be), the transaction is undone and they run again, each
        // in a savepoint of its own, so that the failing one is undone alone. (A savepoint for
        // every change would cost a tenth of the writer's time: SQLite copies each page a change
        // touches first into the savepoint's journal.)
        let all_ran = begin(conn).is_ok() && batch.iter_mut().all(|change| change.run(conn));
        if all_ran {
            let committed = commit(conn);
            for change in batch {
                change.reply(committed.clone());
            }
        } else {
            if !conn.is_autocommit() {
                let _ = conn.execute_batch("ROLLBACK");
            }
            one_by_one(conn, batch);
        }
        checkpointer.finish(conn);
    }
}

/// Runs `batch` in one transaction, each change in its own savepoint; when SQLite ends the
/// transaction on its own, the changes that ran in it fail with its cause and the rest go on in a
/// new one.
fn one_by_one(conn: &Connection, batch: Vec<Change>) {
    let mut ran: Vec<(Change, usize)> = Vec::with_capacity(batch.len());
    let mut ended: Vec<Result<()>> = Vec::new();
    let mut open = begin(conn);
    for mut change in batch {
        match &open {
            Ok(()) => {
                if let Err(why) = in_savepoint(conn, &mut change) {
                    ended.push(Err(why));
                    open = begin(conn);
                }
                ran.push((change, ended.len()));
            }
            Err(why) => change.reply(Err(why.clone())),
        }
    }
    if open.is_ok() {
        ended.push(commit(conn));
    }
    for (change, transaction) in ran {
        let outcome = ended.get(transaction).cloned().unwrap_or_else(|| Err(not_run()));
        change.reply(outcome);
    }
}

fn commit(conn: &Connection) -> Result<()> {
    conn.execute_batch("COMMIT").map_err(|e| {
        let e = db_error("commit", e);
        if !conn.is_autocommit() {
            let _ = conn.execute_batch("ROLLBACK");
        }
        e
    })
}

fn begin(conn: &Connection) -> Result<()> {
    conn.execute_batch("BEGIN IMMEDIATE").map_err(|e| db_error("begin", e))
}

/// Connections that read, opened as needed and kept for reuse.
pub(crate) struct Readers {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
}

impl Readers {
    pub fn new(path: PathBuf) -> Self {
        Self { path, idle: Mutex::new(Vec::new()) }
    }

    /// Runs `read` on a reader connection (inside one read transaction when it reads several
    /// statements: see [`snapshot`]).
    pub fn with<T>(&self, read: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let popped = self.idle.lock().pop();
        let conn = match popped {
            Some(conn) => conn,
            None => crate::file::open_reader(&self.path)?,
        };
        let out = read(&conn);
        let mut idle = self.idle.lock();
        if idle.len() < MAX_IDLE_READERS && conn.is_autocommit() {
            idle.push(conn);
        }
        out
    }
}

/// Runs `read` in one read transaction, so that its statements see one committed state.
pub(crate) fn snapshot<T>(conn: &Connection, read: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
    let exec = |sql: &str| conn.prepare_cached(sql).and_then(|mut s| s.execute([])).map_err(|e| db_error("read", e));
    exec("BEGIN")?;
    let out = read(conn);
    exec("COMMIT")?;
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_protocol::error::ErrorKind;
    use rusqlite::params;

    fn writer() -> (Writer, tempdir::Dir) {
        let dir = tempdir::Dir::new();
        let conn = Connection::open(dir.path.join("w.db")).unwrap();
        conn.execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)").unwrap();
        let checkpoints = Connection::open(dir.path.join("w.db")).unwrap();
        (Writer::start(conn, checkpoints).unwrap(), dir)
    }

    /// A temporary directory removed on drop (the tests need no crate for it).
    mod tempdir {
        pub struct Dir {
            pub path: std::path::PathBuf,
        }
        impl Dir {
            pub fn new() -> Self {
                let path = std::env::temp_dir().join(format!("a2a-sqlite-{}", uuid::Uuid::new_v4()));
                std::fs::create_dir_all(&path).unwrap();
                Self { path }
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.path);
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failing_change_is_undone_alone_and_the_others_commit() {
        let (w, dir) = writer();
        let w = std::sync::Arc::new(w);
        let mut all = Vec::new();
        for k in 0..200i64 {
            let w = w.clone();
            all.push(tokio::spawn(async move {
                w.run("test", move |c| {
                    c.execute("INSERT INTO t (k, v) VALUES (?1, 'x')", [k]).map_err(|e| db_error("t", e))?;
                    if k % 10 == 0 {
                        return Err(A2aError::invalid_params("refused"));
                    }
                    Ok(k)
                })
                .await
            }));
        }
        let mut refused = 0;
        for h in all {
            if h.await.unwrap().is_err() {
                refused += 1;
            }
        }
        assert_eq!(refused, 20);
        let conn = Connection::open(dir.path.join("w.db")).unwrap();
        let n: i64 = conn.query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0)).unwrap();
        assert_eq!(n, 180, "every refused change was undone, every other one committed");
    }

    #[tokio::test]
    async fn checkpoints_keep_the_wal_bounded_and_everything_reaches_the_file() {
        use crate::checkpoint::RESTART_PAGES;
        let (w, dir) = writer();
        let wal = dir.path.join("w.db-wal");
        let page = 4096 + 24;
        // Four pages a change: without checkpoints the WAL would reach three times RESTART_PAGES.
        let changes = i64::from(3 * RESTART_PAGES / 4);
        let mut largest = 0;
        for k in 0..changes {
            let text = "x".repeat(4 * 4096 - 64);
            w.run("test", move |c| {
                c.execute("INSERT INTO t (k, v) VALUES (?1, ?2)", params![k, text]).map_err(|e| db_error("t", e))
            })
            .await
            .unwrap();
            largest = largest.max(std::fs::metadata(&wal).map_or(0, |m| m.len()));
        }
        assert!(
            largest < 2 * u64::from(RESTART_PAGES) * page,
            "the WAL started over along the way: it reached {} pages",
            largest / page
        );
        drop(w);
        assert_eq!(std::fs::metadata(&wal).map_or(0, |m| m.len()), 0, "the last checkpoint emptied the WAL");
        let conn = Connection::open(dir.path.join("w.db")).unwrap();
        let n: i64 = conn.query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0)).unwrap();
        assert_eq!(n, changes);
        let check: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
        assert_eq!(check, "ok");
    }

    #[tokio::test]
    async fn a_panicking_change_is_an_error_and_the_writer_goes_on() {
        let (w, _dir) = writer();
        let panicked: Result<()> = w.run("test", |_| panic!("boom")).await;
        assert_eq!(panicked.unwrap_err().kind, ErrorKind::Internal);
        let after = w
            .run("test", |c| c.execute("INSERT INTO t (k, v) VALUES (1, 'x')", []).map_err(|e| db_error("t", e)))
            .await;
        assert_eq!(after.unwrap(), 1);
    }
}
