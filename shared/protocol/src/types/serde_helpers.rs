//! ProtoJSON details serde does not do by itself.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{de, Deserialize, Deserializer, Serializer};

/// Timestamps are written as `YYYY-MM-DDTHH:MM:SS.sssZ` (spec §5.6.1) and read from any RFC 3339 form.
pub mod timestamp {
    use super::*;

    pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format(t))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        let raw = String::deserialize(d)?;
        parse(&raw).map_err(de::Error::custom)
    }

    pub fn format(t: &DateTime<Utc>) -> String {
        t.to_rfc3339_opts(SecondsFormat::Millis, true)
    }

    pub fn parse(raw: &str) -> Result<DateTime<Utc>, String> {
        DateTime::parse_from_rfc3339(raw)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|e| format!("invalid timestamp {raw:?} (want ISO 8601, e.g. 2025-10-28T10:30:00.000Z): {e}"))
    }
}

/// Optional timestamp with the same format.
pub mod opt_timestamp {
    use super::*;

    pub fn serialize<S: Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => timestamp::serialize(t, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
        match Option::<String>::deserialize(d)? {
            Some(raw) => timestamp::parse(&raw).map(Some).map_err(de::Error::custom),
            None => Ok(None),
        }
    }
}

/// `int32` accepts a JSON number or a decimal string (ProtoJSON).
pub mod opt_i32 {
    use super::*;

    pub fn serialize<S: Serializer>(v: &Option<i32>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.serialize_i32(*v),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i32>, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum NumOrStr {
            Num(serde_json::Number),
            Str(String),
        }
        let parsed = match Option::<NumOrStr>::deserialize(d)? {
            None => return Ok(None),
            Some(NumOrStr::Num(n)) => n.as_i64(),
            Some(NumOrStr::Str(s)) => s.trim().parse::<i64>().ok(),
        };
        parsed
            .and_then(|v| i32::try_from(v).ok())
            .map(Some)
            .ok_or_else(|| de::Error::custom("expected a 32-bit integer"))
    }
}

/// Plain `int32` with the same leniency, defaulting to 0.
pub mod i32_lenient {
    use super::*;

    pub fn serialize<S: Serializer>(v: &i32, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i32(*v)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
        Ok(opt_i32::deserialize(d)?.unwrap_or(0))
    }
}

/// `bytes` fields are base64 (standard alphabet on output; standard or URL-safe, padded or not, on input).
pub mod base64_bytes {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    use base64::Engine;

    pub fn encode(bytes: &[u8]) -> String {
        STANDARD.encode(bytes)
    }

    pub fn decode(raw: &str) -> Result<Vec<u8>, String> {
        let raw = raw.trim();
        STANDARD
            .decode(raw)
            .or_else(|_| STANDARD_NO_PAD.decode(raw))
            .or_else(|_| URL_SAFE.decode(raw))
            .or_else(|_| URL_SAFE_NO_PAD.decode(raw))
            .map_err(|_| "invalid base64".to_string())
    }
}

pub fn is_false(b: &bool) -> bool {
    !*b
}

pub fn is_zero(v: &i32) -> bool {
    *v == 0
}
