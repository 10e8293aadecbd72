//! The DynamoDB store: tasks, history, event logs and push configs in one table.
//!
//! Items of task `<id>` share the partition `PK = T#<id>`; the sort key says what they are:
//!
//! | SK | item |
//! |---|---|
//! | `A` | the task: status, owner, version, last event seq, artifact index, the ListTasks GSI keys |
//! | `B#<artifactId>#<seq>` | one artifact chunk (the parts of one artifact-update event) |
//! | `C#<n>` | history message n |
//! | `E#<seq>` | event n of the log (a StreamResponse) |
//! | `P#<configId>` | a push notification config |
//!
//! A claim item `PK = M#<sha256(owner, messageId)>`, `SK = M` names the task a principal's message
//! created (`tid`), so that a retried SendMessage finds it; it moves to a new task in the same
//! transaction that creates it, conditioned on where it pointed.
//!
//! Loading a task is one Query (`SK < "D"`: the task, its chunks, its history); events and configs
//! sort after it and are read only by the operations that need them. Every change is one
//! TransactWriteItems: the task item with a condition on its version, plus the new history, event
//! and chunk items; a lost race is retried (bounded) on a fresh read, so events get gap-free
//! sequence numbers under any number of concurrent writers. No item grows with the task, so a long
//! task never meets the 400 KB item limit; an item that would exceed it is refused with a clear
//! error instead.
//!
//! ListTasks reads one of two GSIs: `GSI1` (`O#<owner>`, `<status ms>#<id>`) and `GSI2`
//! (`OC#<owner>#<contextId>`, same sort key), newest first. Page tokens carry the position and the
//! total, sealed with HMAC.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, Put, ReturnConsumedCapacity, Select, TransactWriteItem};
use aws_sdk_dynamodb::Client;
use chrono::{DateTime, TimeZone, Utc};
use serde::{Deserialize, Serialize};

use super::meter::{item_size, Meter, Usage};
use a2a_engine::page_token::PageTokens;
use a2a_engine::ports::*;
use a2a_protocol::error::{A2aError, Result};
use a2a_protocol::types::{Message, Part, StreamResponse, Task, TaskPushNotificationConfig, TaskState};

type Item = HashMap<String, AttributeValue>;

/// DynamoDB refuses items over 400 KB; stay a little below to leave room for keys.
pub const MAX_ITEM_BYTES: usize = 400 * 1024 - 1024;
/// A transaction holds at most 100 items.
const MAX_TRANSACTION_ITEMS: usize = 100;
/// Attempts of an update that keeps losing the version race.
const MAX_UPDATE_ATTEMPTS: u32 = 100;

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn n(v: impl std::fmt::Display) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn pk(task_id: &str) -> String {
    format!("T#{task_id}")
}

/// The partition of the claim `(owner, messageId)` → task (a digest: both are client-chosen).
fn claim_pk(owner: &str, message_id: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(format!("{owner}\u{0}{message_id}").as_bytes());
    format!("M#{}", digest.iter().map(|b| format!("{b:02x}")).collect::<String>())
}

fn get_s<'a>(item: &'a Item, key: &str) -> Result<&'a str> {
    match item.get(key) {
        Some(AttributeValue::S(v)) => Ok(v),
        _ => Err(A2aError::internal(format!("stored item lacks string attribute {key}"))),
    }
}

fn get_n<T: std::str::FromStr>(item: &Item, key: &str) -> Result<T> {
    match item.get(key) {
        Some(AttributeValue::N(v)) => {
            v.parse().map_err(|_| A2aError::internal(format!("bad number in attribute {key}")))
        }
        _ => Err(A2aError::internal(format!("stored item lacks number attribute {key}"))),
    }
}

fn json<T: Serialize>(v: &T) -> Result<String> {
    serde_json::to_string(v).map_err(|e| A2aError::internal(format!("encode: {e}")))
}

fn parse<T: serde::de::DeserializeOwned>(raw: &str) -> Result<T> {
    serde_json::from_str(raw).map_err(|e| A2aError::internal(format!("stored item does not decode: {e}")))
}

fn dynamo_err<E>(
    what: &str,
    e: aws_sdk_dynamodb::error::SdkError<E, aws_sdk_dynamodb::config::http::HttpResponse>,
) -> A2aError
where
    E: aws_sdk_dynamodb::error::ProvideErrorMetadata + std::fmt::Debug,
{
    crate::failure::call_failed("storage", what, e)
}

