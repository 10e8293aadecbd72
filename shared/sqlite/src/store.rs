//! [`SqliteStore`]: the task and push-config ports over the file.
//!
//! - Writes go through the one writer (group commit); a caller is answered once its change is
//!   committed. Reads run on the caller's thread on a reader connection and see committed data.
//! - One task's updates take turns (a lock per task while any is waiting); the tasks written last
//!   are kept decoded ([`crate::recent`]), so a turn (the runner's load, an update per event, the
//!   answer) reads no row. The task row's version is checked on every write all the same.
//! - Ids, claims, the ListTasks indexes, the limits and each principal's share (the memory store's
//!   rule) are kept in memory ([`crate::catalog`]); the tasks that give way are deleted in the
//!   transaction that needed the room. Interrupted tasks idle past the idle TTL, and finished tasks
//!   past the retention, are deleted by a sweep once a minute.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use parking_lot::Mutex;
use rusqlite::{params, Connection, OptionalExtension};
use tokio::sync::Mutex as Turn;

use crate::catalog::{Catalog, Entry, Victims};
use crate::error::db_error;
use crate::rows::{self, json, parse, Changed, NewTask, Stored, ROW_OVERHEAD};
use crate::writer::{Readers, Writer};
use a2a_engine::admission::SMALL_EVENT;
use a2a_engine::page_token::PageTokens;
use a2a_engine::ports::*;
use a2a_protocol::error::{A2aError, Result};
use a2a_protocol::types::TaskPushNotificationConfig;

/// Attempts of an update that keeps finding the task at another version.
const MAX_UPDATE_ATTEMPTS: u32 = 16;

/// One task's turn to write.
type Slot = Arc<Turn<()>>;

/// What the cache of recently written tasks may hold (the text of their rows).
const RECENT_BYTES: usize = 32 << 20;

pub struct SqliteStore {
    pub(crate) writer: Writer,
    pub(crate) readers: Readers,
    pub(crate) catalog: Mutex<Catalog>,
    slots: Mutex<HashMap<Arc<str>, Slot>>,
    recent: Mutex<crate::recent::Recent>,
    pub(crate) tokens: PageTokens,
    retention: Option<Duration>,
    /// Held for the store's life: no other process opens the directory meanwhile.
    _dir: crate::file::DataDir,
}

impl SqliteStore {
    pub(crate) fn new(
        writer: Writer,
        readers: Readers,
        catalog: Catalog,
        tokens: PageTokens,
        retention: Option<Duration>,
        dir: crate::file::DataDir,
    ) -> Self {
        Self {
            writer,
            readers,
            catalog: Mutex::new(catalog),
            slots: Mutex::new(HashMap::new()),
            recent: Mutex::new(crate::recent::Recent::new(RECENT_BYTES)),
            tokens,
            retention,
            _dir: dir,
        }
    }

