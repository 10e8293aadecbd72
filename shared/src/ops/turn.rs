//! The part of SendMessage and SendStreamingMessage that starts a turn: validate the message,
//! create the task or continue an interrupted one, store an inline push config, queue the run.

use crate::engine::{AgentEvent, CallContext, Engine};
use crate::error::{A2aError, Result};
use crate::ports::{Job, TaskRecord};
use crate::types::{SendMessageRequest, Task, TaskState, TaskStatus, Validate};

use super::create_push_config::store_push_config;

pub(super) struct Turn {
    /// The task right after the turn started (the first thing a stream shows).
    pub snapshot: Task,
    /// Events after this sequence number belong to the turn.
    pub start_seq: u64,
    pub is_new_task: bool,
}

pub(super) async fn start_turn(engine: &Engine, ctx: &CallContext, req: SendMessageRequest) -> Result<Turn> {
    req.validate("")?;
    let push = req.configuration.as_ref().and_then(|c| c.task_push_notification_config.clone());
    if push.is_some() {
        super::require_push(engine)?;
    }
    let mut message = req.message;
    let message_id = message.message_id.clone();
    let turn = if message.task_id.is_empty() {
        let now = engine.clock.now();
        let task_id = uuid::Uuid::new_v4().to_string();
        if message.context_id.is_empty() {
            message.context_id = uuid::Uuid::new_v4().to_string();
        }
        message.task_id.clone_from(&task_id);
        let task = Task {
            id: task_id,
            context_id: message.context_id.clone(),
            status: TaskStatus::new(TaskState::Submitted, now),
            artifacts: None,
            history: vec![message],
            metadata: req.metadata,
        };
        let record = TaskRecord {
            task: task.clone(),
            owner: ctx.principal.id.clone(),
            version: 1,
            last_seq: 0,
            cancel_requested: false,
            created_at: now,
        };
        engine.store.create(record).await?;
        Turn { snapshot: task, start_seq: 0, is_new_task: true }
    } else {
        let rec = engine.load_owned(ctx, &message.task_id).await?;
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
        Turn { snapshot, start_seq, is_new_task: false }
    };
    if let Some(mut config) = push {
        config.task_id.clone_from(&turn.snapshot.id);
        store_push_config(engine, config).await?;
    }
    engine.queue.enqueue(Job::Execute { task_id: turn.snapshot.id.clone(), message_id }).await?;
    Ok(turn)
}
