//! The embedded server (feature `server`): hyper in front of [`Service::handle`] on HTTP/1.1, and
//! the state its listeners share with the gRPC listener on HTTP/2 (in `a2a-grpc`), with what a
//! public endpoint needs to survive its clients, the same on both listeners:
//! - one cap on concurrent connections for both (past it, HTTP/1.1 gets a `503` with `Retry-After`
//!   and HTTP/2 a closed connection), never above what the process's descriptor limit allows;
//! - deadlines: request headers, the request body (all of it, so a trickle is cut too), idle
//!   connections, and writes (a client that stops reading a response or a stream is dropped, and
//!   the bytes held for it freed);
//! - authentication before a large body is read (a caller the service refuses sends at most
//!   [`UNAUTHENTICATED_BODY`] bytes over HTTP/1.1, nothing over gRPC);
//! - the service's budget of request bytes in flight (`Limits::request_bytes`): a body takes its
//!   share before it is buffered; past the budget a request waits for a bounded time, then gets a
//!   503 ([`crate::inflight`]);
//! - strict HTTP/1.1 framing (RFC 9112): `Content-Length` with `Transfer-Encoding` is refused, and
//!   any transfer coding other than `chunked` (501); a request without exactly one `Host` is a
//!   `400`; a declared length over the limit is a `413` at once; a body that does not arrive intact
//!   is a `400` and nothing runs;
//! - graceful shutdown: the listener closes, in-flight requests finish, open SSE streams end cleanly
//!   (final chunk) and connections get a grace period.

mod body;
mod coalesce;
pub mod io;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http::{header, StatusCode};
use http_body_util::{combinators::UnsyncBoxBody, BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::routes::Routes;
use crate::service::{binding_of, Authenticated, Binding};
use crate::service::{Body, Service};
use a2a_protocol::error::{A2aError, ErrorKind};

type OutBody = UnsyncBoxBody<Bytes, Infallible>;

/// Most body bytes read from a caller the service does not authenticate (its refusal echoes the
/// JSON-RPC id of a small request; a larger body is not read at all).
pub const UNAUTHENTICATED_BODY: usize = 64 * 1024;

/// Connection-level limits of the embedded server.
#[derive(Debug, Clone)]
pub struct ServerLimits {
    /// Concurrent connections, both listeners together; past it new ones are turned away.
    pub max_connections: usize,
    /// Time to receive a request's headers, and the longest an idle connection is kept.
    pub header_timeout: Duration,
    /// Time to receive a whole request body.
    pub body_timeout: Duration,
    /// Longest a write to the client may wait (a client that does not read is dropped).
    pub write_timeout: Duration,
    /// How long open connections get to finish at shutdown.
    pub grace: Duration,
    /// Concurrent streams one HTTP/2 (gRPC) connection may open.
    pub max_streams: u32,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            max_connections: 1024,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            write_timeout: Duration::from_secs(30),
            grace: Duration::from_secs(5),
            max_streams: DEFAULT_MAX_STREAMS,
        }
    }
}

/// Default of [`ServerLimits::max_streams`].
pub const DEFAULT_MAX_STREAMS: u32 = 32;
/// Descriptors kept free of client connections (listeners, the store, outbound calls, logs).
const RESERVED_DESCRIPTORS: usize = 64;

/// The embedded server: what both listeners share (the connection cap, the shutdown of open
/// streams; the budgets of bytes in flight are the service's).
pub struct Server {
    service: Arc<Service>,
    limits: ServerLimits,
    connections: Arc<Semaphore>,
    stopping: CancellationToken,
    routes: Option<Arc<dyn Routes>>,
}

impl Server {
    pub fn new(service: Arc<Service>, limits: ServerLimits) -> Arc<Self> {
        Self::with_routes(service, limits, None)
    }

    /// A server that also serves `routes` (paths they own go to them, not to the A2A service).
    pub fn with_routes(service: Arc<Service>, limits: ServerLimits, routes: Option<Arc<dyn Routes>>) -> Arc<Self> {
        let max_connections = descriptor_room(limits.max_connections.max(1));
        let limits = ServerLimits { max_connections, ..limits };
        Arc::new(Self {
            connections: Arc::new(Semaphore::new(max_connections)),
            service,
            limits,
            stopping: CancellationToken::new(),
            routes,
        })
    }

    /// The limits in force (`max_connections` as the descriptor limit allows).
    pub fn limits(&self) -> &ServerLimits {
        &self.limits
    }

    /// The service both listeners serve.
    pub fn service(&self) -> &Arc<Service> {
        &self.service
    }

    /// Cancelled when the server stops: open streams end, listeners drain.
    pub fn stopping(&self) -> &CancellationToken {
        &self.stopping
    }
}

