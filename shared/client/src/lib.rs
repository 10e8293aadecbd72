//! An A2A client on the project's own types (feature `client`): card discovery, the choice of a
//! transport in the card's order, every operation over JSON-RPC and HTTP+JSON (A2A 1.0), streams that
//! resume by themselves after a dropped connection, gRPC with the feature `client-grpc`, credentials (API key, bearer token, OAuth 2.0
//! client credentials from the card's declared flow), and typed errors carrying the protocol error.
//!
//! What an agent answers is bounded: every answer body, card, token answer and stream event is read
//! up to [`ClientOptions::max_answer_bytes`] and within [`ClientOptions::timeout`], a stream runs at
//! most [`ClientOptions::stream_time`] in all, and a redirect is followed only within the origin the
//! request went to (credentials and the request never reach another origin through one).
//!
//! - [`discovery`]: fetching the card and choosing the interface.
//! - [`credentials`]: what a request carries to authenticate, tokens cached and refreshed.
//! - [`transport`]: one operation as a JSON-RPC call or an HTTP+JSON request.
//! - `grpc`: one operation as a gRPC call, streams as server streams (feature `client-grpc`).
//! - [`stream`]: SSE decoding and resumption (`Last-Event-ID`, bounded retries with backoff).
//!
//! ```no_run
//! # async fn demo() -> Result<(), a2a_client::ClientError> {
//! use a2a_client::{Client, ClientOptions};
//! let client = Client::connect("http://127.0.0.1:8080", ClientOptions::default()).await?;
//! let reply = client.send_text("hello").await?;
//! # Ok(()) }
//! ```

mod body;
pub mod credentials;
pub mod discovery;
#[cfg(feature = "grpc")]
mod grpc;
#[cfg(not(feature = "grpc"))]
#[path = "no_grpc.rs"]
mod grpc;
pub mod stream;
pub mod transport;
mod v03;
pub mod verify;

use std::time::Duration;

use futures::stream::BoxStream;

use a2a_protocol::error::A2aError;
use a2a_protocol::types::*;

pub use credentials::Credentials;
pub use discovery::Binding;

/// The default of [`ClientOptions::max_answer_bytes`]: above the largest request an A2A server of
/// this project accepts (10 MiB), so a file sent inline comes back, yet small enough that a hostile
/// answer cannot exhaust memory.
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;
/// The default of [`ClientOptions::stream_time`].
pub const DEFAULT_STREAM_TIME: Duration = Duration::from_secs(3600);
/// Redirects followed (within the request's origin) before giving up.
const MAX_REDIRECTS: usize = 5;

/// How a client talks to an agent.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    pub credentials: Credentials,
    /// The binding to use when the card offers it (else the card's first one this client speaks).
    pub prefer: Option<Binding>,
    /// Longest wait for one request's answer, body included; on a stream, the longest silence
    /// between two reads (then the stream is resumed).
    pub timeout: Duration,
    /// Largest answer read: a call's body, the card, a JWKS, a token answer, one stream event.
    pub max_answer_bytes: usize,
    /// Longest a stream may run in all, reconnections included.
    pub stream_time: Duration,
    /// Reconnections of one stream after a dropped connection.
    pub resume_attempts: u32,
    /// The tenant to address (default: the chosen interface's).
    pub tenant: Option<String>,
    /// The trace every call continues (sent as `traceparent`) when the caller is not tracing
    /// itself: the CLI starts one per command. A tracing host's current span takes precedence.
    pub trace: Option<a2a_telemetry::TraceContext>,
}

impl ClientOptions {
    /// The trace context a call sends.
    pub(crate) fn trace_context(&self) -> Option<a2a_telemetry::TraceContext> {
        a2a_telemetry::context::current().or_else(|| self.trace.clone())
    }
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            credentials: Credentials::None,
            prefer: None,
            timeout: Duration::from_secs(120),
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
            stream_time: DEFAULT_STREAM_TIME,
            resume_attempts: 5,
            tenant: None,
            trace: None,
        }
    }
}