fn millis(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

fn from_millis(ms: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(ms).single().unwrap_or_default()
}

fn sort_key(status_ms: i64, task_id: &str) -> String {
    format!("{status_ms:013}#{task_id}")
}

/// The DynamoDB adapter for [`TaskStore`] and [`PushConfigStore`].
pub struct DynamoStore {
    client: Client,
    table: String,
    tokens: PageTokens,
    /// Items expire this long after they are written (DynamoDB TTL on attribute `exp`).
    ttl: Option<Duration>,
    meter: Meter,
}

/// What a task item holds besides the task's own fields.
struct Loaded {
    record: TaskRecord,
    /// Sequence number from which each artifact's chunks count (a non-append update restarts it).
    artifact_base: BTreeMap<String, u64>,
}

impl DynamoStore {
    pub fn new(client: Client, table: impl Into<String>, tokens: PageTokens, ttl: Option<Duration>) -> Self {
        Self { client, table: table.into(), tokens, ttl, meter: Meter::default() }
    }

    pub fn usage(&self) -> Usage {
        self.meter.usage()
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    fn stamp(&self, mut item: Item) -> Item {
        if let Some(ttl) = self.ttl {
            item.insert("exp".into(), n(Utc::now().timestamp() + i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX / 2)));
        }
        item
    }

    fn check_size(item: &Item, what: &str) -> Result<usize> {
        let size = item_size(item);
        if size > MAX_ITEM_BYTES {
            return Err(A2aError::invalid_params(format!(
                "{what} is too large to store: {size} bytes, the limit is {MAX_ITEM_BYTES} bytes per item"
            )));
        }
        Ok(size)
    }

    fn meta_item(&self, rec: &TaskRecord, artifact_base: &BTreeMap<String, u64>) -> Result<Item> {
        let mut task = rec.task.clone();
        task.history.clear();
        if let Some(arts) = &mut task.artifacts {
            for a in arts {
                a.parts.clear();
            }
        }
        let status_ms = millis(rec.status_time());
        let key = sort_key(status_ms, &rec.task.id);
        let mut item = Item::new();
        item.insert("PK".into(), s(pk(&rec.task.id)));
        item.insert("SK".into(), s("A"));
        item.insert("owner".into(), s(&rec.owner));
        item.insert("ctx".into(), s(&rec.task.context_id));
        item.insert("state".into(), s(rec.state().as_str()));
        item.insert("sts".into(), n(status_ms));
        item.insert("ver".into(), n(rec.version));
        item.insert("seq".into(), n(rec.last_seq));
        item.insert("cr".into(), AttributeValue::Bool(rec.cancel_requested));
        item.insert("hp".into(), AttributeValue::Bool(rec.has_push));
        item.insert("ca".into(), n(millis(rec.created_at)));
        item.insert("hl".into(), n(rec.task.history.len()));
        item.insert("task".into(), s(json(&task)?));
        if let Some(turn) = &rec.turn {
            item.insert("turn".into(), s(json(turn)?));
        }
        item.insert("ab".into(), s(json(artifact_base)?));
        item.insert("GSI1PK".into(), s(format!("O#{}", rec.owner)));
        item.insert("GSI1SK".into(), s(key.clone()));
        item.insert("GSI2PK".into(), s(format!("OC#{}#{}", rec.owner, rec.task.context_id)));
        item.insert("GSI2SK".into(), s(key));
        Ok(self.stamp(item))
    }

    fn child_item(&self, task_id: &str, sk: String, attr: &str, value: String) -> Item {
        let mut item = Item::new();
        item.insert("PK".into(), s(pk(task_id)));
        item.insert("SK".into(), s(sk));
        item.insert(attr.into(), s(value));
        self.stamp(item)
    }

    fn record_from_meta(item: &Item) -> Result<Loaded> {
        let mut task: Task = parse(get_s(item, "task")?)?;
        let state = TaskState::from_name(get_s(item, "state")?).unwrap_or(task.status.state);
        task.status.state = state;
        let record = TaskRecord {
            task,
            owner: get_s(item, "owner")?.to_string(),
            version: get_n(item, "ver")?,
            last_seq: get_n(item, "seq")?,
            cancel_requested: matches!(item.get("cr"), Some(AttributeValue::Bool(true))),
            has_push: matches!(item.get("hp"), Some(AttributeValue::Bool(true))),
            created_at: from_millis(get_n(item, "ca")?),
            turn: item.get("turn").and_then(|t| t.as_s().ok()).map(|t| parse(t)).transpose()?,
        };
        let artifact_base = parse(get_s(item, "ab")?)?;
        Ok(Loaded { record, artifact_base })
    }

    /// Every item of the partition with `lo <= SK < hi`, in order (strongly consistent).
    async fn query_range(&self, task_id: &str, lo: &str, hi: &str) -> Result<Vec<Item>> {
        let mut out = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let resp = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("PK = :pk AND SK BETWEEN :lo AND :hi")
                .expression_attribute_values(":pk", s(pk(task_id)))
                .expression_attribute_values(":lo", s(lo))
                .expression_attribute_values(":hi", s(hi))
                .consistent_read(true)
                .set_exclusive_start_key(start.take())
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send()
                .await
                .map_err(|e| dynamo_err("Query", e))?;
            let items = resp.items().to_vec();
            self.meter.read(items.iter().map(item_size).sum(), true);
            out.extend(items);
            match resp.last_evaluated_key() {
                Some(k) if !k.is_empty() => start = Some(k.clone()),
                _ => return Ok(out),
            }
        }
    }

    /// The task with its history and assembled artifacts. The task item is the authority: history
    /// items beyond its length and chunks beyond its last sequence number belong to a newer commit
    /// and are ignored; a read that misses items the task item counts (a Query that overlapped a
    /// commit) is repeated.
    async fn load_full(&self, task_id: &str) -> Result<Option<Loaded>> {
        for attempt in 0..10u64 {
            match self.try_load_full(task_id).await? {
                Some(Read::Torn) => tokio::time::sleep(Duration::from_millis(5 * (attempt + 1))).await,
                Some(Read::Whole(loaded)) => return Ok(Some(*loaded)),
                None => return Ok(None),
            }
        }
        Err(A2aError::internal(format!("task {task_id} could not be read consistently")))
    }

    async fn try_load_full(&self, task_id: &str) -> Result<Option<Read>> {
        let items = self.query_range(task_id, "A", "C~").await?;
        let Some(meta) = items.iter().find(|i| matches!(i.get("SK"), Some(AttributeValue::S(k)) if k == "A")) else {
            return Ok(None);
        };
        let mut loaded = Self::record_from_meta(meta)?;
        let history_len: usize = get_n(meta, "hl")?;
        let last_seq = loaded.record.last_seq;
        let mut chunks: BTreeMap<String, Vec<(u64, Vec<Part>)>> = BTreeMap::new();
        let mut history = Vec::with_capacity(history_len);
        for item in &items {
            let sk = get_s(item, "SK")?;
            if let Some(rest) = sk.strip_prefix("B#") {
                let (artifact_id, seq) = rest.rsplit_once('#').ok_or_else(|| A2aError::internal("bad chunk key"))?;
                let seq: u64 = seq.parse().map_err(|_| A2aError::internal("bad chunk key"))?;
                if seq <= last_seq {
                    chunks.entry(artifact_id.to_string()).or_default().push((seq, parse(get_s(item, "parts")?)?));
                }
            } else if let Some(index) = sk.strip_prefix("C#") {
                if index.parse::<usize>().is_ok_and(|i| i < history_len) {
                    history.push(parse::<Message>(get_s(item, "msg")?)?);
                }
            }
        }
        if history.len() < history_len {
            return Ok(Some(Read::Torn));
        }
        loaded.record.task.history = history;
        if let Some(arts) = &mut loaded.record.task.artifacts {
            for a in arts.iter_mut() {
                let base = loaded.artifact_base.get(&a.artifact_id).copied().unwrap_or(0);
                if let Some(list) = chunks.get_mut(&a.artifact_id) {
                    list.sort_by_key(|(seq, _)| *seq);
                    a.parts =
                        list.iter().filter(|(seq, _)| *seq >= base).flat_map(|(_, p)| p.iter().cloned()).collect();
                }
            }
        }
        Ok(Some(Read::Whole(Box::new(loaded))))
    }

    /// One item of a task's partition (strongly consistent).
    async fn get_one(&self, task_id: &str, sk: String) -> Result<Option<Item>> {
        self.get_item(pk(task_id), sk).await
    }

    async fn get_item(&self, pk: String, sk: String) -> Result<Option<Item>> {
        let resp = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("PK", s(pk))
            .key("SK", s(sk))
            .consistent_read(true)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .map_err(|e| dynamo_err("GetItem", e))?;
        self.meter.read(resp.item().map(item_size).unwrap_or(1), true);
        Ok(resp.item().cloned())
    }

    /// Writes `puts` in one transaction, each with its condition. The task item among them (`SK`
    /// `A`) is stamped with a write id, which is also the call's idempotency token: if an answer is
    /// lost and the SDK sends the call again, DynamoDB answers the repeat with success without
    /// applying it twice, and where the token is not honoured (a repeat after its 10 minutes, a
    /// stand-in of DynamoDB) a condition that fails on our own write is recognised by its stamp.
    /// So a write is applied once and reported as done, never applied again on a re-read.
    async fn transact(&self, mut puts: Vec<(Item, Option<(String, Item)>)>) -> std::result::Result<(), Conflict> {
        let write_id = uuid::Uuid::new_v4().to_string();
        let mut task_pk = None;
        for (item, _) in &mut puts {
            if matches!(item.get("SK"), Some(AttributeValue::S(k)) if k == "A") {
                task_pk = item.get("PK").and_then(|v| v.as_s().ok()).cloned();
                item.insert(WRITE_ID.into(), s(&write_id));
            }
        }
        let sizes: Vec<usize> = puts.iter().map(|(i, _)| item_size(i)).collect();
        let metas: Vec<usize> = puts
            .iter()
            .filter(|(i, _)| matches!(i.get("SK"), Some(AttributeValue::S(k)) if k == "A"))
            .map(|(i, _)| item_size(i))
            .collect();
        let mut items = Vec::with_capacity(puts.len());
        for (item, condition) in puts {
            let mut put = Put::builder().table_name(&self.table).set_item(Some(item));
            if let Some((expr, values)) = condition {
                put = put.condition_expression(expr);
                // DynamoDB refuses an empty ExpressionAttributeValues map.
                if !values.is_empty() {
                    put = put.set_expression_attribute_values(Some(values));
                }
            }
            let put = put.build().map_err(|e| Conflict::Failed(A2aError::internal(format!("build Put: {e}"))))?;
            items.push(TransactWriteItem::builder().put(put).build());
        }
        let result = self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .client_request_token(&write_id)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await;
        self.meter.write(&sizes, true, &metas);
        match result {
            Ok(_) => Ok(()),
            Err(e) => {
                use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError as E;
                let conflict = match e.as_service_error() {
                    Some(E::TransactionCanceledException(tc)) => tc
                        .cancellation_reasons()
                        .iter()
                        .any(|r| matches!(r.code(), Some("ConditionalCheckFailed" | "TransactionConflict"))),
                    Some(E::TransactionInProgressException(_)) => true,
                    _ => false,
                };
                if conflict {
                    // Lost to another writer, or to our own first try whose answer was lost.
                    if let Some(pk) = task_pk {
                        let stamp = self.get_item(pk, "A".into()).await.map_err(Conflict::Failed)?;
                        let ours = stamp.as_ref().and_then(|i| i.get(WRITE_ID)).and_then(|v| v.as_s().ok());
                        if ours == Some(&write_id) {
                            tracing::debug!("a write whose answer was lost had been applied");
                            return Ok(());
                        }
                    }
                    Err(Conflict::Lost)
                } else {
                    Err(Conflict::Failed(dynamo_err("TransactWriteItems", e)))
                }
            }
        }
    }
}

