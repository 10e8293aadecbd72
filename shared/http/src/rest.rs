//! The HTTP+JSON binding (spec §11): every route of the proto's `google.api.http` annotations, with
//! and without the `/{tenant}` prefix; path and query parameters merged into the request message;
//! AIP-193 errors; SSE streams whose `data` is a StreamResponse (errors as `event: error`).

use bytes::Bytes;
use http::{Method, StatusCode};
use serde_json::Value;

use crate::response::{frame_stream, json_response, rest_error, sse_response, with_task_seq, HttpResponse};
use crate::rest_input::{body_object, query_object};
use crate::service::Service;
use a2a_engine::auth::Principal;
use a2a_engine::dispatch::{call, decode, Op, Output};
use a2a_protocol::error::{A2aError, ErrorKind, Result};
use a2a_protocol::operation::Operation;
use a2a_protocol::sse::Framing;
use a2a_protocol::version::{self, Version};

/// The operations of the REST routes, with their path parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    SendMessage,
    SendStreamingMessage,
    ListTasks,
    GetTask { id: String },
    CancelTask { id: String },
    SubscribeToTask { id: String },
    CreatePushConfig { task_id: String },
    ListPushConfigs { task_id: String },
    GetPushConfig { task_id: String, id: String },
    DeletePushConfig { task_id: String, id: String },
    GetExtendedCard,
}

impl Route {
    /// The operation the route serves.
    pub fn operation(&self) -> Operation {
        match self {
            Self::SendMessage => Operation::SendMessage,
            Self::SendStreamingMessage => Operation::SendStreamingMessage,
            Self::ListTasks => Operation::ListTasks,
            Self::GetTask { .. } => Operation::GetTask,
            Self::CancelTask { .. } => Operation::CancelTask,
            Self::SubscribeToTask { .. } => Operation::SubscribeToTask,
            Self::CreatePushConfig { .. } => Operation::CreateTaskPushNotificationConfig,
            Self::ListPushConfigs { .. } => Operation::ListTaskPushNotificationConfigs,
            Self::GetPushConfig { .. } => Operation::GetTaskPushNotificationConfig,
            Self::DeletePushConfig { .. } => Operation::DeleteTaskPushNotificationConfig,
            Self::GetExtendedCard => Operation::GetExtendedAgentCard,
        }
    }
}

/// Why a path did not route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoRoute {
    NotFound,
    /// The path exists for these methods.
    MethodNotAllowed(&'static str),
}

/// Matches a request line to a route and its tenant ("" when the path has no tenant prefix).
pub fn route(method: &Method, path: &str) -> std::result::Result<(Route, String), NoRoute> {
    let segments: Vec<String> = path
        .trim_start_matches('/')
        .split('/')
        .map(|s| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned())
        .collect();
    match match_segments(method, &segments) {
        Err(NoRoute::NotFound) if segments.len() > 1 && !segments[0].is_empty() => {
            match_segments(method, &segments[1..]).map(|r| (r, segments[0].clone()))
        }
        other => other.map(|r| (r, String::new())),
    }
}

