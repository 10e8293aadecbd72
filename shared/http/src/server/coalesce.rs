//! A stream's events that are ready together go out as one chunk.
//!
//! hyper writes a streamed body with at most 16 buffers per `writev`, and each chunk of a chunked
//! body takes three (its size line, the data, the CRLF): about five events per system call, each
//! of which wakes the reader. A stream that is behind (an agent streaming fast, many subscribers
//! on two cores) has many events waiting at once; copied into one chunk they go out in one call.
//! Nothing waits for more: only what the stream has ready now is joined, and a chunk stays within
//! [`SMALL_ANSWER`] (what an answer may take without holding the answers budget), so a large
//! event, which holds its share of that budget, goes out as it is.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use futures::Stream;

use crate::inflight::SMALL_ANSWER;

/// See the [module](self).
pub struct Coalesce<S> {
    inner: S,
    /// Ready, but too large to join the chunk that went before it.
    next: Option<Bytes>,
    ended: bool,
}

impl<S> Coalesce<S> {
    pub fn new(inner: S) -> Self {
        Self { inner, next: None, ended: false }
    }
}

impl<S: Stream<Item = Bytes> + Unpin> Coalesce<S> {
    fn poll_inner(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        if self.ended {
            return Poll::Ready(None);
        }
        let polled = Pin::new(&mut self.inner).poll_next(cx);
        self.ended = matches!(polled, Poll::Ready(None));
        polled
    }
}

impl<S: Stream<Item = Bytes> + Unpin> Stream for Coalesce<S> {
    type Item = Bytes;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let this = &mut *self;
        let first = match this.next.take() {
            Some(first) => first,
            None => match this.poll_inner(cx) {
                Poll::Ready(Some(first)) => first,
                other => return other,
            },
        };
        let mut chunk: Option<BytesMut> = None;
        while let Poll::Ready(Some(more)) = this.poll_inner(cx) {
            let len = chunk.as_ref().map_or(first.len(), BytesMut::len);
            if len + more.len() > SMALL_ANSWER {
                this.next = Some(more);
                break;
            }
            chunk
                .get_or_insert_with(|| {
                    let mut joined = BytesMut::with_capacity((len + more.len()).clamp(8 * 1024, SMALL_ANSWER));
                    joined.extend_from_slice(&first);
                    joined
                })
                .extend_from_slice(&more);
        }
        Poll::Ready(Some(chunk.map_or(first, BytesMut::freeze)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    fn event(n: usize, len: usize) -> Bytes {
        Bytes::from(format!("id: {n}\ndata: {}\n\n", "x".repeat(len)))
    }

    #[tokio::test]
    async fn what_is_ready_goes_out_together_in_order() {
        let events: Vec<Bytes> = (0..10).map(|n| event(n, 10)).collect();
        let chunks: Vec<Bytes> = Coalesce::new(futures::stream::iter(events.clone())).collect().await;
        assert_eq!(chunks, vec![Bytes::from(events.concat())]);
    }

    #[tokio::test]
    async fn a_chunk_stays_within_the_small_answer_size_and_large_events_go_alone() {
        let events = vec![
            event(0, 10),
            event(1, SMALL_ANSWER / 2),
            event(2, SMALL_ANSWER / 2),
            event(3, 2 * SMALL_ANSWER),
            event(4, 10),
        ];
        let chunks: Vec<Bytes> = Coalesce::new(futures::stream::iter(events.clone())).collect().await;
        assert_eq!(chunks.concat(), events.concat(), "the same bytes in the same order");
        assert!(chunks.iter().all(|c| c.len() <= SMALL_ANSWER || events.contains(c)), "only small events joined");
        assert_eq!(chunks.len(), 4, "0+1 | 2 | 3 alone | 4: {:?}", chunks.iter().map(Bytes::len).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn nothing_waits_for_an_event_that_is_not_ready() {
        let (tx, rx) = futures::channel::mpsc::unbounded();
        let mut chunks = Coalesce::new(rx);
        tx.unbounded_send(event(0, 1)).unwrap();
        tx.unbounded_send(event(1, 1)).unwrap();
        assert_eq!(chunks.next().await.unwrap(), [event(0, 1), event(1, 1)].concat());
        tx.unbounded_send(event(2, 1)).unwrap();
        assert_eq!(chunks.next().await.unwrap(), event(2, 1), "the first waiting event is not held back");
        drop(tx);
        assert_eq!(chunks.next().await, None);
        assert_eq!(chunks.next().await, None, "ended stays ended");
    }
}
