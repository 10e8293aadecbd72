//! Webhook rules shared by every deliverer: which addresses a webhook may reach (the SSRF guard),
//! how long to wait before the next attempt (exponential backoff with full jitter, capped at SQS's
//! 900 s), and what a notification looks like on the wire (spec §4.3: the StreamResponse as the
//! HTTP+JSON binding writes it, with the config's `Authorization` and `A2A-Notification-Token`; for
//! a config registered through 0.3, the 0.3 `kind`-tagged task, as the 0.3 reference sends).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use async_trait::async_trait;

use crate::error::{A2aError, Result};
use crate::ports::PushJob;

/// Networks a webhook may reach even though they are private (e.g. `127.0.0.1/32` in development).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList {
    nets: Vec<(IpAddr, u8)>,
}

impl AllowList {
    /// Parses `cidr,cidr,...` (a bare address is a /32 or /128).
    pub fn parse(spec: &str) -> Result<Self> {
        let mut nets = Vec::new();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (addr, len) = item.split_once('/').unwrap_or((item, ""));
            let addr: IpAddr = addr
                .parse()
                .map_err(|_| A2aError::invalid_params(format!("webhook allow-list: {item:?} is not an IP or CIDR")))?;
            let max = if addr.is_ipv4() { 32 } else { 128 };
            let len = if len.is_empty() {
                max
            } else {
                len.parse()
                    .map_err(|_| A2aError::invalid_params(format!("webhook allow-list: bad prefix in {item:?}")))?
            };
            if len > max {
                return Err(A2aError::invalid_params(format!("webhook allow-list: prefix too long in {item:?}")));
            }
            nets.push((addr, len));
        }
        Ok(Self { nets })
    }

    pub fn allows(&self, ip: IpAddr) -> bool {
        self.nets.iter().any(|(net, len)| in_net(ip, *net, *len))
    }
}

fn in_net(ip: IpAddr, net: IpAddr, len: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(b)) => {
            let mask = if len == 0 { 0 } else { u32::MAX << (32 - u32::from(len)) };
            u32::from(a) & mask == u32::from(b) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(b)) => {
            let mask = if len == 0 { 0 } else { u128::MAX << (128 - u32::from(len)) };
            u128::from(a) & mask == u128::from(b) & mask
        }
        (IpAddr::V6(a), IpAddr::V4(_)) => a.to_ipv4_mapped().is_some_and(|v4| in_net(IpAddr::V4(v4), net, len)),
        _ => false,
    }
}

/// Addresses no webhook may reach unless allow-listed: loopback, private, link-local (which holds
/// the cloud metadata endpoints 169.254.169.254 and fd00:ec2::254), carrier-grade NAT, unspecified,
/// multicast and broadcast.
pub fn is_forbidden(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => forbidden_v4(v4),
            None => forbidden_v6(v6),
        },
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_multicast()
        || ip.is_broadcast()
        || (a == 100 && (64..128).contains(&b))
        || a == 0
}

fn forbidden_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00 // unique local, includes fd00:ec2::254
        || (first & 0xffc0) == 0xfe80 // link local
}

/// Checks one resolved address against the guard.
pub fn check_ip(ip: IpAddr, allow: &AllowList) -> Result<()> {
    if is_forbidden(ip) && !allow.allows(ip) {
        Err(A2aError::invalid_field(
            "url",
            format!("webhook address {ip} is private, loopback, link-local or metadata; not allowed"),
        ))
    } else {
        Ok(())
    }
}

/// Parses a webhook URL: absolute http(s) with a host. Returns (host, port).
pub fn parse_url(url: &str) -> Result<(String, u16)> {
    let uri: http::Uri =
        url.parse().map_err(|_| A2aError::invalid_field("url", format!("{url:?} is not a valid URL")))?;
    let port = match uri.scheme_str() {
        Some("https") => 443,
        Some("http") => 80,
        _ => return Err(A2aError::invalid_field("url", format!("{url:?} must be an absolute http(s) URL"))),
    };
    let host = uri
        .host()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| A2aError::invalid_field("url", format!("{url:?} has no host")))?;
    Ok((host.trim_start_matches('[').trim_end_matches(']').to_string(), uri.port_u16().unwrap_or(port)))
}

/// Decides whether a webhook URL may be registered and called.
#[async_trait]
pub trait WebhookPolicy: Send + Sync {
    async fn check(&self, url: &str) -> Result<()>;
}

/// Without a resolver: literal addresses and `localhost` are checked, names pass (they are checked
/// again, resolved, at delivery time).
#[derive(Debug, Clone, Default)]
pub struct LiteralPolicy {
    pub allow: AllowList,
}

#[async_trait]
impl WebhookPolicy for LiteralPolicy {
    async fn check(&self, url: &str) -> Result<()> {
        let (host, _) = parse_url(url)?;
        if let Ok(ip) = host.parse::<IpAddr>() {
            return check_ip(ip, &self.allow);
        }
        if host.eq_ignore_ascii_case("localhost") || host.to_ascii_lowercase().ends_with(".localhost") {
            return check_ip(IpAddr::V4(Ipv4Addr::LOCALHOST), &self.allow);
        }
        Ok(())
    }
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
        serde_json::to_vec(&crate::v03::Event::from(&job.event.event))
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
    fn guard_refuses_private_ranges_unless_allowed() {
        for bad in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00:ec2::254",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(is_forbidden(bad.parse().unwrap()), "{bad}");
        }
        for good in ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "8.8.8.8"] {
            assert!(!is_forbidden(good.parse().unwrap()), "{good}");
        }
        let allow = AllowList::parse("127.0.0.0/8, ::1").unwrap();
        assert!(check_ip("127.0.0.5".parse().unwrap(), &allow).is_ok());
        assert!(check_ip("::1".parse().unwrap(), &allow).is_ok());
        assert!(check_ip("10.0.0.1".parse().unwrap(), &allow).is_err());
        assert!(AllowList::parse("nope").is_err());
    }

    #[tokio::test]
    async fn literal_policy() {
        let p = LiteralPolicy::default();
        assert!(p.check("https://hooks.example.com/x").await.is_ok());
        assert!(p.check("http://127.0.0.1:9/x").await.is_err());
        assert!(p.check("http://localhost/x").await.is_err());
        assert!(p.check("http://[::1]/x").await.is_err());
        assert!(p.check("ftp://example.com/x").await.is_err());
        let p = LiteralPolicy { allow: AllowList::parse("127.0.0.1").unwrap() };
        assert!(p.check("http://127.0.0.1:9/x").await.is_ok());
    }

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
