//! Request bodies within the server's limits: at most `max` bytes, all of them within the body
//! deadline, and every byte held against the server-wide budget of request bodies in flight
//! ([`crate::inflight`]) from before it is buffered until the request is done with it. A body
//! that declares its length takes its whole share before the first byte is read; a chunked one
//! grows its share as it arrives.

use std::future::Future as _;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use futures::future::BoxFuture;
use http_body_util::BodyExt;
use hyper::body::{Frame, Incoming};

use crate::error::A2aError;
use crate::inflight::{Budget, Held};

/// Why a body was not read.
#[derive(Debug)]
pub enum Refused {
    TooLarge,
    /// Cut short or malformed.
    Broken(hyper::Error),
    /// The budget of bodies in flight stayed full.
    Busy(A2aError),
}

/// The first bytes buffered for a chunked body (it grows as it arrives).
const FIRST_BUFFER: usize = 64 * 1024;

/// Reads a whole HTTP/1.1 body of at most `max` bytes (the caller bounds it in time).
pub async fn read(
    mut body: Incoming,
    max: usize,
    declared: Option<usize>,
    budget: &Budget,
) -> Result<(Bytes, Held), Refused> {
    let mut held = match declared {
        Some(n) if n > max => return Err(Refused::TooLarge),
        Some(n) => budget.hold(n).await.map_err(Refused::Busy)?,
        None => Held::none(),
    };
    // A declared length is allocated at once (its share is held already; pages not yet written
    // are not resident), so the body is never copied as it grows.
    let mut buf = BytesMut::with_capacity(declared.unwrap_or(FIRST_BUFFER));
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(Refused::Broken)?;
        let Ok(data) = frame.into_data() else { continue };
        if buf.len() + data.len() > max {
            return Err(Refused::TooLarge);
        }
        if declared.is_none() {
            budget.fit(&mut held, buf.len() + data.len()).await.map_err(Refused::Busy)?;
        }
        buf.extend_from_slice(&data);
    }
    Ok((buf.freeze(), held))
}

/// An HTTP/2 request body (gRPC) read within the same limits, as a body tonic decodes from: past
/// `max` bytes, past its deadline, or when the budget stays full it fails with the status the
/// caller gets (RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED). Its share is given back when it is dropped
/// (once the message is decoded).
#[cfg(feature = "grpc")]
pub struct Admitted {
    inner: Incoming,
    budget: Budget,
    held: Held,
    seen: usize,
    max: usize,
    deadline: Pin<Box<tokio::time::Sleep>>,
    /// A frame that waits for its share.
    waiting: Option<(Frame<Bytes>, BoxFuture<'static, crate::error::Result<Held>>)>,
}

#[cfg(feature = "grpc")]
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
        crate::grpc::status(A2aError::new(
            crate::error::ErrorKind::RequestTimeout,
            "the request message did not arrive within the body deadline",
        ))
    }
}

#[cfg(feature = "grpc")]
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
                Poll::Ready(Err(e)) => Poll::Ready(Some(Err(crate::grpc::status(e)))),
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
                        crate::error::ErrorKind::PayloadTooLarge,
                        format!("request message exceeds the limit of {} bytes", this.max),
                    );
                    return Poll::Ready(Some(Err(crate::grpc::status(err))));
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
