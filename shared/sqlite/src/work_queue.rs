//! The turns of a2a-local, kept across a crash without a row per job in the common case.
//!
//! A turn's job is handed to the runner in process; the task itself says which turn is due (a
//! SUBMITTED task's last event opened it) or was cut off (WORKING). So at start every SUBMITTED or
//! WORKING task gets its job back, delivered again: the runner runs a turn whose agent had not yet
//! started (SUBMITTED) with the same run id and a higher `attempt`, and fails a turn cut off mid-run
//! (WORKING) with a reason that says so, since running an agent twice is not safe in general.
//!
//! `work_jobs` holds what the task cannot say: a job that carries the extensions its request
//! activated (written before the job is handed on), and how many times each turn was delivered,
//! counted at each start, so a turn that keeps taking the process down ends FAILED after a few
//! deliveries instead of looping (see the runner). A run that ends deletes its row, if it has one.
//! Cancels are not kept: after a restart nothing runs that they could stop.

use std::sync::Arc;

use async_trait::async_trait;
use rusqlite::{params, Connection};
use tokio::sync::mpsc;

use crate::error::db_error;
use crate::rows::{json, parse};
use crate::store::SqliteStore;
use a2a_engine::memory::{Done, Queued, IN_PROCESS_QUEUE};
use a2a_engine::ports::{Job, WorkQueue};
use a2a_protocol::error::{A2aError, Result};
use a2a_protocol::types::{Role, TaskState};
use a2a_telemetry::spans::{self, Queue};
use a2a_telemetry::TraceContext;

/// The work queue; the runner consumes what it hands on.
pub struct SqliteWorkQueue {
    store: Arc<SqliteStore>,
    tx: mpsc::UnboundedSender<Queued>,
}

/// A turn's row: the task, the turn (the sequence number of the event that opened it), the job
/// when it carries what the task does not, and the deliveries so far.
struct JobRow {
    task_id: String,
    turn: u64,
    job: Option<String>,
    deliveries: u32,
}

impl JobRow {
    fn upsert(&self, conn: &Connection) -> Result<()> {
        conn.prepare_cached(
            "INSERT INTO work_jobs (task_id, turn, job, deliveries) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (task_id) DO UPDATE SET turn = excluded.turn, job = excluded.job, deliveries = excluded.deliveries",
        )
        .and_then(|mut s| s.execute(params![self.task_id, self.turn, self.job, self.deliveries]))
        .map(drop)
        .map_err(|e| db_error("queue a turn", e))
    }
}

impl SqliteWorkQueue {
    pub(crate) fn new(store: Arc<SqliteStore>) -> (Self, mpsc::UnboundedReceiver<Queued>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self { store, tx }, rx)
    }

    /// What the runner calls when the run of `turn` is over: its row leaves the file.
    fn done(&self, task_id: String, turn: u64) -> Done {
        let store = self.store.clone();
        Box::new(move || {
            store.writer.submit("finish a turn", move |conn| {
                conn.prepare_cached("DELETE FROM work_jobs WHERE task_id = ?1 AND turn = ?2")
                    .and_then(|mut s| s.execute(params![task_id, turn]))
                    .map(drop)
                    .map_err(|e| db_error("finish a turn", e))
            })
        })
    }

    fn hand_on(&self, job: Job, trace: Option<TraceContext>, attempt: u32, done: Option<Done>) -> Result<()> {
        let sent = a2a_telemetry::metrics::start();
        self.tx
            .send(Queued { job, trace, sent, attempt, done })
            .map_err(|_| A2aError::internal("the task runner has stopped"))
    }

    /// At start: every task on a turn (SUBMITTED or WORKING) gets its job again, delivered once more
    /// than before; rows of turns that are over are dropped.
    pub(crate) async fn recover(&self) -> Result<usize> {
        let rows: Vec<JobRow> = self.store.readers.with(|conn| {
            let mut select = conn
                .prepare("SELECT task_id, turn, job, deliveries FROM work_jobs")
                .map_err(|e| db_error("recover", e))?;
            let rows = select
                .query_map([], |r| {
                    Ok(JobRow { task_id: r.get(0)?, turn: r.get(1)?, job: r.get(2)?, deliveries: r.get(3)? })
                })
                .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
                .map_err(|e| db_error("recover", e))?;
            Ok(rows)
        })?;
        let mut held: std::collections::HashMap<String, JobRow> =
            rows.into_iter().map(|r| (r.task_id.clone(), r)).collect();
        let on_a_turn = {
            let catalog = self.store.catalog.lock();
            let mut ids = catalog.in_state(TaskState::Submitted);
            ids.extend(catalog.in_state(TaskState::Working));
            ids
        };
        let mut handed = 0;
        for task_id in on_a_turn {
            let Some(stored) = self.store.read_file(&task_id)? else { continue };
            let record = stored.record;
            let previous = held
                .remove(task_id.as_ref())
                .filter(|r| r.turn == record.last_seq || record.state() == TaskState::Working);
            let job = match previous.as_ref().and_then(|r| r.job.as_deref()).map(parse::<Job>) {
                Some(Ok(job)) => job,
                _ => {
                    let message_id = match &record.turn {
                        Some(turn) => turn.message_id.clone(),
                        None => match record.task.history.iter().rev().find(|m| m.role == Role::User) {
                            Some(m) => m.message_id.clone(),
                            None => continue,
                        },
                    };
                    Job::Execute {
                        task_id: task_id.to_string(),
                        message_id,
                        turn: record.last_seq,
                        extensions: Vec::new(),
                        pushes_owed: false,
                    }
                }
            };
            let Job::Execute { turn, .. } = &job else { continue };
            // Handed to the runner once already: this is (at least) the second delivery.
            let deliveries = previous.map_or(2, |r| r.deliveries + 1);
            let row = JobRow { task_id: task_id.to_string(), turn: *turn, job: Some(json(&job)?), deliveries };
            self.store.writer.run("recover a turn", move |conn| row.upsert(conn)).await?;
            tracing::info!(task_id = %task_id, attempt = deliveries, "turn delivered again after a restart");
            let done = self.done(task_id.to_string(), *turn);
            self.hand_on(job, None, deliveries, Some(done))?;
            handed += 1;
        }
        // Rows of turns that are over (their runs ended but the row's removal was lost).
        let stale: Vec<String> = held.into_keys().collect();
        if !stale.is_empty() {
            self.store
                .writer
                .run("drop finished turns", move |conn| {
                    stale.iter().try_for_each(|id| {
                        conn.prepare_cached("DELETE FROM work_jobs WHERE task_id = ?1")
                            .and_then(|mut s| s.execute([id]))
                            .map(drop)
                            .map_err(|e| db_error("recover", e))
                    })
                })
                .await?;
        }
        Ok(handed)
    }
}

#[async_trait]
impl WorkQueue for SqliteWorkQueue {
    async fn enqueue(&self, job: Job) -> Result<()> {
        let trace =
            spans::queue_send(IN_PROCESS_QUEUE, Queue::Tasks, job.task_id()).in_scope(a2a_telemetry::context::current);
        let done = match &job {
            // What the task cannot say is written before the job goes.
            Job::Execute { task_id, turn, extensions, .. } if !extensions.is_empty() => {
                let row = JobRow { task_id: task_id.clone(), turn: *turn, job: Some(json(&job)?), deliveries: 1 };
                self.store.writer.run("queue a turn", move |conn| row.upsert(conn)).await?;
                Some(self.done(task_id.clone(), *turn))
            }
            // The task says the rest; a cancel only signals a run in this process.
            _ => None,
        };
        self.hand_on(job, trace, 1, done)
    }
}
