//! The page's files, built into the binary: nothing is fetched from elsewhere, so the playground
//! works offline. A strict Content-Security-Policy keeps the page to its own files.

use bytes::Bytes;
use http::{header, HeaderMap, Response, StatusCode};

use a2a_http::response::{rest_error, Body, HttpResponse};
use a2a_protocol::error::{A2aError, ErrorKind};

/// (name, content type, bytes)
const FILES: &[(&str, &str, &str)] = &[
    ("", "text/html; charset=utf-8", include_str!("../assets/index.html")),
    ("app.js", "text/javascript; charset=utf-8", include_str!("../assets/app.js")),
    ("style.css", "text/css; charset=utf-8", include_str!("../assets/style.css")),
];

/// Only this host's own files and calls.
const CSP: &str = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

pub fn serve(name: &str, request: &HeaderMap) -> HttpResponse {
    let Some((_, content_type, text)) = FILES.iter().find(|(n, ..)| *n == name) else {
        return rest_error(&A2aError::new(ErrorKind::MethodNotFound, format!("no playground file {name:?}")));
    };
    let etag = format!("\"{}-{:x}\"", env!("CARGO_PKG_VERSION"), fnv(text.as_bytes()));
    let fresh = request.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()).is_some_and(|v| v == etag);
    let builder = Response::builder()
        .header(header::CONTENT_TYPE, *content_type)
        .header(header::CACHE_CONTROL, "no-cache")
        .header(header::ETAG, etag)
        .header("content-security-policy", CSP)
        .header("x-content-type-options", "nosniff")
        .header("referrer-policy", "no-referrer");
    let response = if fresh {
        builder.status(StatusCode::NOT_MODIFIED).body(Body::Full(Bytes::new()))
    } else {
        builder.status(StatusCode::OK).body(Body::Full(Bytes::from_static(text.as_bytes())))
    };
    response.unwrap_or_else(|_| a2a_http::response::internal_response())
}

/// FNV-1a: the files' version in their ETag.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}
