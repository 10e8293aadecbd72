//! [`HttpAgent`]: an agent in any language, reached over HTTP with the contract of
//! `docs/agent-http.md` (version 1). Each turn is one POST carrying what the agent needs (the new
//! message, the task so far, context, principal, extensions, the run's identity); the answer streams
//! events in A2A 1.0 JSON, one per line (NDJSON), as server-sent events, or as one JSON document,
//! and each event is recorded the moment it arrives (so it reaches open streams as it happens).
//!
//! Cancellation reaches the agent twice: a `{"kind": "cancel"}` POST to the same URL (best effort,
//! bounded), then the run's connection is closed. An agent that misbehaves — a non-2xx answer, an
//! unreadable or cut-off answer, an event the task cannot take, silence past the idle timeout, a
//! dropped connection — ends the task FAILED with a reason a client can read; what it already sent
//! stays recorded.

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use serde::Serialize;
use serde_json::value::RawValue;
use tracing::Instrument;

use a2a_protocol::types::bounds::json_shape;

use a2a_engine::executor::{AgentError, AgentExecutor, Chunk, EventSink, RequestContext};
use a2a_protocol::lines::LineBuffer;
use a2a_protocol::sse::{SseDecoder, SseError};
use a2a_protocol::types::{Message, Role, StreamResponse, Task, TaskState};

/// The contract version this host speaks (the `contract` member of every request).
pub const CONTRACT: &str = "a2a-serverless/agent-http/1";

/// How the host proves itself to the agent.
#[derive(Clone, Default)]
pub enum AgentAuth {
    #[default]
    None,
    /// `Authorization: Bearer <secret>` (a shared secret).
    Bearer(String),
    /// AWS Signature V4 for a Lambda Function URL with `AuthType: AWS_IAM` (service `lambda`),
    /// with the process's AWS credentials.
    #[cfg(feature = "sigv4")]
    SigV4 { region: String },
}

impl std::fmt::Debug for AgentAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::None => f.write_str("None"),
            Self::Bearer(_) => f.write_str("Bearer(<redacted>)"),
            #[cfg(feature = "sigv4")]
            Self::SigV4 { region } => write!(f, "SigV4({region})"),
        }
    }
}

#[derive(Debug, Clone)]
pub struct HttpAgentConfig {
    pub url: String,
    pub auth: AgentAuth,
    /// Longest silence (no event, no keep-alive) before the run fails.
    pub idle_timeout: Duration,
    /// Largest single event (a line, an SSE event, a JSON answer).
    pub max_event_bytes: usize,
}

impl HttpAgentConfig {
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            auth: AgentAuth::None,
            idle_timeout: Duration::from_secs(120),
            max_event_bytes: 16 * 1024 * 1024,
        }
    }

    /// The settings of the calls from the environment: `AGENT_TOKEN` (a shared secret sent as a
    /// bearer token) or `AGENT_AUTH=sigv4` (region from `AWS_REGION`), `AGENT_IDLE_TIMEOUT`
    /// (seconds, default 120).
    pub fn with_env(mut self) -> Self {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        if let Some(token) = var("AGENT_TOKEN") {
            self.auth = AgentAuth::Bearer(token);
        }
        #[cfg(feature = "sigv4")]
        if var("AGENT_AUTH").is_some_and(|a| a.eq_ignore_ascii_case("sigv4")) {
            let region = var("AWS_REGION").or_else(|| var("AWS_DEFAULT_REGION")).unwrap_or_else(|| "us-east-1".into());
            self.auth = AgentAuth::SigV4 { region };
        }
        if let Some(secs) = var("AGENT_IDLE_TIMEOUT").and_then(|s| s.parse().ok()) {
            self.idle_timeout = Duration::from_secs(secs);
        }
        self
    }
}

/// A request to the agent: a run (one POST per turn) or a cancel of one.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AgentRequest<'a> {
    contract: &'static str,
    kind: &'static str,
    run: RunInfo<'a>,
    task_id: &'a str,
    context_id: &'a str,
    /// What a run carries besides (absent from a cancel).
    #[serde(flatten)]
    turn: Option<TurnInfo<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TurnInfo<'a> {
    is_new_task: bool,
    message: &'a Message,
    task: &'a Task,
    principal: PrincipalInfo<'a>,
    extensions: &'a [String],
}

