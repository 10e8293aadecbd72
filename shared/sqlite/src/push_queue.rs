//! The webhook deliveries of a2a-local (`push_jobs`), in the same file as the tasks: one row per
//! (task, config, event), unique, so an event is queued for a webhook once; the row keeps the
//! delivery's attempt and when the next one is due (a restart keeps the backoff), then is marked
//! delivered, refused or dead (the dead letters, with the last failure). A config is owed every
//! event after the one current when it was created (`push_configs.from_seq`); at start, deliveries
//! still queued go on, and any owed event that has no row (the process died between recording the
//! event and queueing its deliveries) is queued then.
//!
//! A delivery that a receiver answered just before a crash, before the answer was recorded, is
//! made again after the restart: receivers get every event at least once and dedupe by
//! `(taskId, A2A-Event-Id)`.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use rusqlite::{params, Connection, OptionalExtension};
use tokio::sync::mpsc;

use crate::error::db_error;
use crate::rows::{from_micros, json, micros, parse};
use crate::store::SqliteStore;
use a2a_engine::ports::{EventRecord, PushJob, PushQueue};
use a2a_engine::push::{Delivery, PushLedger, Receipt, Settled};
use a2a_protocol::error::{A2aError, Result};
use a2a_protocol::types::{StreamResponse, TaskPushNotificationConfig};
use a2a_telemetry::TraceContext;

/// The push queue over `push_jobs`; the push worker consumes what it hands on.
pub struct SqlitePushQueue {
    store: Arc<SqliteStore>,
    tx: mpsc::UnboundedSender<Delivery>,
    ledger: Arc<Ledger>,
}

/// Records each delivery's progress in its row.
struct Ledger {
    store: Arc<SqliteStore>,
}

fn trace_json(trace: Option<&TraceContext>) -> Result<Option<String>> {
    trace.map(json).transpose()
}

fn read_trace(raw: Option<String>) -> Option<TraceContext> {
    raw.and_then(|t| serde_json::from_str(&t).ok())
}

/// A delivery that will not be made: refused, or out of attempts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    pub task_id: String,
    pub config_id: String,
    pub seq: u64,
    pub attempts: u32,
    /// The refusal, or the last failure.
    pub reason: String,
}

/// One `push_jobs` row to write.
struct PushRow {
    task_id: String,
    config_id: String,
    seq: u64,
    attempt: u32,
    due_us: i64,
    config: String,
    v03: bool,
    event: String,
    trace: Option<String>,
}

impl PushRow {
    fn of(job: &PushJob, due: DateTime<Utc>) -> Result<Self> {
        Ok(Self {
            task_id: job.config.task_id.clone(),
            config_id: job.config.id.clone(),
            seq: job.event.seq,
            attempt: job.attempt,
            due_us: micros(due),
            config: json(&job.config)?,
            v03: job.config.v03_payloads,
            event: json(&job.event.event)?,
            trace: trace_json(job.trace.as_ref())?,
        })
    }

    /// Inserts the row unless the event was already queued for this config: its id, or `None`.
    fn insert(&self, conn: &Connection) -> Result<Option<i64>> {
        let inserted = conn
            .prepare_cached(
                "INSERT INTO push_jobs (task_id, config_id, seq, state, attempt, due_us, config, v03, event, trace)
                 VALUES (?1, ?2, ?3, 'queued', ?4, ?5, ?6, ?7, ?8, ?9)
                 ON CONFLICT (task_id, config_id, seq) DO NOTHING",
            )
            .and_then(|mut s| {
                s.execute(params![
                    self.task_id,
                    self.config_id,
                    self.seq,
                    self.attempt,
                    self.due_us,
                    self.config,
                    self.v03,
                    self.event,
                    self.trace
                ])
            })
            .map_err(|e| db_error("queue a webhook delivery", e))?;
        Ok((inserted == 1).then(|| conn.last_insert_rowid()))
    }
}

impl SqlitePushQueue {
    pub(crate) fn new(store: Arc<SqliteStore>) -> (Self, mpsc::UnboundedReceiver<Delivery>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let ledger = Arc::new(Ledger { store: store.clone() });
        (Self { store, tx, ledger }, rx)
    }

