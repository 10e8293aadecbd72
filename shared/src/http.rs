//! The HTTP front: one base URL serving the agent card, the JSON-RPC endpoint (`POST /`) and every
//! HTTP+JSON route. Framework-neutral (`http` types in, `http` types out) so that the local server,
//! Lambda and tests all call the same [`Service::handle`].

use std::sync::Arc;

use bytes::Bytes;
use futures::stream::BoxStream;
use http::{header, HeaderValue, Method, Request, Response, StatusCode};

use crate::card::{LEGACY_WELL_KNOWN_PATH, WELL_KNOWN_PATH};
use crate::engine::{CallContext, Engine};
use crate::error::{A2aError, ErrorKind, Result};
use crate::version::{self, Version};

/// A response body: complete, or a stream of SSE bytes.
pub enum Body {
    Full(Bytes),
    Sse(BoxStream<'static, Bytes>),
}

impl Body {
    /// The bytes of a complete body (empty for a stream).
    pub fn bytes(&self) -> Bytes {
        match self {
            Self::Full(b) => b.clone(),
            Self::Sse(_) => Bytes::new(),
        }
    }
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Full(b) => write!(f, "Full({} bytes)", b.len()),
            Self::Sse(_) => f.write_str("Sse"),
        }
    }
}

pub type HttpResponse = Response<Body>;

/// Request-independent settings of the front.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest accepted request body (default 10 MiB).
    pub max_body: usize,
    /// Idle time after which an SSE stream gets a `: keep-alive` comment (default 15 s).
    pub keep_alive: std::time::Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self { max_body: 10 * 1024 * 1024, keep_alive: crate::sse::KEEP_ALIVE_EVERY }
    }
}

#[derive(Clone)]
pub struct Service {
    pub engine: Arc<Engine>,
    pub limits: Limits,
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
        Self { engine, limits }
    }

    /// Serves one request. Never panics; every failure is a protocol error response.
    pub async fn handle(&self, req: Request<Bytes>) -> HttpResponse {
        let (parts, body) = req.into_parts();
        if body.len() > self.limits.max_body {
            return self.payload_too_large(parts.uri.path());
        }
        let path = parts.uri.path();
        if path == WELL_KNOWN_PATH || path == LEGACY_WELL_KNOWN_PATH {
            return card_response(&self.engine.card, &parts);
        }
        match binding_of(path) {
            Binding::JsonRpc if parts.method == Method::POST => crate::jsonrpc::handle(self, &parts, body).await,
            Binding::JsonRpc => {
                let mut resp = rest_error(&A2aError::new(
                    ErrorKind::MethodNotAllowed,
                    "the JSON-RPC endpoint takes POST requests",
                ));
                resp.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST"));
                resp
            }
            Binding::Rest => crate::rest::handle(self, &parts, body).await,
        }
    }

    /// The refusal for a body over the limit, in the shape of the path's binding.
    pub fn payload_too_large(&self, path: &str) -> HttpResponse {
        let err = A2aError::new(
            ErrorKind::PayloadTooLarge,
            format!("request body exceeds the limit of {} bytes", self.limits.max_body),
        );
        match binding_of(path) {
            Binding::JsonRpc => jsonrpc_error_response(&serde_json::Value::Null, &err),
            Binding::Rest => rest_error(&err),
        }
    }

    /// Authenticates the caller and reads the service parameters.
    pub(crate) fn call_context(&self, parts: &http::request::Parts, version: Version) -> Result<CallContext> {
        let query = parts.uri.query();
        let principal = self.engine.auth.authenticate(&parts.headers, query)?;
        let extensions = version::requested_extensions(&parts.headers, query);
        version::check_required_extensions(&self.engine.card.card.capabilities.extensions, &extensions)?;
        Ok(CallContext { principal, version, extensions, last_event_id: crate::sse::last_event_id(&parts.headers) })
    }
}

