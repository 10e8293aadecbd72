//! The spans one task's trace is made of, with their attribute names in one place: the server span
//! of each request, the hop through a queue (send, then process), the agent's turn (`invoke_agent`)
//! and the calls the host makes (the HTTP agent, the gateway's upstream agent, webhooks).
//!
//! Names follow the OpenTelemetry semantic conventions (HTTP, RPC, messaging, GenAI agent spans)
//! and, for A2A itself, a2a-java's `gen_ai.agent.a2a.*` attributes, so that dashboards built for one
//! SDK work here. Spans carry ids, states, counts and status codes; never message contents, tokens,
//! credentials or a URL's path and query (a webhook URL may hold its secret there).
//!
//! Every constructor returns [`Span::none`] while tracing is off ([`crate::context::is_on`]): a
//! host that does not trace pays one atomic load per span, nothing else. Where a trace enters
//! ([`server`], [`queue_process`]) the sampling decision is taken ([`crate::sampling`]); inside a
//! trace that is not recorded the other constructors return [`Span::none`] too.

use http::HeaderMap;
use tracing::field::Empty;
use tracing::Span;

use crate::context::{self, TraceContext};
use crate::sampling::{self, Head};

/// A2A's `gen_ai.agent.a2a.*` attribute names (a2a-java's), and the GenAI ones beside them.
pub mod attr {
    pub const OPERATION: &str = "gen_ai.agent.a2a.operation.name";
    pub const PROTOCOL: &str = "gen_ai.agent.a2a.protocol";
    pub const TASK_ID: &str = "gen_ai.agent.a2a.task_id";
    pub const CONTEXT_ID: &str = "gen_ai.agent.a2a.context_id";
    pub const MESSAGE_ID: &str = "gen_ai.agent.a2a.message_id";
    pub const STATUS: &str = "gen_ai.agent.a2a.status";
    pub const CONFIG_ID: &str = "gen_ai.agent.a2a.config_id";
    pub const CONVERSATION_ID: &str = "gen_ai.conversation.id";
}

/// The binding a request came in on, by A2A's name for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    JsonRpc,
    HttpJson,
    Grpc,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::JsonRpc => "JSONRPC",
            Self::HttpJson => "HTTP+JSON",
            Self::Grpc => "GRPC",
        }
    }
}

/// The SERVER span of one request, continuing the caller's trace (`traceparent`, else X-Ray's
/// header). Named `{method} {path}` until the A2A operation is known ([`operation`]).
pub fn server(method: &http::Method, path: &str, headers: &HeaderMap, protocol: Protocol) -> Span {
    if !context::is_on() {
        return Span::none();
    }
    let parent = TraceContext::from_headers(headers);
    if let Head::Unsampled(carried) = sampling::head(parent.as_ref()) {
        return unsampled(&carried);
    }
    let rpc_system = match protocol {
        Protocol::JsonRpc => Some("jsonrpc"),
        Protocol::Grpc => Some("grpc"),
        Protocol::HttpJson => None,
    };
    let route = low_cardinality_path(path);
    let span = tracing::info_span!(
        target: "a2a::server",
        "request",
        "otel.name" = %format_args!("{method} {route}"),
        "otel.kind" = "server",
        "otel.status_code" = Empty,
        "http.request.method" = %method,
        "url.path" = route,
        "http.response.status_code" = Empty,
        "rpc.system" = rpc_system,
        "rpc.method" = Empty,
        "rpc.grpc.status_code" = Empty,
        "gen_ai.agent.a2a.protocol" = protocol.as_str(),
        "gen_ai.agent.a2a.operation.name" = Empty,
        "gen_ai.agent.a2a.task_id" = Empty,
        "gen_ai.agent.a2a.context_id" = Empty,
        "gen_ai.agent.a2a.message_id" = Empty,
        "error.type" = Empty,
    );
    context::continue_trace(&span, parent.as_ref());
    span
}

/// The entry of a trace that is not recorded: a bare span that carries it (sampled flag 0) so that
/// the calls made under it pass `traceparent` on, and under which no other span opens.
fn unsampled(carried: &TraceContext) -> Span {
    let span = tracing::info_span!(target: "a2a::unsampled", "unsampled");
    context::continue_trace(&span, Some(carried));
    span
}

/// True where a span may open: tracing is on and the current trace, if any, is recorded.
fn recording() -> bool {
    context::is_on() && !context::in_unsampled_trace()
}