/// The connection cap the process's descriptor limit allows: the soft limit is raised to the hard
/// one first, and a cap above what is left after [`RESERVED_DESCRIPTORS`] is lowered (a cap past it
/// would let idle connections make `accept` fail for everyone instead of being turned away).
fn descriptor_room(wanted: usize) -> usize {
    #[cfg(unix)]
    {
        use rustix::process::{getrlimit, setrlimit, Resource};
        let mut limit = getrlimit(Resource::Nofile);
        if let (Some(current), Some(maximum)) = (limit.current, limit.maximum) {
            if current < maximum
                && setrlimit(
                    Resource::Nofile,
                    rustix::process::Rlimit { current: Some(maximum), maximum: Some(maximum) },
                )
                .is_ok()
            {
                limit.current = Some(maximum);
            }
        }
        if let Some(current) = limit.current.and_then(|c| usize::try_from(c).ok()) {
            let room = current.saturating_sub(RESERVED_DESCRIPTORS).max(1);
            if room < wanted {
                tracing::warn!(
                    wanted,
                    allowed = room,
                    descriptors = current,
                    "connection cap lowered to the descriptor limit"
                );
                return room;
            }
        }
    }
    wanted
}

/// A refusal before the service saw the request, in the shape of the path's binding, with `status`
/// (a transport-level refusal keeps its HTTP status on JSON-RPC too).
fn refusal(path: &str, err: &A2aError, status: StatusCode) -> hyper::Response<OutBody> {
    let resp = match binding_of(path) {
        Binding::JsonRpc => crate::service::jsonrpc_error_response(&a2a_protocol::rpc_id::RpcId::null(), err),
        Binding::Rest => crate::service::rest_error(err),
    };
    let mut resp = to_hyper(resp, &CancellationToken::new());
    *resp.status_mut() = status;
    // The body was not read (or not all of it): the connection cannot be reused.
    resp.headers_mut().insert(header::CONNECTION, http::HeaderValue::from_static("close"));
    resp
}

/// RFC 9112 §6.1 and §6.3: `Transfer-Encoding` with `Content-Length` is a request-smuggling shape
/// (hyper keeps only one of them, so the connection's watcher reports it); a transfer coding other
/// than `chunked` is not understood.
fn framing_error(headers: &http::HeaderMap, both_lengths: bool) -> Option<(StatusCode, A2aError)> {
    if both_lengths {
        let err = A2aError::invalid_request("Transfer-Encoding and Content-Length together are not accepted");
        return Some((StatusCode::BAD_REQUEST, err));
    }
    let te: Vec<&str> = headers.get_all(header::TRANSFER_ENCODING).iter().filter_map(|v| v.to_str().ok()).collect();
    if te.is_empty() {
        return None;
    }
    let codings: Vec<String> =
        te.iter().flat_map(|v| v.split(',')).map(|c| c.trim().to_ascii_lowercase()).filter(|c| !c.is_empty()).collect();
    if codings != ["chunked"] {
        let err = A2aError::new(
            ErrorKind::InvalidRequest,
            format!("transfer coding {:?} is not supported; only chunked is", codings.join(", ")),
        );
        return Some((StatusCode::NOT_IMPLEMENTED, err));
    }
    None
}

/// RFC 9112 §3.2: an HTTP/1.1 request carries exactly one `Host` (HTTP/1.0 may carry none).
fn host_error(parts: &http::request::Parts) -> Option<A2aError> {
    let hosts = parts.headers.get_all(header::HOST).iter().count();
    match hosts {
        0 if parts.version == http::Version::HTTP_11 => {
            Some(A2aError::invalid_request("an HTTP/1.1 request must carry a Host header"))
        }
        0 | 1 => None,
        _ => Some(A2aError::invalid_request("a request must carry one Host header, not several")),
    }
}

/// Serves one request in its SERVER span (trace context from its headers).
async fn serve_one(
    server: Arc<Server>,
    framing: Arc<io::Framing>,
    req: hyper::Request<Incoming>,
) -> Result<hyper::Response<OutBody>, Infallible> {
    let span = crate::service::request_span(req.method(), req.uri().path(), req.headers());
    let Ok(response) = serve_request(server, framing, req).instrument(span.clone()).await;
    crate::service::answered(&span, &response);
    Ok(response)
}

