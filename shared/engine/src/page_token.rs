//! Opaque, tamper-evident page tokens: the cursor (status time, task id) signed with HMAC-SHA256.
//! A token that was not issued by this key is refused with InvalidParams naming `pageToken`.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::{DateTime, TimeZone, Utc};
use hmac::{Hmac, Mac};
use sha2::Sha256;

use a2a_protocol::error::{A2aError, Result};

type HmacSha256 = Hmac<Sha256>;

/// Bytes of the HMAC a token carries (the left half of HMAC-SHA256).
const TAG_BYTES: usize = 16;

/// Signs and checks page tokens with one secret key.
pub struct PageTokens {
    key: Vec<u8>,
}

impl PageTokens {
    pub fn new(key: impl Into<Vec<u8>>) -> Self {
        Self { key: key.into() }
    }

    /// A key that lives as long as the process (enough for an in-memory store).
    pub fn random() -> Self {
        let mut key = Vec::with_capacity(32);
        key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
        key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
        Self { key }
    }

    fn mac(&self, payload: &[u8]) -> Vec<u8> {
        // HMAC accepts keys of any length, so this cannot fail.
        let mut mac = <HmacSha256 as Mac>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("hmac takes any key length"));
        mac.update(payload);
        mac.finalize().into_bytes()[..TAG_BYTES].to_vec()
    }

    /// Signs arbitrary bytes (adapters with their own cursor formats use this).
    pub fn seal(&self, payload: &[u8]) -> String {
        format!("{}.{}", URL_SAFE_NO_PAD.encode(payload), URL_SAFE_NO_PAD.encode(self.mac(payload)))
    }

    /// Checks a sealed token and returns its payload.
    pub fn open(&self, token: &str) -> Result<Vec<u8>> {
        let bad = || A2aError::invalid_field("pageToken", "is not a page token issued by this server");
        let (payload, sig) = token.split_once('.').ok_or_else(bad)?;
        let payload = URL_SAFE_NO_PAD.decode(payload).map_err(|_| bad())?;
        let sig = URL_SAFE_NO_PAD.decode(sig).map_err(|_| bad())?;
        // The whole tag: a shorter one (down to a byte) would be a prefix anyone can guess.
        if sig.len() != TAG_BYTES {
            return Err(bad());
        }
        let mut mac = <HmacSha256 as Mac>::new_from_slice(&self.key).map_err(|_| bad())?;
        mac.update(&payload);
        mac.verify_truncated_left(&sig).map_err(|_| bad())?;
        Ok(payload)
    }

    pub fn encode(&self, time: DateTime<Utc>, task_id: &str) -> String {
        self.seal(format!("{}|{}", time.timestamp_micros(), task_id).as_bytes())
    }

    /// `""` is the first page (no cursor).
    pub fn decode(&self, token: &str) -> Result<Option<(DateTime<Utc>, String)>> {
        if token.is_empty() {
            return Ok(None);
        }
        let bad = || A2aError::invalid_field("pageToken", "is malformed");
        let payload = String::from_utf8(self.open(token)?).map_err(|_| bad())?;
        let (micros, id) = payload.split_once('|').ok_or_else(bad)?;
        let micros: i64 = micros.parse().map_err(|_| bad())?;
        let time = Utc.timestamp_micros(micros).single().ok_or_else(bad)?;
        Ok(Some((time, id.to_string())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_forgeries() {
        let tokens = PageTokens::new(b"k".to_vec());
        let t = Utc.timestamp_micros(1_700_000_000_123_456).single().unwrap();
        let tok = tokens.encode(t, "task-1");
        assert_eq!(tokens.decode(&tok).unwrap(), Some((t, "task-1".to_string())));
        assert_eq!(tokens.decode("").unwrap(), None);
        let forged = PageTokens::new(b"other".to_vec()).encode(t, "task-1");
        let err = tokens.decode(&forged).unwrap_err();
        assert!(err.message.contains("pageToken"), "{err}");
        assert!(tokens.decode("garbage").is_err());
        let mut tampered = tok.clone();
        tampered.replace_range(0..1, if tok.starts_with('A') { "B" } else { "A" });
        assert!(tokens.decode(&tampered).is_err());
    }

    /// A token cut to a prefix of its tag is refused: with one byte left, a forger would need at
    /// most 256 tries.
    #[test]
    fn a_shortened_tag_is_refused() {
        let tokens = PageTokens::new(b"k".to_vec());
        let tok = tokens.seal(b"1|t");
        let (payload, sig) = tok.split_once('.').unwrap();
        let sig = URL_SAFE_NO_PAD.decode(sig).unwrap();
        assert_eq!(sig.len(), TAG_BYTES);
        for keep in [1, 2, 8, TAG_BYTES - 1] {
            let cut = format!("{payload}.{}", URL_SAFE_NO_PAD.encode(&sig[..keep]));
            let err = tokens.open(&cut).unwrap_err();
            assert!(err.message.contains("pageToken"), "{keep}: {err}");
        }
        let longer = format!("{payload}.{}", URL_SAFE_NO_PAD.encode([sig.as_slice(), &[0]].concat()));
        assert!(tokens.open(&longer).is_err());
        assert_eq!(tokens.open(&tok).unwrap(), b"1|t");
    }
}
