//! The embedded HTTP/1.1 server (feature `server`): hyper in front of [`Service::handle`], with the
//! body limit enforced while reading, SSE bodies streamed as they are produced, and graceful
//! shutdown (in-flight requests finish; open streams are cut after a grace period).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{combinators::UnsyncBoxBody, BodyExt, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;

use crate::http::{Body, Service};

type OutBody = UnsyncBoxBody<Bytes, Infallible>;

async fn serve_one(
    service: Arc<Service>,
    req: hyper::Request<Incoming>,
) -> Result<hyper::Response<OutBody>, Infallible> {
    let (parts, body) = req.into_parts();
    let bytes = match Limited::new(body, service.limits.max_body).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => {
            return Ok(to_hyper(service.payload_too_large(parts.uri.path())));
        }
        Err(e) => {
            tracing::debug!(error = %e, "client went away while sending the body");
            Bytes::new()
        }
    };
    let response = service.handle(hyper::Request::from_parts(parts, bytes)).await;
    Ok(to_hyper(response))
}

fn to_hyper(response: http::Response<Body>) -> hyper::Response<OutBody> {
    let (parts, body) = response.into_parts();
    let body = match body {
        Body::Full(b) => Full::new(b).boxed_unsync(),
        Body::Sse(stream) => {
            BodyExt::boxed_unsync(StreamBody::new(stream.map(|b| Ok::<_, Infallible>(Frame::data(b)))))
        }
    };
    hyper::Response::from_parts(parts, body)
}

/// Serves until `shutdown` resolves, then drains connections for up to `grace`.
pub async fn serve(
    listener: TcpListener,
    service: Arc<Service>,
    shutdown: impl std::future::Future<Output = ()>,
    grace: Duration,
) -> std::io::Result<()> {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(x) => x,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let service = service.clone();
                let conn = http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(Duration::from_secs(30))
                    .keep_alive(true)
                    .serve_connection(TokioIo::new(stream), hyper::service::service_fn(move |req| serve_one(service.clone(), req)));
                let conn = graceful.watch(conn);
                tokio::spawn(async move {
                    if let Err(e) = conn.await {
                        tracing::debug!(%peer, error = %e, "connection ended with an error");
                    }
                });
            }
            () = &mut shutdown => break,
        }
    }
    drop(listener);
    tracing::info!("shutting down: draining open connections");
    if tokio::time::timeout(grace, graceful.shutdown()).await.is_err() {
        tracing::warn!("open connections did not finish within {grace:?}; closing them");
    }
    Ok(())
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