fn match_segments(method: &Method, segs: &[String]) -> std::result::Result<Route, NoRoute> {
    let is = |m: &Method| method == m;
    let seg: Vec<&str> = segs.iter().map(String::as_str).collect();
    match seg.as_slice() {
        ["message:send"] if is(&Method::POST) => Ok(Route::SendMessage),
        ["message:stream"] if is(&Method::POST) => Ok(Route::SendStreamingMessage),
        ["message:send" | "message:stream"] => Err(NoRoute::MethodNotAllowed("POST")),
        ["tasks"] if is(&Method::GET) => Ok(Route::ListTasks),
        ["tasks"] => Err(NoRoute::MethodNotAllowed("GET")),
        ["tasks", last] if !last.is_empty() => {
            if let Some(id) = last.strip_suffix(":cancel") {
                return if is(&Method::POST) {
                    Ok(Route::CancelTask { id: id.into() })
                } else {
                    Err(NoRoute::MethodNotAllowed("POST"))
                };
            }
            if let Some(id) = last.strip_suffix(":subscribe") {
                return if is(&Method::POST) || is(&Method::GET) {
                    Ok(Route::SubscribeToTask { id: id.into() })
                } else {
                    Err(NoRoute::MethodNotAllowed("GET, POST"))
                };
            }
            if is(&Method::GET) {
                Ok(Route::GetTask { id: (*last).into() })
            } else {
                Err(NoRoute::MethodNotAllowed("GET"))
            }
        }
        ["tasks", task_id, "pushNotificationConfigs"] if !task_id.is_empty() => match *method {
            Method::POST => Ok(Route::CreatePushConfig { task_id: (*task_id).into() }),
            Method::GET => Ok(Route::ListPushConfigs { task_id: (*task_id).into() }),
            _ => Err(NoRoute::MethodNotAllowed("GET, POST")),
        },
        ["tasks", task_id, "pushNotificationConfigs", id] if !task_id.is_empty() && !id.is_empty() => match *method {
            Method::GET => Ok(Route::GetPushConfig { task_id: (*task_id).into(), id: (*id).into() }),
            Method::DELETE => Ok(Route::DeletePushConfig { task_id: (*task_id).into(), id: (*id).into() }),
            _ => Err(NoRoute::MethodNotAllowed("GET, DELETE")),
        },
        ["extendedAgentCard"] if is(&Method::GET) => Ok(Route::GetExtendedCard),
        ["extendedAgentCard"] => Err(NoRoute::MethodNotAllowed("GET")),
        _ => Err(NoRoute::NotFound),
    }
}

pub async fn handle(service: &Service, parts: &http::request::Parts, body: Bytes) -> HttpResponse {
    let outcome = match service.authenticate(parts).await {
        Ok(principal) => serve(service, parts, body, principal).await,
        Err(e) => Err(e),
    };
    outcome.unwrap_or_else(|e| rest_error(&e))
}

/// The version decides the binding: 1.0 routes (with or without a tenant), or the 0.3 binding's
/// `/v1/` routes for a request without `A2A-Version` (0.3 clients send none).
async fn serve(
    service: &Service,
    parts: &http::request::Parts,
    body: Bytes,
    principal: Principal,
) -> Result<HttpResponse> {
    let version = version::negotiate(&parts.headers, parts.uri.query())?;
    if version == Version::V0_3 {
        if crate::rest03::is_v03_path(parts.uri.path()) {
            return crate::rest03::handle(service, parts, body, principal).await;
        }
        // 0.3 itself is served, on its own routes: say so rather than that 0.3 is unsupported.
        let message = format!(
            "{} is an A2A 1.0 route and the request names no A2A-Version (so 0.3): send A2A-Version: 1.0, \
             or use the 0.3 HTTP+JSON routes under /v1/",
            parts.uri.path()
        );
        return Err(A2aError::new(ErrorKind::VersionNotSupported, message).with("version", "0.3").with(
            "hint",
            "A2A 0.3 HTTP+JSON is served under /v1/ (e.g. POST /v1/message:send); send A2A-Version: 1.0 for these routes",
        ));
    }
    let path = parts.uri.path();
    let (route, tenant) = route(&parts.method, path).map_err(|no| match no {
        NoRoute::NotFound => A2aError::new(ErrorKind::MethodNotFound, format!("no route for {} {path}", parts.method)),
        NoRoute::MethodNotAllowed(allow) => A2aError::new(
            ErrorKind::MethodNotAllowed,
            format!("{} is not allowed on {path}; use {allow}", parts.method),
        )
        .with("allow", allow),
    })?;
    let ctx = service.call_context(parts, principal, version)?;
    let _decoding = service.admit(&body).await?;
    let op = decode_op(parts, body, route, tenant)?;
    let (output, seq) = call(&service.engine, &ctx, op).await?;
    match output {
        Output::Stream(events) => {
            Ok(sse_response(frame_stream(events, Framing::Rest, &service.answers), service.limits.keep_alive))
        }
        output => {
            let estimate = output.size_hint();
            let body = service.encode_answer(output, estimate, encode).await?;
            Ok(with_task_seq(json_response(StatusCode::OK, body), seq))
        }
    }
}

