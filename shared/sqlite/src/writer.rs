//! Who touches the file: one writer and a pool of readers.
//!
//! Every change goes through one connection on one thread, which commits whatever queued up while
//! the previous commit ran as one transaction (group commit: under load one commit, and with
//! `synchronous = FULL` one fsync, serves many requests). Each change runs in its own savepoint, so
//! a change that fails is undone alone; its caller hears back only once the transaction holding it
//! is committed, so an acknowledged change is in the file. Readers read committed data only (WAL: a
//! reader never waits for the writer), on the caller's thread: a read is a few B-tree lookups.

use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::mpsc;

use parking_lot::Mutex;
use rusqlite::Connection;
use tokio::sync::oneshot;

use crate::error::db_error;
use a2a_protocol::error::{A2aError, Result};

/// A change: runs inside the batch's transaction (or is skipped) and returns what to tell its
/// caller once that transaction is committed (or is not).
type Change = Box<dyn FnOnce(Step<'_>) -> Reply + Send>;
type Reply = Box<dyn FnOnce(Result<()>) + Send>;

/// What the writer does with a change.
enum Step<'a> {
    /// Run it; when it fails in a way that ended the whole transaction (SQLite rolls back on its
    /// own after, for one, a full disk), say why in `aborted`.
    Run(&'a Connection, &'a mut Option<A2aError>),
    /// It cannot run (no transaction could be opened): tell the caller why.
    Skip(A2aError),
}

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
    pub fn start(conn: Connection) -> Result<Self> {
        let (tx, rx) = mpsc::channel::<Change>();
        let thread = std::thread::Builder::new()
            .name("a2a-sqlite-writer".into())
            .spawn(move || {
                commit_loop(&conn, &rx);
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
        change: impl FnOnce(&Connection) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let (tx, rx) = oneshot::channel();
        self.enqueue(what, change, move |outcome| {
            let _ = tx.send(outcome);
        })?;
        rx.await.map_err(|_| not_run())?
    }

    /// Runs `change` in the next transaction without waiting for it (a job's acknowledgement: if
    /// it is lost in a crash, the job is only delivered again). A failure is logged.
    pub fn submit(&self, what: &'static str, change: impl FnOnce(&Connection) -> Result<()> + Send + 'static) {
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
        change: impl FnOnce(&Connection) -> Result<T> + Send + 'static,
        reply: impl FnOnce(Result<T>) + Send + 'static,
    ) -> Result<()> {
        let change: Change = Box::new(move |step: Step<'_>| match step {
            Step::Run(conn, aborted) => {
                let outcome = in_savepoint(conn, what, change);
                if let Err(e) = &outcome {
                    if conn.is_autocommit() {
                        *aborted = Some(e.clone());
                    }
                }
                Box::new(move |committed: Result<()>| reply(committed.and(outcome)))
            }
            Step::Skip(why) => Box::new(move |_| reply(Err(why))),
        });
        self.tx.as_ref().ok_or_else(not_run)?.send(change).map_err(|_| not_run())
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

/// Runs one change in a savepoint: released when it succeeds, rolled back when it fails or panics.
fn in_savepoint<T>(conn: &Connection, what: &'static str, change: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
    let exec = |sql: &str| conn.prepare_cached(sql).and_then(|mut s| s.execute([])).map_err(|e| db_error(what, e));
    exec("SAVEPOINT change")?;
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| change(conn))).unwrap_or_else(|_| {
        tracing::error!(operation = what, "a change to the store panicked; undone");
        Err(A2aError::internal(format!("storage failure ({what})")))
    });
    if conn.is_autocommit() {
        // SQLite ended the whole transaction (a full disk, an I/O error): nothing to release.
        return outcome;
    }
    if outcome.is_err() {
        exec("ROLLBACK TO change")?;
    }
    exec("RELEASE change")?;
    outcome
}

fn commit_loop(conn: &Connection, rx: &mpsc::Receiver<Change>) {
    while let Ok(first) = rx.recv() {
        let mut batch = Vec::with_capacity(16);
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(change) => batch.push(change),
                Err(_) => break,
            }
        }
        // One transaction for the batch; when SQLite ends one on its own, the changes that ran in
        // it fail with its cause and the rest go on in a new one.
        let mut replies: Vec<(Reply, usize)> = Vec::with_capacity(batch.len());
        let mut ended: Vec<Result<()>> = Vec::new();
        let mut open = begin(conn);
        for change in batch {
            let reply = match &open {
                Ok(()) => {
                    let mut aborted = None;
                    let reply = change(Step::Run(conn, &mut aborted));
                    if let Some(why) = aborted {
                        ended.push(Err(why));
                        open = begin(conn);
                    }
                    reply
                }
                Err(why) => change(Step::Skip(why.clone())),
            };
            replies.push((reply, ended.len()));
        }
        if open.is_ok() {
            ended.push(conn.execute_batch("COMMIT").map_err(|e| {
                let e = db_error("commit", e);
                if !conn.is_autocommit() {
                    let _ = conn.execute_batch("ROLLBACK");
                }
                e
            }));
        }
        for (reply, transaction) in replies {
            let outcome = ended.get(transaction).cloned().unwrap_or_else(|| Err(not_run()));
            reply(outcome);
        }
    }
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

    fn writer() -> (Writer, tempdir::Dir) {
        let dir = tempdir::Dir::new();
        let conn = Connection::open(dir.path.join("w.db")).unwrap();
        conn.execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)").unwrap();
        (Writer::start(conn).unwrap(), dir)
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
