//! The data directory and the file in it: `a2a.db` (SQLite, with its `-wal` and `-shm` beside it)
//! and `a2a.lock`, held by the process that uses the directory. What is refused at start, with a
//! message that says what to do: a directory that cannot be created or written, a second process on
//! the same directory (SQLite would let two share the file safely, but both would run the same queued
//! turns and deliver the same webhooks), a file that is not an a2a-local data file, and a file whose
//! schema is newer than this binary knows.
//!
//! The schema is versioned (`PRAGMA user_version`); the migrations below are applied in order at
//! start, each in its own transaction.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use crate::error::db_error;
use a2a_protocol::error::{A2aError, Result};

/// The SQLite file's name in the data directory.
pub const DB_FILE: &str = "a2a.db";
/// The file the process using the directory holds locked.
pub const LOCK_FILE: &str = "a2a.lock";
/// `PRAGMA application_id` of the file ("A2A1"), so that another program's SQLite file is not taken
/// for one of ours.
const APPLICATION_ID: i32 = 0x4132_4131;

/// What `COMMIT` waits for (the `synchronous` setting in WAL mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// A commit is written to the WAL (the operating system holds it): a crash of the process, a
    /// `kill -9`, an out-of-memory kill lose nothing committed. A power cut or a kernel crash may
    /// lose the last commits since the WAL was last synced (at each checkpoint); the file stays
    /// consistent either way.
    #[default]
    Process,
    /// Each commit is also synced to the disk (one fsync per group commit): a power cut loses
    /// nothing acknowledged either, at the cost of the disk's sync latency on every commit.
    Power,
}

impl Durability {
    /// SQLite's `synchronous` setting for it.
    fn synchronous(self) -> &'static str {
        match self {
            Durability::Process => "NORMAL",
            Durability::Power => "FULL",
        }
    }
}

/// Each schema version's migration, in order: version n is `MIGRATIONS[n - 1]`.
const MIGRATIONS: &[&str] = &[
    // 1: tasks, their history, events and push configs; the queues' rows. A task's row number (in
    // creation order) keys its history and events, so that what the tasks in flight write lands on
    // the last pages of each table. No secondary index: ids, claims and the ListTasks indexes are
    // kept in memory, rebuilt from these columns at start (`catalog.rs`).
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID;
     CREATE TABLE tasks (
       row INTEGER PRIMARY KEY,
       id TEXT NOT NULL,
       owner TEXT NOT NULL,
       context_id TEXT NOT NULL,
       state TEXT NOT NULL,
       status_us INTEGER NOT NULL,
       created_us INTEGER NOT NULL,
       version INTEGER NOT NULL,
       last_seq INTEGER NOT NULL,
       cancel_requested INTEGER NOT NULL,
       has_push INTEGER NOT NULL,
       turn TEXT,
       body TEXT NOT NULL,
       artifact_base TEXT NOT NULL,
       history_len INTEGER NOT NULL,
       bytes INTEGER NOT NULL,
       claim TEXT
     );
     CREATE TABLE messages (
       task INTEGER NOT NULL, n INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (task, n)
     ) WITHOUT ROWID;
     CREATE TABLE events (
       task INTEGER NOT NULL, seq INTEGER NOT NULL, artifact_id TEXT, body TEXT NOT NULL,
       PRIMARY KEY (task, seq)
     ) WITHOUT ROWID;
     CREATE TABLE push_configs (
       task INTEGER NOT NULL, id TEXT NOT NULL, body TEXT NOT NULL, v03 INTEGER NOT NULL,
       from_seq INTEGER NOT NULL, PRIMARY KEY (task, id)
     ) WITHOUT ROWID;
     CREATE TABLE work_jobs (
       task_id TEXT PRIMARY KEY, turn INTEGER NOT NULL, job TEXT, deliveries INTEGER NOT NULL
     ) WITHOUT ROWID;
     CREATE TABLE push_jobs (
       id INTEGER PRIMARY KEY, task_id TEXT NOT NULL, config_id TEXT NOT NULL, seq INTEGER NOT NULL,
       state TEXT NOT NULL, attempt INTEGER NOT NULL, due_us INTEGER NOT NULL, config TEXT NOT NULL,
       v03 INTEGER NOT NULL, event TEXT NOT NULL, trace TEXT, reason TEXT,
       UNIQUE (task_id, config_id, seq)
     );
     CREATE INDEX push_jobs_queued ON push_jobs (state) WHERE state = 'queued';",
];

/// The schema version this binary writes.
pub const SCHEMA_VERSION: usize = MIGRATIONS.len();

/// The data directory, held for as long as this value lives.
pub(crate) struct DataDir {
    pub db: PathBuf,
    /// Locked (`flock`) while the process runs; the lock goes with the process, however it ends.
    _lock: File,
}