enum Read {
    Whole(Box<Loaded>),
    /// The Query saw the task item of a commit but not all of that commit's items yet.
    Torn,
}

/// The task item's attribute holding the id of the write that put it there (see `transact`).
const WRITE_ID: &str = "w";

enum Conflict {
    /// The condition failed: someone else wrote first.
    Lost,
    Failed(A2aError),
}

fn config_from_item(item: &Item) -> Result<TaskPushNotificationConfig> {
    let mut config: TaskPushNotificationConfig = parse(get_s(item, "cfg")?)?;
    config.v03_payloads = matches!(item.get("v03"), Some(AttributeValue::Bool(true)));
    Ok(config)
}

/// A ListTasks position: the last item's keys, and the total counted on the first page.
#[derive(Serialize, Deserialize)]
struct Cursor {
    k: BTreeMap<String, String>,
    t: usize,
}

#[async_trait]
impl TaskStore for DynamoStore {
    async fn create(&self, record: TaskRecord, claim: Option<&MessageClaim>) -> Result<bool> {
        let meta = self.meta_item(&record, &BTreeMap::new())?;
        Self::check_size(&meta, "the task")?;
        let mut puts = vec![(meta, Some(("attribute_not_exists(PK)".to_string(), Item::new())))];
        if let Some(claim) = claim {
            let mut item = Item::new();
            item.insert("PK".into(), s(claim_pk(&claim.owner, &claim.message_id)));
            item.insert("SK".into(), s("M"));
            item.insert("tid".into(), s(&record.task.id));
            let condition = match &claim.replaces {
                None => ("attribute_not_exists(PK)".to_string(), Item::new()),
                Some(prev) => ("tid = :prev".to_string(), Item::from([(":prev".to_string(), s(prev))])),
            };
            puts.push((self.stamp(item), Some(condition)));
        }
        for (i, m) in record.task.history.iter().enumerate() {
            let item = self.child_item(&record.task.id, format!("C#{i:010}"), "msg", json(m)?);
            Self::check_size(&item, "the message")?;
            puts.push((item, None));
        }
        match self.transact(puts).await {
            Ok(()) => Ok(true),
            Err(Conflict::Lost) => Ok(false),
            Err(Conflict::Failed(e)) => Err(e),
        }
    }

