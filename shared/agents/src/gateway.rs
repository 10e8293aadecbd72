//! The gateway executor (feature `client`): each turn runs on an upstream A2A agent, called with the
//! client — streaming when the upstream card says it streams, else a blocking send followed by
//! polling — and every upstream event is relayed into the host's task as it arrives. The host thereby
//! gives an agent built with another SDK durable tasks, resumable streams, push retries, both protocol
//! versions and its own authentication.
//!
//! Follow-ups: when the upstream task waits for input, the relayed status message carries the
//! upstream task and context ids in its metadata (under [`MAPPING_KEY`]); the message is kept in the
//! host task's history, so the next turn — in any process — continues the same upstream task. A
//! cancel of the host task is forwarded upstream. An upstream failure, refusal or protocol violation
//! ends the task FAILED with the reason.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{json, Value};

use a2a_client::{request, Binding, Client, ClientError, ClientOptions, Credentials};
use a2a_engine::executor::{AgentError, AgentExecutor, Chunk, EventSink, RequestContext};
use a2a_protocol::types::*;

/// Where the upstream ids travel in the host's history.
pub const MAPPING_KEY: &str = "a2aServerlessGateway";
/// Between two GetTask calls while a non-streaming upstream task runs.
const POLL_EVERY: Duration = Duration::from_millis(500);

/// The upstream agent and how to reach it.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// The upstream agent's base URL (its card is fetched from there) or card URL.
    pub url: String,
    pub credentials: Credentials,
    pub prefer: Option<Binding>,
    /// Longest wait for one upstream answer or stream event.
    pub timeout: Duration,
}

impl GatewayConfig {
    pub fn new(url: impl Into<String>) -> Self {
        Self { url: url.into(), credentials: Credentials::None, prefer: None, timeout: Duration::from_secs(300) }
    }

    /// With the `AGENT_A2A_*` settings: `AGENT_A2A_API_KEY`, `AGENT_A2A_TOKEN`,
    /// `AGENT_A2A_CLIENT_ID` + `AGENT_A2A_CLIENT_SECRET` (+ `AGENT_A2A_SCOPES`,
    /// `AGENT_A2A_TOKEN_URL`), or `AGENT_A2A_AUTH=sigv4` (+ `AGENT_A2A_SIGV4_SERVICE`, default
    /// `bedrock-agentcore`; region from `AWS_REGION`); `AGENT_A2A_BINDING` (JSONRPC, HTTP+JSON, GRPC
    /// or JSONRPC-0.3); `AGENT_A2A_TIMEOUT` (s).
    pub fn with_env(mut self) -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let sigv4 = var("AGENT_A2A_AUTH").is_some_and(|a| a.eq_ignore_ascii_case("sigv4"));
        self.credentials = match (var("AGENT_A2A_TOKEN"), var("AGENT_A2A_CLIENT_ID"), var("AGENT_A2A_API_KEY")) {
            _ if sigv4 => Credentials::SigV4 {
                region: var("AWS_REGION").or_else(|| var("AWS_DEFAULT_REGION")).unwrap_or_else(|| "us-east-1".into()),
                service: var("AGENT_A2A_SIGV4_SERVICE").unwrap_or_else(|| "bedrock-agentcore".into()),
            },
            (Some(token), _, _) => Credentials::Bearer(token),
            (None, Some(client_id), _) => Credentials::ClientCredentials {
                client_id,
                client_secret: var("AGENT_A2A_CLIENT_SECRET").unwrap_or_default(),
                scopes: var("AGENT_A2A_SCOPES").unwrap_or_default().split_whitespace().map(String::from).collect(),
                token_url: var("AGENT_A2A_TOKEN_URL"),
            },
            (None, None, Some(key)) => Credentials::ApiKey(key),
            _ => Credentials::None,
        };
        self.prefer = var("AGENT_A2A_BINDING").and_then(|b| b.parse().ok());
        if let Some(secs) = var("AGENT_A2A_TIMEOUT").and_then(|s| s.parse::<u64>().ok()) {
            self.timeout = Duration::from_secs(secs.max(1));
        }
        self
    }
}

/// Runs turns on an upstream A2A agent.
pub struct GatewayAgent {
    config: GatewayConfig,
    /// Connected on first use (the upstream may start after the host).
    client: tokio::sync::OnceCell<Client>,
}

impl std::fmt::Debug for GatewayAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayAgent").field("url", &self.config.url).finish_non_exhaustive()
    }
}

fn failed(why: impl std::fmt::Display) -> AgentError {
    AgentError::Failed(format!("upstream agent: {why}"))
}

impl GatewayAgent {
    pub fn new(config: GatewayConfig) -> Self {
        Self { config, client: tokio::sync::OnceCell::new() }
    }

    async fn client(&self) -> Result<&Client, AgentError> {
        self.client
            .get_or_try_init(|| async {
                let options = ClientOptions {
                    credentials: self.config.credentials.clone(),
                    prefer: self.config.prefer,
                    timeout: self.config.timeout,
                    ..ClientOptions::default()
                };
                let client = Client::connect(&self.config.url, options).await?;
                tracing::info!(url = client.url(), binding = client.binding().name(), "upstream agent connected");
                Ok::<_, ClientError>(client)
            })
            .await
            .map_err(failed)
    }
}

/// The upstream task and context of a host task, from the last mapping in its history.
fn mapping(task: &Task) -> Option<(String, String)> {
    task.history.iter().rev().find_map(|m| {
        let ids = m.metadata.as_ref()?.get(MAPPING_KEY)?;
        Some((ids.get("taskId")?.as_str()?.to_string(), ids.get("contextId")?.as_str()?.to_string()))
    })
}

