//! Publish authentication: `A2A-Edge-Signature: v1=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>`
//! with `A2A-Edge-Timestamp: <unix seconds>`. A publish without both headers, with a wrong
//! signature, or stamped outside the replay window is refused (401). A replay inside the window
//! changes nothing: the hub takes each sequence number once.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use a2a_protocol::error::{A2aError, Result};

type HmacSha256 = Hmac<Sha256>;

pub const TIMESTAMP_HEADER: &str = "a2a-edge-timestamp";
pub const SIGNATURE_HEADER: &str = "a2a-edge-signature";
/// How far (seconds, either way) a publish's timestamp may be from the edge's clock.
pub const REPLAY_WINDOW_SECS: i64 = 300;

fn mac(secret: &[u8], timestamp: i64, body: &[u8]) -> HmacSha256 {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac =
        <HmacSha256 as Mac>::new_from_slice(secret).unwrap_or_else(|_| unreachable!("hmac takes any key length"));
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// The signature header value for a body published at `timestamp`.
pub fn sign(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    let tag = mac(secret, timestamp, body).finalize().into_bytes();
    let mut out = String::with_capacity(3 + tag.len() * 2);
    out.push_str("v1=");
    for b in tag {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

/// Checks a publish: both headers present, timestamp within the window of `now` (unix seconds),
/// signature valid for the body (compared in constant time). An empty secret refuses everything.
pub fn verify(secret: &[u8], timestamp: Option<&str>, signature: Option<&str>, body: &[u8], now: i64) -> Result<()> {
    let refuse = |why: &str| Err(A2aError::unauthenticated(format!("publish refused: {why}")));
    if secret.is_empty() {
        return refuse("the edge has no publish secret configured");
    }
    let (Some(timestamp), Some(signature)) = (timestamp, signature) else {
        return refuse("the A2A-Edge-Timestamp and A2A-Edge-Signature headers are required");
    };
    let Ok(ts) = timestamp.trim().parse::<i64>() else {
        return refuse("A2A-Edge-Timestamp must be unix seconds");
    };
    if (now - ts).abs() > REPLAY_WINDOW_SECS {
        return refuse("A2A-Edge-Timestamp is outside the replay window");
    }
    let Some(tag) = signature.trim().strip_prefix("v1=").and_then(unhex) else {
        return refuse("A2A-Edge-Signature must be v1=<hex>");
    };
    match mac(secret, ts, body).verify_slice(&tag) {
        Ok(()) => Ok(()),
        Err(_) => refuse("bad signature"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_790_000_000;

    #[test]
    fn a_signed_publish_verifies() {
        let sig = sign(b"s3cret", NOW, b"{}");
        assert!(sig.starts_with("v1=") && sig.len() == 3 + 64);
        verify(b"s3cret", Some(&NOW.to_string()), Some(&sig), b"{}", NOW + 10).unwrap();
    }

    #[test]
    fn refusals() {
        let sig = sign(b"s3cret", NOW, b"{}");
        let ts = NOW.to_string();
        let check = |secret: &[u8], ts: Option<&str>, sig: Option<&str>, body: &[u8], now: i64| {
            let err = verify(secret, ts, sig, body, now).unwrap_err();
            assert_eq!(err.kind, a2a_protocol::ErrorKind::Unauthenticated);
            err.message
        };
        assert!(check(b"s3cret", None, Some(&sig), b"{}", NOW).contains("required"));
        assert!(check(b"s3cret", Some(&ts), None, b"{}", NOW).contains("required"));
        assert!(check(b"s3cret", Some(&ts), Some(&sig), b"{ }", NOW).contains("bad signature"));
        assert!(check(b"other", Some(&ts), Some(&sig), b"{}", NOW).contains("bad signature"));
        assert!(check(b"s3cret", Some(&ts), Some(&sig), b"{}", NOW + 301).contains("window"));
        assert!(check(b"s3cret", Some(&ts), Some(&sig), b"{}", NOW - 301).contains("window"));
        assert!(check(b"s3cret", Some("soon"), Some(&sig), b"{}", NOW).contains("unix seconds"));
        assert!(check(b"s3cret", Some(&ts), Some("v1=zz"), b"{}", NOW).contains("v1=<hex>"));
        assert!(check(b"", Some(&ts), Some(&sig), b"{}", NOW).contains("no publish secret"));
        // The timestamp is signed: moving it invalidates the signature.
        let later = (NOW + 1).to_string();
        assert!(check(b"s3cret", Some(&later), Some(&sig), b"{}", NOW).contains("bad signature"));
    }
}