    async fn claimed_task(&self, owner: &str, message_id: &str) -> Result<Option<String>> {
        let item = self.get_item(claim_pk(owner, message_id), "M".into()).await?;
        Ok(item.as_ref().and_then(|i| i.get("tid")).and_then(|t| t.as_s().ok()).cloned())
    }

    async fn load(&self, task_id: &str) -> Result<Option<TaskRecord>> {
        Ok(self.load_full(task_id).await?.map(|l| l.record))
    }

    async fn update(&self, task_id: &str, _adds: usize, mutate: Mutation<'_>) -> Result<Committed> {
        for attempt in 1..=MAX_UPDATE_ATTEMPTS {
            let Some(Loaded { record, mut artifact_base }) = self.load_full(task_id).await? else {
                return Err(A2aError::task_not_found(task_id));
            };
            let old_history = record.task.history.len();
            let expected = record.version;
            let mut next = record;
            let produced = mutate(&mut next)?;
            next.version = expected + 1;
            let mut events = Vec::with_capacity(produced.len());
            for event in produced {
                next.last_seq += 1;
                events.push(EventRecord { seq: next.last_seq, event });
            }
            let mut puts = Vec::new();
            for ev in &events {
                if let StreamResponse::ArtifactUpdate(u) = &ev.event {
                    if !u.append || !artifact_base.contains_key(&u.artifact.artifact_id) {
                        artifact_base.insert(u.artifact.artifact_id.clone(), ev.seq);
                    }
                    let sk = format!("B#{}#{:010}", u.artifact.artifact_id, ev.seq);
                    let item = self.child_item(task_id, sk, "parts", json(&u.artifact.parts)?);
                    Self::check_size(&item, "the artifact chunk")?;
                    puts.push((item, None));
                }
                let item = self.child_item(task_id, format!("E#{:010}", ev.seq), "ev", json(&ev.event)?);
                Self::check_size(&item, "the event")?;
                puts.push((item, None));
            }
            for (i, m) in next.task.history.iter().enumerate().skip(old_history) {
                let item = self.child_item(task_id, format!("C#{i:010}"), "msg", json(m)?);
                Self::check_size(&item, "the message")?;
                puts.push((item, None));
            }
            let meta = self.meta_item(&next, &artifact_base)?;
            Self::check_size(&meta, "the task")?;
            let condition = ("ver = :v".to_string(), Item::from([(":v".to_string(), n(expected))]));
            // The task item goes last: a reader that sees it sees the rest of the commit too on a
            // store that applies a transaction's items in order.
            puts.push((meta, Some(condition)));
            if puts.len() > MAX_TRANSACTION_ITEMS {
                return Err(A2aError::invalid_params(format!(
                    "one update may write at most {MAX_TRANSACTION_ITEMS} items; this one needs {}",
                    puts.len()
                )));
            }
            match self.transact(puts).await {
                Ok(()) => {
                    return Ok(Committed {
                        state: next.state(),
                        version: next.version,
                        has_push: next.has_push,
                        events,
                    })
                }
                Err(Conflict::Lost) => {
                    // Jittered, growing pause so that concurrent writers spread out.
                    let cap = 2u64.saturating_pow(attempt.min(6)).min(50);
                    let pause = rand::random::<u64>() % (cap + 1);
                    tokio::time::sleep(Duration::from_millis(pause)).await;
                }
                Err(Conflict::Failed(e)) => return Err(e),
            }
        }
        Err(A2aError::internal(format!(
            "task {task_id} is too contended: {MAX_UPDATE_ATTEMPTS} attempts lost the race"
        )))
    }