    /// Tasks held.
    pub fn len(&self) -> usize {
        self.catalog.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes the store accounts for (the text of every task's rows).
    pub fn bytes(&self) -> usize {
        self.catalog.lock().bytes()
    }

    /// The task's slot, made if needed.
    fn slot(&self, task_id: &str) -> Slot {
        let mut slots = self.slots.lock();
        match slots.get(task_id) {
            Some(slot) => slot.clone(),
            None => slots.entry(Arc::from(task_id)).or_default().clone(),
        }
    }

    /// Drops the task's slot once nobody holds or waits for it.
    fn release(&self, task_id: &str, slot: Slot) {
        let mut slots = self.slots.lock();
        drop(slot);
        if slots.get(task_id).is_some_and(|s| Arc::strong_count(s) == 1) {
            slots.remove(task_id);
        }
    }

    /// The task's row number, if the store holds it.
    fn row(&self, task_id: &str) -> Option<i64> {
        self.catalog.lock().row(task_id)
    }

    /// The task as committed, read from the file.
    pub(crate) fn read_file(&self, task_id: &str) -> Result<Option<Stored>> {
        let Some(row) = self.row(task_id) else { return Ok(None) };
        self.readers.with(|conn| rows::read(conn, row))
    }

    /// The task as committed: from the recent ones, or read (and then held, if no change of it is
    /// under way: a change puts back what it committed).
    fn read(&self, task_id: &str) -> Result<Option<Stored>> {
        let Some(stored) = self.read_file(task_id)? else { return Ok(None) };
        if !self.slots.lock().contains_key(task_id) {
            self.recent.lock().put(Arc::from(task_id), stored.clone());
        }
        Ok(Some(stored))
    }

    /// Deletes tasks taken out of the books (evicted, expired); puts them back if that fails.
    pub(crate) async fn delete_tasks(&self, victims: Victims) -> Result<()> {
        if victims.is_empty() {
            return Ok(());
        }
        let doomed = doomed(&victims);
        let deleted = self.writer.run("delete tasks", move |conn| delete_all(conn, &doomed)).await;
        match deleted {
            Ok(()) => {
                self.forget(&victims);
                Ok(())
            }
            Err(e) => {
                self.catalog.lock().put_back(victims);
                Err(e)
            }
        }
    }

    /// Drops what memory holds of deleted tasks.
    fn forget(&self, victims: &Victims) {
        let mut recent = self.recent.lock();
        for (id, _) in victims {
            tracing::debug!(task_id = %id, "task evicted or expired");
            recent.take(id);
        }
    }

    /// SQLite's check of the whole file (`PRAGMA integrity_check`): "ok", or what is wrong.
    pub fn integrity_check(&self) -> Result<String> {
        self.readers.with(|conn| {
            let mut check = conn.prepare("PRAGMA integrity_check").map_err(|e| db_error("check", e))?;
            let lines = check
                .query_map([], |r| r.get::<_, String>(0))
                .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
                .map_err(|e| db_error("check", e))?;
            Ok(lines.join("\n"))
        })
    }

    /// Deletes interrupted tasks idle past the idle TTL and finished tasks past the retention.
    pub async fn sweep(&self) -> Result<usize> {
        let victims = self.catalog.lock().expired(self.retention);
        let n = victims.len();
        self.delete_tasks(victims).await?;
        Ok(n)
    }

    /// Room for a large update of `task_id` (or bringing the store back within its limits).
    fn room_for_update(&self, task_id: &str, adds: usize) -> Result<Victims> {
        let mut catalog = self.catalog.lock();
        let Some(entry) = catalog.get(task_id) else { return Err(A2aError::task_not_found(task_id)) };
        if adds > SMALL_EVENT {
            if !entry.placement.state.is_terminal() {
                let owner = entry.placement.owner.clone();
                return catalog.make_room(&owner, false, adds, Some(task_id), "this update");
            }
            return catalog.room(adds, 0, Some(task_id), "this update");
        }
        // Small events always go in; a store they pushed over its limits is brought back.
        let mut victims = Victims::new();
        catalog.evict(0, 0, Some(task_id), &mut victims);
        Ok(victims)
    }

    async fn update_in_turn(&self, slot: &Slot, task_id: &str, adds: usize, mutate: Mutation<'_>) -> Result<Committed> {
        let _turn = slot.lock().await;
        for _ in 0..MAX_UPDATE_ATTEMPTS {
            let held = self.recent.lock().take(task_id);
            let mut stored = match held {
                Some(stored) => stored,
                None => match self.read_file(task_id)? {
                    Some(stored) => stored,
                    None => return Err(A2aError::task_not_found(task_id)),
                },
            };
            let victims = match self.room_for_update(task_id, adds) {
                Ok(victims) => victims,
                Err(e) => {
                    self.recent.lock().put(Arc::from(task_id), stored);
                    return Err(e);
                }
            };
            let before = stored.record.version;
            let produced = match mutate(&mut stored.record) {
                Ok(produced) => produced,
                Err(e) => {
                    // The mutation left the record as it was: nothing to undo but the room.
                    self.catalog.lock().put_back(victims);
                    self.recent.lock().put(Arc::from(task_id), stored);
                    return Err(e);
                }
            };
            let record = &mut stored.record;
            record.version = before + 1;
            let mut events = Vec::with_capacity(produced.len());
            for event in produced {
                record.last_seq += 1;
                events.push(EventRecord { seq: record.last_seq, event });
            }
            let changed = match Changed::encode(before, &mut stored, &events) {
                Ok(changed) => changed,
                Err(e) => {
                    self.catalog.lock().put_back(victims);
                    return Err(e);
                }
            };
            let doomed = doomed(&victims);
            let written = self
                .writer
                .run("update", move |conn| {
                    delete_all(conn, &doomed)?;
                    changed.write(conn)
                })
                .await;
            match written {
                Ok(true) => {
                    self.forget(&victims);
                    let record = &stored.record;
                    let committed =
                        Committed { events, state: record.state(), version: record.version, has_push: record.has_push };
                    let status_us = rows::micros(record.status_time());
                    let expire = self.catalog.lock().moved(task_id, record.state(), status_us, stored.bytes);
                    self.recent.lock().put(Arc::from(task_id), stored);
                    if let Some(id) = expire {
                        tracing::debug!(task_id = %id, "a principal's interrupted tasks over their share: the oldest expired");
                        let victims: Victims = self.catalog.lock().remove(&id).into_iter().collect();
                        if let Err(e) = self.delete_tasks(victims).await {
                            tracing::warn!(error = %e, "an interrupted task over its principal's share could not be deleted");
                        }
                    }
                    return Ok(committed);
                }
                // The task moved on under us (or the tasks that gave way are gone already): read again.
                Ok(false) => self.forget(&victims),
                Err(e) => {
                    self.catalog.lock().put_back(victims);
                    return Err(e);
                }
            }
        }
        Err(A2aError::internal(format!(
            "task {task_id} is too contended: {MAX_UPDATE_ATTEMPTS} attempts found it changed"
        )))
    }

    /// Writes a change to a task's push configs, keeping its byte count in step (on the task's slot,
    /// like every change of the task). `change` gets the task's row number and byte count and returns
    /// its new byte count (`None`: nothing changed).
    async fn change_config(
        &self,
        task_id: &str,
        what: &'static str,
        mut change: impl FnMut(&Connection, i64, usize) -> Result<Option<usize>> + Send + 'static,
    ) -> Result<()> {
        let slot = self.slot(task_id);
        let result = async {
            let _turn = slot.lock().await;
            let Some(row) = self.row(task_id) else { return Ok(None) };
            let bytes = self
                .writer
                .run(what, move |conn| {
                    let held: Option<usize> = conn
                        .prepare_cached("SELECT bytes FROM tasks WHERE row = ?1")
                        .and_then(|mut s| s.query_row([row], |r| r.get(0)).optional())
                        .map_err(|e| db_error("read a task", e))?;
                    let Some(held) = held else { return Ok(None) };
                    let Some(bytes) = change(conn, row, held)? else { return Ok(Some(held)) };
                    conn.prepare_cached("UPDATE tasks SET bytes = ?2 WHERE row = ?1")
                        .and_then(|mut s| s.execute(params![row, bytes]))
                        .map_err(|e| db_error("update a task", e))?;
                    Ok(Some(bytes))
                })
                .await?;
            let Some(bytes) = bytes else { return Ok(None) };
            self.recent.lock().resized(task_id, bytes);
            self.catalog.lock().resized(task_id, bytes);
            Ok(Some(()))
        }
        .await;
        self.release(task_id, slot);
        result?.ok_or_else(|| A2aError::task_not_found(task_id))
    }
}

/// What deleting tasks needs of them: row number and id.
fn doomed(victims: &Victims) -> Vec<(i64, String)> {
    victims.iter().map(|(id, entry)| (entry.row, id.to_string())).collect()
}

fn delete_all(conn: &Connection, doomed: &[(i64, String)]) -> Result<()> {
    doomed.iter().try_for_each(|(row, id)| rows::delete(conn, *row, id))
}

/// The byte count of a config row.
fn config_bytes(body: &str) -> usize {
    body.len() + ROW_OVERHEAD
}

fn read_config(body: &str, v03: bool) -> Result<TaskPushNotificationConfig> {
    let mut config: TaskPushNotificationConfig = parse(body)?;
    config.v03_payloads = v03;
    Ok(config)
}

#[async_trait]
impl TaskStore for SqliteStore {
    async fn create(&self, record: TaskRecord, claim: Option<&MessageClaim>) -> Result<bool> {
        let new = NewTask::encode(record, claim.map(|c| c.message_id.clone()))?;
        let mut placement = rows::placement(&new.stored().record);
        let id = placement.key.1.clone();
        let size = new.stored().bytes;
        // Booked in memory first, in one step: the id, the claim, the room.
        let (row, moved, previous_row, victims) = {
            let mut catalog = self.catalog.lock();
            if catalog.get(&id).is_some() {
                return Ok(false);
            }
            let moved = match claim {
                Some(c) => {
                    let owner: Arc<str> = Arc::from(c.owner.as_str());
                    match catalog.take_claim(&owner, &c.message_id, c.replaces.as_deref(), &id) {
                        Some(moved) => Some(moved),
                        None => return Ok(false),
                    }
                }
                None => None,
            };
            let room = if placement.state.is_terminal() {
                catalog.make_room_for_finished(size)
            } else {
                let owner = placement.owner.clone();
                catalog.make_room(&owner, true, size, None, "a new task")
            };
            let victims = match room {
                Ok(victims) => victims,
                Err(e) => {
                    if let Some(moved) = moved {
                        catalog.restore_claim(moved);
                    }
                    return Err(e);
                }
            };
            let previous_row = moved.as_ref().and_then(|m| m.previous.as_deref()).and_then(|p| catalog.row(p));
            let row = catalog.next_row();
            placement.key.1 = id.clone();
            let claim = moved.as_ref().map(|m| m.message_id.clone());
            catalog.insert(Entry { row, placement, bytes: size, claim });
            (row, moved, previous_row, victims)
        };
        let doomed = doomed(&victims);
        let mut stored = new.stored().clone();
        let created = self
            .writer
            .run("create", move |conn| {
                delete_all(conn, &doomed)?;
                new.insert(conn, row)?;
                if let Some(previous) = previous_row {
                    // The claim moved on: deleting the task it left must not take it along.
                    conn.prepare_cached("UPDATE tasks SET claim = NULL WHERE row = ?1")
                        .and_then(|mut s| s.execute([previous]))
                        .map_err(|e| db_error("claim a message", e))?;
                }
                Ok(())
            })
            .await;
        match created {
            Ok(()) => {
                self.forget(&victims);
                // Its turn comes next: the runner finds it here.
                stored.row = row;
                self.recent.lock().put(id, stored);
                Ok(true)
            }
            Err(e) => {
                let mut catalog = self.catalog.lock();
                catalog.remove(&id);
                if let Some(moved) = moved {
                    catalog.restore_claim(moved);
                }
                catalog.put_back(victims);
                Err(e)
            }
        }
    }

    async fn claimed_task(&self, owner: &str, message_id: &str) -> Result<Option<String>> {
        Ok(self.catalog.lock().claimed(owner, message_id).map(|id| id.to_string()))
    }

    async fn load(&self, task_id: &str) -> Result<Option<TaskRecord>> {
        if let Some(record) = self.recent.lock().record(task_id) {
            return Ok(Some(record));
        }
        Ok(self.read(task_id)?.map(|s| s.record))
    }

    async fn update(&self, task_id: &str, adds: usize, mutate: Mutation<'_>) -> Result<Committed> {
        let slot = self.slot(task_id);
        let result = self.update_in_turn(&slot, task_id, adds, mutate).await;
        self.release(task_id, slot);
        result
    }

    async fn events_after(&self, task_id: &str, after: u64) -> Result<Vec<EventRecord>> {
        // A task written last is held as committed: nothing after its last event means no read (a
        // stream that opens on a new task, a blocking SendMessage).
        if self.recent.lock().last_seq(task_id).is_some_and(|last| last <= after) {
            return Ok(Vec::new());
        }
        let Some(row) = self.row(task_id) else { return Ok(Vec::new()) };
        self.readers.with(|conn| rows::events_after(conn, row, after))
    }

    async fn event(&self, task_id: &str, seq: u64) -> Result<Option<EventRecord>> {
        let Some(row) = self.row(task_id) else { return Ok(None) };
        let body: Option<String> = self.readers.with(|conn| {
            conn.prepare_cached("SELECT body FROM events WHERE task = ?1 AND seq = ?2")
                .and_then(|mut s| s.query_row(params![row, seq], |r| r.get(0)).optional())
                .map_err(|e| db_error("read an event", e))
        })?;
        body.map(|b| Ok(EventRecord { seq, event: parse(&b)? })).transpose()
    }

    async fn list(&self, query: &TaskQuery) -> Result<TaskPage> {
        crate::list::page(&self.catalog, &self.readers, &self.tokens, query)
    }

    async fn hydrate(&self, record: TaskRecord) -> Result<TaskRecord> {
        Ok(self.load(&record.task.id).await?.unwrap_or(record))
    }
}

#[async_trait]
impl PushConfigStore for SqliteStore {
    async fn put(&self, config: TaskPushNotificationConfig) -> Result<()> {
        let task_id = config.task_id.clone();
        let body = json(&config)?;
        let v03 = config.v03_payloads;
        self.change_config(&task_id, "put a push config", move |conn, row, bytes| {
            let old: Option<String> = conn
                .prepare_cached("SELECT body FROM push_configs WHERE task = ?1 AND id = ?2")
                .and_then(|mut s| s.query_row(params![row, config.id], |r| r.get(0)).optional())
                .map_err(|e| db_error("read a push config", e))?;
            // A new config is owed the events after this one; a replaced one keeps its place.
            conn.prepare_cached(
                "INSERT INTO push_configs (task, id, body, v03, from_seq)
                 VALUES (?1, ?2, ?3, ?4, (SELECT last_seq FROM tasks WHERE row = ?1))
                 ON CONFLICT (task, id) DO UPDATE SET body = excluded.body, v03 = excluded.v03",
            )
            .and_then(|mut s| s.execute(params![row, config.id, body, v03]))
            .map_err(|e| db_error("put a push config", e))?;
            Ok(Some(bytes + config_bytes(&body) - old.as_deref().map_or(0, config_bytes)))
        })
        .await
    }

    async fn get(&self, task_id: &str, id: &str) -> Result<Option<TaskPushNotificationConfig>> {
        let Some(row) = self.row(task_id) else { return Ok(None) };
        let held: Option<(String, bool)> = self.readers.with(|conn| {
            conn.prepare_cached("SELECT body, v03 FROM push_configs WHERE task = ?1 AND id = ?2")
                .and_then(|mut s| s.query_row(params![row, id], |r| Ok((r.get(0)?, r.get(1)?))).optional())
                .map_err(|e| db_error("read a push config", e))
        })?;
        held.map(|(body, v03)| read_config(&body, v03)).transpose()
    }

    async fn list(&self, task_id: &str) -> Result<Vec<TaskPushNotificationConfig>> {
        let Some(row) = self.row(task_id) else { return Ok(Vec::new()) };
        let rows: Vec<(String, bool)> = self.readers.with(|conn| {
            let mut select = conn
                .prepare_cached("SELECT body, v03 FROM push_configs WHERE task = ?1 ORDER BY id")
                .map_err(|e| db_error("read push configs", e))?;
            let rows = select
                .query_map([row], |r| Ok((r.get(0)?, r.get(1)?)))
                .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
                .map_err(|e| db_error("read push configs", e))?;
            Ok(rows)
        })?;
        rows.iter().map(|(body, v03)| read_config(body, *v03)).collect()
    }

    async fn delete(&self, task_id: &str, id: &str) -> Result<()> {
        let config_id = id.to_string();
        let deleted = self
            .change_config(task_id, "delete a push config", move |conn, row, bytes| {
                let old: Option<String> = conn
                    .prepare_cached("DELETE FROM push_configs WHERE task = ?1 AND id = ?2 RETURNING body")
                    .and_then(|mut s| s.query_row(params![row, config_id], |r| r.get(0)).optional())
                    .map_err(|e| db_error("delete a push config", e))?;
                Ok(old.map(|old| bytes.saturating_sub(config_bytes(&old))))
            })
            .await;
        match deleted {
            // Idempotent: deleting from a task that is gone is not an error.
            Err(e) if e.kind == a2a_protocol::error::ErrorKind::TaskNotFound => Ok(()),
            other => other,
        }
    }
}
