//! How a task sits in the file, and reading and writing it.
//!
//! A task is one `tasks` row (the task without its history and without its artifacts' parts, plus
//! the columns the store orders, filters and counts by), its history as `messages` rows, and its
//! event log as `events` rows. An artifact's parts are not stored twice: they are the parts of the
//! task's artifact-update events for that artifact, from the last one that replaced it (`append:
//! false`) on, which `artifact_base` records. So an update writes what it adds (the events, the new
//! messages) and the task row, never the whole task again: a task streaming thousands of chunks
//! costs O(event) per event.

use std::collections::BTreeMap;

use chrono::{DateTime, TimeZone, Utc};
use rusqlite::{params, Connection, OptionalExtension};

use crate::error::db_error;
use crate::writer::snapshot;
use a2a_engine::admission::Placement;
use a2a_engine::ports::{EventRecord, TaskRecord, TurnKey};
use a2a_protocol::error::{A2aError, Result};
use a2a_protocol::types::{Message, StreamResponse, Task, TaskState};

/// What a row costs beyond its text (keys, headers), in the store's byte count.
pub(crate) const ROW_OVERHEAD: usize = 48;

/// A task as the file holds it, with what an update needs to write only what changed.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    /// The task's row number (0 until it is inserted).
    pub row: i64,
    pub record: TaskRecord,
    /// Sequence number from which each artifact's chunks count.
    pub artifact_base: BTreeMap<String, u64>,
    /// History messages in the file.
    pub history_len: usize,
    /// What the task row's own text holds (task body and turn key).
    pub row_bytes: usize,
    /// What all of the task's rows hold: its share of the store's byte count.
    pub bytes: usize,
}

pub(crate) fn json<T: serde::Serialize>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| A2aError::internal(format!("encode: {e}")))
}

pub(crate) fn parse<T: serde::de::DeserializeOwned>(raw: &str) -> Result<T> {
    serde_json::from_str(raw).map_err(|e| A2aError::internal(format!("a stored row does not decode: {e}")))
}

pub(crate) fn micros(t: DateTime<Utc>) -> i64 {
    t.timestamp_micros()
}

pub(crate) fn from_micros(us: i64) -> DateTime<Utc> {
    Utc.timestamp_micros(us).single().unwrap_or_default()
}

/// Where a record sits in the store's bookkeeping.
pub(crate) fn placement(record: &TaskRecord) -> Placement {
    Placement {
        owner: record.owner.as_str().into(),
        context: record.task.context_id.as_str().into(),
        state: record.state(),
        key: (micros(record.status_time()), record.task.id.as_str().into()),
    }
}

/// The task row's columns.
struct TaskRow {
    body: String,
    turn: Option<String>,
    artifact_base: String,
}

impl TaskRow {
    fn of(stored: &Stored) -> Result<Self> {
        let mut task = Task {
            id: stored.record.task.id.clone(),
            context_id: stored.record.task.context_id.clone(),
            status: stored.record.task.status.clone(),
            artifacts: None,
            history: Vec::new(),
            metadata: stored.record.task.metadata.clone(),
        };
        if let Some(artifacts) = &stored.record.task.artifacts {
            let headers = artifacts.iter().map(|a| a2a_protocol::types::Artifact { parts: Vec::new(), ..a.clone() });
            task.artifacts = Some(headers.collect());
        }
        Ok(Self {
            body: json(&task)?,
            turn: stored.record.turn.as_ref().map(json).transpose()?,
            artifact_base: json(&stored.artifact_base)?,
        })
    }

    fn bytes(&self) -> usize {
        self.body.len() + self.turn.as_ref().map_or(0, String::len) + self.artifact_base.len() + ROW_OVERHEAD
    }
}

/// A new task's rows, ready to write.
pub(crate) struct NewTask {
    stored: Stored,
    row: TaskRow,
    messages: Vec<String>,
    /// The messageId of the claim the task takes (deleting the task deletes the claim).
    claim: Option<String>,
}