async fn serve_request(
    server: Arc<Server>,
    framing: Arc<io::Framing>,
    req: hyper::Request<Incoming>,
) -> Result<hyper::Response<OutBody>, Infallible> {
    let both_lengths = framing.next_request_has_both_lengths();
    let (mut parts, body) = req.into_parts();
    let path = parts.uri.path().to_string();
    if let Some((status, err)) = framing_error(&parts.headers, both_lengths) {
        return Ok(refusal(&path, &err, status));
    }
    if let Some(err) = host_error(&parts) {
        return Ok(refusal(&path, &err, StatusCode::BAD_REQUEST));
    }
    if let Some(routes) = server.routes.clone().filter(|r| r.owns(&path)) {
        return Ok(serve_routes(&server, routes.as_ref(), parts, body).await);
    }
    let service = &server.service;
    let limits = &server.limits;
    // A caller the service will refuse does not get to send a large body first.
    let mut max_body = service.limits.max_body;
    // The card is public: a card GET pays for no credential check (a bearer token's signature).
    if a2a_engine::card::is_public_path(&path) {
        let response = service.handle(hyper::Request::from_parts(parts, Bytes::new())).await;
        return Ok(to_hyper(response, &server.stopping));
    }
    let outcome = service.authenticate(&parts).await;
    let declared =
        parts.headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.trim().parse::<usize>().ok());
    if let Err(err) = &outcome {
        if declared.is_none_or(|n| n > UNAUTHENTICATED_BODY) && has_body(&parts) {
            let status = StatusCode::from_u16(err.spec().http_status).unwrap_or(StatusCode::UNAUTHORIZED);
            return Ok(refusal(&path, err, status));
        }
        max_body = max_body.min(UNAUTHENTICATED_BODY);
    }
    parts.extensions.insert(Authenticated(outcome));
    let too_large = |server: &Server| {
        let mut resp = to_hyper(server.service.payload_too_large(&path), &server.stopping);
        resp.headers_mut().insert(header::CONNECTION, http::HeaderValue::from_static("close"));
        resp
    };
    // A declared length over the limit is refused before a byte of the body is awaited.
    if declared.is_some_and(|n| n > max_body) {
        return Ok(too_large(&server));
    }
    let read = tokio::time::timeout(limits.body_timeout, body::read(body, max_body, declared, &service.requests)).await;
    let (bytes, held) = match read {
        Ok(Ok(read)) => read,
        Ok(Err(body::Refused::TooLarge)) => return Ok(too_large(&server)),
        Ok(Err(body::Refused::Broken(e))) => {
            tracing::debug!(error = %e, "request body broken or cut short; nothing runs");
            let err = A2aError::invalid_request("the request body did not arrive intact");
            return Ok(refusal(&path, &err, StatusCode::BAD_REQUEST));
        }
        Ok(Err(body::Refused::Busy(err))) => {
            let mut resp = refusal(&path, &err, StatusCode::SERVICE_UNAVAILABLE);
            resp.headers_mut().insert(header::RETRY_AFTER, http::HeaderValue::from_static("1"));
            return Ok(resp);
        }
        Err(_) => {
            let err = A2aError::new(
                ErrorKind::RequestTimeout,
                format!("the request body did not arrive within {} s", limits.body_timeout.as_secs()),
            );
            return Ok(refusal(&path, &err, StatusCode::REQUEST_TIMEOUT));
        }
    };
    let response = service.handle(hyper::Request::from_parts(parts, bytes)).await;
    drop(held);
    Ok(to_hyper(response, &server.stopping))
}

/// A request for the extra [`Routes`]: authenticated by the service unless the path is public (a
/// caller the service refuses gets its refusal), its body read within the routes' limit.
async fn serve_routes(
    server: &Server,
    routes: &dyn Routes,
    parts: http::request::Parts,
    body: Incoming,
) -> hyper::Response<OutBody> {
    let path = parts.uri.path().to_string();
    let caller = match crate::routes::caller(&server.service, routes, &parts).await {
        Ok(caller) => caller,
        Err(err) => {
            let status = StatusCode::from_u16(err.spec().http_status).unwrap_or(StatusCode::UNAUTHORIZED);
            return refusal(&path, &err, status);
        }
    };
    let max_body = routes.max_body();
    let declared =
        parts.headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.trim().parse::<usize>().ok());
    let limit = || {
        let err =
            A2aError::new(ErrorKind::PayloadTooLarge, format!("request body exceeds the limit of {max_body} bytes"));
        refusal(&path, &err, StatusCode::PAYLOAD_TOO_LARGE)
    };
    if declared.is_some_and(|n| n > max_body) {
        return limit();
    }
    let read = body::read(body, max_body, declared, &server.service.requests);
    let (bytes, held) = match tokio::time::timeout(server.limits.body_timeout, read).await {
        Ok(Ok(read)) => read,
        Ok(Err(body::Refused::TooLarge)) => return limit(),
        Ok(Err(body::Refused::Busy(err))) => return refusal(&path, &err, StatusCode::SERVICE_UNAVAILABLE),
        Ok(Err(body::Refused::Broken(_))) | Err(_) => {
            let err = A2aError::invalid_request("the request body did not arrive intact");
            return refusal(&path, &err, StatusCode::BAD_REQUEST);
        }
    };
    let response = routes.handle(hyper::Request::from_parts(parts, bytes), caller).await;
    drop(held);
    to_hyper(response, &server.stopping)
}

