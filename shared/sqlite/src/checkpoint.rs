//! Checkpoints beside the writer, not inside its commits.
//!
//! A checkpoint copies the WAL's pages into the data file and syncs both files (with `synchronous =
//! NORMAL` those are the only syncs there are). SQLite's own runs inside the commit that crossed
//! its threshold, so the writer, and every request waiting on a commit, stood still while it ran:
//! under blocking sends a sixth of the time with both cores idle. Here a thread of its own, on a
//! connection of its own, runs them (`PASSIVE`: it blocks neither the writer nor a reader) each
//! time the WAL has grown by [`BACKGROUND_PAGES`].
//!
//! A copy beside a stream of commits never reaches the WAL's end, and SQLite starts the WAL over
//! only when a transaction begins with all of it copied; so when the WAL is past [`RESTART_PAGES`]
//! the writer copies the rest itself between two transactions (the pages written since the last
//! background pass began: few), and its next transaction starts the WAL over. The WAL stays under
//! about `RESTART_PAGES` pages plus one background pass; the file is as consistent as before, every
//! copy being SQLite's own checkpoint.

use std::os::raw::c_int;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};
use rusqlite::Connection;

use crate::error::db_error;
use a2a_protocol::error::{A2aError, Result};

/// WAL pages added between two background checkpoints (SQLite's own threshold).
pub(crate) const BACKGROUND_PAGES: u32 = 1000;
/// WAL pages past which the writer finishes the checkpoint itself (16 MiB of 4 KiB pages).
pub(crate) const RESTART_PAGES: u32 = 4096;

/// What the checkpoint thread is told.
#[derive(Default, PartialEq)]
enum Signal {
    #[default]
    Idle,
    /// A background pass is owed.
    Pass,
    Stop,
}

/// What the writer's WAL hook and the checkpoint thread share.
#[derive(Default)]
struct Shared {
    /// Pages in the WAL after the last commit.
    wal_pages: AtomicU32,
    signal: Mutex<Signal>,
    wake: Condvar,
}

impl Shared {
    fn tell(&self, signal: Signal) {
        let mut held = self.signal.lock();
        if *held != Signal::Stop {
            *held = signal;
        }
        self.wake.notify_one();
    }
}

/// The checkpoint thread; stopped (its pass finished) when dropped.
pub(crate) struct Checkpointer {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts the thread on `conn` (a connection of its own to the file, synced as the writer's).
    pub fn start(conn: Connection) -> Result<Self> {
        let shared = Arc::new(Shared::default());
        let theirs = shared.clone();
        let thread = std::thread::Builder::new()
            .name("a2a-sqlite-checkpoint".into())
            .spawn(move || background(&conn, &theirs))
            .map_err(|e| A2aError::internal(format!("cannot start the store's checkpoints: {e}")))?;
        Ok(Self { shared, thread: Some(thread) })
    }

    /// Makes the writer's commits report the WAL's size here (in place of SQLite's own checkpoints).
    pub fn watch(&self, writer: &mut Connection) -> Result<()> {
        let shared = self.shared.clone();
        let mut passes_asked = 0;
        writer
            .wal_hook(Some(move |_: &mut rusqlite::hooks::Wal, pages: c_int| {
                let pages = u32::try_from(pages).unwrap_or(0);
                shared.wal_pages.store(pages, Ordering::Relaxed);
                // One pass per BACKGROUND_PAGES the WAL grew by since it started over.
                let due = pages / BACKGROUND_PAGES;
                if due < passes_asked {
                    passes_asked = 0;
                }
                if due > passes_asked && pages < RESTART_PAGES {
                    passes_asked = due;
                    shared.tell(Signal::Pass);
                }
                Ok(())
            }))
            .map_err(|e| db_error("open", e))
    }

    /// On the writer's thread, between two transactions: when the WAL is past [`RESTART_PAGES`],
    /// copies what the background passes left, so that the next transaction starts the WAL over.
    /// Does nothing while a background pass runs (it is asked again after the next commit).
    pub fn finish(&self, writer: &Connection) {
        if self.shared.wal_pages.load(Ordering::Relaxed) < RESTART_PAGES {
            return;
        }
        match passive(writer) {
            Ok(true) => self.shared.wal_pages.store(0, Ordering::Relaxed),
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(error = %e, "a checkpoint of the data file failed; the WAL grows until one succeeds")
            }
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.shared.tell(Signal::Stop);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The checkpoint thread: a pass each time one is owed.
fn background(conn: &Connection, shared: &Shared) {
    loop {
        {
            let mut signal = shared.signal.lock();
            while *signal == Signal::Idle {
                shared.wake.wait(&mut signal);
            }
            if *signal == Signal::Stop {
                return;
            }
            *signal = Signal::Idle;
        }
        if let Err(e) = passive(conn) {
            tracing::warn!(error = %e, "a background checkpoint of the data file failed");
        }
    }
}

/// `PRAGMA wal_checkpoint(PASSIVE)`: whether it ran and copied the whole WAL (`false`: another
/// connection's checkpoint was running, or a reader still needs part of it).
fn passive(conn: &Connection) -> Result<bool> {
    let (busy, log, copied): (i64, i64, i64) = conn
        .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .map_err(|e| db_error("checkpoint", e))?;
    Ok(busy == 0 && log == copied)
}