impl NewTask {
    /// Encodes a new task (fills in what it counts for), which takes the claim of `claim` (a
    /// messageId) if given.
    pub fn encode(record: TaskRecord, claim: Option<String>) -> Result<Self> {
        let mut stored = Stored {
            row: 0,
            history_len: record.task.history.len(),
            record,
            artifact_base: BTreeMap::new(),
            row_bytes: 0,
            bytes: 0,
        };
        let row = TaskRow::of(&stored)?;
        let messages = stored.record.task.history.iter().map(json).collect::<Result<Vec<_>>>()?;
        stored.row_bytes = row.bytes();
        stored.bytes = stored.row_bytes + messages.iter().map(|m| m.len() + ROW_OVERHEAD).sum::<usize>();
        Ok(Self { stored, row, messages, claim })
    }

    pub fn stored(&self) -> &Stored {
        &self.stored
    }

    /// Inserts the task as row `row` (the catalog says the id is free).
    pub fn insert(&self, conn: &Connection, row: i64) -> Result<()> {
        let r = &self.stored.record;
        conn.prepare_cached(
            "INSERT INTO tasks (id, owner, context_id, state, status_us, created_us, version, last_seq,
                   cancel_requested, has_push, turn, body, artifact_base, history_len, bytes, claim, row)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
        )
        .and_then(|mut s| {
            s.execute(params![
                r.task.id,
                r.owner,
                r.task.context_id,
                r.state().as_str(),
                micros(r.status_time()),
                micros(r.created_at),
                r.version,
                r.last_seq,
                r.cancel_requested,
                r.has_push,
                self.row.turn,
                self.row.body,
                self.row.artifact_base,
                self.stored.history_len,
                self.stored.bytes,
                self.claim,
                row,
            ])
        })
        .map_err(|e| db_error("create", e))?;
        insert_messages(conn, row, 0, &self.messages)
    }
}

fn insert_messages(conn: &Connection, row: i64, from: usize, messages: &[String]) -> Result<()> {
    let mut insert = conn
        .prepare_cached("INSERT OR REPLACE INTO messages (task, n, body) VALUES (?1, ?2, ?3)")
        .map_err(|e| db_error("write history", e))?;
    for (i, body) in messages.iter().enumerate() {
        insert.execute(params![row, from + i, body]).map_err(|e| db_error("write history", e))?;
    }
    Ok(())
}

/// What an update writes: the task row (conditioned on the version it was read at), the new
/// history messages and the new events.
pub(crate) struct Changed {
    task_row: i64,
    task_id: String,
    expected_version: u64,
    state: TaskState,
    status_us: i64,
    version: u64,
    last_seq: u64,
    cancel_requested: bool,
    has_push: bool,
    row: TaskRow,
    history_from: usize,
    history_len: usize,
    bytes: usize,
    messages: Vec<String>,
    events: Vec<(u64, Option<String>, String)>,
}

impl Changed {
    /// Encodes the change to `after` (mutated, version and sequence numbers set; read at
    /// `before_version` with `after.history_len` messages), whose new events are `events`. Brings
    /// `after`'s artifact bases, history length and byte counts up to date.
    pub fn encode(before_version: u64, after: &mut Stored, events: &[EventRecord]) -> Result<Self> {
        let mut encoded = Vec::with_capacity(events.len());
        for ev in events {
            let artifact = match &ev.event {
                StreamResponse::ArtifactUpdate(u) => {
                    let id = &u.artifact.artifact_id;
                    if !u.append || !after.artifact_base.contains_key(id) {
                        after.artifact_base.insert(id.clone(), ev.seq);
                    }
                    Some(id.clone())
                }
                _ => None,
            };
            encoded.push((ev.seq, artifact, json(&ev.event)?));
        }
        let history_from = after.history_len;
        let history = &after.record.task.history;
        let messages = history.iter().skip(history_from).map(json).collect::<Result<Vec<_>>>()?;
        after.history_len = history.len();
        let row = TaskRow::of(after)?;
        let added = messages.iter().chain(encoded.iter().map(|(_, _, body)| body));
        let added: usize = added.map(|body| body.len() + ROW_OVERHEAD).sum();
        let row_bytes = row.bytes();
        after.bytes = (after.bytes + added + row_bytes).saturating_sub(after.row_bytes);
        after.row_bytes = row_bytes;
        let r = &after.record;
        Ok(Self {
            task_row: after.row,
            task_id: r.task.id.clone(),
            expected_version: before_version,
            state: r.state(),
            status_us: micros(r.status_time()),
            version: r.version,
            last_seq: r.last_seq,
            cancel_requested: r.cancel_requested,
            has_push: r.has_push,
            row,
            history_from,
            history_len: after.history_len,
            bytes: after.bytes,
            messages,
            events: encoded,
        })
    }