/// A path with the ids in it replaced (`/tasks/{id}`), so that span names group by route.
fn low_cardinality_path(path: &str) -> &'static str {
    let path = path.split('?').next().unwrap_or("");
    if path.is_empty() || path == "/" {
        return "/";
    }
    // A2A 1.0 and 0.3 routes, gRPC's `/a2a.v1.A2AService/Method` is named by the method instead.
    let route = path.trim_start_matches("/v1");
    match route {
        r if r.starts_with("/message:send") => "/message:send",
        r if r.starts_with("/message:stream") => "/message:stream",
        r if r.starts_with("/tasks/") && r.contains("/pushNotificationConfigs") => {
            "/tasks/{id}/pushNotificationConfigs"
        }
        r if r.starts_with("/tasks/") && r.ends_with(":cancel") => "/tasks/{id}:cancel",
        r if r.starts_with("/tasks/") && r.ends_with(":subscribe") => "/tasks/{id}:subscribe",
        r if r.starts_with("/tasks/") => "/tasks/{id}",
        "/tasks" => "/tasks",
        r if r.starts_with("/extendedAgentCard") || r.starts_with("/card") => "/extendedAgentCard",
        r if r.starts_with("/.well-known/") => "/.well-known/*",
        r if r.starts_with("/a2a.") || r.starts_with("/lf.a2a.") => "/{grpc service}/{method}",
        _ => "/*",
    }
}

/// The A2A operation of the current request, once decoded: it names the server span.
pub fn operation(name: &'static str) {
    let span = Span::current();
    if span.is_none() {
        return;
    }
    context::rename(&span, name);
    span.record("rpc.method", name);
    span.record(attr::OPERATION, name);
}

/// The task (and its context) the current span is about; `""` leaves a field as it was.
pub fn task(task_id: &str, context_id: &str) {
    let span = Span::current();
    if span.is_none() {
        return;
    }
    if !task_id.is_empty() {
        span.record(attr::TASK_ID, task_id);
    }
    if !context_id.is_empty() {
        span.record(attr::CONTEXT_ID, context_id);
    }
}

/// The message the current request carries.
pub fn message(message_id: &str) {
    let span = Span::current();
    if !span.is_none() && !message_id.is_empty() {
        span.record(attr::MESSAGE_ID, message_id);
    }
}

/// The protocol error the current request is answered with (its reason, e.g. `TASK_NOT_FOUND`):
/// recorded where every error is mapped to its wire form.
pub fn error(reason: &str) {
    let span = Span::current();
    if !span.is_none() {
        span.record("error.type", reason);
    }
}

/// How the request on `span` ended: its HTTP status (5xx marks the span failed).
pub fn http_outcome(span: &Span, status: u16) {
    if span.is_none() {
        return;
    }
    span.record("http.response.status_code", i64::from(status));
    outcome(span, status >= 500, None);
}

/// How the gRPC call on `span` ended (its status code; 0 is OK).
pub fn grpc_outcome(span: &Span, code: i32) {
    if span.is_none() {
        return;
    }
    span.record("rpc.grpc.status_code", i64::from(code));
    // gRPC server spans are errors for the codes that mean the server failed (RPC conventions).
    outcome(span, matches!(code, 2 | 4 | 12 | 13 | 14 | 15), None);
}

fn outcome(span: &Span, failed: bool, error: Option<&str>) {
    if let Some(kind) = error {
        span.record("error.type", kind);
    }
    span.record("otel.status_code", if failed { "error" } else { "unset" });
}

/// Which queue a job went through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queue {
    /// The agent's turns.
    Tasks,
    /// Webhook deliveries and their retries.
    Push,
}

impl Queue {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tasks => "tasks",
            Self::Push => "push",
        }
    }
}

/// The PRODUCER span of putting a job on a queue (`messaging.system`: `aws_sqs`, or `a2a` for the
/// in-process queue); the job carries [`context::current`] taken inside it.
pub fn queue_send(system: &'static str, queue: Queue, task_id: &str) -> Span {
    if !recording() {
        return Span::none();
    }
    queue_span("send", "producer", system, queue, task_id, None)
}

/// The CONSUMER span of handling one job taken off a queue, continuing the trace the job was sent
/// in. `delivery` counts deliveries of the job (1 the first time).
pub fn queue_process(
    system: &'static str,
    queue: Queue,
    task_id: &str,
    delivery: u32,
    parent: Option<&TraceContext>,
) -> Span {
    if !context::is_on() {
        return Span::none();
    }
    if let Head::Unsampled(carried) = sampling::head(parent) {
        return unsampled(&carried);
    }
    let span = queue_span("process", "consumer", system, queue, task_id, Some(delivery));
    context::continue_trace(&span, parent);
    span
}

