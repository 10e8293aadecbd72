//! Client deadlines (`grpc-timeout`): a unary call or a whole stream ends with DEADLINE_EXCEEDED
//! when the deadline passes. The operation's task is not cancelled: like an HTTP client that goes
//! away, the client reads the outcome later with GetTask or SubscribeToTask.

use std::future::Future;
use std::task::Poll;
use std::time::Duration;

use futures::stream::{self, BoxStream, StreamExt};
use tokio::time::Instant;
use tonic::metadata::MetadataMap;
use tonic::Status;

/// How much earlier than the caller's deadline a call is ended here. tonic's transport also times
/// the call out at the deadline, with CANCELLED "Timeout expired"; ending it first gives the
/// caller the DEADLINE_EXCEEDED the gRPC spec says.
const MARGIN: Duration = Duration::from_millis(10);

/// The caller's deadline from `grpc-timeout` (digits and a unit: H, M, S, m, u, n), if any.
pub fn of(metadata: &MetadataMap) -> Option<Instant> {
    let value = metadata.get("grpc-timeout")?.to_str().ok()?;
    let (digits, unit) = value.split_at(value.len().checked_sub(1)?);
    if digits.is_empty() || digits.len() > 8 {
        return None; // the spec allows at most 8 digits
    }
    let n: u64 = digits.parse().ok()?;
    let timeout = match unit {
        "H" => Duration::from_secs(n.saturating_mul(3600)),
        "M" => Duration::from_secs(n.saturating_mul(60)),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    };
    Some(Instant::now() + timeout.saturating_sub(MARGIN))
}

fn exceeded() -> Status {
    Status::deadline_exceeded("the call's deadline (grpc-timeout) passed; the task goes on: read it with GetTask")
}

/// Runs `call` until the deadline.
pub async fn within<T>(deadline: Option<Instant>, call: impl Future<Output = Result<T, Status>>) -> Result<T, Status> {
    match deadline {
        None => call.await,
        Some(at) => tokio::time::timeout_at(at, call).await.unwrap_or_else(|_| Err(exceeded())),
    }
}

/// Ends `stream` with DEADLINE_EXCEEDED when the deadline passes first.
pub fn bound<T: Send + 'static>(
    deadline: Option<Instant>,
    stream: BoxStream<'static, Result<T, Status>>,
) -> BoxStream<'static, Result<T, Status>> {
    let Some(at) = deadline else { return stream };
    let mut stream = stream;
    let mut timer = Box::pin(tokio::time::sleep_until(at));
    let mut ended = false;
    stream::poll_fn(move |cx| {
        if ended {
            return Poll::Ready(None);
        }
        if let Poll::Ready(item) = stream.poll_next_unpin(cx) {
            return Poll::Ready(item);
        }
        if timer.as_mut().poll(cx).is_ready() {
            ended = true;
            return Poll::Ready(Some(Err(exceeded())));
        }
        Poll::Pending
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn meta(v: &str) -> MetadataMap {
        let mut m = MetadataMap::new();
        m.insert("grpc-timeout", v.parse().unwrap());
        m
    }

    #[tokio::test]
    async fn parses_every_unit_and_refuses_malformed_values() {
        let now = Instant::now();
        for (v, d) in [("2H", 7_200_000), ("3M", 180_000), ("5S", 5000), ("250m", 250), ("1000u", 1), ("1000000n", 1)] {
            let at = of(&meta(v)).unwrap();
            let ms = (at.duration_since(now) + MARGIN).as_millis();
            assert!((d.max(10)..d.max(10) + 1000).contains(&ms), "{v}: {ms}");
        }
        for bad in ["", "S", "5", "5x", "123456789S", "-5S", "1.5S"] {
            assert!(of(&meta(bad)).is_none(), "{bad}");
        }
        assert!(of(&MetadataMap::new()).is_none());
    }

    #[tokio::test]
    async fn a_stream_ends_with_deadline_exceeded_when_it_outlives_the_deadline() {
        let slow = stream::iter([Ok::<_, Status>(1)]).chain(stream::pending()).boxed();
        let at = Instant::now() + Duration::from_millis(50);
        let items: Vec<_> = bound(Some(at), slow).collect().await;
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].as_ref().unwrap(), &1);
        assert_eq!(items[1].as_ref().unwrap_err().code(), tonic::Code::DeadlineExceeded);

        let quick = stream::iter([Ok::<_, Status>(1), Ok(2)]).boxed();
        let items: Vec<_> = bound(Some(Instant::now() + Duration::from_secs(60)), quick).collect().await;
        assert_eq!(items.iter().map(|i| *i.as_ref().unwrap()).collect::<Vec<_>>(), [1, 2]);
    }
}
