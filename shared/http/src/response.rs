//! How results and errors become HTTP responses: the response body type, JSON and SSE responses,
//! and the two error shapes (AIP-193 for HTTP+JSON, JSON-RPC error objects). Every binding and the
//! edge build their responses here; `error.rs` decides the codes, this module writes the bytes.

use bytes::Bytes;
use futures::stream::BoxStream;
use http::{header, HeaderValue, Response, StatusCode};

use crate::inflight::{held_bytes, Budget, Held};
use a2a_protocol::error::{A2aError, ErrorKind};
use a2a_protocol::rpc_id::{error_body, RpcId};

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

pub const JSON: &str = "application/json";

/// True for `application/json` and `application/*+json` (parameters allowed).
pub(crate) fn is_json_content_type(headers: &http::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or_default().trim().to_ascii_lowercase())
        .is_some_and(|ct| ct == JSON || (ct.starts_with("application/") && ct.ends_with("+json")))
}

/// ContentTypeNotSupported for a request body that is not JSON (spec §5.4: -32005 / HTTP 415).
pub fn require_json(headers: &http::HeaderMap) -> a2a_protocol::error::Result<()> {
    if is_json_content_type(headers) {
        return Ok(());
    }
    let got = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("none");
    Err(A2aError::new(ErrorKind::ContentTypeNotSupported, format!("Content-Type must be application/json (got {got})"))
        .with("contentType", got.to_string()))
}

pub fn json_response(status: StatusCode, body: impl Into<Bytes>) -> HttpResponse {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, HeaderValue::from_static(JSON))
        .body(Body::Full(body.into()))
        .unwrap_or_else(|_| internal_response())
}

/// Frames a stream of protocol events for `framing`, logging server-side failures. A large event
/// is held against the answers budget (`answers`) from before it is encoded until it is written; one
/// that cannot get its share in time ends the stream with a ResourceExhausted error event.
pub(crate) fn frame_stream(
    events: a2a_engine::ops::ResponseStream,
    framing: a2a_protocol::sse::Framing,
    answers: &Budget,
) -> BoxStream<'static, Bytes> {
    use futures::StreamExt;
    let answers = answers.clone();
    events
        .then(move |item| {
            let (framing, answers) = (framing.clone(), answers.clone());
            async move {
                let item = match item {
                    Ok(item) => item,
                    Err(e) => {
                        log_error(&e);
                        return (framing.error(&e), true);
                    }
                };
                match hold_event(&answers, &item.event).await {
                    Ok(None) => (framing.shared(&item), true),
                    Ok(Some(mut held)) => {
                        let bytes = framing.shared(&item);
                        drop(item);
                        match answers.fit(&mut held, bytes.len()).await {
                            Ok(()) => (held_bytes(bytes, held), true),
                            Err(e) => (framing.error(&e), false),
                        }
                    }
                    Err(e) => (framing.error(&e), false),
                }
            }
        })
        .scan(true, |open, (bytes, ok)| {
            // After a refusal the stream ends with its error event.
            let item = (*open).then_some(bytes);
            *open = ok;
            futures::future::ready(item)
        })
        .boxed()
}

/// The share of the answers budget a stream event needs before it is encoded (`None`: too small to
/// count).
pub async fn hold_event(
    answers: &Budget,
    event: &a2a_protocol::types::StreamResponse,
) -> a2a_protocol::error::Result<Option<Held>> {
    let estimate = a2a_protocol::types::size::answer_size(event);
    if estimate < crate::inflight::SMALL_ANSWER {
        return Ok(None);
    }
    answers.hold(estimate).await.map(Some)
}

/// Adds the [`a2a_protocol::sse::TASK_SEQ_HEADER`] of a task result.
pub(crate) fn with_task_seq(mut resp: HttpResponse, seq: Option<u64>) -> HttpResponse {
    if let Some(seq) = seq {
        resp.headers_mut().insert(a2a_protocol::sse::TASK_SEQ_HEADER, HeaderValue::from(seq));
    }
    resp
}

pub(crate) fn sse_response(stream: BoxStream<'static, Bytes>, keep_alive: std::time::Duration) -> HttpResponse {
    let stream = with_keepalive(stream, keep_alive);
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, a2a_protocol::sse::CONTENT_TYPE)
        .header(header::CACHE_CONTROL, "no-cache")
        .header("x-accel-buffering", "no")
        .body(Body::Sse(stream))
        .unwrap_or_else(|_| internal_response())
}

pub fn internal_response() -> HttpResponse {
    let mut r = Response::new(Body::Full(Bytes::from_static(
        br#"{"error":{"code":500,"status":"INTERNAL","message":"Internal error"}}"#,
    )));
    *r.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
    r
}

