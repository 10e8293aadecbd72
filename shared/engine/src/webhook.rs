//! Webhook rules shared by every deliverer (which addresses a webhook may reach is [`crate::ssrf`]):
//! how long to wait before the next attempt (exponential backoff with full jitter, capped at SQS's
//! 900 s), and what a notification looks like on the wire (spec §4.3: the StreamResponse as the
//! HTTP+JSON binding writes it, with the config's `Authorization` and `A2A-Notification-Token`; for
//! a config registered through 0.3, the 0.3 `kind`-tagged task, as the 0.3 reference sends).

use std::time::Duration;

use async_trait::async_trait;

use crate::ports::PushJob;
use a2a_protocol::error::Result;

/// Decides whether a webhook URL may be registered and called.
#[async_trait]
pub trait WebhookPolicy: Send + Sync {
    async fn check(&self, url: &str) -> Result<()>;
}

/// Retry schedule of a failing webhook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all (the first try included) before the job goes to the dead-letter queue.
    pub max_attempts: u32,
    pub base: Duration,
    /// Longest wait between attempts (SQS allows at most 900 s of message delay).
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self { max_attempts: 6, base: Duration::from_secs(2), max_delay: Duration::from_secs(900) }
    }
}

impl RetryPolicy {
    /// Delay before attempt `attempt + 1` after attempt `attempt` failed: exponential with full
    /// jitter. `unit` is a uniform random number in [0, 1); the floor keeps delays growing.
    pub fn delay(&self, attempt: u32, unit: f64) -> Duration {
        let exp = self.base.saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1)));
        let cap = exp.min(self.max_delay);
        let floor = cap / 2;
        floor + (cap - floor).mul_f64(unit.clamp(0.0, 1.0))
    }

    pub fn gives_up_after(&self, attempt: u32) -> bool {
        attempt >= self.max_attempts
    }
}

/// The body and headers of a notification.
pub fn notification(job: &PushJob) -> (Vec<u8>, Vec<(&'static str, String)>) {
    let body = if job.config.v03_payloads {
        serde_json::to_vec(&a2a_protocol::v03::Event::from(&job.event.event))
    } else {
        serde_json::to_vec(&job.event.event)
    };
    let body = body.unwrap_or_default();
    let mut headers = vec![("content-type", "application/json".to_string())];
    if let Some(auth) = &job.config.authentication {
        let value = if auth.credentials.is_empty() {
            auth.scheme.clone()
        } else {
            format!("{} {}", auth.scheme, auth.credentials)
        };
        headers.push(("authorization", value));
    }
    if !job.config.token.is_empty() {
        headers.push(("a2a-notification-token", job.config.token.clone()));
        // The 0.3 spelling, for receivers written against 0.3.
        headers.push(("x-a2a-notification-token", job.config.token.clone()));
    }
    headers.push(("a2a-event-id", job.event.seq.to_string()));
    (body, headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_with_jitter_and_caps() {
        let r = RetryPolicy { max_attempts: 20, base: Duration::from_secs(2), max_delay: Duration::from_secs(900) };
        assert_eq!(r.delay(1, 0.0), Duration::from_secs(1));
        assert_eq!(r.delay(1, 1.0), Duration::from_secs(2));
        assert!(r.delay(3, 0.0) >= Duration::from_secs(4));
        assert!(r.delay(3, 1.0) <= Duration::from_secs(8));
        assert!(r.delay(19, 1.0) <= Duration::from_secs(900));
        assert!(r.gives_up_after(20) && !r.gives_up_after(19));
    }
}