/// Serves the public card of `cards` (GET or HEAD) in the negotiated version, with
/// `Cache-Control`, a strong `ETag` (304 on `If-None-Match`), `Last-Modified` and `Vary`.
pub fn card_response(cards: &crate::card::CardService, parts: &http::request::Parts) -> HttpResponse {
    if parts.method != Method::GET && parts.method != Method::HEAD {
        let mut resp = rest_error(&A2aError::new(ErrorKind::MethodNotAllowed, "the agent card is served on GET"));
        resp.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return resp;
    }
    let version = match version::negotiate(&parts.headers, parts.uri.query()) {
        Ok(v) => v,
        Err(e) => return rest_error(&e),
    };
    let served = cards.served(version);
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

pub(crate) const JSON: &str = "application/json";

/// True for `application/json` and `application/*+json` (parameters allowed).
pub(crate) fn is_json_content_type(headers: &http::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or_default().trim().to_ascii_lowercase())
        .is_some_and(|ct| ct == JSON || (ct.starts_with("application/") && ct.ends_with("+json")))
}

pub(crate) fn json_response(status: StatusCode, body: Vec<u8>) -> HttpResponse {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, HeaderValue::from_static(JSON))
        .body(Body::Full(Bytes::from(body)))
        .unwrap_or_else(|_| internal_response())
}

/// Frames a stream of protocol events for `framing`, logging server-side failures.
pub(crate) fn frame_stream(
    events: crate::ops::ResponseStream,
    framing: crate::sse::Framing,
) -> BoxStream<'static, Bytes> {
    use futures::StreamExt;
    events
        .map(move |item| match item {
            Ok(item) => framing.event(item.seq, &item.event),
            Err(e) => {
                log_error(&e);
                framing.error(&e)
            }
        })
        .boxed()
}

/// Adds the [`crate::sse::TASK_SEQ_HEADER`] of a task result.
pub(crate) fn with_task_seq(mut resp: HttpResponse, seq: Option<u64>) -> HttpResponse {
    if let Some(seq) = seq {
        resp.headers_mut().insert(crate::sse::TASK_SEQ_HEADER, HeaderValue::from(seq));
    }
    resp
}

pub(crate) fn sse_response(stream: BoxStream<'static, Bytes>, keep_alive: std::time::Duration) -> HttpResponse {
    let stream = crate::sse::with_keepalive(stream, keep_alive);
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, crate::sse::CONTENT_TYPE)
        .header(header::CACHE_CONTROL, "no-cache")
        .header("x-accel-buffering", "no")
        .body(Body::Sse(stream))
        .unwrap_or_else(|_| internal_response())
}

fn internal_response() -> HttpResponse {
    let mut r = Response::new(Body::Full(Bytes::from_static(
        br#"{"error":{"code":500,"status":"INTERNAL","message":"Internal error"}}"#,
    )));
    *r.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
    r
}

/// Logs server-side failures once; client errors are the client's business.
pub(crate) fn log_error(err: &A2aError) {
    if err.spec().http_status >= 500 {
        tracing::error!(reason = err.spec().reason, message = %err.message, "request failed");
    }
}

/// An AIP-193 error response (HTTP+JSON binding).
pub fn rest_error(err: &A2aError) -> HttpResponse {
    log_error(err);
    let status = StatusCode::from_u16(err.spec().http_status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut resp = json_response(status, serde_json::to_vec(&err.to_rest()).unwrap_or_default());
    if err.kind == ErrorKind::Unauthenticated {
        resp.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("ApiKey"));
    }
    resp
}

/// A JSON-RPC error response. Protocol errors travel with HTTP 200 (the JSON-RPC convention);
/// refusals at the HTTP level (authentication, size, content type) keep their HTTP status.
pub fn jsonrpc_error_response(id: &serde_json::Value, err: &A2aError) -> HttpResponse {
    log_error(err);
    let status = match err.kind {
        ErrorKind::Unauthenticated => StatusCode::UNAUTHORIZED,
        ErrorKind::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        _ => StatusCode::OK,
    };
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": err.to_jsonrpc()});
    json_response(status, serde_json::to_vec(&body).unwrap_or_default())
}