/// Creates the directory if needed and takes its lock.
pub(crate) fn open_dir(dir: &Path) -> Result<DataDir> {
    let shown = dir.display();
    std::fs::create_dir_all(dir)
        .map_err(|e| A2aError::internal(format!("cannot create the data directory {shown}: {e}")))?;
    restrict(dir, 0o700);
    let lock_path = dir.join(LOCK_FILE);
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| A2aError::internal(format!("the data directory {shown} is not writable: {e}")))?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            return Err(A2aError::internal(format!(
                "another process is using the data directory {shown} (it holds {}): stop it, or give this one another --data-dir",
                lock_path.display()
            )))
        }
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(A2aError::internal(format!("cannot lock the data directory {shown}: {e}")))
        }
    }
    Ok(DataDir { db: dir.join(DB_FILE), _lock: lock })
}

/// The data holds webhook tokens and credentials: only the owner may read it (Unix).
fn restrict(path: &Path, mode: u32) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
    }
    #[cfg(not(unix))]
    let _ = (path, mode);
}

/// The writing connection: checks what the file is, sets WAL and the durability, migrates, caps
/// the file's size.
pub(crate) fn open_writer(db: &Path, durability: Durability, max_bytes: Option<u64>) -> Result<Connection> {
    let shown = db.display();
    let new = !db.exists();
    let conn = Connection::open(db).map_err(|e| A2aError::internal(format!("cannot open {shown}: {e}")))?;
    if new {
        restrict(db, 0o600);
    }
    let app: i32 = conn.pragma_query_value(None, "application_id", |r| r.get(0)).map_err(|e| not_ours(db, e))?;
    if app != 0 && app != APPLICATION_ID {
        return Err(A2aError::internal(format!(
            "{shown} is an SQLite file of another program (application_id {app:#x}), not an a2a-local data file"
        )));
    }
    let mode: String =
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0)).map_err(|e| db_error("open", e))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(A2aError::internal(format!("{shown} cannot use write-ahead logging (journal_mode is {mode})")));
    }
    // Checkpoints run beside the writer (`checkpoint.rs`), which takes SQLite's own off when it
    // starts. The writer's page cache is small (2 MiB): it works on the right edges of the
    // B-trees, and SQLite scans the cache's whole hash table at the end of every transaction (1.5%
    // of a2a-local's CPU under blocking sends with 16 MiB, 0.2% with 2 MiB; readers keep 8 MiB).
    conn.execute_batch(&format!(
        "PRAGMA synchronous = {}; PRAGMA foreign_keys = OFF; PRAGMA busy_timeout = 5000;
         PRAGMA temp_store = MEMORY; PRAGMA cache_size = -2048; PRAGMA journal_size_limit = {WAL_SIZE_LIMIT};",
        durability.synchronous()
    ))
    .map_err(|e| db_error("open", e))?;
    conn.set_prepared_statement_cache_capacity(STATEMENTS);
    migrate(&conn, db)?;
    conn.pragma_update(None, "application_id", APPLICATION_ID).map_err(|e| db_error("open", e))?;
    if let Some(max) = max_bytes {
        let page: u64 = conn.pragma_query_value(None, "page_size", |r| r.get(0)).map_err(|e| db_error("open", e))?;
        let pages = (max / page.max(512)).max(16);
        conn.pragma_update(None, "max_page_count", pages).map_err(|e| db_error("open", e))?;
    }
    Ok(conn)
}

fn not_ours(db: &Path, e: rusqlite::Error) -> A2aError {
    A2aError::internal(format!("{} is not an SQLite file a2a-local can read: {e}", db.display()))
}

/// Applies the migrations the file lacks; refuses a file newer than this binary.
fn migrate(conn: &Connection, db: &Path) -> Result<()> {
    let found: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0)).map_err(|e| not_ours(db, e))?;
    let found = usize::try_from(found).unwrap_or(usize::MAX);
    if found > SCHEMA_VERSION {
        return Err(A2aError::internal(format!(
            "{} has schema version {found}, written by a newer a2a-local; this one knows up to version {SCHEMA_VERSION}: run the newer a2a-local, or give this one another --data-dir",
            db.display()
        )));
    }
    for (index, step) in MIGRATIONS.iter().enumerate().skip(found) {
        let version = index + 1;
        let sql = format!("BEGIN IMMEDIATE; {step}; PRAGMA user_version = {version}; COMMIT;");
        if let Err(e) = conn.execute_batch(&sql) {
            let _ = conn.execute_batch("ROLLBACK");
            return Err(A2aError::internal(format!("migrating {} to schema version {version}: {e}", db.display())));
        }
        tracing::info!(version, "data file migrated");
    }
    Ok(())
}

