//! The part of SendMessage and SendStreamingMessage that starts a turn: validate the message,
//! create the task or continue an interrupted one, store an inline push config, queue the run.
//!
//! SendMessage is safe to retry (spec §3.3.1): a request that repeats the one that started the
//! task's current turn (same principal, same `messageId`, same content: message, inline push config,
//! metadata) while the task is still on that turn gets that task back and starts nothing; this holds
//! across processes (the store keeps, per principal and `messageId`, which task the message
//! created). A repeated `messageId` that is not such a retry (other content, another task, or a task
//! that has moved on since: a later turn, a cancel) is a new message: it creates a task or a turn
//! like any other. Clients reuse ids (the official TCK does); silently dropping such a message would
//! lose it.

use sha2::{Digest, Sha256};

use crate::engine::{AgentEvent, CallContext, Engine};
use crate::ports::{Fingerprint, Job, MessageClaim, TaskRecord, TurnKey};
use a2a_protocol::error::{A2aError, ErrorKind, Result};
use a2a_protocol::types::{Message, SendMessageRequest, Task, TaskState, TaskStatus, Validate};

use super::create_push_config::store_push_config;

pub(super) struct Turn {
    /// The task right after the turn started (the first thing a stream shows).
    pub snapshot: Task,
    /// The last event the snapshot reflects: events after it belong to the turn (or, for a
    /// duplicate, are still to come).
    pub start_seq: u64,
    pub is_new_task: bool,
    /// The request repeats one already accepted: nothing new was started.
    pub duplicate: bool,
    /// A webhook delivery of the turn's opening event could not be queued (the run queues it).
    pub pushes_owed: bool,
}

/// How many times a new task races other requests for the same `messageId` before giving up.
const CLAIM_ATTEMPTS: usize = 4;

/// The id of the task a new message creates: a name-based UUID of (principal, messageId), and of
/// the task it replaces when the messageId was used before. Deterministic, so that racing copies of
/// one request meet on the same id.
pub fn derive_task_id(principal: &str, message_id: &str, replaces: Option<&str>) -> String {
    const NAMESPACE: uuid::Uuid = uuid::Uuid::from_u128(0x6a2a_5e11_1e55_4a2a_8000_0000_0000_a2a0);
    let name = match replaces {
        None => format!("{principal}\u{0}{message_id}"),
        Some(previous) => format!("{principal}\u{0}{message_id}\u{0}{previous}"),
    };
    uuid::Uuid::new_v5(&NAMESPACE, name.as_bytes()).to_string()
}

/// The retry key of a request: its `messageId` and a digest of everything that makes it this
/// request rather than another (response-shaping options such as `historyLength` or
/// `returnImmediately` aside).
pub fn turn_key(req: &SendMessageRequest) -> TurnKey {
    let config = req.configuration.as_ref();
    let mut h = Canonical(Sha256::new());
    h.scalar(&req.tenant);
    h.message(&req.message);
    h.scalar(&config.and_then(|c| c.task_push_notification_config.as_ref()));
    h.scalar(&config.map_or(&[][..], |c| &c.accepted_output_modes[..]));
    h.map(req.metadata.as_ref());
    let digest = h.0.finalize();
    let mut fingerprint = Fingerprint::default();
    fingerprint.0.copy_from_slice(&digest[..16]);
    TurnKey { message_id: req.message.message_id.clone(), fingerprint, claimed_by: None }
}

/// Feeds a request to a digest as JSON, straight from its types, with the keys of its free-form
/// maps (metadata, data parts) sorted, so that key order does not make two equal requests differ.
/// Each item is a complete JSON value (strings quoted, arrays and objects delimited), so no two
/// different requests feed the same bytes.
struct Canonical(Sha256);

impl std::io::Write for Canonical {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Canonical {
    fn message(&mut self, m: &Message) {
        self.scalar(&m.message_id);
        self.scalar(&m.context_id);
        self.scalar(&m.task_id);
        self.scalar(&m.role);
        self.0.update(b"[");
        for part in &m.parts {
            self.part(part);
        }
        self.0.update(b"]");
        self.map(m.metadata.as_deref());
        self.scalar(&m.extensions);
        self.scalar(&m.reference_task_ids);
    }