/// Why a call failed.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientError {
    /// The agent answered with a protocol error (its kind, message and `ErrorInfo` metadata).
    Protocol(A2aError),
    /// The agent answered an HTTP error without a protocol error body.
    Http { status: u16, body: String },
    /// The agent could not be reached, or the connection broke.
    Transport(String),
    /// No answer in time.
    Timeout,
    /// The answer is not what the protocol says.
    InvalidResponse(String),
    /// The card is missing, unreadable, or offers no interface this client speaks.
    Card(String),
    /// Credentials could not be obtained (the token endpoint refused, ...).
    Credentials(String),
    /// The card's signatures do not verify (or it has none).
    Signature(String),
    /// An answer (or one stream event) is larger than [`ClientOptions::max_answer_bytes`] (the limit).
    TooLarge(usize),
    /// A stream ran longer than [`ClientOptions::stream_time`] (the limit).
    TooLong(Duration),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Protocol(e) => write!(f, "{e}"),
            Self::Http { status, body } => write!(f, "HTTP {status}: {}", body.chars().take(300).collect::<String>()),
            Self::Transport(why) => write!(f, "connection: {why}"),
            Self::Timeout => write!(f, "no answer in time"),
            Self::InvalidResponse(why) => write!(f, "invalid answer: {why}"),
            Self::Card(why) => write!(f, "agent card: {why}"),
            Self::Credentials(why) => write!(f, "credentials: {why}"),
            Self::Signature(why) => write!(f, "card signature: {why}"),
            Self::TooLarge(max) => write!(f, "the answer is larger than the limit of {max} bytes; it was not read"),
            Self::TooLong(limit) => {
                write!(f, "the stream did not end within the limit of {} s; it was closed", limit.as_secs())
            }
        }
    }
}

impl std::error::Error for ClientError {}

impl From<reqwest::Error> for ClientError {
    fn from(e: reqwest::Error) -> Self {
        if e.is_timeout() {
            Self::Timeout
        } else {
            Self::Transport(root_cause(&e))
        }
    }
}

pub(crate) fn root_cause(e: &dyn std::error::Error) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

pub type ClientResult<T> = Result<T, ClientError>;

/// One event of a stream, with its sequence number (the SSE `id`) when the agent sends one.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub seq: Option<u64>,
    pub event: StreamResponse,
}

pub type EventStream = BoxStream<'static, ClientResult<Event>>;

/// A connected client: the agent's card and the interface chosen from it.
#[derive(Clone)]
pub struct Client {
    pub(crate) http: reqwest::Client,
    card: AgentCard,
    pub(crate) binding: Binding,
    /// The chosen interface's URL.
    pub(crate) url: String,
    /// The card as received and where from (what a signature covers), when it was fetched.
    pub(crate) card_source: Option<std::sync::Arc<(String, serde_json::Value)>>,
    pub(crate) tenant: String,
    pub(crate) credentials: credentials::Authorizer,
    pub(crate) options: ClientOptions,
    /// The gRPC channel, when the interface is gRPC.
    #[cfg(feature = "grpc")]
    pub(crate) grpc: grpc::Connection,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("binding", &self.binding).field("url", &self.url).finish_non_exhaustive()
    }
}

impl Client {
    /// Fetches the card at `base` (`/.well-known/agent-card.json`, or the 0.3 path) and chooses the
    /// first interface this client speaks, in the card's order (or `options.prefer`).
    pub async fn connect(base: &str, options: ClientOptions) -> ClientResult<Self> {
        let http = http_client()?;
        let limits = discovery::Limits { max_bytes: options.max_answer_bytes, timeout: options.timeout };
        let (url, json) = discovery::fetch_card_json(&http, base, limits).await?;
        let card = discovery::read_card(json.clone())?;
        Self::from_card(http, card, options, Some((url, json)))
    }

    /// A client for an agent whose card is known (the caller vouches for it: a client-credentials
    /// token URL it declares counts as one the caller gave).
    pub fn with_card(card: AgentCard, options: ClientOptions) -> ClientResult<Self> {
        Self::from_card(http_client()?, card, options, None)
    }

    fn from_card(
        http: reqwest::Client,
        card: AgentCard,
        options: ClientOptions,
        source: Option<(String, serde_json::Value)>,
    ) -> ClientResult<Self> {
        let interface = discovery::choose(&card, options.prefer)?;
        let card_url = source.as_ref().map(|(url, _)| url.as_str());
        let credentials = credentials::Authorizer::new(http.clone(), &card, card_url, &options);
        Ok(Self {
            http,
            binding: interface.0,
            url: interface.1.url.trim_end_matches('/').to_string(),
            card_source: source.map(std::sync::Arc::new),
            tenant: options.tenant.clone().unwrap_or_else(|| interface.1.tenant.clone()),
            card,
            credentials,
            options,
            #[cfg(feature = "grpc")]
            grpc: grpc::Connection::default(),
        })
    }