/// A connection that only reads.
pub(crate) fn open_reader(db: &Path) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(db, flags).map_err(|e| db_error("open a reader", e))?;
    conn.execute_batch("PRAGMA query_only = 1; PRAGMA busy_timeout = 5000; PRAGMA cache_size = -8192;")
        .map_err(|e| db_error("open a reader", e))?;
    conn.set_prepared_statement_cache_capacity(STATEMENTS);
    Ok(conn)
}

/// The connection that checkpoints the WAL into the file: synced as the writer is, since a
/// checkpoint's syncs are what keep the file whole through a power cut.
pub(crate) fn open_checkpointer(db: &Path, durability: Durability) -> Result<Connection> {
    let conn = Connection::open(db).map_err(|e| db_error("open the checkpointer", e))?;
    conn.execute_batch(&format!("PRAGMA synchronous = {}; PRAGMA busy_timeout = 5000;", durability.synchronous()))
        .map_err(|e| db_error("open the checkpointer", e))?;
    Ok(conn)
}

/// Statements each connection keeps prepared: more than the store uses, so none is parsed twice.
const STATEMENTS: usize = 128;
/// The WAL file is cut back to this once checkpointed (bytes).
const WAL_SIZE_LIMIT: u64 = 64 << 20;

/// The secret that seals ListTasks page tokens, kept in the file so that tokens outlive a restart.
pub(crate) fn page_token_key(conn: &Connection) -> Result<Vec<u8>> {
    let held: Option<Vec<u8>> = conn
        .query_row("SELECT value FROM meta WHERE key = 'page_token_key'", [], |r| r.get(0))
        .map(Some)
        .or_else(|e| if e == rusqlite::Error::QueryReturnedNoRows { Ok(None) } else { Err(e) })
        .map_err(|e| db_error("open", e))?;
    if let Some(key) = held {
        return Ok(key);
    }
    let mut key = Vec::with_capacity(32);
    key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    conn.execute("INSERT INTO meta (key, value) VALUES ('page_token_key', ?1)", [&key])
        .map_err(|e| db_error("open", e))?;
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch() -> PathBuf {
        let path = std::env::temp_dir().join(format!("a2a-sqlite-file-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&path).unwrap();
        path
    }

    #[test]
    fn a_second_process_on_the_directory_is_refused() {
        let dir = scratch();
        let held = open_dir(&dir).unwrap();
        let refused = open_dir(&dir).err().unwrap();
        assert!(refused.message.contains("another process is using the data directory"), "{}", refused.message);
        drop(held);
        open_dir(&dir).expect("free again once the first let go");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_newer_file_and_a_foreign_file_are_refused() {
        let dir = scratch();
        let db = dir.join(DB_FILE);
        drop(open_writer(&db, Durability::Process, None).unwrap());
        let conn = Connection::open(&db).unwrap();
        conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1).unwrap();
        drop(conn);
        let refused = open_writer(&db, Durability::Process, None).err().unwrap();
        assert!(refused.message.contains("written by a newer a2a-local"), "{}", refused.message);

        let other = dir.join("other.db");
        let conn = Connection::open(&other).unwrap();
        conn.pragma_update(None, "application_id", 7).unwrap();
        drop(conn);
        let refused = open_writer(&other, Durability::Process, None).err().unwrap();
        assert!(refused.message.contains("another program"), "{}", refused.message);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn the_writer_and_the_checkpointer_sync_as_the_durability_says() {
        let dir = scratch();
        let db = dir.join(DB_FILE);
        let synchronous =
            |conn: &Connection| -> i64 { conn.pragma_query_value(None, "synchronous", |r| r.get(0)).unwrap() };
        // SQLite's values: 1 NORMAL, 2 FULL. The checkpointer's syncs are what keep the file whole
        // through a power cut, so it must never sync less than the writer.
        for (durability, expected) in [(Durability::Process, 1), (Durability::Power, 2)] {
            assert_eq!(synchronous(&open_writer(&db, durability, None).unwrap()), expected, "{durability:?}");
            assert_eq!(synchronous(&open_checkpointer(&db, durability).unwrap()), expected, "{durability:?}");
        }
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn reopening_keeps_the_schema_and_the_page_token_key() {
        let dir = scratch();
        let db = dir.join(DB_FILE);
        let first = page_token_key(&open_writer(&db, Durability::Power, None).unwrap()).unwrap();
        let conn = open_writer(&db, Durability::Process, None).unwrap();
        assert_eq!(page_token_key(&conn).unwrap(), first);
        let version: usize = conn.pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        let _ = std::fs::remove_dir_all(dir);
    }
}
