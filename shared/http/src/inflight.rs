//! Bytes in flight, bounded server-wide: request bodies being read and answers being written each
//! draw from a [`Budget`] before they are held, and give it back when the bytes are dropped (an
//! answer's bytes carry their [`Held`] share, so the share lasts exactly as long as the bytes: until
//! the server has written them, or dropped them with the connection). Past the budget a caller
//! waits, for a bounded time, then is refused with ResourceExhausted (503).
//!
//! One request or answer larger than the whole budget is admitted alone (it waits for the whole
//! budget), so a limit never makes an otherwise valid call impossible.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use a2a_protocol::error::{A2aError, ErrorKind, Result};

/// Answers smaller than this are not held against the answers budget (they are bounded by the
/// connection count times this).
pub const SMALL_ANSWER: usize = 64 * 1024;

/// The unit of a budget's semaphore (a semaphore counts in `u32` per acquire).
const UNIT: usize = 1024;

/// A server-wide byte budget.
#[derive(Clone)]
pub struct Budget {
    permits: Arc<Semaphore>,
    units: u32,
    /// Without a runtime (the edge's wasm) there is no timer: a share is granted at once or not.
    #[cfg_attr(not(any(feature = "runtime", feature = "server")), allow(dead_code))]
    wait: Duration,
    what: &'static str,
}

impl std::fmt::Debug for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Budget({}: {} of {} bytes free)", self.what, self.available(), self.capacity())
    }
}

/// A share of a budget, given back when dropped.
#[derive(Debug)]
pub struct Held {
    permit: Option<OwnedSemaphorePermit>,
}

impl Held {
    /// A share of nothing (for bytes too small to count).
    pub fn none() -> Self {
        Self { permit: None }
    }

    /// Bytes this share stands for.
    pub fn bytes(&self) -> usize {
        self.permit.as_ref().map_or(0, |p| p.num_permits() * UNIT)
    }

    /// Adds another share of the same budget to this one.
    pub fn merge(&mut self, more: Held) {
        match (&mut self.permit, more.permit) {
            (Some(mine), Some(theirs)) => mine.merge(theirs),
            (mine @ None, theirs) => *mine = theirs,
            (_, None) => {}
        }
    }
}

fn units(bytes: usize) -> usize {
    bytes.div_ceil(UNIT)
}

impl Budget {
    /// A budget of `bytes`; a caller waits at most `wait` for its share. `what` names it in errors
    /// ("request bodies", "answers").
    pub fn new(bytes: usize, wait: Duration, what: &'static str) -> Self {
        let units = u32::try_from(units(bytes).max(1)).unwrap_or(u32::MAX).min(Semaphore::MAX_PERMITS as u32);
        Self { permits: Arc::new(Semaphore::new(units as usize)), units, wait, what }
    }

    /// No bound (Lambda, tests): every share is granted at once.
    pub fn unbounded() -> Self {
        Self::new(usize::MAX, Duration::ZERO, "bytes")
    }

    pub fn capacity(&self) -> usize {
        self.units as usize * UNIT
    }

    pub fn available(&self) -> usize {
        self.permits.available_permits() * UNIT
    }

    fn units_for(&self, bytes: usize) -> u32 {
        u32::try_from(units(bytes)).unwrap_or(u32::MAX).min(self.units)
    }

    /// A share of `bytes` (all of the budget if it is larger), waiting up to the budget's wait.
    pub async fn hold(&self, bytes: usize) -> Result<Held> {
        let n = self.units_for(bytes);
        if n == 0 {
            return Ok(Held::none());
        }
        if let Ok(permit) = self.permits.clone().try_acquire_many_owned(n) {
            return Ok(Held { permit: Some(permit) });
        }
        let acquire = self.permits.clone().acquire_many_owned(n);
        #[cfg(any(feature = "runtime", feature = "server"))]
        let acquired = tokio::time::timeout(self.wait, acquire).await.ok().and_then(|r| r.ok());
        #[cfg(not(any(feature = "runtime", feature = "server")))]
        let acquired = {
            drop(acquire);
            None
        };
        match acquired {
            Some(permit) => Ok(Held { permit: Some(permit) }),
            None => Err(self.refusal(bytes)),
        }
    }