/// A messaging span (OpenTelemetry messaging conventions) of `operation` (`send`, `process`).
fn queue_span(
    operation: &'static str,
    kind: &'static str,
    system: &'static str,
    queue: Queue,
    task_id: &str,
    delivery: Option<u32>,
) -> Span {
    tracing::info_span!(
        target: "a2a::queue",
        "queue",
        "otel.name" = %format_args!("{operation} {}", queue.as_str()),
        "otel.kind" = kind,
        "otel.status_code" = Empty,
        "messaging.system" = system,
        "messaging.operation.type" = operation,
        "messaging.operation.name" = operation,
        "messaging.destination.name" = queue.as_str(),
        "messaging.message.id" = Empty,
        "messaging.delivery_count" = delivery.map(i64::from),
        "gen_ai.agent.a2a.task_id" = (!task_id.is_empty()).then_some(task_id),
        "error.type" = Empty,
    )
}

/// The id the queue gave the message the current span sent or handles.
pub fn message_sent(span: &Span, message_id: Option<&str>) {
    if let Some(id) = message_id.filter(|_| !span.is_none()) {
        span.record("messaging.message.id", id);
    }
}

/// A span failed: its error kind (a protocol error kind or a short class, never a message text).
pub fn failed(span: &Span, kind: &str) {
    if !span.is_none() {
        outcome(span, true, Some(kind));
    }
}

/// One turn of the agent (GenAI `invoke_agent`): `agent` is the card's name.
pub fn invoke_agent(agent: &str, task_id: &str, context_id: &str, run_id: &str, attempt: u32) -> Span {
    if !recording() {
        return Span::none();
    }
    tracing::info_span!(
        target: "a2a::agent",
        "invoke_agent",
        "otel.name" = %format_args!("invoke_agent {agent}"),
        "otel.kind" = "internal",
        "otel.status_code" = Empty,
        "gen_ai.operation.name" = "invoke_agent",
        "gen_ai.agent.name" = agent,
        "gen_ai.conversation.id" = context_id,
        "gen_ai.agent.a2a.task_id" = task_id,
        "gen_ai.agent.a2a.context_id" = context_id,
        "gen_ai.agent.a2a.run_id" = run_id,
        "gen_ai.agent.a2a.attempt" = i64::from(attempt),
        "gen_ai.agent.a2a.status" = Empty,
        "gen_ai.agent.a2a.events" = Empty,
        "gen_ai.agent.a2a.artifact_chunks" = Empty,
        "error.type" = Empty,
    )
}

/// The end of a turn: the state it left the task in (`""`: unknown), whether it failed, and how
/// many events and artifact chunks the agent recorded.
pub fn turn_ended(span: &Span, state: &str, failed: bool, events: u64, chunks: u64) {
    if span.is_none() {
        return;
    }
    if !state.is_empty() {
        span.record(attr::STATUS, state);
    }
    span.record("gen_ai.agent.a2a.events", i64::try_from(events).unwrap_or(i64::MAX));
    span.record("gen_ai.agent.a2a.artifact_chunks", i64::try_from(chunks).unwrap_or(i64::MAX));
    let kind = if state.is_empty() { "run_failed" } else { state };
    outcome(span, failed, failed.then_some(kind));
}

/// What the agent recorded during its turn: an event on the `invoke_agent` span (counts and states,
/// never contents).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnEvent<'a> {
    /// A status change (`gen_ai.agent.a2a.status`).
    Status { state: &'a str },
    /// An artifact chunk: whether it extends the artifact, whether it is the last one, its parts.
    Artifact { append: bool, last_chunk: bool, parts: usize },
    /// A message from the agent, with its parts.
    Message { parts: usize },
}

/// Adds `event` to the turn's span.
pub fn turn_event(span: &Span, event: TurnEvent<'_>) {
    use context::EventValue::{Bool, Int, Str};
    if span.is_none() {
        return;
    }
    let count = |n: usize| Int(i64::try_from(n).unwrap_or(i64::MAX));
    match event {
        TurnEvent::Status { state } => {
            context::event(span, "a2a.status_update", vec![(attr::STATUS, Str(state.into()))])
        }
        TurnEvent::Artifact { append, last_chunk, parts } => context::event(
            span,
            "a2a.artifact_update",
            vec![
                ("a2a.artifact.append", Bool(append)),
                ("a2a.artifact.last_chunk", Bool(last_chunk)),
                ("a2a.parts", count(parts)),
            ],
        ),
        TurnEvent::Message { parts } => context::event(span, "a2a.message", vec![("a2a.parts", count(parts))]),
    }
}

/// What a call the host makes is for (names the CLIENT span).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Callee {
    /// The user's agent behind the HTTP agent contract.
    HttpAgent,
    /// An A2A agent the host calls (the gateway's upstream, the client).
    A2aAgent,
    /// A push notification to a webhook.
    Webhook,
    /// The edge worker's publish endpoint.
    Edge,
}

