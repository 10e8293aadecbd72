//! The request-independent state of the HTTP front ([`Service`]: the engine, the [`Limits`] and
//! the budgets of bytes in flight) and what every binding does first with a request: which binding
//! a path belongs to, and the call context (who is calling, with which version and extensions).
//! Routing a request to its binding is [`crate::router`].

use std::sync::Arc;

use bytes::Bytes;

use crate::inflight::{held_bytes, Budget, Held, SMALL_ANSWER};
pub use crate::response::{jsonrpc_error_response, rest_error, Body, HttpResponse};
use a2a_engine::auth::Principal;
use a2a_engine::engine::{CallContext, Engine};
use a2a_protocol::error::{A2aError, ErrorKind, Result};
use a2a_protocol::types::bounds::json_shape;
use a2a_protocol::version::{self, Version};

/// Request-independent settings of the front.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest accepted request body (default 10 MiB).
    pub max_body: usize,
    /// Idle time after which an SSE stream gets a `: keep-alive` comment (default 15 s).
    pub keep_alive: std::time::Duration,
    /// Bytes of encoded answers (results and stream events) held at once, server-wide, until they
    /// are written (default 256 MiB); answers under [`SMALL_ANSWER`] are not counted.
    pub answer_bytes: usize,
    /// Bytes of requests held at once, server-wide, bodies and what decoding them builds (default
    /// 256 MiB): a body takes its share before it is buffered.
    pub request_bytes: usize,
    /// Longest a request or an answer waits for its share of a budget before it is refused (503).
    pub budget_wait: std::time::Duration,
}

/// Default of [`Limits::request_bytes`] and of [`Limits::answer_bytes`].
pub const DEFAULT_REQUEST_BYTES: usize = 256 << 20;
/// Default longest wait of a request or an answer for its share of a budget before it is refused
/// (503).
pub const BUDGET_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_body: 10 * 1024 * 1024,
            keep_alive: a2a_protocol::sse::KEEP_ALIVE_EVERY,
            answer_bytes: DEFAULT_REQUEST_BYTES,
            request_bytes: DEFAULT_REQUEST_BYTES,
            budget_wait: BUDGET_WAIT,
        }
    }
}

/// The outcome of authenticating a request, kept in its extensions by the front that did it.
#[derive(Debug, Clone)]
pub struct Authenticated(pub Result<Principal>);

#[derive(Clone)]
pub struct Service {
    pub engine: Arc<Engine>,
    pub limits: Limits,
    /// Encoded answers in flight (see [`crate::inflight`]).
    pub answers: Budget,
    /// Requests in flight: bodies being read and what decoding them builds.
    pub requests: Budget,
}

/// Which binding a path belongs to, for error shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    JsonRpc,
    Rest,
}

pub fn binding_of(path: &str) -> Binding {
    if path == "/" || path.is_empty() {
        Binding::JsonRpc
    } else {
        Binding::Rest
    }
}

/// The SERVER span of one HTTP request (every front opens it first: the hyper server, Lambda),
/// continuing the caller's trace. See [`a2a_telemetry::spans::server`].
pub fn request_span(method: &http::Method, path: &str, headers: &http::HeaderMap) -> tracing::Span {
    use a2a_telemetry::spans::{server, Protocol};
    let protocol = match binding_of(path) {
        Binding::JsonRpc => Protocol::JsonRpc,
        Binding::Rest => Protocol::HttpJson,
    };
    server(method, path, headers, protocol)
}

/// Records the answer's status on the request's span.
pub fn answered<B>(span: &tracing::Span, response: &http::Response<B>) {
    a2a_telemetry::spans::http_outcome(span, response.status().as_u16());
}

impl Service {
    pub fn new(engine: Arc<Engine>, limits: Limits) -> Self {
        let answers = Budget::new(limits.answer_bytes, limits.budget_wait, "answer bytes");
        let requests = Budget::new(limits.request_bytes, limits.budget_wait, "request bytes");
        Self { engine, limits, answers, requests }
    }

    /// Admits a request document: refuses one past the limits of [`a2a_protocol::types::bounds`] before
    /// anything decodes it, and holds what decoding it builds against the requests budget until
    /// the returned share is dropped (a small document is not counted).
    pub(crate) async fn admit(&self, body: &[u8]) -> Result<Held> {
        let shape = json_shape(body);
        shape.check("the request")?;
        let decoded = shape.decoded_bytes();
        if decoded < SMALL_ANSWER {
            return Ok(Held::none());
        }
        self.requests.hold(decoded).await
    }

    /// Encodes an answer within the answers budget: its share is taken by its estimated size before
    /// `encode` builds it (the typed answer goes as it is encoded) into a buffer of that size (so a
    /// large answer is written once, not copied as it grows), then fitted to the real size.
    pub async fn encode_answer<T, B>(
        &self,
        answer: T,
        estimate: usize,
        encode: impl FnOnce(T, Vec<u8>) -> Result<B>,
    ) -> Result<Bytes>
    where
        B: AsRef<[u8]> + Into<Bytes> + Send + 'static,
    {
        if estimate < SMALL_ANSWER {
            let body = encode(answer, Vec::with_capacity(1024))?;
            if body.as_ref().len() < SMALL_ANSWER {
                return Ok(body.into());
            }
            let held = self.answers.hold(body.as_ref().len()).await?;
            return Ok(held_bytes(body, held));
        }
        let mut held = self.answers.hold(estimate).await?;
        let body = encode(answer, Vec::with_capacity(estimate))?;
        self.answers.fit(&mut held, body.as_ref().len()).await?;
        Ok(held_bytes(body, held))
    }

    /// The refusal for a body over the limit, in the shape of the path's binding.
    pub fn payload_too_large(&self, path: &str) -> HttpResponse {
        let err = A2aError::new(
            ErrorKind::PayloadTooLarge,
            format!("request body exceeds the limit of {} bytes", self.limits.max_body),
        );
        match binding_of(path) {
            Binding::JsonRpc => jsonrpc_error_response(&a2a_protocol::rpc_id::RpcId::null(), &err),
            Binding::Rest => rest_error(&err),
        }
    }

    /// Who is calling. The first check of every request: nothing else about a request is judged
    /// (and reported) for a caller who is not known. A front that authenticated the request already
    /// (before reading its body) leaves the outcome in the request's extensions; it is not redone.
    pub async fn authenticate(&self, parts: &http::request::Parts) -> Result<Principal> {
        if let Some(Authenticated(outcome)) = parts.extensions.get::<Authenticated>() {
            return outcome.clone();
        }
        self.engine.auth.authenticate(parts).await
    }

    /// The call context of an authenticated caller: the service parameters, with the card's required
    /// extensions checked.
    pub fn call_context(
        &self,
        parts: &http::request::Parts,
        principal: Principal,
        version: Version,
    ) -> Result<CallContext> {
        let query = parts.uri.query();
        let extensions = version::requested_extensions(&parts.headers, query);
        version::check_required_extensions(&self.engine.card.card.capabilities.extensions, &extensions)?;
        Ok(CallContext {
            principal,
            version,
            extensions,
            last_event_id: a2a_protocol::sse::last_event_id(&parts.headers),
        })
    }
}
