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

/// Several sets of routes served side by side (the playground, AgentCore's `/ping`): a path goes
/// to the first set that owns it.
pub struct RouteSets(pub Vec<std::sync::Arc<dyn Routes>>);

impl RouteSets {
    fn owner(&self, path: &str) -> Option<&dyn Routes> {
        self.0.iter().find(|r| r.owns(path)).map(|r| &**r)
    }
}

#[async_trait::async_trait]
impl Routes for RouteSets {
    fn owns(&self, path: &str) -> bool {
        self.owner(path).is_some()
    }

    fn max_body(&self) -> usize {
        self.0.iter().map(|r| r.max_body()).max().unwrap_or(0)
    }

    fn is_public(&self, path: &str) -> bool {
        self.owner(path).is_some_and(|r| r.is_public(path))
    }

    async fn handle(&self, req: http::Request<Bytes>, caller: Option<Principal>) -> HttpResponse {
        match self.owner(req.uri().path()) {
            Some(routes) => routes.handle(req, caller).await,
            None => crate::response::rest_error(&a2a_protocol::error::A2aError::method_not_found(req.uri().path())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Owns one path, public or not, and answers with its status.
    struct One(&'static str, bool, usize, u16);

    #[async_trait::async_trait]
    impl Routes for One {
        fn owns(&self, path: &str) -> bool {
            path == self.0
        }
        fn max_body(&self) -> usize {
            self.2
        }
        fn is_public(&self, _path: &str) -> bool {
            self.1
        }
        async fn handle(&self, _req: http::Request<Bytes>, _caller: Option<Principal>) -> HttpResponse {
            crate::response::json_response(http::StatusCode::from_u16(self.3).unwrap(), "{}")
        }
    }

    #[tokio::test]
    async fn a_path_goes_to_the_set_that_owns_it() {
        let sets = RouteSets(vec![Arc::new(One("/a", false, 10, 201)), Arc::new(One("/ping", true, 0, 200))]);
        assert!(sets.owns("/a") && sets.owns("/ping") && !sets.owns("/"));
        assert!(sets.is_public("/ping") && !sets.is_public("/a") && !sets.is_public("/other"));
        assert_eq!(sets.max_body(), 10);
        let req = |path: &str| http::Request::builder().uri(path).body(Bytes::new()).unwrap();
        assert_eq!(sets.handle(req("/a"), None).await.status(), 201);
        assert_eq!(sets.handle(req("/ping"), None).await.status(), 200);
        assert_eq!(sets.handle(req("/nope"), None).await.status(), 404);
    }
}