impl Callee {
    fn as_str(self) -> &'static str {
        match self {
            Self::HttpAgent => "agent",
            Self::A2aAgent => "a2a",
            Self::Webhook => "webhook",
            Self::Edge => "edge",
        }
    }
}

/// The CLIENT span of one HTTP call the host makes to `url`; only its host and port are recorded
/// (a URL's path or query may hold a secret). The call sends [`context::inject`] taken inside it.
pub fn client(callee: Callee, method: &str, url: &str) -> Span {
    if !recording() {
        return Span::none();
    }
    let (address, port) = host_and_port(url);
    tracing::info_span!(
        target: "a2a::client",
        "call",
        "otel.name" = %format_args!("{method} {}", callee.as_str()),
        "otel.kind" = "client",
        "otel.status_code" = Empty,
        "http.request.method" = method,
        "server.address" = address,
        "server.port" = i64::from(port),
        "http.response.status_code" = Empty,
        "gen_ai.agent.a2a.task_id" = Empty,
        "gen_ai.agent.a2a.config_id" = Empty,
        "a2a.push.attempt" = Empty,
        "error.type" = Empty,
    )
}

/// The host and port of an `http(s)://` URL, without user info, path or query.
fn host_and_port(url: &str) -> (String, u16) {
    let (scheme, rest) = url.split_once("://").unwrap_or(("http", url));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let default = if scheme.eq_ignore_ascii_case("https") { 443 } else { 80 };
    match authority.rsplit_once(':').map(|(host, port)| (host, port.parse())) {
        Some((host, Ok(port))) => (host.to_string(), port),
        _ => (authority.to_string(), default),
    }
}

/// How an outgoing call on `span` ended: the status the peer answered, or the class of failure when
/// none came (`timeout`, `connect`, ...).
pub fn call_outcome(span: &Span, status: Option<u16>, failure: Option<&str>) {
    if span.is_none() {
        return;
    }
    if let Some(status) = status {
        span.record("http.response.status_code", i64::from(status));
    }
    let failed = failure.is_some() || status.is_some_and(|s| s >= 400);
    let kind = failure.map(str::to_string).or_else(|| status.filter(|s| *s >= 400).map(|s| s.to_string()));
    outcome(span, failed, kind.as_deref());
}

/// A webhook delivery's task, config and attempt, on its CLIENT span.
pub fn delivery(span: &Span, task_id: &str, config_id: &str, attempt: u32) {
    if span.is_none() {
        return;
    }
    span.record(attr::TASK_ID, task_id);
    span.record(attr::CONFIG_ID, config_id);
    span.record("a2a.push.attempt", i64::from(attempt));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn span_names_group_by_route() {
        assert_eq!(low_cardinality_path("/"), "/");
        assert_eq!(low_cardinality_path("/tasks/abc"), "/tasks/{id}");
        assert_eq!(low_cardinality_path("/v1/tasks/abc:cancel"), "/tasks/{id}:cancel");
        assert_eq!(low_cardinality_path("/tasks/abc/pushNotificationConfigs/x"), "/tasks/{id}/pushNotificationConfigs");
        assert_eq!(low_cardinality_path("/tasks?pageSize=3"), "/tasks");
        assert_eq!(low_cardinality_path("/message:stream"), "/message:stream");
        assert_eq!(low_cardinality_path("/a2a.v1.A2AService/SendMessage"), "/{grpc service}/{method}");
        assert_eq!(low_cardinality_path("/secret/token"), "/*");
    }

    #[test]
    fn only_host_and_port_of_a_url_are_kept() {
        assert_eq!(
            host_and_port("https://hooks.example.com/services/T0/B0/secret?token=x"),
            ("hooks.example.com".into(), 443)
        );
        assert_eq!(host_and_port("http://user:pw@127.0.0.1:8080/hook"), ("127.0.0.1".into(), 8080));
        assert_eq!(host_and_port("http://[::1]:9000/"), ("[::1]".into(), 9000));
        assert_eq!(host_and_port("http://[::1]/"), ("[::1]".into(), 80));
        assert_eq!(host_and_port("http://agent.internal"), ("agent.internal".into(), 80));
    }

    #[test]
    fn without_a_pipeline_spans_are_disabled() {
        assert!(server(&http::Method::POST, "/", &HeaderMap::new(), Protocol::JsonRpc).is_none());
        assert!(invoke_agent("a", "t", "c", "t/0", 1).is_none());
        assert!(client(Callee::Webhook, "POST", "http://127.0.0.1/").is_none());
        assert!(queue_process("a2a", Queue::Tasks, "t", 1, None).is_none());
    }
}
