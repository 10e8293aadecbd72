//! The relay: a call the page asks this host to make (`POST /playground/api/relay` with
//! `{"url", "method", "headers", "body"}`), answered with the agent's status, content type and
//! body, streamed as it arrives (an SSE stream goes through as it is written).
//!
//! Bounded: it reaches public addresses and loopback only (the webhook SSRF guard: private,
//! link-local, metadata and reserved addresses are refused unless the operator's webhook allow-list
//! names them), follows no redirect, runs at most [`MAX_CALLS`] calls at once, gives up on a silent
//! agent after [`IDLE`], ends a stream after [`LONGEST`] and a body past [`MAX_ANSWER`] bytes. The
//! headers it forwards are the page's (credentials included); none of them, nor any body, is logged
//! or kept.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http::{header, HeaderName, HeaderValue, Response, StatusCode};
use serde::Deserialize;
use tokio::sync::Semaphore;

use a2a_engine::ssrf::{check_literal, AllowList};
use a2a_http::response::{rest_error, Body, HttpResponse};
use a2a_protocol::error::{A2aError, ErrorKind, Result};

/// Relayed calls at once; past it a call is refused (503) rather than queued.
pub const MAX_CALLS: usize = 64;
/// Longest silence of an agent (an SSE stream sends keep-alives far more often).
pub const IDLE: Duration = Duration::from_secs(60);
/// Longest a relayed answer (a stream) lasts.
pub const LONGEST: Duration = Duration::from_secs(15 * 60);
/// Most bytes of one relayed answer.
pub const MAX_ANSWER: usize = 32 << 20;
/// Most headers one call forwards.
const MAX_HEADERS: usize = 32;

/// Headers that belong to one connection or to this host, never forwarded.
const NOT_FORWARDED: &[&str] = &[
    "host",
    "connection",
    "keep-alive",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
    "cookie",
    "forwarded",
    "x-forwarded-for",
    "x-forwarded-host",
    "x-forwarded-proto",
    "x-real-ip",
];

/// The answer's headers the page sees.
const PASSED_BACK: [HeaderName; 5] =
    [header::CONTENT_TYPE, header::RETRY_AFTER, header::WWW_AUTHENTICATE, header::ETAG, header::ALLOW];

/// What the relay may reach besides public addresses: loopback (this host, agents beside it) and
/// what the operator allowed webhooks.
pub fn reachable(operator: &AllowList) -> AllowList {
    AllowList::parse("127.0.0.0/8,::1").unwrap_or_default().and(operator)
}

/// One call the page asks for.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Call {
    pub url: String,
    #[serde(default = "post")]
    pub method: String,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub body: Option<String>,
}

fn post() -> String {
    "POST".into()
}

pub struct Relay {
    client: reqwest::Client,
    allow: AllowList,
    calls: Arc<Semaphore>,
}