    fn part(&mut self, p: &a2a_protocol::types::Part) {
        use a2a_protocol::types::PartContent;
        match &p.content {
            PartContent::Text(t) => {
                self.0.update(b"t");
                self.scalar(&**t);
            }
            PartContent::Raw(b) => {
                self.0.update(b"r");
                self.scalar(&b.len());
                self.0.update(b);
            }
            PartContent::Url(u) => {
                self.0.update(b"u");
                self.scalar(u);
            }
            PartContent::Data(v) => {
                self.0.update(b"d");
                self.value(v);
            }
        }
        self.map(p.metadata.as_deref());
        self.scalar(&p.filename());
        self.scalar(&p.media_type());
    }

    fn map(&mut self, map: Option<&a2a_protocol::types::Struct>) {
        match map {
            None => self.0.update(b"null"),
            Some(map) => self.object(map),
        }
    }

    fn object(&mut self, map: &a2a_protocol::types::Struct) {
        let mut entries: Vec<_> = map.iter().collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
        self.0.update(b"{");
        for (i, (k, v)) in entries.into_iter().enumerate() {
            if i > 0 {
                self.0.update(b",");
            }
            self.scalar(k);
            self.0.update(b":");
            self.value(v);
        }
        self.0.update(b"}");
    }

    fn value(&mut self, value: &serde_json::Value) {
        use serde_json::Value;
        match value {
            Value::Object(map) => self.object(map),
            Value::Array(items) => {
                self.0.update(b"[");
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.0.update(b",");
                    }
                    self.value(item);
                }
                self.0.update(b"]");
            }
            other => self.scalar(other),
        }
    }

    /// A value whose serialization has no free-form map in it.
    fn scalar<T: serde::Serialize + ?Sized>(&mut self, v: &T) {
        // Writing to a digest cannot fail, and these values always serialize.
        let _ = serde_json::to_writer(&mut *self, v);
    }
}

pub(super) async fn start_turn(engine: &Engine, ctx: &CallContext, req: SendMessageRequest) -> Result<Turn> {
    req.validate("")?;
    let key = turn_key(&req);
    let push = req.configuration.as_ref().and_then(|c| c.task_push_notification_config.clone());
    if let Some(config) = &push {
        // Judged before anything is stored: a refused webhook leaves no task behind.
        super::require_push(engine)?;
        engine.webhooks.check(&config.url).await.map_err(|e| e.under("configuration.taskPushNotificationConfig"))?;
    }
    let message = req.message;
    let message_id = message.message_id.clone();
    let turn = if message.task_id.is_empty() {
        new_task(engine, ctx, message, req.metadata, key).await?
    } else {
        next_turn(engine, ctx, message, key).await?
    };
    a2a_telemetry::spans::task(&turn.snapshot.id, &turn.snapshot.context_id);
    if turn.duplicate {
        return Ok(turn);
    }
    if let Some(mut config) = push {
        config.task_id.clone_from(&turn.snapshot.id);
        store_push_config(engine, config).await?;
    }
    let job = Job::Execute {
        task_id: turn.snapshot.id.clone(),
        message_id,
        turn: turn.start_seq,
        extensions: ctx.extensions.clone(),
        pushes_owed: turn.pushes_owed,
    };
    engine.queue.enqueue(job).await?;
    Ok(turn)
}

/// A retry of the request that started `rec`'s current turn.
fn is_retry(rec: &TaskRecord, owner: &str, key: &TurnKey) -> bool {
    rec.owner == owner && rec.turn.as_ref().is_some_and(|t| t.same_request(key))
}

