//! The request-independent state of the HTTP front ([`Service`]: the engine and the [`Limits`]) and
//! what every binding does first with a request: which binding a path belongs to, and the call
//! context (who is calling, with which version and extensions). The routing itself is in `http.rs`.

use std::sync::Arc;

use crate::auth::Principal;
use crate::engine::{CallContext, Engine};
use crate::error::{A2aError, ErrorKind, Result};
use crate::response::{jsonrpc_error_response, rest_error, HttpResponse};
use crate::version::{self, Version};

/// Request-independent settings of the front.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest accepted request body (default 10 MiB).
    pub max_body: usize,
    /// Idle time after which an SSE stream gets a `: keep-alive` comment (default 15 s).
    pub keep_alive: std::time::Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self { max_body: 10 * 1024 * 1024, keep_alive: crate::sse::KEEP_ALIVE_EVERY }
    }
}

/// The outcome of authenticating a request, kept in its extensions by the front that did it.
#[derive(Debug, Clone)]
pub struct Authenticated(pub Result<Principal>);

#[derive(Clone)]
pub struct Service {
    pub engine: Arc<Engine>,
    pub limits: Limits,
}

/// Which binding a path belongs to, for error shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    JsonRpc,
    Rest,
}

pub fn binding_of(path: &str) -> Binding {
    if path == "/" || path.is_empty() {
        Binding::JsonRpc
    } else {
        Binding::Rest
    }
}

impl Service {
    pub fn new(engine: Arc<Engine>, limits: Limits) -> Self {
        Self { engine, limits }
    }

    /// The refusal for a body over the limit, in the shape of the path's binding.
    pub fn payload_too_large(&self, path: &str) -> HttpResponse {
        let err = A2aError::new(
            ErrorKind::PayloadTooLarge,
            format!("request body exceeds the limit of {} bytes", self.limits.max_body),
        );
        match binding_of(path) {
            Binding::JsonRpc => jsonrpc_error_response(&crate::rpc_id::RpcId::null(), &err),
            Binding::Rest => rest_error(&err),
        }
    }

    /// Who is calling. The first check of every request: nothing else about a request is judged
    /// (and reported) for a caller who is not known. A front that authenticated the request already
    /// (before reading its body) leaves the outcome in the request's extensions; it is not redone.
    pub async fn authenticate(&self, parts: &http::request::Parts) -> Result<Principal> {
        if let Some(Authenticated(outcome)) = parts.extensions.get::<Authenticated>() {
            return outcome.clone();
        }
        self.engine.auth.authenticate(parts).await
    }

    /// The call context of an authenticated caller: the service parameters, with the card's required
    /// extensions checked.
    pub(crate) fn call_context(
        &self,
        parts: &http::request::Parts,
        principal: Principal,
        version: Version,
    ) -> Result<CallContext> {
        let query = parts.uri.query();
        let extensions = version::requested_extensions(&parts.headers, query);
        version::check_required_extensions(&self.engine.card.card.capabilities.extensions, &extensions)?;
        Ok(CallContext { principal, version, extensions, last_event_id: crate::sse::last_event_id(&parts.headers) })
    }
}
