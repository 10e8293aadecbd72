//! Pages and APIs a front serves beside A2A (the playground of a2a-local): a path they own never
//! reaches the A2A service. The embedded server gives their requests its framing checks, deadlines
//! and connection cap; the Lambda response-streaming function can serve them too. Framework-neutral,
//! like [`crate::Service::handle`].

use bytes::Bytes;

use a2a_engine::auth::Principal;

use crate::response::HttpResponse;
use crate::service::Service;

#[async_trait::async_trait]
pub trait Routes: Send + Sync {
    /// Whether `path` is one of these routes.
    fn owns(&self, path: &str) -> bool;
    /// Largest body one of these routes reads.
    fn max_body(&self) -> usize;
    /// Whether `path` is served without the service's authentication (a page, a webhook catcher).
    fn is_public(&self, path: &str) -> bool;
    /// Serves a request; `caller` is the service's authentication of it (not done for a public path).
    async fn handle(&self, req: http::Request<Bytes>, caller: Option<Principal>) -> HttpResponse;
}

/// Who calls one of `routes`: nobody to check on a public path, else the service's authentication
/// (its refusal is the caller's answer). Every front asks this before [`Routes::handle`].
pub async fn caller(
    service: &Service,
    routes: &dyn Routes,
    parts: &http::request::Parts,
) -> a2a_protocol::error::Result<Option<Principal>> {
    if routes.is_public(parts.uri.path()) {
        return Ok(None);
    }
    service.authenticate(parts).await.map(Some)
}