/// Logs server-side failures once (client errors are the client's business) and names the error on
/// the request's span.
pub(crate) fn log_error(err: &A2aError) {
    a2a_telemetry::spans::error(err.spec().reason);
    if err.spec().http_status >= 500 {
        tracing::error!(reason = err.spec().reason, message = %err.message, "request failed");
    }
}

/// The HTTP status a refusal keeps even on JSON-RPC, where protocol errors travel with 200.
fn http_level_status(err: &A2aError) -> Option<StatusCode> {
    match err.kind {
        ErrorKind::Unauthenticated
        | ErrorKind::PermissionDenied
        | ErrorKind::PayloadTooLarge
        | ErrorKind::ContentTypeNotSupported
        | ErrorKind::RequestTimeout => StatusCode::from_u16(err.spec().http_status).ok(),
        _ => None,
    }
}

/// The headers some refusals carry: `WWW-Authenticate` on 401 (every 401, naming a scheme) and on
/// 403 when the authenticator gave a challenge (RFC 6750 `insufficient_scope`), `Allow` on 405
/// (from the error's `allow` metadata).
fn with_refusal_headers(mut resp: HttpResponse, err: &A2aError) -> HttpResponse {
    match err.kind {
        ErrorKind::Unauthenticated | ErrorKind::PermissionDenied => {
            let headers = resp.headers_mut();
            for challenge in &err.challenges {
                if let Ok(value) = HeaderValue::from_str(challenge) {
                    headers.append(header::WWW_AUTHENTICATE, value);
                }
            }
            if err.kind == ErrorKind::Unauthenticated && !headers.contains_key(header::WWW_AUTHENTICATE) {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("ApiKey"));
            }
        }
        ErrorKind::MethodNotAllowed => {
            if let Some(allow) = err.metadata.get("allow").and_then(|a| HeaderValue::from_str(a).ok()) {
                resp.headers_mut().insert(header::ALLOW, allow);
            }
        }
        _ => {}
    }
    resp
}

/// An AIP-193 error response (HTTP+JSON binding).
pub fn rest_error(err: &A2aError) -> HttpResponse {
    log_error(err);
    let status = StatusCode::from_u16(err.spec().http_status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    with_refusal_headers(json_response(status, serde_json::to_vec(&err.to_rest()).unwrap_or_default()), err)
}

/// A JSON-RPC error response. Protocol errors travel with HTTP 200 (the JSON-RPC convention);
/// refusals at the HTTP level (authentication, size, content type) keep their HTTP status.
pub fn jsonrpc_error_response(id: &RpcId, err: &A2aError) -> HttpResponse {
    log_error(err);
    let status = http_level_status(err).unwrap_or(StatusCode::OK);
    with_refusal_headers(json_response(status, error_body(id, &err.to_jsonrpc())), err)
}

/// A JSON-RPC error as a one-event SSE stream, for clients that opened a stream and read only
/// event streams (0.3 `message/stream`, `tasks/resubscribe`). HTTP-level refusals stay plain.
pub fn jsonrpc_stream_error_response(id: &RpcId, err: &A2aError, keep_alive: std::time::Duration) -> HttpResponse {
    if http_level_status(err).is_some() {
        return jsonrpc_error_response(id, err);
    }
    log_error(err);
    let framing = a2a_protocol::sse::Framing::JsonRpc { id: id.clone(), v03: true };
    let frame = framing.error(err);
    sse_response(Box::pin(futures::stream::once(async move { frame })), keep_alive)
}

/// Interleaves keep-alive comments into an SSE byte stream whenever it is idle for `every`.
#[cfg(any(feature = "runtime", feature = "server"))]
pub fn with_keepalive(inner: BoxStream<'static, Bytes>, every: std::time::Duration) -> BoxStream<'static, Bytes> {
    use futures::StreamExt;
    let state = (inner, false);
    futures::stream::unfold(state, move |(mut inner, done)| async move {
        if done {
            return None;
        }
        match tokio::time::timeout(every, inner.next()).await {
            Ok(Some(bytes)) => Some((bytes, (inner, false))),
            Ok(None) => None,
            Err(_) => Some((Bytes::from_static(a2a_protocol::sse::KEEP_ALIVE), (inner, false))),
        }
    })
    .boxed()
}

/// Without a runtime there is no timer: the stream passes through unchanged.
#[cfg(not(any(feature = "runtime", feature = "server")))]
pub fn with_keepalive(inner: BoxStream<'static, Bytes>, _every: std::time::Duration) -> BoxStream<'static, Bytes> {
    inner
}