async fn new_task(
    engine: &Engine,
    ctx: &CallContext,
    mut message: Message,
    metadata: Option<a2a_protocol::types::Struct>,
    key: TurnKey,
) -> Result<Turn> {
    let owner = &ctx.principal.id;
    if message.context_id.is_empty() {
        message.context_id = uuid::Uuid::new_v4().to_string();
    }
    for _ in 0..CLAIM_ATTEMPTS {
        let claimed = engine.store.claimed_task(owner, &message.message_id).await?;
        if let Some(id) = &claimed {
            if let Some(rec) = engine.store.load(id).await?.filter(|r| is_retry(r, owner, &key)) {
                return Ok(Turn {
                    start_seq: rec.last_seq,
                    snapshot: rec.task,
                    is_new_task: true,
                    duplicate: true,
                    pushes_owed: false,
                });
            }
        }
        let now = engine.clock.now();
        let task_id = derive_task_id(owner, &message.message_id, claimed.as_deref());
        let mut first = message.clone();
        first.task_id.clone_from(&task_id);
        let task = Task {
            id: task_id,
            context_id: message.context_id.clone(),
            status: TaskStatus::new(TaskState::Submitted, now),
            artifacts: None,
            history: vec![first],
            metadata: metadata.clone().map(Box::new),
        };
        let record = TaskRecord {
            task: task.clone(),
            owner: owner.clone(),
            version: 1,
            last_seq: 0,
            cancel_requested: false,
            has_push: false,
            created_at: now,
            turn: Some(key.clone()),
        };
        let claim = MessageClaim { owner: owner.clone(), message_id: message.message_id.clone(), replaces: claimed };
        if engine.store.create(record, Some(&claim)).await? {
            return Ok(Turn { snapshot: task, start_seq: 0, is_new_task: true, duplicate: false, pushes_owed: false });
        }
        // Another request with this messageId won the race: look again (it may be our retry).
    }
    Err(A2aError::internal(format!(
        "messageId {:?}: concurrent requests kept racing for it; retry the request",
        message.message_id
    )))
}

