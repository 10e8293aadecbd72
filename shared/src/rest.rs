//! The HTTP+JSON binding (spec §11): every route of the proto's `google.api.http` annotations, with
//! and without the `/{tenant}` prefix; path and query parameters merged into the request message;
//! AIP-193 errors; SSE streams whose `data` is a StreamResponse (errors as `event: error`).

use bytes::Bytes;
use http::{Method, StatusCode};
use serde_json::{Map, Value};

use crate::auth::Principal;
use crate::dispatch::{call, decode, Op, Output};
use crate::error::{A2aError, ErrorKind, Result};
use crate::response::{
    frame_stream, json_response, require_json, rest_error, sse_response, with_task_seq, HttpResponse,
};
use crate::service::Service;
use crate::sse::Framing;
use crate::types::TaskState;
use crate::version::{self, Version};

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
    let outcome = match service.authenticate(parts) {
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
        return Err(A2aError::version_not_supported("0.3").with(
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
    let op = decode_op(parts, body, route, tenant)?;
    let (output, seq) = call(&service.engine, &ctx, op).await?;
    match output {
        Output::Stream(events) => Ok(sse_response(frame_stream(events, Framing::Rest), service.limits.keep_alive)),
        output => {
            let value = match output {
                Output::SendMessage(r) => serde_json::to_vec(&r),
                Output::Task(t) => serde_json::to_vec(&t),
                Output::ListTasks(r) => serde_json::to_vec(&r),
                Output::PushConfig(c) => serde_json::to_vec(&c),
                Output::PushConfigs(c) => serde_json::to_vec(&c),
                Output::Card(c) => serde_json::to_vec(&c),
                Output::Empty | Output::Stream(_) => Ok(b"{}".to_vec()),
            };
            let body = value.map_err(|e| A2aError::internal(e.to_string()))?;
            Ok(with_task_seq(json_response(StatusCode::OK, body), seq))
        }
    }
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

/// The JSON object of a POST body (an empty body is an empty object).
pub(crate) fn body_object(parts: &http::request::Parts, body: &[u8]) -> Result<Map<String, Value>> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    require_json(&parts.headers)?;
    match serde_json::from_slice(body) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(A2aError::invalid_request("the request body must be a JSON object")),
        Err(e) => Err(A2aError::parse(format!("invalid JSON: {e}"))),
    }
}

/// Query parameters per spec §11: camelCase names, numbers and booleans as strings, enums by name
/// or short form (`status=working`), timestamps as ISO 8601. Unknown parameters are ignored.
pub(crate) fn query_object(query: Option<&str>) -> Result<Map<String, Value>> {
    let mut out = Map::new();
    let Some(query) = query else { return Ok(out) };
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let decode =
            |s: &str| percent_encoding::percent_decode_str(&s.replace('+', " ")).decode_utf8_lossy().into_owned();
        let (key, raw) = (decode(k), decode(v));
        let value = match key.as_str() {
            "historyLength" | "history_length" | "pageSize" | "page_size" => {
                let n: i64 = raw
                    .trim()
                    .parse()
                    .map_err(|_| A2aError::invalid_field(&key, format!("{raw:?} is not an integer")))?;
                Value::from(n)
            }
            "includeArtifacts" | "include_artifacts" => match raw.trim() {
                "true" | "1" | "" => Value::Bool(true),
                "false" | "0" => Value::Bool(false),
                _ => return Err(A2aError::invalid_field(&key, format!("{raw:?} is not a boolean (true or false)"))),
            },
            "status" => {
                let state = TaskState::parse_lenient(&raw)
                    .ok_or_else(|| A2aError::invalid_field("status", format!("unknown task state {raw:?}")))?;
                Value::String(state.as_str().into())
            }
            "contextId"
            | "context_id"
            | "pageToken"
            | "page_token"
            | "statusTimestampAfter"
            | "status_timestamp_after"
            | "tenant" => Value::String(raw),
            _ => continue,
        };
        out.insert(key, value);
    }
    Ok(out)
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

    #[test]
    fn query_parameters() {
        let q = query_object(Some("status=input-required&pageSize=5&includeArtifacts=true&A2A-Version=1.0")).unwrap();
        assert_eq!(q["status"], "TASK_STATE_INPUT_REQUIRED");
        assert_eq!(q["pageSize"], 5);
        assert_eq!(q["includeArtifacts"], true);
        assert!(!q.contains_key("A2A-Version"));
        assert!(query_object(Some("pageSize=abc")).unwrap_err().message.contains("pageSize"));
        assert!(query_object(Some("status=TASK_STATE_WORKING")).is_ok());
        assert!(query_object(Some("status=bogus")).unwrap_err().message.contains("status"));
    }
}