    fn hand_on(&self, job: PushJob, id: i64, due: Option<DateTime<Utc>>) -> Result<()> {
        let receipt = Receipt { id, due, ledger: self.ledger.clone() };
        self.tx
            .send(Delivery { job, receipt: Some(receipt) })
            .map_err(|_| A2aError::internal("the push worker has stopped"))
    }

    /// At start: deliveries still queued go on (their attempt and due time kept); events a config
    /// is owed that were never queued are queued now.
    pub(crate) async fn recover(&self) -> Result<usize> {
        let queued = self.store.readers.with(|conn| {
            let mut select = conn
                .prepare(
                    "SELECT id, config, v03, seq, event, attempt, due_us, trace FROM push_jobs
                     WHERE state = 'queued' ORDER BY task_id, config_id, seq",
                )
                .map_err(|e| db_error("recover", e))?;
            let rows = select
                .query_map([], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, bool>(2)?,
                        r.get::<_, u64>(3)?,
                        r.get::<_, String>(4)?,
                        r.get::<_, u32>(5)?,
                        r.get::<_, i64>(6)?,
                        r.get::<_, Option<String>>(7)?,
                    ))
                })
                .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
                .map_err(|e| db_error("recover", e))?;
            Ok(rows)
        })?;
        let mut handed = 0;
        for (id, config, v03, seq, event, attempt, due_us, trace) in queued {
            let mut config: TaskPushNotificationConfig = parse(&config)?;
            config.v03_payloads = v03;
            let job = PushJob {
                config,
                event: EventRecord { seq, event: parse(&event)? },
                attempt,
                trace: read_trace(trace),
            };
            self.hand_on(job, id, Some(from_micros(due_us)))?;
            handed += 1;
        }
        for job in self.owed()? {
            if self.enqueue_now(job).await? {
                handed += 1;
            }
        }
        Ok(handed)
    }

    /// Events a config is owed that have no delivery row, in order per (task, config).
    fn owed(&self) -> Result<Vec<PushJob>> {
        let rows: Vec<(String, bool, u64, String)> = self.store.readers.with(|conn| {
            let mut select = conn
                .prepare(
                    "SELECT c.body, c.v03, e.seq, e.body FROM push_configs c
                     JOIN tasks t ON t.row = c.task AND t.has_push = 1
                     JOIN events e ON e.task = c.task AND e.seq > c.from_seq
                     WHERE NOT EXISTS (SELECT 1 FROM push_jobs j
                       WHERE j.task_id = t.id AND j.config_id = c.id AND j.seq = e.seq)
                     ORDER BY c.task, c.id, e.seq",
                )
                .map_err(|e| db_error("recover", e))?;
            let rows = select
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
                .map_err(|e| db_error("recover", e))?;
            Ok(rows)
        })?;
        let mut jobs = Vec::with_capacity(rows.len());
        for (config, v03, seq, event) in rows {
            let mut config: TaskPushNotificationConfig = parse(&config)?;
            config.v03_payloads = v03;
            let event = if v03 {
                // 0.3 webhooks get the task as it stands.
                match self.store.read_file(&config.task_id)? {
                    Some(stored) => StreamResponse::Task(stored.record.task),
                    None => continue,
                }
            } else {
                parse(&event)?
            };
            tracing::info!(task_id = %config.task_id, seq, "a webhook delivery never queued: queued after the restart");
            jobs.push(PushJob { config, event: EventRecord { seq, event }, attempt: 1, trace: None });
        }
        Ok(jobs)
    }

    /// Queues a delivery due now; `false` if the event was already queued for this config.
    async fn enqueue_now(&self, job: PushJob) -> Result<bool> {
        self.enqueue_at(job, Utc::now(), None).await
    }

    async fn enqueue_at(&self, job: PushJob, due: DateTime<Utc>, wait: Option<DateTime<Utc>>) -> Result<bool> {
        let row = PushRow::of(&job, due)?;
        let id = self.store.writer.run("queue a webhook delivery", move |conn| row.insert(conn)).await?;
        match id {
            Some(id) => {
                self.hand_on(job, id, wait)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// The deliveries that exhausted their attempts or were refused, newest first (at most `limit`).
    pub fn dead_letters(&self, limit: usize) -> Result<Vec<DeadLetter>> {
        self.store.readers.with(|conn| {
            let mut select = conn
                .prepare_cached(
                    "SELECT task_id, config_id, seq, attempt, reason FROM push_jobs
                     WHERE state IN ('dead', 'refused') ORDER BY id DESC LIMIT ?1",
                )
                .map_err(|e| db_error("read dead letters", e))?;
            let rows = select
                .query_map([i64::try_from(limit).unwrap_or(i64::MAX)], |r| {
                    Ok(DeadLetter {
                        task_id: r.get(0)?,
                        config_id: r.get(1)?,
                        seq: r.get(2)?,
                        attempts: r.get(3)?,
                        reason: r.get::<_, Option<String>>(4)?.unwrap_or_default(),
                    })
                })
                .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
                .map_err(|e| db_error("read dead letters", e))?;
            Ok(rows)
        })
    }
}

#[async_trait]
impl PushQueue for SqlitePushQueue {
    async fn enqueue(&self, job: PushJob, delay: Duration) -> Result<()> {
        let now = Utc::now();
        let due = now + chrono::Duration::from_std(delay).unwrap_or_default();
        let wait = (!delay.is_zero()).then_some(due);
        self.enqueue_at(job, due, wait).await.map(drop)
    }
}

#[async_trait]
impl PushLedger for Ledger {
    fn retrying(&self, id: i64, attempt: u32, due: DateTime<Utc>) {
        self.store.writer.submit("record a webhook retry", move |conn| {
            conn.prepare_cached("UPDATE push_jobs SET attempt = ?2, due_us = ?3 WHERE id = ?1 AND state = 'queued'")
                .and_then(|mut s| s.execute(params![id, attempt, micros(due)]))
                .map(drop)
                .map_err(|e| db_error("record a webhook retry", e))
        });
    }

    async fn settled(&self, id: i64, outcome: Settled) {
        let recorded = self.store.writer.run("record a webhook delivery", move |conn| {
            let (state, reason) = match &outcome {
                Settled::Delivered => ("delivered", None),
                Settled::Refused(why) => ("refused", Some(why.as_str())),
                Settled::Dead(why) => ("dead", Some(why.as_str())),
            };
            // A delivered row keeps only its key (it says the event went out); a refused or dead
            // one keeps what it was, for the operator. A row of a task gone since leaves.
            let task_gone = conn
                .prepare_cached(
                    "SELECT NOT EXISTS (SELECT 1 FROM tasks WHERE id = (SELECT task_id FROM push_jobs WHERE id = ?1))",
                )
                .and_then(|mut s| s.query_row([id], |r| r.get::<_, bool>(0)))
                .optional()
                .map_err(|e| db_error("record a webhook delivery", e))?
                .unwrap_or(true);
            let sql = match (task_gone, state) {
                // (The unused parameters keep one parameter list for the three statements.)
                (true, _) => "DELETE FROM push_jobs WHERE id = ?1 AND ?2 = ?2 AND ?3 IS ?3",
                (false, "delivered") => {
                    "UPDATE push_jobs SET state = ?2, reason = ?3, config = '', event = '', trace = NULL WHERE id = ?1"
                }
                (false, _) => "UPDATE push_jobs SET state = ?2, reason = ?3 WHERE id = ?1",
            };
            conn.prepare_cached(sql)
                .and_then(|mut s| s.execute(params![id, state, reason]))
                .map(drop)
                .map_err(|e| db_error("record a webhook delivery", e))
        });
        if let Err(e) = recorded.await {
            // The row stays queued: the delivery is made again after a restart (at least once).
            tracing::warn!(delivery = id, error = %e, "a webhook delivery's outcome could not be recorded");
        }
    }
}