    /// Makes `held` stand for `bytes` in all: grows it (waiting like [`Budget::hold`]) or gives the
    /// excess back.
    pub async fn fit(&self, held: &mut Held, bytes: usize) -> Result<()> {
        let have = held.permit.as_ref().map_or(0, |p| p.num_permits());
        let want = self.units_for(bytes) as usize;
        if want < have {
            if let Some(permit) = held.permit.as_mut() {
                drop(permit.split(have - want));
            }
            return Ok(());
        }
        if want > have {
            let more = self.hold((want - have) * UNIT).await?;
            held.merge(more);
        }
        Ok(())
    }

    fn refusal(&self, bytes: usize) -> A2aError {
        tracing::warn!(budget = self.what, bytes, capacity = self.capacity(), "bytes in flight at the server's limit");
        A2aError::new(
            ErrorKind::ResourceExhausted,
            format!("the server is holding all the {} it may at once; retry shortly", self.what),
        )
    }
}

/// Bytes that give their share back when the last reference to them is dropped.
pub fn held_bytes<B: AsRef<[u8]> + Send + 'static>(bytes: B, held: Held) -> Bytes {
    Bytes::from_owner(Owned { bytes, _held: held })
}

struct Owned<B> {
    bytes: B,
    _held: Held,
}

impl<B: AsRef<[u8]>> AsRef<[u8]> for Owned<B> {
    fn as_ref(&self) -> &[u8] {
        self.bytes.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn shares_come_back_when_the_bytes_go() {
        let budget = Budget::new(10 * UNIT, Duration::from_millis(50), "answers");
        let held = budget.hold(6 * UNIT).await.unwrap();
        let bytes = held_bytes(vec![0; 6 * UNIT], held);
        let copy = bytes.clone();
        assert_eq!(budget.available(), 4 * UNIT);
        let err = budget.hold(5 * UNIT).await.unwrap_err();
        assert_eq!(err.kind, ErrorKind::ResourceExhausted);
        assert!(err.message.contains("answers"), "{}", err.message);
        drop(bytes);
        assert_eq!(budget.available(), 4 * UNIT, "a clone still holds the bytes");
        drop(copy);
        assert_eq!(budget.available(), 10 * UNIT);
    }

    /// Waiting needs a timer: without the `runtime` (or `server`) feature a full budget refuses at once.
    #[cfg(any(feature = "runtime", feature = "server"))]
    #[tokio::test]
    async fn one_larger_than_the_budget_is_admitted_alone_and_waiters_get_in_after() {
        let budget = Budget::new(4 * UNIT, Duration::from_secs(5), "request bodies");
        let mut big = budget.hold(100 * UNIT).await.unwrap();
        assert_eq!(big.bytes(), 4 * UNIT);
        budget.fit(&mut big, 200 * UNIT).await.unwrap();
        let waiter = tokio::spawn({
            let budget = budget.clone();
            async move { budget.hold(UNIT).await.map(|h| h.bytes()) }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(big);
        assert_eq!(waiter.await.unwrap().unwrap(), UNIT);
    }

    #[tokio::test]
    async fn fitting_counts_only_the_difference() {
        let budget = Budget::new(10 * UNIT, Duration::from_millis(10), "request bodies");
        let mut held = Held::none();
        for total in [UNIT, 3 * UNIT, 7 * UNIT] {
            budget.fit(&mut held, total).await.unwrap();
        }
        assert_eq!(held.bytes(), 7 * UNIT);
        assert_eq!(budget.available(), 3 * UNIT);
        budget.fit(&mut held, 2 * UNIT).await.unwrap();
        assert_eq!(budget.available(), 8 * UNIT, "the excess goes back");
        assert!(budget.fit(&mut held, 11 * UNIT).await.is_ok(), "capped at the whole budget");
    }
}
