//! How an agent event changes a task: the pure function every store applies inside its atomic update.

use chrono::{DateTime, Utc};

use crate::error::{A2aError, Result};
use crate::ports::{TaskRecord, TurnKey};
use crate::types::{
    Artifact, Message, Role, StreamResponse, TaskArtifactUpdateEvent, TaskState, TaskStatus, TaskStatusUpdateEvent,
};

/// What an executor (or the engine on its behalf) reports.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    Status {
        state: TaskState,
        message: Option<Message>,
    },
    Artifact {
        artifact: Artifact,
        append: bool,
        last_chunk: bool,
    },
    Message(Message),
    /// A client message that opens a new turn on an existing task (recorded by SendMessage), with
    /// the key a retry of that request repeats.
    UserTurn(Message, TurnKey),
}

/// Applies `events` in order and returns the stream events they produce.
pub fn apply_all(rec: &mut TaskRecord, events: &[AgentEvent], now: DateTime<Utc>) -> Result<Vec<StreamResponse>> {
    events.iter().map(|e| apply(rec, e, now)).collect()
}

fn push_tight<T>(items: &mut Vec<T>, item: T) {
    crate::types::reserve_tight(items, 1);
    items.push(item);
}

/// Fills in what a message leaves to the host: task, context, role, and an id (derived from the task
/// and the message's place in its history, so that applying the event again gives the same id).
fn stamp(rec: &TaskRecord, mut message: Message, default_role: Role) -> Message {
    if message.message_id.is_empty() {
        const NAMESPACE: uuid::Uuid = uuid::Uuid::from_u128(0x6a2a_5e11_1e55_4a2a_8000_0000_0000_a2a1);
        let name = format!("{}\u{0}{}", rec.task.id, rec.task.history.len());
        message.message_id = uuid::Uuid::new_v5(&NAMESPACE, name.as_bytes()).to_string();
    }
    message.task_id.clone_from(&rec.task.id);
    message.context_id.clone_from(&rec.task.context_id);
    if message.role == Role::Unspecified {
        message.role = default_role;
    }
    message
}

pub fn apply(rec: &mut TaskRecord, event: &AgentEvent, now: DateTime<Utc>) -> Result<StreamResponse> {
    let state = rec.state();
    if state.is_terminal() {
        return Err(A2aError::unsupported(format!(
            "task {} is already {} and accepts no further events",
            rec.task.id, state
        ))
        .with("taskId", rec.task.id.clone()));
    }
    let task_id = rec.task.id.clone();
    let context_id = rec.task.context_id.clone();
    Ok(match event {
        AgentEvent::Status { state, message } => {
            if *state == TaskState::Unspecified {
                return Err(A2aError::new(
                    crate::error::ErrorKind::InvalidAgentResponse,
                    "the agent reported TASK_STATE_UNSPECIFIED",
                ));
            }
            let message = message.clone().map(|m| stamp(rec, m, Role::Agent));
            if let Some(m) = &message {
                push_tight(&mut rec.task.history, m.clone());
            }
            let status = TaskStatus { state: *state, message: message.map(Box::new), timestamp: Some(now) };
            rec.task.status = status.clone();
            StreamResponse::StatusUpdate(TaskStatusUpdateEvent { task_id, context_id, status, metadata: None })
        }
        AgentEvent::UserTurn(message, key) => {
            if !state.is_interrupted() {
                return Err(A2aError::unsupported(format!(
                    "task {task_id} is {state}: it accepts a new message only when it waits for input (INPUT_REQUIRED or AUTH_REQUIRED)"
                ))
                .with("taskId", task_id));
            }
            let message = stamp(rec, message.clone(), Role::User);
            push_tight(&mut rec.task.history, message);
            rec.turn = Some(key.clone());
            let status = TaskStatus { state: TaskState::Submitted, message: None, timestamp: Some(now) };
            rec.task.status = status.clone();
            StreamResponse::StatusUpdate(TaskStatusUpdateEvent { task_id, context_id, status, metadata: None })
        }
        AgentEvent::Artifact { artifact, append, last_chunk } => {
            let artifacts = rec.task.artifacts.get_or_insert_with(Vec::new);
            match artifacts.iter_mut().find(|a| a.artifact_id == artifact.artifact_id) {
                Some(existing) if *append => existing.parts.extend(artifact.parts.iter().cloned()),
                Some(existing) => *existing = artifact.clone(),
                None => push_tight(artifacts, artifact.clone()),
            }
            StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id,
                context_id,
                artifact: artifact.clone(),
                append: *append,
                last_chunk: *last_chunk,
                metadata: None,
            })
        }
        AgentEvent::Message(message) => {
            let message = stamp(rec, message.clone(), Role::Agent);
            push_tight(&mut rec.task.history, message.clone());
            StreamResponse::Message(message)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Part;

    fn record() -> TaskRecord {
        TaskRecord::for_test("t", TaskState::Submitted)
    }

    #[test]
    fn chunks_append_to_the_same_artifact() {
        let mut rec = record();
        let a = Artifact::new(vec![Part::text("a")]);
        let b = Artifact { parts: vec![Part::text("b")], ..a.clone() };
        let now = Utc::now();
        apply_all(
            &mut rec,
            &[
                AgentEvent::Artifact { artifact: a, append: false, last_chunk: false },
                AgentEvent::Artifact { artifact: b, append: true, last_chunk: true },
            ],
            now,
        )
        .unwrap();
        let arts = rec.task.artifacts.unwrap();
        assert_eq!(arts.len(), 1);
        assert_eq!(arts[0].parts.len(), 2);
    }

    #[test]
    fn terminal_tasks_refuse_events() {
        let mut rec = record();
        let now = Utc::now();
        apply(&mut rec, &AgentEvent::Status { state: TaskState::Completed, message: None }, now).unwrap();
        let err = apply(&mut rec, &AgentEvent::Status { state: TaskState::Working, message: None }, now).unwrap_err();
        assert_eq!(err.kind, crate::error::ErrorKind::UnsupportedOperation);
    }
}
