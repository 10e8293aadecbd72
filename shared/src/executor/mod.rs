//! The one thing a user implements: an [`AgentExecutor`]. It gets a [`RequestContext`] (the task,
//! the new message, who sent it, a cancellation signal) and an [`EventSink`] to report status
//! changes, artifacts (optionally in chunks) and messages. Two agents ship with the crate: `echo`
//! and `conformance`.

mod conformance;
mod echo;

use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::auth::Principal;
use crate::engine::{AgentEvent, Recorder};
use crate::error::A2aError;
use crate::types::{Artifact, Message, Part, Task, TaskState};

pub use conformance::ConformanceAgent;
pub use echo::EchoAgent;

/// What the executor is asked to do.
#[derive(Debug, Clone)]
pub struct RequestContext {
    pub task_id: String,
    pub context_id: String,
    /// The message that started this turn (also the last entry of `task.history`).
    pub message: Message,
    /// The task as it stood when the turn started.
    pub task: Task,
    /// True for the first turn of a new task.
    pub is_new_task: bool,
    pub principal: Principal,
    /// Fires when the client cancels the task; stop promptly (the runner then records CANCELED).
    pub cancel: CancellationToken,
}

/// How an execution failed; the runner records the matching terminal state with the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentError {
    /// The agent declined the task (REJECTED).
    Rejected(String),
    /// The agent could not finish (FAILED).
    Failed(String),
}

impl std::fmt::Display for AgentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Rejected(m) => write!(f, "rejected: {m}"),
            Self::Failed(m) => write!(f, "failed: {m}"),
        }
    }
}

impl From<SinkError> for AgentError {
    fn from(e: SinkError) -> Self {
        Self::Failed(e.0)
    }
}

/// An event could not be recorded (the task already ended, or the store failed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkError(pub String);

impl std::fmt::Display for SinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<A2aError> for SinkError {
    fn from(e: A2aError) -> Self {
        Self(e.message)
    }
}

/// The agent's side of a task. Implementations must be cheap to share (`Arc`).
#[async_trait]
pub trait AgentExecutor: Send + Sync + 'static {
    /// Process one turn. Returning `Ok` without a terminal or interrupted state completes the task.
    async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), AgentError>;
}

/// Records the executor's events: each gets the next sequence number, is folded into the task, goes
/// to every open stream and to the task's webhooks.
#[derive(Clone)]
pub struct EventSink {
    recorder: Arc<Recorder>,
    task_id: String,
    /// The state after the last event this sink committed.
    last_state: Arc<parking_lot::Mutex<Option<TaskState>>>,
}

impl EventSink {
    pub(crate) fn new(recorder: Arc<Recorder>, task_id: String) -> Self {
        Self { recorder, task_id, last_state: Arc::default() }
    }

    /// The task's state after the last event committed through this sink (`None` before any).
    pub fn last_state(&self) -> Option<TaskState> {
        *self.last_state.lock()
    }

    async fn commit(&self, events: Vec<AgentEvent>) -> Result<(), SinkError> {
        let committed = self.recorder.record(&self.task_id, events).await?;
        *self.last_state.lock() = Some(committed.state);
        Ok(())
    }

    pub fn task_id(&self) -> &str {
        &self.task_id
    }

    async fn emit(&self, event: AgentEvent) -> Result<(), SinkError> {
        self.commit(vec![event]).await
    }

    /// Any status change, with an optional agent message.
    pub async fn status(&self, state: TaskState, message: Option<Message>) -> Result<(), SinkError> {
        self.emit(AgentEvent::Status { state, message }).await
    }

    pub async fn working(&self, message: Option<Message>) -> Result<(), SinkError> {
        self.status(TaskState::Working, message).await
    }

    pub async fn complete(&self, message: Option<Message>) -> Result<(), SinkError> {
        self.status(TaskState::Completed, message).await
    }

    pub async fn input_required(&self, message: Message) -> Result<(), SinkError> {
        self.status(TaskState::InputRequired, Some(message)).await
    }

    /// A new artifact, or a chunk of one: with `append` the parts extend the artifact with the same
    /// id; `last_chunk` marks its end.
    pub async fn artifact(&self, artifact: Artifact, append: bool, last_chunk: bool) -> Result<(), SinkError> {
        self.emit(AgentEvent::Artifact { artifact, append, last_chunk }).await
    }

    /// A message from the agent. As the first event of a new task it is the direct reply of
    /// SendMessage (no task is reported to the client).
    pub async fn message(&self, message: Message) -> Result<(), SinkError> {
        self.emit(AgentEvent::Message(message)).await
    }

    /// Shorthand: one text artifact, then COMPLETED.
    pub async fn complete_with_text(&self, text: impl Into<String>) -> Result<(), SinkError> {
        self.commit(vec![
            AgentEvent::Artifact { artifact: Artifact::new(vec![Part::text(text)]), append: false, last_chunk: true },
            AgentEvent::Status { state: TaskState::Completed, message: None },
        ])
        .await
    }
}