async fn next_turn(engine: &Engine, ctx: &CallContext, mut message: Message, key: TurnKey) -> Result<Turn> {
    let rec = engine.load_owned(ctx, &message.task_id).await?;
    if is_retry(&rec, &ctx.principal.id, &key) {
        return Ok(Turn {
            start_seq: rec.last_seq,
            snapshot: rec.task,
            is_new_task: false,
            duplicate: true,
            pushes_owed: false,
        });
    }
    let state = rec.state();
    if state.is_terminal() {
        return Err(A2aError::unsupported(format!(
            "task {} is {state}: a task in a terminal state accepts no further messages",
            rec.task.id
        ))
        .with("taskId", rec.task.id.clone()));
    }
    if !message.context_id.is_empty() && message.context_id != rec.task.context_id {
        return Err(A2aError::invalid_field(
            "message.contextId",
            format!("{:?} does not match the contextId of task {}", message.context_id, rec.task.id),
        ));
    }
    message.context_id.clone_from(&rec.task.context_id);
    let task_id = rec.task.id.clone();
    let recorded = match engine.recorder.record(&task_id, vec![AgentEvent::UserTurn(message, key.clone())]).await {
        Ok(r) => r,
        // A concurrent copy of this very request got in first: answer as its retry.
        Err(e) if e.kind == ErrorKind::UnsupportedOperation => {
            let now = engine.load_owned(ctx, &task_id).await?;
            if is_retry(&now, &ctx.principal.id, &key) {
                return Ok(Turn {
                    start_seq: now.last_seq,
                    snapshot: now.task,
                    is_new_task: false,
                    duplicate: true,
                    pushes_owed: false,
                });
            }
            return Err(e);
        }
        Err(e) => return Err(e),
    };
    let start_seq = recorded.committed.events.last().map_or(rec.last_seq, |e| e.seq);
    let snapshot = engine.store.load(&task_id).await?.ok_or_else(|| A2aError::task_not_found(&task_id))?.task;
    Ok(Turn { snapshot, start_seq, is_new_task: false, duplicate: false, pushes_owed: recorded.pushes_owed })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(json: serde_json::Value) -> SendMessageRequest {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn the_key_ignores_key_order_and_response_options_but_not_content() {
        let a = req(serde_json::json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]},
            "metadata": {"a": 1, "b": 2}}));
        let b = req(serde_json::json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]},
            "metadata": {"b": 2, "a": 1}, "configuration": {"historyLength": 3, "returnImmediately": true}}));
        let c = req(serde_json::json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "y"}]},
            "metadata": {"a": 1, "b": 2}}));
        assert_eq!(turn_key(&a), turn_key(&b));
        assert_ne!(turn_key(&a), turn_key(&c));
        assert_eq!(turn_key(&a).message_id, "m");
    }

    /// Held as 16 bytes, stored as the 32 hex digits records written before held: those still
    /// read, and read back the same.
    #[test]
    fn a_fingerprint_is_stored_as_hex() {
        let stored = r#"{"message_id":"m","fingerprint":"00ff10a0b1c2d3e4f5061728394a5b6c"}"#;
        let key: TurnKey = serde_json::from_str(stored).unwrap();
        assert_eq!(key.fingerprint.0[..3], [0x00, 0xff, 0x10]);
        assert_eq!(serde_json::to_string(&key).unwrap(), stored);
        for broken in ["\"abc\"", "\"zz000000000000000000000000000000\"", "7"] {
            assert!(serde_json::from_str::<Fingerprint>(broken).is_err(), "{broken}");
        }
        let req =
            req(serde_json::json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]}}));
        let json = serde_json::to_value(turn_key(&req)).unwrap();
        assert_eq!(json["fingerprint"].as_str().map(str::len), Some(32));
    }

    #[test]
    fn every_part_of_the_content_counts() {
        let base = serde_json::json!({
            "tenant": "t",
            "message": {"messageId": "m", "role": "ROLE_USER", "contextId": "c", "extensions": ["e"],
                "metadata": {"k": [1, {"x": 2, "y": 3}]},
                "parts": [{"text": "x", "metadata": {"p": 1}, "filename": "f", "mediaType": "text/plain"},
                    {"data": {"a": 1, "b": [true]}}, {"url": "https://x"}, {"raw": "AAEC"}]},
            "configuration": {"acceptedOutputModes": ["text/plain"],
                "taskPushNotificationConfig": {"url": "https://hook", "token": "tok"}},
            "metadata": {"z": null}
        });
        let key = turn_key(&req(base.clone()));
        let reordered = serde_json::json!({
            "tenant": "t",
            "message": {"messageId": "m", "role": "ROLE_USER", "contextId": "c", "extensions": ["e"],
                "metadata": {"k": [1, {"y": 3, "x": 2}]},
                "parts": [{"text": "x", "metadata": {"p": 1}, "filename": "f", "mediaType": "text/plain"},
                    {"data": {"b": [true], "a": 1}}, {"url": "https://x"}, {"raw": "AAEC"}]},
            "configuration": {"acceptedOutputModes": ["text/plain"],
                "taskPushNotificationConfig": {"url": "https://hook", "token": "tok"}},
            "metadata": {"z": null}
        });
        assert_eq!(turn_key(&req(reordered)), key);
        let changes: [(&str, serde_json::Value); 12] = [
            ("/tenant", "u".into()),
            ("/message/contextId", "d".into()),
            ("/message/extensions/0", "f".into()),
            ("/message/metadata/k/1/x", 9.into()),
            ("/message/parts/0/text", "y".into()),
            ("/message/parts/0/metadata/p", 2.into()),
            ("/message/parts/0/filename", "g".into()),
            ("/message/parts/0/mediaType", "text/html".into()),
            ("/message/parts/1/data/b/0", false.into()),
            ("/message/parts/3/raw", "AAED".into()),
            ("/configuration/taskPushNotificationConfig/token", "other".into()),
            ("/metadata/z", 0.into()),
        ];
        for (path, value) in changes {
            let mut changed = base.clone();
            *changed.pointer_mut(path).unwrap() = value;
            assert_ne!(turn_key(&req(changed)), key, "{path}");
        }
    }
}
