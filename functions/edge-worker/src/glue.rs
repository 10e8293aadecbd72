//! Conversions between the Workers runtime types and the `http` types of the shared logic.

use a2a::http::{Body, HttpResponse};
use futures::Stream;
use worker::{Headers, Request, Response, Result};

/// Request headers not forwarded to the origin (hop-by-hop, or set by the runtime).
const NOT_FORWARDED: &[&str] = &["host", "content-length", "connection", "keep-alive", "transfer-encoding", "upgrade"];

/// The client's headers for an origin request: everything (auth, `A2A-Version`, `A2A-Extensions`…)
/// but the hop-by-hop ones.
pub fn forward_headers(from: &Headers) -> Result<Headers> {
    let out = Headers::new();
    for (name, value) in from.entries() {
        if !NOT_FORWARDED.contains(&name.as_str()) {
            out.append(&name, &value)?;
        }
    }
    Ok(out)
}

/// The request line and headers as `http` parts (for the shared card logic).
pub fn parts(req: &Request) -> Result<http::request::Parts> {
    let url = req.url()?;
    let mut builder = http::Request::builder()
        .method(http::Method::from_bytes(req.method().as_ref().as_bytes()).unwrap_or(http::Method::GET))
        .uri(url.as_str());
    for (name, value) in req.headers().entries() {
        builder = builder.header(name, value);
    }
    let (parts, ()) = builder.body(()).map_err(|e| worker::Error::RustError(e.to_string()))?.into_parts();
    Ok(parts)
}

pub fn js_body(bytes: &[u8]) -> wasm_bindgen::JsValue {
    js_sys::Uint8Array::from(bytes).into()
}

/// A response with a complete body (none for an empty one: 204 and 304 must not have a body).
pub fn bytes_response(body: Vec<u8>, status: u16) -> Result<Response> {
    let resp = if body.is_empty() { Response::empty()? } else { Response::from_bytes(body)? };
    Ok(resp.with_status(status))
}

/// A shared-logic response as a Workers response.
pub fn into_worker(resp: HttpResponse) -> Result<Response> {
    let (parts, body) = resp.into_parts();
    let headers = Headers::new();
    for (name, value) in &parts.headers {
        headers.append(name.as_str(), value.to_str().unwrap_or_default())?;
    }
    let body = match body {
        Body::Full(bytes) => bytes.to_vec(),
        Body::Sse(_) => Vec::new(),
    };
    Ok(bytes_response(body, parts.status.as_u16())?.with_headers(headers))
}

/// An SSE response over a stream of frames, served at the edge.
pub fn sse<S>(frames: S) -> Result<Response>
where
    S: Stream<Item = Result<Vec<u8>>> + 'static,
{
    let headers = Headers::new();
    headers.set("content-type", a2a::sse::CONTENT_TYPE)?;
    headers.set("cache-control", "no-cache")?;
    // Tells a stream served at the edge from one the origin served (fallback), for operators.
    headers.set("a2a-edge", "hub")?;
    Ok(Response::from_stream(frames)?.with_headers(headers))
}
