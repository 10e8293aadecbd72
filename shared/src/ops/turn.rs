//! The part of SendMessage and SendStreamingMessage that starts a turn: validate the message,
//! create the task or continue an interrupted one, store an inline push config, queue the run.
//!
//! SendMessage is idempotent on `messageId` (spec §3.3.1): a new task's id is derived from the
//! caller and the messageId, so a retried request finds the task its first attempt created instead
//! of running the agent again; a follow-up whose messageId the task already holds is not replayed.

use crate::engine::{AgentEvent, CallContext, Engine};
use crate::error::{A2aError, Result};
use crate::ports::{Job, TaskRecord};
use crate::types::{Message, SendMessageRequest, Task, TaskState, TaskStatus, Validate};

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
}

/// The id of the task a new message creates: a name-based UUID of (principal, messageId).
pub fn derive_task_id(principal: &str, message_id: &str) -> String {
    const NAMESPACE: uuid::Uuid = uuid::Uuid::from_u128(0x6a2a_5e11_1e55_4a2a_8000_0000_0000_a2a0);
    let name = format!("{}\u{0}{}", principal, message_id);
    uuid::Uuid::new_v5(&NAMESPACE, name.as_bytes()).to_string()
}

pub(super) async fn start_turn(engine: &Engine, ctx: &CallContext, req: SendMessageRequest) -> Result<Turn> {
    req.validate("")?;
    let push = req.configuration.as_ref().and_then(|c| c.task_push_notification_config.clone());
    if push.is_some() {
        super::require_push(engine)?;
    }
    let message = req.message;
    let message_id = message.message_id.clone();
    let turn = if message.task_id.is_empty() {
        new_task(engine, ctx, message, req.metadata).await?
    } else {
        next_turn(engine, ctx, message).await?
    };
    if turn.duplicate {
        return Ok(turn);
    }
    if let Some(mut config) = push {
        config.task_id.clone_from(&turn.snapshot.id);
        store_push_config(engine, config).await?;
    }
    engine.queue.enqueue(Job::Execute { task_id: turn.snapshot.id.clone(), message_id }).await?;
    Ok(turn)
}

async fn new_task(
    engine: &Engine,
    ctx: &CallContext,
    mut message: Message,
    metadata: Option<crate::types::Struct>,
) -> Result<Turn> {
    let now = engine.clock.now();
    let task_id = derive_task_id(&ctx.principal.id, &message.message_id);
    if message.context_id.is_empty() {
        message.context_id = uuid::Uuid::new_v4().to_string();
    }
    message.task_id.clone_from(&task_id);
    let task = Task {
        id: task_id.clone(),
        context_id: message.context_id.clone(),
        status: TaskStatus::new(TaskState::Submitted, now),
        artifacts: None,
        history: vec![message],
        metadata,
    };
    let record = TaskRecord {
        task: task.clone(),
        owner: ctx.principal.id.clone(),
        version: 1,
        last_seq: 0,
        cancel_requested: false,
        has_push: false,
        created_at: now,
    };
    if engine.store.create(record).await? {
        return Ok(Turn { snapshot: task, start_seq: 0, is_new_task: true, duplicate: false });
    }
    // The same principal sent this messageId before: answer about that task.
    let existing = engine.load_owned(ctx, &task_id).await?;
    Ok(Turn { start_seq: existing.last_seq, snapshot: existing.task, is_new_task: true, duplicate: true })
}

async fn next_turn(engine: &Engine, ctx: &CallContext, mut message: Message) -> Result<Turn> {
    let rec = engine.load_owned(ctx, &message.task_id).await?;
    if rec.task.history.iter().any(|m| m.message_id == message.message_id) {
        return Ok(Turn { start_seq: rec.last_seq, snapshot: rec.task, is_new_task: false, duplicate: true });
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
    let committed = engine.recorder.record(&task_id, vec![AgentEvent::UserTurn(message)]).await?;
    let start_seq = committed.events.last().map_or(rec.last_seq, |e| e.seq);
    let snapshot = engine.store.load(&task_id).await?.ok_or_else(|| A2aError::task_not_found(&task_id))?.task;
    Ok(Turn { snapshot, start_seq, is_new_task: false, duplicate: false })
}
