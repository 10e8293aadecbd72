//! Amazon Bedrock AgentCore Runtime's container contract beside A2A (docs/agentcore.md): the
//! runtime polls `GET /ping` every few seconds and keeps the microVM alive while the answer says
//! `HealthyBusy`, with `time_of_last_update` moving only when the status changes (without that
//! field, the runtime's idle timeout ends a busy session). Busy means a turn runs in this process.

use std::sync::Arc;

use bytes::Bytes;
use http::{Method, StatusCode};
use parking_lot::Mutex;

use crate::response::{json_response, rest_error, HttpResponse};
use crate::routes::Routes;
use a2a_engine::auth::Principal;
use a2a_engine::runner::Runner;
use a2a_protocol::error::{A2aError, ErrorKind};

/// The health check's path.
pub const PING_PATH: &str = "/ping";

/// `GET /ping`: whether a turn runs here, and since when that is so.
pub struct Ping {
    runner: Arc<Runner>,
    /// The status last reported and the time (Unix seconds) it became so.
    last: Mutex<(Status, i64)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Healthy,
    HealthyBusy,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Self::Healthy => "Healthy",
            Self::HealthyBusy => "HealthyBusy",
        }
    }
}

impl Ping {
    pub fn new(runner: Arc<Runner>) -> Self {
        Self { runner, last: Mutex::new((Status::Healthy, unix_now())) }
    }

    /// The status now, and when it last changed.
    fn status(&self) -> (Status, i64) {
        let now = if self.runner.running() > 0 { Status::HealthyBusy } else { Status::Healthy };
        let mut last = self.last.lock();
        if last.0 != now {
            *last = (now, unix_now());
        }
        *last
    }
}

#[async_trait::async_trait]
impl Routes for Ping {
    fn owns(&self, path: &str) -> bool {
        path == PING_PATH
    }

    fn max_body(&self) -> usize {
        0
    }

    /// The runtime's health checker sends no credentials.
    fn is_public(&self, _path: &str) -> bool {
        true
    }

    async fn handle(&self, req: http::Request<Bytes>, _caller: Option<Principal>) -> HttpResponse {
        if req.method() != Method::GET && req.method() != Method::HEAD {
            let refused =
                A2aError::new(ErrorKind::MethodNotAllowed, "/ping is served on GET").with("allow", "GET, HEAD");
            return rest_error(&refused);
        }
        let (status, since) = self.status();
        let body = serde_json::json!({"status": status.as_str(), "time_of_last_update": since});
        json_response(StatusCode::OK, body.to_string())
    }
}

fn unix_now() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since.as_secs()).unwrap_or(i64::MAX)
}
