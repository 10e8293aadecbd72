//! How an agent event changes a task: the pure function every store applies inside its atomic update.

use chrono::{DateTime, Utc};

use crate::ports::{TaskRecord, TurnKey};
use a2a_protocol::error::{A2aError, Result};
use a2a_protocol::types::{
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

impl AgentEvent {
    /// What recording the event may add to its task, at most (see [`a2a_protocol::types::size`]): what a
    /// store with a byte budget checks before it applies the event.
    pub fn size(&self) -> usize {
        use a2a_protocol::types::size::{artifact_size, message_size, parts_size};
        match self {
            AgentEvent::Status { message, .. } => message.as_ref().map_or(0, message_size),
            AgentEvent::Artifact { artifact, append: true, .. } => parts_size(&artifact.parts),
            AgentEvent::Artifact { artifact, .. } => artifact_size(artifact),
            AgentEvent::Message(m) | AgentEvent::UserTurn(m, _) => message_size(m),
        }
    }
}

/// Applies `events` in order and returns the stream events they produce. All of them are checked
/// before the record changes: when one is refused, the record is as it was (stores apply updates
/// in place, see [`crate::ports::Mutation`]).
pub fn apply_all(rec: &mut TaskRecord, events: &[AgentEvent], now: DateTime<Utc>) -> Result<Vec<StreamResponse>> {
    events.iter().try_fold(rec.state(), |state, e| check(&rec.task.id, state, e))?;
    Ok(events.iter().map(|e| record(rec, e, now)).collect())
}

/// Applies one event (checked first: a refused event leaves the record as it was).
pub fn apply(rec: &mut TaskRecord, event: &AgentEvent, now: DateTime<Utc>) -> Result<StreamResponse> {
    check(&rec.task.id, rec.state(), event)?;
    Ok(record(rec, event, now))
}

/// Whether a task in `state` accepts `event`, and its state after it.
fn check(task_id: &str, state: TaskState, event: &AgentEvent) -> Result<TaskState> {
    if state.is_terminal() {
        return Err(A2aError::unsupported(format!("task {task_id} is already {state} and accepts no further events"))
            .with("taskId", task_id.to_owned()));
    }
    match event {
        AgentEvent::Status { state: TaskState::Unspecified, .. } => Err(A2aError::new(
            a2a_protocol::error::ErrorKind::InvalidAgentResponse,
            "the agent reported TASK_STATE_UNSPECIFIED",
        )),
        AgentEvent::Status { state: next, .. } => Ok(*next),
        AgentEvent::UserTurn(..) if !state.is_interrupted() => Err(A2aError::unsupported(format!(
            "task {task_id} is {state}: it accepts a new message only when it waits for input (INPUT_REQUIRED or AUTH_REQUIRED)"
        ))
        .with("taskId", task_id.to_owned())),
        AgentEvent::UserTurn(..) => Ok(TaskState::Submitted),
        AgentEvent::Artifact { .. } | AgentEvent::Message(_) => Ok(state),
    }
}

fn push_tight<T>(items: &mut Vec<T>, item: T) {
    a2a_protocol::types::reserve_tight(items, 1);
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

/// Records an event [`check`] accepted.
fn record(rec: &mut TaskRecord, event: &AgentEvent, now: DateTime<Utc>) -> StreamResponse {
    let task_id = rec.task.id.clone();
    let context_id = rec.task.context_id.clone();
    match event {
        AgentEvent::Status { state, message } => {
            let message = message.clone().map(|m| stamp(rec, m, Role::Agent));
            if let Some(m) = &message {
                push_tight(&mut rec.task.history, m.clone());
            }
            let status = TaskStatus { state: *state, message: message.map(Box::new), timestamp: Some(now) };
            rec.task.status = status.clone();
            StreamResponse::StatusUpdate(TaskStatusUpdateEvent { task_id, context_id, status, metadata: None })
        }
        AgentEvent::UserTurn(message, key) => {
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_protocol::types::Part;

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
        assert_eq!(err.kind, a2a_protocol::error::ErrorKind::UnsupportedOperation);
    }

    #[test]
    fn a_refused_batch_leaves_the_record_as_it_was() {
        let mut rec = record();
        rec.task.history.push(Message::user_text("hi"));
        let before = rec.clone();
        let now = Utc::now();
        let chunk =
            AgentEvent::Artifact { artifact: Artifact::new(vec![Part::text("a")]), append: false, last_chunk: false };
        let done = AgentEvent::Status { state: TaskState::Completed, message: Some(Message::agent_text("done")) };
        let after_the_end = AgentEvent::Message(Message::agent_text("late"));
        let unspecified = AgentEvent::Status { state: TaskState::Unspecified, message: None };
        let turn = AgentEvent::UserTurn(
            Message::user_text("more"),
            TurnKey { message_id: "m".into(), fingerprint: crate::ports::Fingerprint([7; 16]), claimed_by: None },
        );
        for batch in [vec![chunk.clone(), done, after_the_end], vec![chunk.clone(), unspecified], vec![chunk, turn]] {
            assert!(apply_all(&mut rec, &batch, now).is_err(), "{batch:?}");
            assert_eq!(rec, before, "{batch:?}");
        }
    }
}