impl Relay {
    pub fn new(allow: AllowList) -> Result<Self> {
        let client = a2a_engine::push::guarded_client(&allow)
            .connect_timeout(Duration::from_secs(10))
            .read_timeout(IDLE)
            .user_agent(concat!("a2a-playground/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| A2aError::internal(format!("relay client: {e}")))?;
        Ok(Self { client, allow, calls: Arc::new(Semaphore::new(MAX_CALLS)) })
    }

    /// The HTTP client, guarded like the relay (the catchers fetch JWKS with it).
    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// Checks a URL the page names against the guard (the field is `field`).
    pub fn check(&self, url: &str, field: &str) -> Result<url::Url> {
        check_literal(url, &self.allow)
            .map(|t| t.url)
            .map_err(|e| A2aError::invalid_field(field, crate::unprefixed(&e)))
    }

    /// `POST /playground/api/relay`.
    pub async fn forward(&self, body: &[u8]) -> HttpResponse {
        match self.call(body).await {
            Ok(response) => response,
            Err(e) => refused(&e),
        }
    }

    async fn call(&self, body: &[u8]) -> Result<HttpResponse> {
        let call: Call = crate::parse(body)?;
        let url = self.check(&call.url, "url")?;
        let method = match call.method.to_ascii_uppercase().as_str() {
            "GET" => reqwest::Method::GET,
            "POST" => reqwest::Method::POST,
            "DELETE" => reqwest::Method::DELETE,
            "PUT" => reqwest::Method::PUT,
            "PATCH" => reqwest::Method::PATCH,
            other => {
                return Err(A2aError::invalid_field(
                    "method",
                    format!("{other:?} is not relayed (GET, POST, PUT, PATCH, DELETE)"),
                ))
            }
        };
        if call.headers.len() > MAX_HEADERS {
            return Err(A2aError::invalid_field(
                "headers",
                format!("{} headers; at most {MAX_HEADERS}", call.headers.len()),
            ));
        }
        let mut headers = http::HeaderMap::new();
        for (name, value) in &call.headers {
            let bad = |why: &str| A2aError::invalid_field("headers", format!("{name:?}: {why}"));
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad("not a header name"))?;
            if NOT_FORWARDED.contains(&name.as_str()) {
                return Err(bad("is not forwarded by the relay"));
            }
            headers.insert(name, HeaderValue::from_str(value).map_err(|_| bad("not a header value"))?);
        }
        let Ok(permit) = self.calls.clone().try_acquire_owned() else {
            return Err(A2aError::new(
                ErrorKind::ResourceExhausted,
                format!("the relay has {MAX_CALLS} calls open; retry shortly"),
            ));
        };
        let host = url.host_str().unwrap_or_default().to_string();
        let mut request = self.client.request(method.clone(), url).headers(headers);
        if let Some(body) = call.body {
            request = request.body(body);
        }
        let answer = request.send().await.map_err(|e| unreachable(&host, e))?;
        let status = answer.status().as_u16();
        tracing::debug!(%host, %method, status, "playground relay");
        let mut response = Response::builder().status(status).header(header::CACHE_CONTROL, "no-store");
        for name in PASSED_BACK {
            if let Some(value) = answer.headers().get(&name) {
                response = response.header(name, value.clone());
            }
        }
        let deadline = tokio::time::sleep(LONGEST);
        let mut sent = 0usize;
        let stream = answer
            .bytes_stream()
            .take_until(deadline)
            .take_while(move |chunk| {
                let go = match chunk {
                    Ok(bytes) => {
                        sent += bytes.len();
                        sent <= MAX_ANSWER
                    }
                    Err(_) => false,
                };
                futures::future::ready(go)
            })
            .filter_map(|chunk| futures::future::ready(chunk.ok()))
            .map(move |bytes: Bytes| {
                let _held = &permit;
                bytes
            });
        response.body(Body::Sse(stream.boxed())).map_err(|e| A2aError::internal(format!("relay answer: {e}")))
    }
}

fn unreachable(host: &str, e: reqwest::Error) -> A2aError {
    // The error's text names the URL and its cause, never a header or a body.
    let why = if e.is_timeout() {
        "timed out".to_string()
    } else if e.is_connect() {
        let mut cause: &dyn std::error::Error = &e;
        while let Some(next) = cause.source() {
            cause = next;
        }
        format!("could not connect ({cause})")
    } else {
        e.without_url().to_string()
    };
    A2aError::new(ErrorKind::Internal, format!("the agent at {host} could not be reached: {why}"))
}

/// A refusal of the relay itself (not the agent's answer): `x-playground-relay: refused` tells the
/// page which is which.
fn refused(e: &A2aError) -> HttpResponse {
    let mut response = match e.kind {
        // The agent, not the request: a gateway's answer.
        ErrorKind::Internal => crate::json(
            StatusCode::BAD_GATEWAY,
            &serde_json::json!({"error": {"code": 502, "status": "UNAVAILABLE", "message": e.message}}),
        ),
        _ => rest_error(e),
    };
    response.headers_mut().insert("x-playground-relay", HeaderValue::from_static("refused"));
    response
}