fn has_body(parts: &http::request::Parts) -> bool {
    parts.headers.contains_key(header::TRANSFER_ENCODING)
        || parts.headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).is_some_and(|v| v.trim() != "0")
}

/// The response for hyper; an SSE body ends (cleanly, with its final chunk) at shutdown.
fn to_hyper(response: http::Response<Body>, shutdown: &CancellationToken) -> hyper::Response<OutBody> {
    let (parts, body) = response.into_parts();
    let body = match body {
        Body::Full(b) => Full::new(b).boxed_unsync(),
        Body::Sse(stream) => {
            let stop = shutdown.clone().cancelled_owned();
            let frames = coalesce::Coalesce::new(stream).take_until(stop).map(|b| Ok::<_, Infallible>(Frame::data(b)));
            BodyExt::boxed_unsync(StreamBody::new(frames))
        }
    };
    hyper::Response::from_parts(parts, body)
}

/// The answer to a connection past the cap, written without hyper (nothing of the request is read).
async fn turn_away(mut stream: tokio::net::TcpStream) {
    use tokio::io::AsyncWriteExt;
    let body = br#"{"error":{"code":503,"status":"UNAVAILABLE","message":"too many connections; retry shortly"}}"#;
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    let write = async {
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body).await?;
        stream.shutdown().await
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), write).await;
}

/// A connection within the cap, with its share of it.
pub type Admitted = (tokio::net::TcpStream, SocketAddr, tokio::sync::OwnedSemaphorePermit);

impl Server {
    /// The next connection of `listener`: within the cap, with its permit (`Ok`), or past it (`Err`:
    /// to be turned away); `None` when accepting failed (after a short pause, so a failing listener
    /// does not spin).
    pub async fn next_connection(
        &self,
        listener: &TcpListener,
        which: &str,
    ) -> Option<Result<Admitted, tokio::net::TcpStream>> {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!(listener = which, error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                return None;
            }
        };
        let Ok(permit) = self.connections.clone().try_acquire_owned() else {
            tracing::warn!(listener = which, %peer, max = self.limits.max_connections, "connection refused: too many open connections");
            return Some(Err(stream));
        };
        let _ = stream.set_nodelay(true);
        Some(Ok((stream, peer, permit)))
    }

    /// Serves HTTP/1.1 on `listener` until `shutdown` resolves, then drains connections for up to
    /// the grace period.
    pub async fn serve_http(
        self: Arc<Self>,
        listener: TcpListener,
        shutdown: impl std::future::Future<Output = ()>,
    ) -> std::io::Result<()> {
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        let limits = self.limits.clone();
        let mut shutdown = std::pin::pin!(shutdown);
        loop {
            tokio::select! {
                accepted = self.next_connection(&listener, "HTTP") => {
                    let (stream, peer, permit) = match accepted {
                        Some(Ok(admitted)) => admitted,
                        Some(Err(turned_away)) => {
                            tokio::spawn(turn_away(turned_away));
                            continue;
                        }
                        None => continue,
                    };
                    let server = self.clone();
                    let (guarded, framing) = io::Guarded::new(stream, limits.write_timeout);
                    let io = TokioIo::new(guarded);
                    let conn = http1::Builder::new()
                        .timer(TokioTimer::new())
                        .header_read_timeout(limits.header_timeout)
                        .keep_alive(true)
                        .serve_connection(io, hyper::service::service_fn(move |req| {
                            serve_one(server.clone(), framing.clone(), req)
                        }));
                    let conn = graceful.watch(conn);
                    tokio::spawn(async move {
                        if let Err(e) = conn.await {
                            tracing::debug!(%peer, error = %e, "connection ended with an error");
                        }
                        drop(permit);
                    });
                }
                () = &mut shutdown => break,
            }
        }
        drop(listener);
        tracing::info!("shutting down: draining open connections, ending open streams");
        self.stopping.cancel();
        if tokio::time::timeout(limits.grace, graceful.shutdown()).await.is_err() {
            tracing::warn!("open connections did not finish within {:?}; closing them", limits.grace);
        }
        Ok(())
    }
}

/// Serves HTTP/1.1 on `listener` with `limits` until `shutdown` resolves (a [`Server`] of its
/// own; a2a-local builds one [`Server`] for both of its listeners).
pub async fn serve(
    listener: TcpListener,
    service: Arc<Service>,
    shutdown: impl std::future::Future<Output = ()>,
    limits: ServerLimits,
) -> std::io::Result<()> {
    Server::new(service, limits).serve_http(listener, shutdown).await
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}

/// Binds `addr`, for callers that want the bound port (e.g. `127.0.0.1:0` in tests).
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}