    /// Writes the change: `Ok(false)` if the task is no longer at the expected version (another
    /// writer went first: read again), TaskNotFound if it is gone.
    pub fn write(&self, conn: &Connection) -> Result<bool> {
        let updated = conn
            .prepare_cached(
                "UPDATE tasks SET state = ?3, status_us = ?4, version = ?5, last_seq = ?6, cancel_requested = ?7,
                   has_push = ?8, turn = ?9, body = ?10, artifact_base = ?11, history_len = ?12, bytes = ?13
                 WHERE row = ?1 AND version = ?2",
            )
            .and_then(|mut s| {
                s.execute(params![
                    self.task_row,
                    self.expected_version,
                    self.state.as_str(),
                    self.status_us,
                    self.version,
                    self.last_seq,
                    self.cancel_requested,
                    self.has_push,
                    self.row.turn,
                    self.row.body,
                    self.row.artifact_base,
                    self.history_len,
                    self.bytes,
                ])
            })
            .map_err(|e| db_error("update", e))?;
        if updated == 0 {
            let exists = conn
                .prepare_cached("SELECT 1 FROM tasks WHERE row = ?1")
                .and_then(|mut s| s.exists([self.task_row]))
                .map_err(|e| db_error("update", e))?;
            return if exists { Ok(false) } else { Err(A2aError::task_not_found(&self.task_id)) };
        }
        insert_messages(conn, self.task_row, self.history_from, &self.messages)?;
        let mut insert = conn
            .prepare_cached("INSERT INTO events (task, seq, artifact_id, body) VALUES (?1, ?2, ?3, ?4)")
            .map_err(|e| db_error("append events", e))?;
        for (seq, artifact, body) in &self.events {
            insert.execute(params![self.task_row, seq, artifact, body]).map_err(|e| db_error("append events", e))?;
        }
        Ok(true)
    }
}

/// Reads a whole task (history and artifacts assembled) in one read transaction.
pub(crate) fn read(conn: &Connection, row: i64) -> Result<Option<Stored>> {
    snapshot(conn, |conn| {
        let Some(mut stored) = read_row(conn, row)? else { return Ok(None) };
        let mut history = Vec::with_capacity(stored.history_len);
        let mut select = conn
            .prepare_cached("SELECT body FROM messages WHERE task = ?1 AND n < ?2 ORDER BY n")
            .map_err(|e| db_error("read history", e))?;
        let rows = select
            .query_map(params![stored.row, stored.history_len], |r| r.get::<_, String>(0))
            .map_err(|e| db_error("read history", e))?;
        for row in rows {
            history.push(parse::<Message>(&row.map_err(|e| db_error("read history", e))?)?);
        }
        stored.record.task.history = history;
        if stored.record.task.artifacts.as_ref().is_some_and(|a| !a.is_empty()) {
            assemble_artifacts(conn, &mut stored)?;
        }
        Ok(Some(stored))
    })
}

/// The task row alone (history empty, artifacts without parts): what a ListTasks page shows.
pub(crate) fn read_row(conn: &Connection, row: i64) -> Result<Option<Stored>> {
    conn.prepare_cached(&format!("SELECT {ROW_COLUMNS} FROM tasks WHERE row = ?1"))
        .and_then(|mut s| s.query_row([row], RawRow::from_row).optional())
        .map_err(|e| db_error("read a task", e))?
        .map(RawRow::decode)
        .transpose()
}

/// The columns [`RawRow`] reads, in order.
pub(crate) const ROW_COLUMNS: &str = "owner, state, version, last_seq, cancel_requested, has_push, created_us, turn, \
     body, artifact_base, history_len, bytes, row";

/// A task row as read, before its JSON is decoded.
pub(crate) struct RawRow {
    owner: String,
    state: String,
    version: u64,
    last_seq: u64,
    cancel_requested: bool,
    has_push: bool,
    created_us: i64,
    turn: Option<String>,
    body: String,
    artifact_base: String,
    history_len: usize,
    bytes: usize,
    row: i64,
}