#[derive(Serialize)]
struct RunInfo<'a> {
    id: &'a str,
    attempt: u32,
}

#[derive(Serialize)]
struct PrincipalInfo<'a> {
    id: &'a str,
    authenticated: bool,
}

impl<'a> AgentRequest<'a> {
    fn new(ctx: &'a RequestContext, kind: &'static str) -> Self {
        let turn = (kind == "run").then(|| TurnInfo {
            is_new_task: ctx.is_new_task,
            message: &ctx.message,
            task: &ctx.task,
            principal: PrincipalInfo { id: &ctx.principal.id, authenticated: ctx.principal.authenticated },
            extensions: &ctx.extensions,
        });
        Self {
            contract: CONTRACT,
            kind,
            run: RunInfo { id: &ctx.run_id, attempt: ctx.attempt },
            task_id: &ctx.task_id,
            context_id: &ctx.context_id,
            turn,
        }
    }
}

/// How the answer frames its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// One JSON object per line.
    Lines,
    /// Server-sent events: `data:` lines, a blank line ends an event, `:` lines are comments.
    Sse,
    /// One JSON document: an event, or an array of events.
    Document,
}

/// An agent reached over HTTP.
pub struct HttpAgent {
    client: reqwest::Client,
    config: HttpAgentConfig,
    #[cfg(feature = "sigv4")]
    credentials: Option<aws_credential_types::provider::SharedCredentialsProvider>,
}

impl std::fmt::Debug for HttpAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpAgent").field("url", &self.config.url).field("auth", &self.config.auth).finish()
    }
}

fn failed(why: impl Into<String>) -> AgentError {
    AgentError::Failed(why.into())
}

impl HttpAgent {
    pub async fn new(config: HttpAgentConfig) -> a2a_protocol::Result<Self> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("a2a-serverless/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| a2a_protocol::A2aError::internal(format!("agent client: {e}")))?;
        #[cfg(feature = "sigv4")]
        let credentials = match &config.auth {
            AgentAuth::SigV4 { .. } => a2a_aws::sigv4::default_credentials().await,
            _ => None,
        };
        Ok(Self {
            client,
            config,
            #[cfg(feature = "sigv4")]
            credentials,
        })
    }

    /// A POST of `body` to the agent, authenticated as configured.
    async fn post(&self, body: Vec<u8>) -> Result<reqwest::RequestBuilder, AgentError> {
        let mut headers = vec![
            ("content-type".to_string(), "application/json".to_string()),
            ("accept".to_string(), "application/x-ndjson, text/event-stream, application/json".to_string()),
        ];
        match &self.config.auth {
            AgentAuth::None => {}
            AgentAuth::Bearer(token) => headers.push(("authorization".into(), format!("Bearer {token}"))),
            #[cfg(feature = "sigv4")]
            AgentAuth::SigV4 { region } => {
                let signed = self.sign(region, &headers, &body).await?;
                headers.extend(signed);
            }
        }
        let mut request = self.client.post(&self.config.url).body(body);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        // The agent's own spans join the turn's trace.
        let mut trace = reqwest::header::HeaderMap::new();
        a2a_telemetry::context::inject(&mut trace);
        Ok(request.headers(trace))
    }