    async fn events_after(&self, task_id: &str, after: u64) -> Result<Vec<EventRecord>> {
        let items = self.query_range(task_id, &format!("E#{:010}", after + 1), "E#9999999999").await?;
        items
            .iter()
            .map(|i| {
                let sk = get_s(i, "SK")?;
                let seq = sk.trim_start_matches("E#").parse().map_err(|_| A2aError::internal("bad event key"))?;
                Ok(EventRecord { seq, event: parse(get_s(i, "ev")?)? })
            })
            .collect()
    }

    async fn event(&self, task_id: &str, seq: u64) -> Result<Option<EventRecord>> {
        let item = self.get_one(task_id, format!("E#{seq:010}")).await?;
        item.map(|i| Ok(EventRecord { seq, event: parse(get_s(&i, "ev")?)? })).transpose()
    }

    async fn list(&self, query: &TaskQuery) -> Result<TaskPage> {
        let cursor: Option<Cursor> = if query.page_token.is_empty() {
            None
        } else {
            let raw = self.tokens.open(&query.page_token)?;
            Some(serde_json::from_slice(&raw).map_err(|_| A2aError::invalid_field("pageToken", "is malformed"))?)
        };
        let (index, pk_name, sk_name, pk_value) = match &query.context_id {
            Some(c) => ("GSI2", "GSI2PK", "GSI2SK", format!("OC#{}#{}", query.owner, c)),
            None => ("GSI1", "GSI1PK", "GSI1SK", format!("O#{}", query.owner)),
        };
        // '~' sorts after every task id character: the same millisecond is not "after".
        let after = query.status_after.map(|after| format!("{:013}#~", millis(after)));
        if let Some(c) = &cursor {
            // DynamoDB refuses a start key outside the query's key range: a token of another
            // listing (another contextId) is the client's mistake, and a cursor at or before a
            // later `statusTimestampAfter` leaves nothing to list.
            if c.k.get(pk_name) != Some(&pk_value) || !c.k.contains_key(sk_name) {
                return Err(A2aError::invalid_field("pageToken", "belongs to another listing (another contextId)"));
            }
            if after.as_ref().is_some_and(|after| c.k.get(sk_name).is_some_and(|sk| sk <= after)) {
                return Ok(TaskPage { records: Vec::new(), next_page_token: String::new(), total_size: c.t });
            }
        }
        let mut key_condition = "#pk = :pk".to_string();
        let mut names = HashMap::from([("#pk".to_string(), pk_name.to_string())]);
        let mut values = Item::from([(":pk".to_string(), s(pk_value))]);
        if let Some(after) = after {
            key_condition.push_str(" AND #sk > :after");
            names.insert("#sk".into(), sk_name.into());
            values.insert(":after".into(), s(after));
        }
        let filter = query.status.map(|st| {
            names.insert("#st".into(), "state".into());
            values.insert(":st".into(), s(st.as_str()));
            "#st = :st".to_string()
        });

        let carried_total = cursor.as_ref().map(|c| c.t);
        // Read one item past the page to know whether another page exists.
        let want = query.page_size + 1;
        let mut found: Vec<Item> = Vec::new();
        let mut start: Option<Item> = cursor.map(|c| c.k.into_iter().map(|(k, v)| (k, s(v))).collect());
        loop {
            let resp = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(index)
                .key_condition_expression(&key_condition)
                .set_filter_expression(filter.clone())
                .set_expression_attribute_names(Some(names.clone()))
                .set_expression_attribute_values(Some(values.clone()))
                .scan_index_forward(false)
                .limit(i32::try_from(want - found.len()).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start.take())
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send()
                .await
                .map_err(|e| dynamo_err("Query", e))?;
            self.meter.read(resp.items().iter().map(item_size).sum(), false);
            found.extend(resp.items().iter().cloned());
            match resp.last_evaluated_key() {
                Some(k) if !k.is_empty() && found.len() < want => start = Some(k.clone()),
                _ => break,
            }
        }
        let more = found.len() > query.page_size;
        found.truncate(query.page_size);
        // The total is counted once, on the first page, and only when there is more than one page.
        let total = match carried_total {
            Some(t) => t,
            None if !more => found.len(),
            None => self.count(index, &key_condition, filter.as_deref(), &names, &values).await?,
        };
        let next_page_token = match (more, found.last()) {
            (true, Some(last)) => {
                let mut k = BTreeMap::new();
                for name in ["PK", "SK", pk_name, sk_name] {
                    k.insert(name.to_string(), get_s(last, name)?.to_string());
                }
                self.tokens
                    .seal(&serde_json::to_vec(&Cursor { k, t: total }).map_err(|e| A2aError::internal(e.to_string()))?)
            }
            _ => String::new(),
        };
        let records = found.iter().map(|i| Self::record_from_meta(i).map(|l| l.record)).collect::<Result<Vec<_>>>()?;
        Ok(TaskPage { records, next_page_token, total_size: total })
    }