    pub fn card(&self) -> &AgentCard {
        &self.card
    }

    pub fn binding(&self) -> Binding {
        self.binding
    }

    /// The URL of the interface in use.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// SendMessage with one text part (a new task, blocking).
    pub async fn send_text(&self, text: &str) -> ClientResult<SendMessageResponse> {
        self.send_message(request(Message::user_text(text))).await
    }

    pub async fn send_message(&self, req: SendMessageRequest) -> ClientResult<SendMessageResponse> {
        self.call("SendMessage", req).await
    }

    /// SendStreamingMessage: the turn's events as they happen; resumes by itself when the
    /// connection drops before the turn ends.
    pub async fn send_streaming_message(&self, req: SendMessageRequest) -> ClientResult<EventStream> {
        stream::open(self.clone(), stream::Start::Send(req)).await
    }

    pub async fn get_task(&self, req: GetTaskRequest) -> ClientResult<Task> {
        self.call("GetTask", req).await
    }

    pub async fn list_tasks(&self, req: ListTasksRequest) -> ClientResult<ListTasksResponse> {
        self.call("ListTasks", req).await
    }

    pub async fn cancel_task(&self, req: CancelTaskRequest) -> ClientResult<Task> {
        self.call("CancelTask", req).await
    }

    /// SubscribeToTask: the task, then its events; resumes like [`Client::send_streaming_message`].
    pub async fn subscribe_to_task(&self, task_id: &str) -> ClientResult<EventStream> {
        stream::open(self.clone(), stream::Start::Subscribe { task_id: task_id.to_string(), after: None }).await
    }

    pub async fn create_push_config(
        &self,
        config: TaskPushNotificationConfig,
    ) -> ClientResult<TaskPushNotificationConfig> {
        self.call("CreateTaskPushNotificationConfig", config).await
    }

    pub async fn get_push_config(
        &self,
        req: GetTaskPushNotificationConfigRequest,
    ) -> ClientResult<TaskPushNotificationConfig> {
        self.call("GetTaskPushNotificationConfig", req).await
    }

    pub async fn list_push_configs(
        &self,
        req: ListTaskPushNotificationConfigsRequest,
    ) -> ClientResult<ListTaskPushNotificationConfigsResponse> {
        self.call("ListTaskPushNotificationConfigs", req).await
    }

    pub async fn delete_push_config(&self, req: DeleteTaskPushNotificationConfigRequest) -> ClientResult<()> {
        self.call::<_, serde_json::Value>("DeleteTaskPushNotificationConfig", req).await.map(|_| ())
    }

    pub async fn get_extended_card(&self) -> ClientResult<AgentCard> {
        self.call("GetExtendedAgentCard", GetExtendedAgentCardRequest::default()).await
    }
}

/// A SendMessage request of `message` with no configuration.
pub fn request(message: Message) -> SendMessageRequest {
    SendMessageRequest { tenant: String::new(), message, configuration: None, metadata: None }
}

fn http_client() -> ClientResult<reqwest::Client> {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .redirect(same_origin_redirects())
        .build()
        .map_err(|e| ClientError::Transport(format!("HTTP client: {e}")))
}

/// Follows a redirect only within the origin (scheme, host, port) of the request's first URL.
/// A redirect elsewhere is refused rather than followed without credentials: reqwest strips only
/// `Authorization` (not an API key's header) and a 307/308 sends the request body (the user's
/// message, a token request's client secret) again; a policy can follow or stop, not edit headers,
/// and a request stripped of its credentials would fail at the other end in a confusing way anyway.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let Some(first) = attempt.previous().first().cloned() else { return attempt.follow() };
        let (from, to) = (first.origin(), attempt.url().origin());
        if from != to {
            // Origins only: a URL's path or query may carry what should not be logged.
            tracing::warn!(
                from = %from.ascii_serialization(),
                to = %to.ascii_serialization(),
                "a redirect to another origin was refused"
            );
            let why = format!(
                "{} redirected to another origin ({}); not followed, so that credentials and the request \
                 stay with {}: use that URL directly if you trust it",
                first,
                to.ascii_serialization(),
                from.ascii_serialization()
            );
            return attempt.error(why);
        }
        if attempt.previous().len() > MAX_REDIRECTS {
            return attempt.error(format!("{first}: more than {MAX_REDIRECTS} redirects"));
        }
        attempt.follow()
    })
}