    /// The SigV4 headers for a Lambda Function URL.
    #[cfg(feature = "sigv4")]
    async fn sign(
        &self,
        region: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<Vec<(String, String)>, AgentError> {
        let provider =
            self.credentials.as_ref().ok_or_else(|| failed("no AWS credentials to sign the agent call with"))?;
        let scope = a2a_aws::sigv4::Scope { region: region.to_string(), service: "lambda".into() };
        a2a_aws::sigv4::headers(provider, &scope, "POST", &self.config.url, headers, body)
            .await
            .map_err(|e| failed(format!("the agent call: {e}")))
    }

    /// Best effort: tell the agent the run was cancelled (bounded, errors ignored).
    async fn notify_cancel(&self, ctx: &RequestContext) {
        let body = AgentRequest::new(ctx, "cancel");
        let Ok(body) = serde_json::to_vec(&body) else { return };
        if let Ok(request) = self.post(body).await {
            let sent = tokio::time::timeout(Duration::from_secs(2), request.send()).await;
            tracing::debug!(task_id = ctx.task_id, ok = matches!(sent, Ok(Ok(_))), "cancel sent to the agent");
        }
    }

    async fn run(&self, ctx: &RequestContext, events: &EventSink) -> Result<(), AgentError> {
        let body = AgentRequest::new(ctx, "run");
        let body = serde_json::to_vec(&body).map_err(|e| failed(format!("the agent request: {e}")))?;
        let request = self.post(body).await?.header("a2a-agent-run", ctx.run_id.as_str());
        let idle = self.config.idle_timeout;
        let mut response = match tokio::time::timeout(idle, request.send()).await {
            Err(_) => return Err(failed(format!("the agent did not answer within {} s", idle.as_secs()))),
            Ok(Err(e)) => return Err(failed(format!("the agent could not be reached: {}", root_cause(&e)))),
            Ok(Ok(r)) => r,
        };
        let status = response.status();
        if !status.is_success() {
            let snippet = tokio::time::timeout(Duration::from_secs(2), response.chunk()).await;
            let snippet = match snippet {
                Ok(Ok(Some(b))) => String::from_utf8_lossy(&b[..b.len().min(200)]).trim().to_string(),
                _ => String::new(),
            };
            return Err(failed(format!("the agent answered HTTP {}: {snippet}", status.as_u16())));
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        let framing = if content_type.starts_with("text/event-stream") {
            Framing::Sse
        } else if content_type.starts_with("application/json") {
            Framing::Document
        } else {
            Framing::Lines
        };
        let mut reader = Reader::new(framing, self.config.max_event_bytes);
        let start = ctx.task.status.state;
        loop {
            let chunk = tokio::time::timeout(idle, response.chunk()).await;
            let chunk = match chunk {
                Err(_) => return Err(failed(format!("the agent sent nothing for {} s", idle.as_secs()))),
                Ok(Err(e)) => {
                    return Err(failed(format!("the agent's answer broke off: {}", root_cause(&e))));
                }
                Ok(Ok(None)) => break,
                Ok(Ok(Some(chunk))) => chunk,
            };
            for event in reader.push(&chunk)? {
                record(events, start, event).await?;
            }
        }
        for event in reader.finish()? {
            record(events, start, event).await?;
        }
        Ok(())
    }
}

/// The innermost cause of a client error (reqwest's display stops at the outer one).
fn root_cause(e: &dyn std::error::Error) -> String {
    let mut cause = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        cause = s.to_string();
        source = s.source();
    }
    cause
}

/// Commits one event the agent sent, unless the contract forbids it ([`refusal`]).
async fn record(events: &EventSink, start: TaskState, event: StreamResponse) -> Result<(), AgentError> {
    let state = events.last_state().unwrap_or(start);
    if let Some(why) = refusal(state, &event) {
        return Err(failed(format!("the agent sent an event the task cannot take: {why}")));
    }
    let result = match event {
        StreamResponse::StatusUpdate(u) => events.status(u.status.state, u.status.message.map(|m| *m)).await,
        StreamResponse::ArtifactUpdate(u) => {
            events.artifact(u.artifact, Chunk::from_flags(u.append, u.last_chunk)).await
        }
        StreamResponse::Message(m) => events.message(m).await,
        StreamResponse::Task(_) => {
            return Err(failed("the agent sent a task; it sends statusUpdate, artifactUpdate or message events"))
        }
    };
    result.map_err(|e| failed(format!("the agent sent an event the task cannot take: {e}")))
}

/// How far along its turn a task is: an agent's status may stay or move on, never go back.
fn stage(state: TaskState) -> u8 {
    match state {
        TaskState::Unspecified | TaskState::Submitted => 0,
        TaskState::Working => 1,
        TaskState::InputRequired | TaskState::AuthRequired => 2,
        TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected => 3,
    }
}

/// Why a task in `state` may not take `event` from an agent over HTTP, beyond what every agent is
/// held to (the task's own rules: nothing after a final state, no TASK_STATE_UNSPECIFIED). The
/// agent's events are only as trustworthy as the agent: moving the task backwards would re-open a
/// turn the client saw end (or undo WORKING), and a USER message would put words in the client's
/// mouth in the task's history.
fn refusal(state: TaskState, event: &StreamResponse) -> Option<String> {
    let user = |m: Option<&Message>| m.is_some_and(|m| m.role == Role::User);
    match event {
        StreamResponse::StatusUpdate(u) if user(u.status.message.as_deref()) => {
            Some("a status message with role ROLE_USER (the agent speaks as ROLE_AGENT)".into())
        }
        StreamResponse::Message(m) if user(Some(m)) => {
            Some("a message with role ROLE_USER (the agent speaks as ROLE_AGENT)".into())
        }
        // UNSPECIFIED and anything after a final state: the task's own rules name those.
        StreamResponse::StatusUpdate(u)
            if u.status.state != TaskState::Unspecified
                && !state.is_terminal()
                && stage(u.status.state) < stage(state) =>
        {
            Some(format!("{} after {state} (a task never moves backwards)", u.status.state))
        }
        _ => None,
    }
}

/// Cuts an answer into events as its bytes arrive, in time linear in the bytes (lines and SSE are
/// split by [`LineBuffer`], which never searches a byte twice).
struct Reader {
    framing: Framing,
    /// Lines: what is not read yet.
    lines: LineBuffer,
    /// Documents: the answer so far (read whole at the end).
    document: Vec<u8>,
    sse: SseDecoder,
    max: usize,
    /// Events read so far (for error messages).
    count: usize,
}

impl Reader {
    fn new(framing: Framing, max: usize) -> Self {
        Self { framing, lines: LineBuffer::new(), document: Vec::new(), sse: SseDecoder::new(max), max, count: 0 }
    }

