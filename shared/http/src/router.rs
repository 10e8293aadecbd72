//! The HTTP front: one base URL serving the agent card, the JSON-RPC endpoint (`POST /`) and every
//! HTTP+JSON route. Framework-neutral (`http` types in, `http` types out) so that the local server,
//! Lambda and tests all call the same [`Service::handle`].

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};

use a2a_protocol::error::{A2aError, ErrorKind};
use a2a_protocol::paths::{is_public_path, JWKS_PATH};
use a2a_protocol::version;

use crate::response::{internal_response, rest_error, Body, HttpResponse, JSON};
use crate::service::{binding_of, Binding, Service};

impl Service {
    /// Serves one request. Never panics; every failure is a protocol error response.
    pub async fn handle(&self, req: Request<Bytes>) -> HttpResponse {
        let (parts, body) = req.into_parts();
        if body.len() > self.limits.max_body {
            return self.payload_too_large(parts.uri.path());
        }
        let path = parts.uri.path();
        if is_public_path(path) {
            return card_response(&self.engine.card, &parts);
        }
        match binding_of(path) {
            Binding::JsonRpc if parts.method == Method::POST => crate::jsonrpc::handle(self, &parts, body).await,
            Binding::JsonRpc => rest_error(
                &A2aError::new(ErrorKind::MethodNotAllowed, "the JSON-RPC endpoint takes POST requests")
                    .with("allow", "POST"),
            ),
            Binding::Rest => crate::rest::handle(self, &parts, body).await,
        }
    }
}

/// Serves the public card of `cards` (GET or HEAD) in the negotiated version, or the JWKS of its
/// signatures, with `Cache-Control`, a strong `ETag` (304 on `If-None-Match`), `Last-Modified` and
/// `Vary`.
pub fn card_response(cards: &a2a_engine::card::CardService, parts: &http::request::Parts) -> HttpResponse {
    if parts.method != Method::GET && parts.method != Method::HEAD {
        return rest_error(
            &A2aError::new(ErrorKind::MethodNotAllowed, "the agent card is served on GET").with("allow", "GET, HEAD"),
        );
    }
    let served = if parts.uri.path() == JWKS_PATH {
        match cards.jwks() {
            Some(jwks) => jwks,
            None => {
                return rest_error(&A2aError::new(
                    ErrorKind::MethodNotFound,
                    "no JWKS: this agent's card is not signed",
                ))
            }
        }
    } else {
        match version::negotiate(&parts.headers, parts.uri.query()) {
            Ok(version) => cards.served(version),
            Err(e) => return rest_error(&e),
        }
    };
    let not_modified =
        parts.headers.get(header::IF_NONE_MATCH).and_then(|v| v.to_str().ok()).is_some_and(|v| served.matches(v));
    let builder = Response::builder()
        .header(header::CACHE_CONTROL, format!("public, max-age={}", cards.max_age))
        .header(header::ETAG, served.etag.as_str())
        .header(header::LAST_MODIFIED, cards.last_modified_http.as_str())
        .header(header::VARY, "A2A-Version");
    let response = if not_modified {
        builder.status(StatusCode::NOT_MODIFIED).body(Body::Full(Bytes::new()))
    } else {
        builder.status(StatusCode::OK).header(header::CONTENT_TYPE, JSON).body(Body::Full(served.body.clone()))
    };
    response.unwrap_or_else(|_| internal_response())
}
