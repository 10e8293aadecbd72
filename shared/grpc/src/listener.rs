//! The gRPC listener (feature `grpc`): HTTP/2 from the same server as HTTP/1.1, under the same
//! limits: the one connection budget, the body deadline and the budget of request bodies in flight
//! ([`super::body::Admitted`]), authentication before the message is read (in
//! [`crate::A2aGrpc`]), and per connection:
//! - at most `max_streams` concurrent streams (`SETTINGS_MAX_CONCURRENT_STREAMS`), bounded header
//!   lists and reset floods (hyper's defaults for pending resets);
//! - an idle deadline: a connection with no call in flight for `header_timeout` (also one that
//!   never sends a request) gets a GOAWAY and is closed;
//! - a write deadline per stream: a response that handed a frame over and is not asked for the
//!   next within `write_timeout` (its client stopped granting flow-control window) drops the
//!   connection, and everything held for it; a stalled socket fails the same way (`io::Guarded`).

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future as _;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::body::{Frame, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use parking_lot::Mutex;
use tokio::net::TcpListener;
use tower_service::Service as _;

use a2a_http::inflight::{Budget, Held};
use a2a_http::server::{io, Server};
use a2a_protocol::error::A2aError;
use futures::future::BoxFuture;

/// What one connection's watchdog knows of it.
#[derive(Debug)]
struct Tracker {
    /// Calls from their start until their response body is done.
    in_flight: AtomicUsize,
    /// When the last call ended (or the connection opened).
    idle_since: Mutex<Instant>,
    /// Responses that handed a frame over and were not polled since, by when.
    stalled: Mutex<HashMap<u64, Instant>>,
    next: AtomicU64,
}

impl Tracker {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            in_flight: AtomicUsize::new(0),
            idle_since: Mutex::new(Instant::now()),
            stalled: Mutex::new(HashMap::new()),
            next: AtomicU64::new(0),
        })
    }

    fn enter(self: &Arc<Self>) -> Call {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        Call { tracker: self.clone(), id: self.next.fetch_add(1, Ordering::Relaxed) }
    }

    fn idle_for(&self) -> Option<Duration> {
        (self.in_flight.load(Ordering::Acquire) == 0).then(|| self.idle_since.lock().elapsed())
    }

    fn longest_stall(&self) -> Option<Duration> {
        self.stalled.lock().values().map(Instant::elapsed).max()
    }
}

/// One call on a connection, until its response body is dropped.
struct Call {
    tracker: Arc<Tracker>,
    id: u64,
}

