//! Service parameters (spec §3.2.6, §3.6): the protocol version and the activated extensions, read
//! from `A2A-Version` / `A2A-Extensions` headers or query parameters (`OPVS-` spellings accepted).

use http::HeaderMap;

use crate::error::{A2aError, ErrorKind, Result};
use crate::types::AgentExtension;

/// The protocol versions this server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Version {
    V0_3,
    V1_0,
}

impl Version {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V0_3 => "0.3",
            Self::V1_0 => "1.0",
        }
    }

    /// Major.Minor matching; the patch number is ignored; empty means 0.3 (spec §3.6.2).
    pub fn parse(raw: &str) -> Result<Self> {
        let raw = raw.trim();
        if raw.is_empty() {
            return Ok(Self::V0_3);
        }
        let mut parts = raw.split('.');
        let major = parts.next().and_then(|p| p.parse::<u32>().ok());
        let minor = parts.next().and_then(|p| p.parse::<u32>().ok());
        let patch_ok = parts.all(|p| p.parse::<u32>().is_ok());
        match (major, minor, patch_ok) {
            (Some(0), Some(3), true) => Ok(Self::V0_3),
            (Some(1), Some(0), true) => Ok(Self::V1_0),
            _ => Err(A2aError::version_not_supported(raw)),
        }
    }
}

const VERSION_NAMES: [&str; 2] = ["a2a-version", "opvs-version"];
/// `X-A2A-Extensions` is the 0.3 spelling.
const EXTENSION_NAMES: [&str; 3] = ["a2a-extensions", "opvs-extensions", "x-a2a-extensions"];

fn header<'a>(headers: &'a HeaderMap, names: &[&str]) -> Option<&'a str> {
    names.iter().find_map(|n| headers.get(*n)).and_then(|v| v.to_str().ok())
}

/// The raw value of a query parameter (names compared case-insensitively).
pub fn query_param(query: Option<&str>, names: &[&str]) -> Option<String> {
    let query = query?;
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let k = percent_encoding::percent_decode_str(k).decode_utf8().ok()?;
        names
            .iter()
            .any(|n| k.eq_ignore_ascii_case(n))
            .then(|| percent_encoding::percent_decode_str(&v.replace('+', " ")).decode_utf8_lossy().into_owned())
    })
}

/// The version a request asks for: header first, then query parameter, else 0.3.
pub fn negotiate(headers: &HeaderMap, query: Option<&str>) -> Result<Version> {
    negotiate_or(headers, query, Version::V0_3)
}

/// [`negotiate`] for a binding whose requests that name no version (none, or an empty one) mean
/// `unnamed`: 0.3 on the HTTP bindings (spec §3.6.2), 1.0 on gRPC (a 1.0-only binding).
pub fn negotiate_or(headers: &HeaderMap, query: Option<&str>, unnamed: Version) -> Result<Version> {
    let named = match header(headers, &VERSION_NAMES) {
        Some(v) => Some(v.to_string()),
        None => query_param(query, &VERSION_NAMES),
    };
    match named.as_deref().map(str::trim) {
        None | Some("") => Ok(unnamed),
        Some(v) => Version::parse(v),
    }
}

/// The extension URIs the client activated (comma-separated, possibly repeated headers).
pub fn requested_extensions(headers: &HeaderMap, query: Option<&str>) -> Vec<String> {
    let mut out: Vec<String> = EXTENSION_NAMES
        .iter()
        .flat_map(|n| headers.get_all(*n).iter())
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    if out.is_empty() {
        if let Some(q) = query_param(query, &EXTENSION_NAMES) {
            out.extend(q.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()));
        }
    }
    out
}

/// ExtensionSupportRequired when the card marks an extension `required` and the client did not
/// activate it.
pub fn check_required_extensions(declared: &[AgentExtension], requested: &[String]) -> Result<()> {
    match declared.iter().find(|e| e.required && !requested.iter().any(|r| r == &e.uri)) {
        Some(missing) => Err(A2aError::new(
            ErrorKind::ExtensionSupportRequired,
            format!("the agent requires extension {}; send it in the A2A-Extensions header", missing.uri),
        )
        .with("extension", missing.uri.clone())),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert_eq!(Version::parse("").unwrap(), Version::V0_3);
        assert_eq!(Version::parse("0.3").unwrap(), Version::V0_3);
        assert_eq!(Version::parse("0.3.0").unwrap(), Version::V0_3);
        assert_eq!(Version::parse("1.0").unwrap(), Version::V1_0);
        assert_eq!(Version::parse("1.0.1").unwrap(), Version::V1_0);
        for bad in ["2.0", "1.1", "0.2", "abc", "1"] {
            assert_eq!(Version::parse(bad).unwrap_err().kind, ErrorKind::VersionNotSupported, "{bad}");
        }
    }

    #[test]
    fn header_query_and_alias() {
        let mut h = HeaderMap::new();
        assert_eq!(negotiate(&h, Some("A2A-Version=1.0")).unwrap(), Version::V1_0);
        assert_eq!(negotiate(&h, Some("x=1&OPVS-Version=1.0")).unwrap(), Version::V1_0);
        assert_eq!(negotiate(&h, None).unwrap(), Version::V0_3);
        assert_eq!(negotiate_or(&h, None, Version::V1_0).unwrap(), Version::V1_0);
        h.insert("A2A-Version", " ".parse().unwrap());
        assert_eq!(negotiate(&h, None).unwrap(), Version::V0_3, "empty is unnamed");
        assert_eq!(negotiate_or(&h, None, Version::V1_0).unwrap(), Version::V1_0, "empty is unnamed");
        h.remove("A2A-Version");
        h.insert("OPVS-Version", "1.0".parse().unwrap());
        assert_eq!(negotiate(&h, None).unwrap(), Version::V1_0);
        h.insert("A2A-Version", "9.9".parse().unwrap());
        assert!(negotiate(&h, None).is_err());
        h.insert("A2A-Extensions", "urn:a, urn:b".parse().unwrap());
        assert_eq!(requested_extensions(&h, None), vec!["urn:a", "urn:b"]);
        let mut old = HeaderMap::new();
        old.insert("X-A2A-Extensions", "urn:c".parse().unwrap());
        assert_eq!(requested_extensions(&old, None), vec!["urn:c"]);
    }
}
