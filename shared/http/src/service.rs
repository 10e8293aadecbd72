//! The HTTP front: one base URL serving the agent card, the JSON-RPC endpoint (`POST /`) and every
//! HTTP+JSON route. Framework-neutral (`http` types in, `http` types out) so that the local server,
//! Lambda and tests all call the same [`Service::handle`]. Also what every binding does first with
//! a request: which binding a path belongs to, and the call context (who is calling, with which
//! version and extensions); the request-independent state ([`Service`]: the engine, the [`Limits`]
//! and the budgets of bytes in flight).

use std::sync::Arc;

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};

use crate::inflight::{held_bytes, Budget, Held, SMALL_ANSWER};
use crate::response::{internal_response, JSON};
pub use crate::response::{jsonrpc_error_response, rest_error, Body, HttpResponse};
use a2a_engine::auth::Principal;
use a2a_engine::engine::{CallContext, Engine};
use a2a_protocol::error::{A2aError, ErrorKind, Result};
use a2a_protocol::paths::{is_public_path, JWKS_PATH};
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

impl Service {
    /// Serves one request. Never panics; every failure is a protocol error response.
    pub async fn handle(&self, req: Request<Bytes>) -> HttpResponse {
        let (parts, body) = req.into_parts();
        if body.len() > self.limits.max_body {
            return self.payload_too_large(parts.uri.path());
        }
        let path = parts.uri.path();
        if is_public_path(path) {
            return card_response(&self.engine.card, &parts);
        }
        match binding_of(path) {
            Binding::JsonRpc if parts.method == Method::POST => crate::jsonrpc::handle(self, &parts, body).await,
            Binding::JsonRpc => rest_error(
                &A2aError::new(ErrorKind::MethodNotAllowed, "the JSON-RPC endpoint takes POST requests")
                    .with("allow", "POST"),
            ),
            Binding::Rest => crate::rest::handle(self, &parts, body).await,
        }
    }
}

/// Serves the public card of `cards` (GET or HEAD) in the negotiated version, or the JWKS of its
/// signatures, with `Cache-Control`, a strong `ETag` (304 on `If-None-Match`), `Last-Modified` and
/// `Vary`.
pub fn card_response(cards: &a2a_engine::card::CardService, parts: &http::request::Parts) -> HttpResponse {
    if parts.method != Method::GET && parts.method != Method::HEAD {
        return rest_error(
            &A2aError::new(ErrorKind::MethodNotAllowed, "the agent card is served on GET").with("allow", "GET, HEAD"),
        );
    }
    let served = if parts.uri.path() == JWKS_PATH {
        match cards.jwks() {
            Some(jwks) => jwks,
            None => {
                return rest_error(&A2aError::new(
                    ErrorKind::MethodNotFound,
                    "no JWKS: this agent's card is not signed",
                ))
            }
        }
    } else {
        match version::negotiate(&parts.headers, parts.uri.query()) {
            Ok(version) => cards.served(version),
            Err(e) => return rest_error(&e),
        }
    };
    let not_modified =
        parts.headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()).is_some_and(|v| served.matches(v));
    let builder = Response::builder()
        .header(header::CACHE_CONTROL, format!("public, max-age={}", cards.max_age))
        .header(header::ETAG, served.etag.as_str())
        .header(header::LAST_MODIFIED, cards.last_modified_http.as_str())
        .header(header::VARY, "A2A-Version");
    let response = if not_modified {
        builder.status(StatusCode::NOT_MODIFIED).body(Body::Full(Bytes::new()))
    } else {
        builder.status(StatusCode::OK).header(header::CONTENT_TYPE, JSON).body(Body::Full(served.body.clone()))
    };
    response.unwrap_or_else(|_| internal_response())
}