    /// One event, decoded straight from its text once its shape is within the bounds of
    /// [`a2a_protocol::types::bounds`] (what decoding an event builds is bounded like a request's).
    fn parse(&mut self, text: &str) -> Result<StreamResponse, AgentError> {
        self.count += 1;
        let n = self.count;
        json_shape(text.as_bytes()).check(&format!("the agent's event {n}")).map_err(|e| failed(e.message))?;
        serde_json::from_str(text).map_err(|e| match e.classify() {
            serde_json::error::Category::Data => {
                failed(format!("the agent's event {n} is not an A2A statusUpdate, artifactUpdate or message: {e}"))
            }
            _ => failed(format!("the agent's event {n} is not JSON: {e}")),
        })
    }

    fn push(&mut self, chunk: &Bytes) -> Result<Vec<StreamResponse>, AgentError> {
        let too_large = |max| failed(format!("the agent's answer {}", SseError::TooLarge(max)));
        match self.framing {
            Framing::Sse => {
                let frames = self.sse.push(chunk).map_err(|e| failed(format!("the agent's answer {e}")))?;
                // Comments, `event:`, `id:` and `retry:` lines are skipped by the decoder.
                frames.iter().filter(|f| !f.data.is_empty()).map(|f| self.parse(&f.data)).collect()
            }
            Framing::Document => {
                if self.document.len() + chunk.len() > self.max {
                    return Err(too_large(self.max));
                }
                self.document.extend_from_slice(chunk);
                Ok(Vec::new())
            }
            Framing::Lines => {
                self.lines.extend(chunk);
                let mut out = Vec::new();
                while let Some(line) = self.lines.next_line() {
                    if line.len() > self.max {
                        return Err(too_large(self.max));
                    }
                    let line =
                        std::str::from_utf8(&line).map_err(|_| failed("the agent's answer is not UTF-8"))?.trim();
                    if !line.is_empty() {
                        out.push(self.parse(line)?);
                    }
                }
                if self.lines.pending().len() > self.max {
                    return Err(too_large(self.max));
                }
                Ok(out)
            }
        }
    }

    /// The answer ended: what is left must be whole.
    fn finish(mut self) -> Result<Vec<StreamResponse>, AgentError> {
        let cut_off = match self.framing {
            Framing::Document => {
                let document = std::mem::take(&mut self.document);
                let rest = String::from_utf8_lossy(&document);
                let rest = rest.trim();
                if rest.is_empty() {
                    return Ok(Vec::new());
                }
                // One event or an array of them, each decoded from its own text.
                let items: Vec<&RawValue> = if rest.starts_with('[') {
                    serde_json::from_str(rest)
                } else {
                    serde_json::from_str(rest).map(|one| vec![one])
                }
                .map_err(|e| failed(format!("the agent's answer is not JSON: {e}")))?;
                return items.into_iter().map(|v| self.parse(v.get())).collect();
            }
            Framing::Sse => self.sse.cut_off(),
            Framing::Lines => !self.lines.pending().iter().all(u8::is_ascii_whitespace),
        };
        if cut_off {
            return Err(failed("the agent's answer was cut off in the middle of an event"));
        }
        Ok(Vec::new())
    }

