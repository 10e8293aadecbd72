//! Reading a whole answer (a call's result, an error body, the card, a JWKS, a token answer) under
//! two bounds: at most `max` bytes and at most `timeout`. The bytes are read chunk by chunk and the
//! read stops as soon as the total passes `max`, so an agent that answers without end (or with a
//! `Content-Length` of gigabytes) costs at most `max` bytes of memory, never the whole answer.

use std::time::Duration;

use bytes::{Bytes, BytesMut};

use super::{ClientError, ClientResult};

/// The first allocation for a body announced by `Content-Length`: the rest grows as bytes arrive,
/// so a length the peer merely claims reserves little.
const FIRST_CAPACITY: usize = 64 * 1024;

/// The body of `resp`, whole: [`ClientError::TooLarge`] past `max` bytes, [`ClientError::Timeout`]
/// past `timeout`.
pub(crate) async fn read(mut resp: reqwest::Response, max: usize, timeout: Duration) -> ClientResult<Bytes> {
    if resp.content_length().is_some_and(|n| n > max as u64) {
        return Err(ClientError::TooLarge(max));
    }
    let capacity = resp.content_length().map_or(0, |n| usize::try_from(n).unwrap_or(max)).min(FIRST_CAPACITY);
    let collect = async move {
        let mut body = BytesMut::with_capacity(capacity);
        while let Some(chunk) = resp.chunk().await? {
            if body.len().saturating_add(chunk.len()) > max {
                return Err(ClientError::TooLarge(max));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body.freeze())
    };
    tokio::time::timeout(timeout, collect).await.map_err(|_| ClientError::Timeout)?
}