/// Relays upstream events into the host's task.
struct Relay<'a> {
    events: &'a EventSink,
    upstream_task: Option<String>,
    upstream_context: Option<String>,
    /// The upstream turn ended (a terminal or interrupted state, or a direct message).
    ended: bool,
}

impl Relay<'_> {
    async fn event(&mut self, event: StreamResponse) -> Result<(), AgentError> {
        if !event.task_id().is_empty() {
            self.upstream_task = Some(event.task_id().to_string());
        }
        match event {
            StreamResponse::Task(task) => {
                self.upstream_context = Some(task.context_id.clone());
                for artifact in task.artifacts.into_iter().flatten() {
                    self.events.artifact(artifact, Chunk::Whole).await?;
                }
                self.status(task.status).await
            }
            StreamResponse::StatusUpdate(update) => {
                self.upstream_context = Some(update.context_id);
                self.status(update.status).await
            }
            StreamResponse::ArtifactUpdate(update) => {
                self.events.artifact(update.artifact, Chunk::from_flags(update.append, update.last_chunk)).await?;
                Ok(())
            }
            StreamResponse::Message(message) => {
                self.ended = true;
                self.events.message(host_message(message, None)).await?;
                Ok(())
            }
        }
    }

    async fn status(&mut self, status: TaskStatus) -> Result<(), AgentError> {
        let state = status.state;
        let text = status.message.as_deref().map(Message::text).unwrap_or_default();
        match state {
            TaskState::Unspecified | TaskState::Submitted => Ok(()),
            TaskState::Failed => Err(failed(if text.is_empty() { "the task failed".to_string() } else { text })),
            TaskState::Rejected => {
                Err(AgentError::Rejected(if text.is_empty() { "rejected upstream".into() } else { text }))
            }
            TaskState::InputRequired | TaskState::AuthRequired => {
                self.ended = true;
                let ids = json!({"taskId": self.upstream_task, "contextId": self.upstream_context});
                let message = status.message.map_or_else(
                    || {
                        let what = if state == TaskState::InputRequired { "input" } else { "authorization" };
                        Message::agent_text(format!("The agent needs {what} to go on."))
                    },
                    |m| *m,
                );
                self.events.status(state, Some(host_message(message, Some(ids)))).await?;
                Ok(())
            }
            _ => {
                self.ended = state.is_terminal();
                self.events.status(state, status.message.map(|m| host_message(*m, None))).await?;
                Ok(())
            }
        }
    }
}

/// An upstream message as the host's: its ids left to the host, the mapping added when given.
fn host_message(mut message: Message, mapping: Option<Value>) -> Message {
    message.message_id.clear();
    message.task_id.clear();
    message.context_id.clear();
    message.role = Role::Agent;
    if let Some(ids) = mapping {
        message.metadata.get_or_insert_with(Default::default).insert(MAPPING_KEY.into(), ids);
    }
    message
}

#[async_trait]
impl AgentExecutor for GatewayAgent {
    async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), AgentError> {
        let client = self.client().await?;
        let upstream = if ctx.is_new_task { None } else { mapping(&ctx.task) };
        let mut message = ctx.message.clone();
        message.metadata = message.metadata.map(|mut m| {
            m.remove(MAPPING_KEY);
            m
        });
        let (task_id, context_id) = upstream.clone().unwrap_or_default();
        message.task_id = task_id;
        message.context_id = context_id;
        let mut relay = Relay {
            events: &events,
            upstream_task: upstream.as_ref().map(|u| u.0.clone()),
            upstream_context: upstream.map(|u| u.1),
            ended: false,
        };
        let run = async {
            if client.card().capabilities.streaming.unwrap_or(false) {
                let mut stream = client.send_streaming_message(request(message)).await.map_err(failed)?;
                while let Some(event) = stream.next().await {
                    relay.event(event.map_err(failed)?.event).await?;
                    if relay.ended {
                        return Ok(());
                    }
                }
                return Err(failed("its stream ended before the task did"));
            }
            match client.send_message(request(message)).await.map_err(failed)? {
                SendMessageResponse::Message(m) => relay.event(StreamResponse::Message(m)).await,
                SendMessageResponse::Task(mut task) => loop {
                    let id = task.id.clone();
                    relay.event(StreamResponse::Task(task)).await?;
                    if relay.ended {
                        return Ok(());
                    }
                    tokio::time::sleep(POLL_EVERY).await;
                    let req = GetTaskRequest { tenant: String::new(), id, history_length: Some(0) };
                    task = client.get_task(req).await.map_err(failed)?;
                },
            }
        };
        let span = a2a_telemetry::spans::client(a2a_telemetry::spans::Callee::A2aAgent, "POST", &self.config.url);
        let run = tracing::Instrument::instrument(run, span.clone());
        let outcome = tokio::select! {
            outcome = run => {
                a2a_telemetry::spans::call_outcome(&span, None, outcome.as_ref().err().map(|_| "agent_failed"));
                Some(outcome)
            }
            _ = ctx.cancel.cancelled() => None,
        };
        if let Some(outcome) = outcome {
            return outcome;
        }
        // Canceled: the upstream task too (the runner records CANCELED here).
        if let Some(id) = relay.upstream_task {
            let req = CancelTaskRequest { tenant: String::new(), id, metadata: None };
            if let Err(e) = client.cancel_task(req).await {
                tracing::warn!(error = %e, "gateway: the upstream agent did not cancel its task");
            }
        }
        Ok(())
    }
}

/// An `Arc`'d gateway for [`crate::AgentChoice`].
pub fn executor(config: GatewayConfig) -> Arc<dyn AgentExecutor> {
    Arc::new(GatewayAgent::new(config))
}
