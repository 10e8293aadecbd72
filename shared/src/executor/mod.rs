//! The one thing a user implements: an [`AgentExecutor`]. It gets a [`RequestContext`] (the task,
//! the new message, who sent it, a cancellation signal) and an [`EventSink`] to report status
//! changes, artifacts (optionally in chunks) and messages. Two agents ship with the crate: `echo`
//! and `conformance`; [`http`] runs an agent in any language over HTTP, [`gateway`] an existing A2A
//! agent.

mod conformance;
mod echo;
#[cfg(feature = "client")]
pub mod gateway;
#[cfg(feature = "push")]
pub mod http;

use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::auth::Principal;
use crate::engine::{AgentEvent, Recorder};
use crate::error::A2aError;
use crate::types::{Artifact, Message, Part, Task, TaskState};

pub use conformance::ConformanceAgent;
pub use echo::EchoAgent;

/// Which agent a deployment runs.
#[derive(Debug, Clone)]
pub enum AgentChoice {
    /// The deployment's own agent (the `agent` crate).
    Own,
    /// Built in: an artifact echoing the text.
    Echo,
    /// Built in: behaviour by messageId prefix, for conformance suites.
    Conformance,
    /// An agent in any language, over HTTP (`docs/agent-http.md`).
    #[cfg(feature = "push")]
    Http(http::HttpAgentConfig),
    /// An existing A2A agent behind this host (`--agent-a2a` / `AGENT_A2A_URL`).
    #[cfg(feature = "client")]
    Gateway(gateway::GatewayConfig),
}

impl AgentChoice {
    /// By name: `agent` (the deployment's own), `echo`, `conformance`; `http` needs `url`. A `url`
    /// with no name (or `http`) is the agent over HTTP.
    pub fn parse(name: Option<&str>, url: Option<&str>) -> crate::Result<Self> {
        let bad = |why: String| crate::A2aError::invalid_params(why);
        match (name.map(str::trim).filter(|n| !n.is_empty()), url.map(str::trim).filter(|u| !u.is_empty())) {
            #[cfg(feature = "push")]
            (None | Some("http"), Some(url)) => Ok(Self::Http(http::HttpAgentConfig::new(url).with_env())),
            (Some("http"), None) => Err(bad("the http agent needs its URL (--agent-url / AGENT_URL)".into())),
            (None | Some("agent"), None) => Ok(Self::Own),
            (Some("echo"), None) => Ok(Self::Echo),
            (Some("conformance"), None) => Ok(Self::Conformance),
            #[cfg(not(feature = "push"))]
            (None | Some("http"), Some(_)) => Err(bad("this build has no HTTP agent client (feature push)".into())),
            (Some(other), Some(_)) => {
                Err(bad(format!("agent {other:?} does not take a URL; drop --agent-url or use --agent http")))
            }
            (Some(other), None) => Err(bad(format!("unknown agent {other:?}: agent, echo, conformance or http"))),
        }
    }

    /// From `A2A_AGENT` and `AGENT_URL` (with the `AGENT_*` settings of the HTTP agent), or
    /// `AGENT_A2A_URL` (with the `AGENT_A2A_*` settings of the gateway).
    pub fn from_env() -> crate::Result<Self> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        Self::with_upstream(var("A2A_AGENT").as_deref(), var("AGENT_URL").as_deref(), var("AGENT_A2A_URL").as_deref())
    }

    /// [`AgentChoice::parse`], or the gateway when `a2a_url` (an upstream A2A agent) is given.
    pub fn with_upstream(name: Option<&str>, url: Option<&str>, a2a_url: Option<&str>) -> crate::Result<Self> {
        let Some(upstream) = a2a_url.map(str::trim).filter(|u| !u.is_empty()) else { return Self::parse(name, url) };
        if url.is_some_and(|u| !u.trim().is_empty()) || name.is_some_and(|n| !matches!(n.trim(), "" | "gateway")) {
            return Err(crate::A2aError::invalid_params(
                "--agent-a2a runs an upstream A2A agent: it takes no --agent or --agent-url",
            ));
        }
        #[cfg(feature = "client")]
        return Ok(Self::Gateway(gateway::GatewayConfig::new(upstream).with_env()));
        #[cfg(not(feature = "client"))]
        return Err(crate::A2aError::invalid_params(format!(
            "this build has no A2A client (feature client) to reach {upstream}"
        )));
    }

    /// The executor; `own` builds the deployment's own agent.
    #[cfg(feature = "runtime")]
    pub async fn build(self, own: impl FnOnce() -> Arc<dyn AgentExecutor>) -> crate::Result<Arc<dyn AgentExecutor>> {
        Ok(match self {
            Self::Own => own(),
            Self::Echo => Arc::new(EchoAgent),
            Self::Conformance => Arc::new(ConformanceAgent::new(Arc::new(crate::adapters::memory::SystemClock))),
            #[cfg(feature = "push")]
            Self::Http(config) => Arc::new(http::HttpAgent::new(config).await?),
            #[cfg(feature = "client")]
            Self::Gateway(config) => gateway::executor(config),
        })
    }
}

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