impl Call {
    fn stalled(&self, stalled: bool) {
        let mut map = self.tracker.stalled.lock();
        if stalled {
            map.insert(self.id, Instant::now());
        } else {
            map.remove(&self.id);
        }
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        self.tracker.stalled.lock().remove(&self.id);
        *self.tracker.idle_since.lock() = Instant::now();
        self.tracker.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A response body that tells the watchdog when it waits on its client.
struct Watched {
    inner: tonic::body::Body,
    call: Call,
}

impl hyper::body::Body for Watched {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, tonic::Status>>> {
        // Polled again: the client took what it was given (hyper asks for the next frame only
        // once the previous one fits the client's window).
        self.call.stalled(false);
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled {
            if frame.is_data() {
                self.call.stalled(true);
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// What the watchdog decided about a connection.
enum Verdict {
    /// Idle too long: GOAWAY, then close after another idle period at most.
    Idle,
    /// The server stops: GOAWAY, then close after the grace period at most.
    Stop,
    /// A client that stopped reading: close now.
    Drop,
}

async fn watch(
    tracker: Arc<Tracker>,
    idle: Duration,
    write: Duration,
    stopping: tokio_util::sync::CancellationToken,
) -> Verdict {
    let tick = (idle.min(write) / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
    loop {
        tokio::select! {
            () = tokio::time::sleep(tick) => {}
            () = stopping.cancelled() => return Verdict::Stop,
        }
        if tracker.longest_stall().is_some_and(|d| d > write) {
            return Verdict::Drop;
        }
        if tracker.idle_for().is_some_and(|d| d > idle) {
            return Verdict::Idle;
        }
    }
}

/// Serves the gRPC binding (`lf.a2a.v1.A2AService`), gRPC health and server reflection on
/// `listener` from `server` (its connection cap, limits and budgets are shared with its HTTP
/// listener) until `shutdown` resolves, then drains connections for up to the grace period.
pub async fn serve(
    server: Arc<Server>,
    listener: TcpListener,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<(), String> {
    let routes = crate::routes(server.service().clone()).await?;
    let mut shutdown = std::pin::pin!(shutdown);
    let open = Arc::new(AtomicUsize::new(0));
    loop {
        tokio::select! {
            accepted = server.next_connection(&listener, "gRPC") => {
                // Past the cap the connection is closed: an HTTP/2 client reads no HTTP/1.1 answer.
                let Some(Ok((stream, _, permit))) = accepted else { continue };
                let server = server.clone();
                let (routes, open) = (routes.clone(), open.clone());
                open.fetch_add(1, Ordering::AcqRel);
                tokio::spawn(async move {
                    connection(server, stream, routes).await;
                    open.fetch_sub(1, Ordering::AcqRel);
                    drop(permit);
                });
            }
            () = &mut shutdown => break,
        }
    }
    drop(listener);
    server.stopping().cancel();
    let deadline = Instant::now() + server.limits().grace;
    while open.load(Ordering::Acquire) > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

async fn connection(server: Arc<Server>, stream: tokio::net::TcpStream, routes: tonic::service::Routes) {
    let limits = server.limits();
    let tracker = Tracker::new();
    let io = TokioIo::new(io::Guarded::plain(stream, limits.write_timeout));
    let (budget, max_body, body_timeout) =
        (server.service().requests.clone(), server.service().limits.max_body, limits.body_timeout);
    let calls = tracker.clone();
    let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        let call = calls.enter();
        let (parts, body) = req.into_parts();
        let body = Admitted::new(body, budget.clone(), max_body, body_timeout);
        let req = hyper::Request::from_parts(parts, tonic::body::Body::new(body));
        let mut routes = routes.clone();
        async move {
            std::future::poll_fn(|cx| {
                tower_service::Service::<hyper::Request<tonic::body::Body>>::poll_ready(&mut routes, cx)
            })
            .await?;
            let response = routes.call(req).await?;
            Ok::<_, Infallible>(response.map(|inner| Watched { inner, call }))
        }
    });
    let conn = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
        .timer(TokioTimer::new())
        .max_concurrent_streams(limits.max_streams)
        .max_header_list_size(64 * 1024)
        .serve_connection(io, service);
    let mut conn = std::pin::pin!(conn);
    let verdict = tokio::select! {
        ended = conn.as_mut() => {
            if let Err(e) = ended {
                tracing::debug!(error = %e, "gRPC connection ended with an error");
            }
            return;
        }
        verdict = watch(tracker, limits.header_timeout, limits.write_timeout, server.stopping().clone()) => verdict,
    };
    let grace = match verdict {
        Verdict::Drop => {
            tracing::debug!("gRPC client stopped reading its responses: connection dropped");
            return;
        }
        Verdict::Idle => limits.header_timeout,
        Verdict::Stop => limits.grace,
    };
    conn.as_mut().graceful_shutdown();
    let _ = tokio::time::timeout(grace, conn.as_mut()).await;
}

/// An HTTP/2 request body (gRPC) read within the same limits, as a body tonic decodes from: past
/// `max` bytes, past its deadline, or when the budget stays full it fails with the status the
/// caller gets (RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED). Its share is given back when it is dropped
/// (once the message is decoded).
pub struct Admitted {
    inner: Incoming,
    budget: Budget,
    held: Held,
    seen: usize,
    max: usize,
    deadline: Pin<Box<tokio::time::Sleep>>,
    /// A frame that waits for its share.
    waiting: Option<(Frame<Bytes>, BoxFuture<'static, a2a_protocol::error::Result<Held>>)>,
}

impl Admitted {
    pub fn new(inner: Incoming, budget: Budget, max: usize, within: std::time::Duration) -> Self {
        Self {
            inner,
            budget,
            held: Held::none(),
            seen: 0,
            max,
            deadline: Box::pin(tokio::time::sleep(within)),
            waiting: None,
        }
    }

    fn late(&self) -> tonic::Status {
        crate::status(A2aError::new(
            a2a_protocol::error::ErrorKind::RequestTimeout,
            "the request message did not arrive within the body deadline",
        ))
    }
}

impl hyper::body::Body for Admitted {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, tonic::Status>>> {
        let this = &mut *self;
        if let Some((_, share)) = &mut this.waiting {
            return match share.as_mut().poll(cx) {
                Poll::Ready(Ok(more)) => {
                    this.held.merge(more);
                    Poll::Ready(this.waiting.take().map(|(frame, _)| Ok(frame)))
                }
                Poll::Ready(Err(e)) => Poll::Ready(Some(Err(crate::status(e)))),
                Poll::Pending if this.deadline.as_mut().poll(cx).is_ready() => Poll::Ready(Some(Err(this.late()))),
                Poll::Pending => Poll::Pending,
            };
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                let Some(data) = frame.data_ref() else { return Poll::Ready(Some(Ok(frame))) };
                this.seen += data.len();
                // The gRPC frame's 5-byte prefix comes on top of the message.
                if this.seen > this.max + 5 {
                    let err = A2aError::new(
                        a2a_protocol::error::ErrorKind::PayloadTooLarge,
                        format!("request message exceeds the limit of {} bytes", this.max),
                    );
                    return Poll::Ready(Some(Err(crate::status(err))));
                }
                let need = this.seen.saturating_sub(this.held.bytes());
                if need == 0 {
                    return Poll::Ready(Some(Ok(frame)));
                }
                let (budget, want) = (this.budget.clone(), need);
                this.waiting = Some((frame, Box::pin(async move { budget.hold(want).await })));
                self.poll_frame(cx)
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(tonic::Status::from_error(Box::new(e))))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending if this.deadline.as_mut().poll(cx).is_ready() => Poll::Ready(Some(Err(this.late()))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.waiting.is_none() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}