    async fn hydrate(&self, record: TaskRecord) -> Result<TaskRecord> {
        Ok(self.load_full(&record.task.id).await?.map_or(record, |l| l.record))
    }
}

impl DynamoStore {
    async fn count(
        &self,
        index: &str,
        key_condition: &str,
        filter: Option<&str>,
        names: &HashMap<String, String>,
        values: &Item,
    ) -> Result<usize> {
        let mut total = 0usize;
        let mut start: Option<Item> = None;
        loop {
            let resp = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(index)
                .key_condition_expression(key_condition)
                .set_filter_expression(filter.map(str::to_string))
                .set_expression_attribute_names(Some(names.clone()))
                .set_expression_attribute_values(Some(values.clone()))
                .select(Select::Count)
                .set_exclusive_start_key(start.take())
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .send()
                .await
                .map_err(|e| dynamo_err("Query", e))?;
            self.meter.read(1, false);
            total += usize::try_from(resp.count()).unwrap_or(0);
            match resp.last_evaluated_key() {
                Some(k) if !k.is_empty() => start = Some(k.clone()),
                _ => return Ok(total),
            }
        }
    }
}

#[async_trait]
impl PushConfigStore for DynamoStore {
    async fn put(&self, config: TaskPushNotificationConfig) -> Result<()> {
        let mut item = self.child_item(&config.task_id, format!("P#{}", config.id), "cfg", json(&config)?);
        item.insert("v03".into(), AttributeValue::Bool(config.v03_payloads));
        let size = Self::check_size(&item, "the push config")?;
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .map_err(|e| dynamo_err("PutItem", e))?;
        self.meter.write(&[size], false, &[]);
        Ok(())
    }

    async fn get(&self, task_id: &str, id: &str) -> Result<Option<TaskPushNotificationConfig>> {
        self.get_one(task_id, format!("P#{id}")).await?.as_ref().map(config_from_item).transpose()
    }

    async fn list(&self, task_id: &str) -> Result<Vec<TaskPushNotificationConfig>> {
        let items = self.query_range(task_id, "P#", "P#~").await?;
        items.iter().map(config_from_item).collect()
    }

    async fn delete(&self, task_id: &str, id: &str) -> Result<()> {
        self.client
            .delete_item()
            .table_name(&self.table)
            .key("PK", s(pk(task_id)))
            .key("SK", s(format!("P#{id}")))
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .send()
            .await
            .map_err(|e| dynamo_err("DeleteItem", e))?;
        self.meter.write(&[1], false, &[]);
        Ok(())
    }
}
