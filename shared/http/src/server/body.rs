//! Request bodies within the server's limits: at most `max` bytes, all of them within the body
//! deadline, and every byte held against the server-wide budget of request bodies in flight
//! ([`crate::inflight`]) from before it is buffered until the request is done with it. A body
//! that declares its length takes its whole share before the first byte is read; a chunked one
//! grows its share as it arrives.

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use crate::inflight::{Budget, Held};
use a2a_protocol::error::A2aError;

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