    /// Bytes searched for line ends so far.
    #[cfg(test)]
    fn bytes_scanned(&self) -> u64 {
        self.lines.bytes_scanned() + self.sse.bytes_scanned()
    }
}

#[async_trait]
impl AgentExecutor for HttpAgent {
    async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), AgentError> {
        use a2a_telemetry::spans::{self, Callee};
        let cancel = ctx.cancel.clone();
        let span = spans::client(Callee::HttpAgent, "POST", &self.config.url);
        let run = self.run(&ctx, &events).instrument(span.clone());
        tokio::select! {
            outcome = run => {
                spans::call_outcome(&span, None, outcome.as_ref().err().map(|_| "agent_failed"));
                outcome
            }
            () = cancel.cancelled() => {
                // The run's connection closes when this future is dropped (here); the agent also
                // gets a cancel request, for agents that cannot see a closed connection.
                self.notify_cancel(&ctx).await;
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(events: &[StreamResponse]) -> Vec<&'static str> {
        events
            .iter()
            .map(|e| match e {
                StreamResponse::StatusUpdate(_) => "status",
                StreamResponse::ArtifactUpdate(_) => "artifact",
                StreamResponse::Message(_) => "message",
                StreamResponse::Task(_) => "task",
            })
            .collect()
    }

    const STATUS: &str = r#"{"statusUpdate": {"status": {"state": "TASK_STATE_WORKING"}}}"#;
    const ART: &str =
        r#"{"artifactUpdate": {"artifact": {"artifactId": "a", "parts": [{"text": "x"}]}, "lastChunk": true}}"#;

    #[test]
    fn lines_arrive_in_any_cut() {
        let all = format!("{STATUS}\n\n{ART}\n");
        for cut in 1..all.len() {
            let mut r = Reader::new(Framing::Lines, 1 << 20);
            let mut got = r.push(&Bytes::copy_from_slice(&all.as_bytes()[..cut])).unwrap();
            got.extend(r.push(&Bytes::copy_from_slice(&all.as_bytes()[cut..])).unwrap());
            got.extend(r.finish().unwrap());
            assert_eq!(kinds(&got), ["status", "artifact"], "cut at {cut}");
        }
    }

    /// `\n` and `\r\n` line ends, each split across chunks (byte by byte).
    #[test]
    fn split_line_ends() {
        for framing in [Framing::Lines, Framing::Sse] {
            let all = match framing {
                Framing::Sse => format!("data: {STATUS}\r\n\r\ndata: {ART}\n\n"),
                _ => format!("{STATUS}\r\n\r\n{ART}\n"),
            };
            let mut r = Reader::new(framing, 1 << 20);
            let mut got = Vec::new();
            for byte in all.as_bytes() {
                got.extend(r.push(&Bytes::copy_from_slice(std::slice::from_ref(byte))).unwrap());
            }
            assert_eq!(r.bytes_scanned(), all.len() as u64, "{framing:?}");
            got.extend(r.finish().unwrap());
            assert_eq!(kinds(&got), ["status", "artifact"], "{framing:?}");
        }
    }

    /// A 15 MiB event in 4 KiB chunks, as NDJSON and as SSE: the work of finding line ends is the
    /// size of the answer (it used to be its square: ~29 GB of scanning, 5.6 s of CPU).
    #[test]
    fn a_large_event_in_small_chunks_costs_linear_work() {
        let text = "y".repeat(15 << 20);
        let event =
            format!(r#"{{"artifactUpdate": {{"artifact": {{"artifactId": "a", "parts": [{{"text": "{text}"}}]}}}}}}"#);
        for (framing, answer) in [(Framing::Lines, format!("{event}\n")), (Framing::Sse, format!("data: {event}\n\n"))]
        {
            let mut r = Reader::new(framing, 16 << 20);
            let mut got = Vec::new();
            let mut fed = 0;
            for chunk in answer.as_bytes().chunks(4096) {
                got.extend(r.push(&Bytes::copy_from_slice(chunk)).unwrap());
                fed += chunk.len() as u64;
                assert!(
                    r.bytes_scanned() <= fed,
                    "{framing:?}: {} bytes scanned for {fed} received",
                    r.bytes_scanned()
                );
            }
            assert_eq!(kinds(&got), ["artifact"], "{framing:?}");
            assert_eq!(r.bytes_scanned(), answer.len() as u64, "{framing:?}");
        }
    }

    #[test]
    fn sse_and_documents() {
        let mut r = Reader::new(Framing::Sse, 1 << 20);
        let text = format!(": keep-alive\n\nevent: x\ndata: {STATUS}\n\ndata: {ART}\n\n");
        let got = r.push(&Bytes::from(text)).unwrap();
        assert_eq!(kinds(&got), ["status", "artifact"]);
        let mut r = Reader::new(Framing::Document, 1 << 20);
        assert!(r.push(&Bytes::from(format!("[{STATUS}, {ART}]"))).unwrap().is_empty());
        assert_eq!(kinds(&r.finish().unwrap()), ["status", "artifact"]);
    }

    #[test]
    fn backwards_moves_and_user_messages_are_refused() {
        let event = |text: &str| serde_json::from_str::<StreamResponse>(text).unwrap();
        let status = |state: &str| event(&format!(r#"{{"statusUpdate": {{"status": {{"state": "{state}"}}}}}}"#));
        let (submitted, working) = (TaskState::Submitted, TaskState::Working);
        for (now, next) in [
            (working, "TASK_STATE_SUBMITTED"),
            (TaskState::InputRequired, "TASK_STATE_WORKING"),
            (TaskState::AuthRequired, "TASK_STATE_SUBMITTED"),
        ] {
            let why = refusal(now, &status(next)).unwrap_or_default();
            assert!(why.starts_with(&format!("{next} after {now}")) && why.contains("backwards"), "{why}");
        }
        for (now, next) in [
            (submitted, "TASK_STATE_SUBMITTED"),
            (submitted, "TASK_STATE_WORKING"),
            (working, "TASK_STATE_WORKING"),
            (working, "TASK_STATE_INPUT_REQUIRED"),
            (submitted, "TASK_STATE_COMPLETED"),
            (TaskState::Completed, "TASK_STATE_WORKING"),
        ] {
            assert_eq!(refusal(now, &status(next)), None, "{now} -> {next}");
        }
        let user = r#"{"role": "ROLE_USER", "parts": [{"text": "I agree"}]}"#;
        let message = event(&format!(r#"{{"message": {user}}}"#));
        assert!(refusal(working, &message).unwrap_or_default().contains("role ROLE_USER"));
        let said = event(&format!(
            r#"{{"statusUpdate": {{"status": {{"state": "TASK_STATE_WORKING", "message": {user}}}}}}}"#
        ));
        assert!(refusal(working, &said).unwrap_or_default().contains("role ROLE_USER"));
        let agent = event(r#"{"message": {"parts": [{"text": "hi"}]}}"#);
        assert_eq!(refusal(working, &agent), None, "a role left out is the agent's");
    }

    #[test]
    fn garbage_cut_offs_and_oversized_events_are_named() {
        let mut r = Reader::new(Framing::Lines, 1 << 20);
        let AgentError::Failed(why) = r.push(&Bytes::from("not json\n")).unwrap_err() else { panic!() };
        assert!(why.contains("event 1 is not JSON"), "{why}");
        let mut r = Reader::new(Framing::Lines, 1 << 20);
        let AgentError::Failed(why) = r.push(&Bytes::from("{\"task\": 1}\n")).unwrap_err() else { panic!() };
        assert!(why.contains("not an A2A"), "{why}");
        let mut r = Reader::new(Framing::Lines, 1 << 20);
        r.push(&Bytes::from(format!("{STATUS}\n{{\"statusUp"))).unwrap();
        let AgentError::Failed(why) = r.finish().unwrap_err() else { panic!() };
        assert!(why.contains("cut off"), "{why}");
        let mut r = Reader::new(Framing::Lines, 16);
        assert!(r.push(&Bytes::from("x".repeat(64))).is_err());
    }
}
