//! The one thing a user implements: an [`AgentExecutor`]. It gets a [`RequestContext`] (the task,
//! the new message, who sent it, a cancellation signal) and an [`EventSink`] to report status
//! changes, artifacts (whole or in chunks, see [`Chunk`]) and messages. The built-in agents (echo,
//! conformance), agents in any language over HTTP and existing A2A agents are in `a2a-agents`.

use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::auth::Principal;
use crate::engine::{AgentEvent, Recorder};
use a2a_protocol::error::A2aError;
use a2a_protocol::types::{Artifact, Message, Part, Task, TaskState};
use a2a_telemetry::spans::TurnEvent;

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
    /// Extension URIs the client activated for this turn.
    pub extensions: Vec<String>,
    /// This turn's run: `<taskId>/<sequence number of the event that started the turn>`. A run
    /// delivered again (a queue redelivery) has the same id and a higher `attempt`.
    pub run_id: String,
    /// 1 for the first delivery of this run.
    pub attempt: u32,
}

/// What an artifact sent through [`EventSink::artifact`] is: the whole artifact, or one chunk of an
/// artifact streamed in parts (the protocol's `append` and `lastChunk`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunk {
    /// The whole artifact, at once.
    Whole,
    /// The first chunk of an artifact more chunks will extend.
    First,
    /// A chunk that extends the artifact, with more to come.
    Middle,
    /// The chunk that ends the artifact.
    Last,
}

impl Chunk {
    /// The protocol's `(append, lastChunk)`.
    pub fn flags(self) -> (bool, bool) {
        match self {
            Self::Whole => (false, true),
            Self::First => (false, false),
            Self::Middle => (true, false),
            Self::Last => (true, true),
        }
    }

    /// From the protocol's `(append, lastChunk)` (an agent that relays another's events).
    pub fn from_flags(append: bool, last_chunk: bool) -> Self {
        match (append, last_chunk) {
            (false, true) => Self::Whole,
            (false, false) => Self::First,
            (true, false) => Self::Middle,
            (true, true) => Self::Last,
        }
    }

    /// The chunk at `index` of `count` (a count of one is the whole artifact).
    pub fn of(index: usize, count: usize) -> Self {
        match (index, index + 1 >= count) {
            (0, true) => Self::Whole,
            (0, false) => Self::First,
            (_, false) => Self::Middle,
            (_, true) => Self::Last,
        }
    }
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

/// How an event shows on the turn's span.
fn turn_event(event: &AgentEvent) -> Option<TurnEvent<'static>> {
    Some(match event {
        AgentEvent::Status { state, .. } => TurnEvent::Status { state: state.as_str() },
        AgentEvent::Artifact { artifact, append, last_chunk } => {
            TurnEvent::Artifact { append: *append, last_chunk: *last_chunk, parts: artifact.parts.len() }
        }
        AgentEvent::Message(m) => TurnEvent::Message { parts: m.parts.len() },
        _ => return None,
    })
}

/// The agent's side of a task. Implementations must be cheap to share (`Arc`).
///
/// An agent that streams its answer as one artifact in chunks (the `agent/` crate's starting
/// point, which the README and `docs/writing-an-agent.md` show through `a2a::prelude`):
///
/// ```
/// use a2a_engine::executor::{AgentError, AgentExecutor, Chunk, EventSink, RequestContext};
/// use a2a_protocol::types::{Artifact, Message, Part};
/// use async_trait::async_trait;
///
/// struct Agent;
///
/// #[async_trait]
/// impl AgentExecutor for Agent {
///     async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), AgentError> {
///         let text = ctx.message.text();
///         if text.trim().is_empty() {
///             events.input_required(Message::agent_text("What should I answer?")).await?;
///             return Ok(());
///         }
///         events.working(None).await?;
///         // The chunks of one artifact share its id: the first opens it, the last ends it.
///         let answer = Artifact::new(Vec::new()).with_name("answer");
///         let words: Vec<&str> = text.split_whitespace().collect();
///         for (i, word) in words.iter().enumerate() {
///             let chunk = Artifact { parts: vec![Part::text(format!(" {word}"))], ..answer.clone() };
///             events.artifact(chunk, Chunk::of(i, words.len())).await?;
///         }
///         events.complete(None).await?;
///         Ok(())
///     }
/// }
/// ```
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
    /// What this sink committed: the state after the last event, and how many events and artifact
    /// chunks (for the turn's span).
    committed: Arc<parking_lot::Mutex<Tally>>,
    /// The turn's span: each committed event is one of its events (disabled while not tracing).
    span: tracing::Span,
}

#[derive(Debug, Default)]
struct Tally {
    state: Option<TaskState>,
    events: u64,
    chunks: u64,
    /// A webhook delivery of a committed event could not be queued.
    pushes_owed: bool,
}

impl EventSink {
    pub(crate) fn new(recorder: Arc<Recorder>, task_id: String) -> Self {
        Self { recorder, task_id, committed: Arc::default(), span: tracing::Span::none() }
    }

    /// The sink of a traced turn: its events go on `span` too.
    pub(crate) fn in_span(mut self, span: tracing::Span) -> Self {
        self.span = span;
        self
    }

    /// The task's state after the last event committed through this sink (`None` before any).
    pub fn last_state(&self) -> Option<TaskState> {
        self.committed.lock().state
    }

    /// Events and artifact chunks committed through this sink.
    pub(crate) fn counts(&self) -> (u64, u64) {
        let t = self.committed.lock();
        (t.events, t.chunks)
    }

    /// True when a webhook delivery of an event committed through this sink could not be queued.
    pub(crate) fn pushes_owed(&self) -> bool {
        self.committed.lock().pushes_owed
    }

    /// The runner recorded the turn's ending itself.
    pub(crate) fn ended(&self, state: TaskState) {
        self.committed.lock().state = Some(state);
    }

    async fn commit(&self, events: Vec<AgentEvent>) -> Result<(), SinkError> {
        let count = events.len() as u64;
        let chunks = events.iter().filter(|e| matches!(e, AgentEvent::Artifact { .. })).count() as u64;
        let traced: Vec<TurnEvent<'static>> = match self.span.is_none() {
            true => Vec::new(),
            false => events.iter().filter_map(turn_event).collect(),
        };
        let held_back = self.pushes_owed();
        let recorded = self.recorder.record_with(&self.task_id, events, !held_back).await?;
        for event in traced {
            a2a_telemetry::spans::turn_event(&self.span, event);
        }
        let mut t = self.committed.lock();
        t.state = Some(recorded.committed.state);
        t.events += count;
        t.chunks += chunks;
        t.pushes_owed |= recorded.pushes_owed;
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

    /// An artifact, whole or one chunk of it (see [`Chunk`]): the parts of a later chunk extend the
    /// artifact with the same id, and open streams get each chunk as it is recorded.
    pub async fn artifact(&self, artifact: Artifact, chunk: Chunk) -> Result<(), SinkError> {
        let (append, last_chunk) = chunk.flags();
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