/// A result's HTTP+JSON body, written into `buf`.
fn encode(output: Output, mut buf: Vec<u8>) -> Result<Vec<u8>> {
    let written = match output {
        Output::SendMessage(r) => serde_json::to_writer(&mut buf, &r),
        Output::Task(t) => serde_json::to_writer(&mut buf, &t),
        Output::ListTasks(r) => serde_json::to_writer(&mut buf, &r),
        Output::PushConfig(c) => serde_json::to_writer(&mut buf, &c),
        Output::PushConfigs(c) => serde_json::to_writer(&mut buf, &c),
        Output::Card(c) => serde_json::to_writer(&mut buf, &c),
        Output::Empty | Output::Stream(_) => {
            buf.extend_from_slice(b"{}");
            Ok(())
        }
    };
    written.map_err(|e| A2aError::internal(e.to_string()))?;
    Ok(buf)
}

/// Builds the request message from the body (POST) or the query (GET, DELETE), then the path.
fn decode_op(parts: &http::request::Parts, body: Bytes, route: Route, tenant: String) -> Result<Op> {
    let mut fields =
        if parts.method == Method::POST { body_object(parts, &body)? } else { query_object(parts.uri.query())? };
    if !tenant.is_empty() {
        fields.insert("tenant".into(), Value::String(tenant));
    }
    let mut set = |k: &str, v: String| {
        fields.insert(k.into(), Value::String(v));
    };
    match &route {
        Route::GetTask { id } | Route::CancelTask { id } | Route::SubscribeToTask { id } => set("id", id.clone()),
        Route::CreatePushConfig { task_id } | Route::ListPushConfigs { task_id } => set("taskId", task_id.clone()),
        Route::GetPushConfig { task_id, id } | Route::DeletePushConfig { task_id, id } => {
            set("taskId", task_id.clone());
            set("id", id.clone());
        }
        Route::SendMessage | Route::SendStreamingMessage | Route::ListTasks | Route::GetExtendedCard => {}
    }
    if matches!(route, Route::CreatePushConfig { .. }) {
        // The path names the task: a body that names another one is contradictory.
        fields.remove("task_id");
    }
    let v = Value::Object(fields);
    Ok(match route {
        Route::SendMessage => Op::SendMessage(decode(v, "")?),
        Route::SendStreamingMessage => Op::SendStreamingMessage(decode(v, "")?),
        Route::ListTasks => Op::ListTasks(decode(v, "")?),
        Route::GetTask { .. } => Op::GetTask(decode(v, "")?),
        Route::CancelTask { .. } => Op::CancelTask(decode(v, "")?),
        Route::SubscribeToTask { .. } => Op::SubscribeToTask(decode(v, "")?),
        Route::CreatePushConfig { .. } => Op::CreatePushConfig(decode(v, "")?),
        Route::ListPushConfigs { .. } => Op::ListPushConfigs(decode(v, "")?),
        Route::GetPushConfig { .. } => Op::GetPushConfig(decode(v, "")?),
        Route::DeletePushConfig { .. } => Op::DeletePushConfig(decode(v, "")?),
        Route::GetExtendedCard => Op::GetExtendedCard,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_with_and_without_tenant() {
        let r = |m: Method, p: &str| route(&m, p);
        assert_eq!(r(Method::POST, "/message:send"), Ok((Route::SendMessage, String::new())));
        assert_eq!(r(Method::POST, "/acme/message:stream"), Ok((Route::SendStreamingMessage, "acme".into())));
        assert_eq!(r(Method::GET, "/tasks/t1"), Ok((Route::GetTask { id: "t1".into() }, String::new())));
        assert_eq!(
            r(Method::GET, "/acme/tasks/t1:subscribe"),
            Ok((Route::SubscribeToTask { id: "t1".into() }, "acme".into()))
        );
        assert_eq!(
            r(Method::POST, "/tasks/t1:subscribe"),
            Ok((Route::SubscribeToTask { id: "t1".into() }, String::new()))
        );
        assert_eq!(
            r(Method::DELETE, "/x/tasks/t1/pushNotificationConfigs/c1"),
            Ok((Route::DeletePushConfig { task_id: "t1".into(), id: "c1".into() }, "x".into()))
        );
        assert_eq!(r(Method::GET, "/tenant/extendedAgentCard"), Ok((Route::GetExtendedCard, "tenant".into())));
        assert_eq!(r(Method::DELETE, "/tasks"), Err(NoRoute::MethodNotAllowed("GET")));
        assert_eq!(r(Method::GET, "/nope"), Err(NoRoute::NotFound));
    }
}