impl RawRow {
    pub fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            owner: r.get(0)?,
            state: r.get(1)?,
            version: r.get(2)?,
            last_seq: r.get(3)?,
            cancel_requested: r.get(4)?,
            has_push: r.get(5)?,
            created_us: r.get(6)?,
            turn: r.get(7)?,
            body: r.get(8)?,
            artifact_base: r.get(9)?,
            history_len: r.get(10)?,
            bytes: r.get(11)?,
            row: r.get(12)?,
        })
    }

    pub fn decode(self) -> Result<Stored> {
        let mut task: Task = parse(&self.body)?;
        task.status.state = TaskState::from_name(&self.state).unwrap_or(task.status.state);
        let row_bytes =
            self.body.len() + self.turn.as_ref().map_or(0, String::len) + self.artifact_base.len() + ROW_OVERHEAD;
        let record = TaskRecord {
            task,
            owner: self.owner,
            version: self.version,
            last_seq: self.last_seq,
            cancel_requested: self.cancel_requested,
            has_push: self.has_push,
            created_at: from_micros(self.created_us),
            turn: self.turn.as_deref().map(parse::<TurnKey>).transpose()?,
        };
        Ok(Stored {
            row: self.row,
            record,
            artifact_base: parse(&self.artifact_base)?,
            history_len: self.history_len,
            row_bytes,
            bytes: self.bytes,
        })
    }
}

/// Fills in each artifact's parts from its chunks in the event log.
fn assemble_artifacts(conn: &Connection, stored: &mut Stored) -> Result<()> {
    let first = stored.artifact_base.values().min().copied().unwrap_or(0);
    let mut select = conn
        .prepare_cached(
            "SELECT seq, artifact_id, body FROM events
             WHERE task = ?1 AND seq >= ?2 AND seq <= ?3 AND artifact_id IS NOT NULL ORDER BY seq",
        )
        .map_err(|e| db_error("read artifacts", e))?;
    let rows = select
        .query_map(params![stored.row, first, stored.record.last_seq], |r| {
            Ok((r.get::<_, u64>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?))
        })
        .map_err(|e| db_error("read artifacts", e))?;
    let Some(artifacts) = stored.record.task.artifacts.as_mut() else { return Ok(()) };
    for row in rows {
        let (seq, artifact_id, body) = row.map_err(|e| db_error("read artifacts", e))?;
        if stored.artifact_base.get(&artifact_id).is_none_or(|base| seq < *base) {
            continue;
        }
        let Some(artifact) = artifacts.iter_mut().find(|a| a.artifact_id == artifact_id) else { continue };
        if let StreamResponse::ArtifactUpdate(update) = parse::<StreamResponse>(&body)? {
            artifact.parts.extend(update.artifact.parts);
        }
    }
    Ok(())
}

/// Events of the task at `row` with `seq > after`, in order.
pub(crate) fn events_after(conn: &Connection, row: i64, after: u64) -> Result<Vec<EventRecord>> {
    let mut select = conn
        .prepare_cached("SELECT seq, body FROM events WHERE task = ?1 AND seq > ?2 ORDER BY seq")
        .map_err(|e| db_error("read events", e))?;
    let rows = select
        .query_map(params![row, after], |r| Ok((r.get::<_, u64>(0)?, r.get::<_, String>(1)?)))
        .map_err(|e| db_error("read events", e))?;
    let mut out = Vec::new();
    for row in rows {
        let (seq, body) = row.map_err(|e| db_error("read events", e))?;
        out.push(EventRecord { seq, event: parse(&body)? });
    }
    Ok(out)
}

/// Deletes the task `task_id` at `row` and everything that hangs on it (history, events, push
/// configs, its settled webhook deliveries). Queued deliveries keep their own copy of the event and
/// go on.
pub(crate) fn delete(conn: &Connection, row: i64, task_id: &str) -> Result<()> {
    for sql in [
        "DELETE FROM tasks WHERE row = ?1",
        "DELETE FROM messages WHERE task = ?1",
        "DELETE FROM events WHERE task = ?1",
        "DELETE FROM push_configs WHERE task = ?1",
    ] {
        conn.prepare_cached(sql).and_then(|mut s| s.execute([row])).map_err(|e| db_error("delete a task", e))?;
    }
    for sql in
        ["DELETE FROM push_jobs WHERE task_id = ?1 AND state != 'queued'", "DELETE FROM work_jobs WHERE task_id = ?1"]
    {
        conn.prepare_cached(sql).and_then(|mut s| s.execute([task_id])).map_err(|e| db_error("delete a task", e))?;
    }
    Ok(())
}
