//! The 0.3 HTTP+JSON binding (0.3 spec §11, as the 0.3 reference SDK serves and calls it): routes
//! under `/v1/` with payloads in the JSON of the 0.3 proto ([`a2a_protocol::v03::proto`]), converted to the
//! 1.0 model and run by the same operations; errors are those of HTTP+JSON 1.0 (same statuses).
//! Both SSE paths of 0.3 resubscribe work: `GET …:subscribe` (the reference) and
//! `POST …:resubscribe` (the 0.3 text).

use bytes::Bytes;
use http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::response::{frame_stream, json_response, sse_response, with_task_seq, HttpResponse};
use crate::rest_input::{body_object, query_object};
use crate::service::Service;
use a2a_engine::auth::Principal;
use a2a_engine::dispatch::{call, decode, Op, Output};
use a2a_protocol::error::{A2aError, Result};
use a2a_protocol::sse::Framing;
use a2a_protocol::types::*;
use a2a_protocol::v03;
use a2a_protocol::v03::proto::{config_out, json_names, message_out, send_in, task_out};
use a2a_protocol::version::Version;

/// The routes of the 0.3 binding, as `(method, path after /v1)`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Route {
    Send,
    Stream,
    ListTasks,
    GetTask(String),
    Cancel(String),
    Resubscribe(String),
    CreateConfig(String),
    ListConfigs(String),
    GetConfig(String, String),
    DeleteConfig(String, String),
    Card,
}

fn route(method: &Method, path: &str) -> Option<Route> {
    let rest = path.strip_prefix("/v1/")?;
    let segs: Vec<String> =
        rest.split('/').map(|s| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()).collect();
    let seg: Vec<&str> = segs.iter().map(String::as_str).collect();
    let (get, post, delete) = (method == Method::GET, method == Method::POST, method == Method::DELETE);
    Some(match seg.as_slice() {
        ["message:send"] if post => Route::Send,
        ["message:stream"] if post => Route::Stream,
        ["tasks"] if get => Route::ListTasks,
        ["card"] if get => Route::Card,
        ["tasks", last] => {
            if let Some(id) = last.strip_suffix(":cancel").filter(|_| post) {
                Route::Cancel(id.into())
            } else if let Some(id) = last.strip_suffix(":subscribe").filter(|_| get || post) {
                Route::Resubscribe(id.into())
            } else if let Some(id) = last.strip_suffix(":resubscribe").filter(|_| get || post) {
                Route::Resubscribe(id.into())
            } else if get && !last.contains(':') {
                Route::GetTask((*last).into())
            } else {
                return None;
            }
        }
        ["tasks", task, "pushNotificationConfigs"] if post => Route::CreateConfig((*task).into()),
        ["tasks", task, "pushNotificationConfigs"] if get => Route::ListConfigs((*task).into()),
        ["tasks", task, "pushNotificationConfigs", id] if get => Route::GetConfig((*task).into(), (*id).into()),
        ["tasks", task, "pushNotificationConfigs", id] if delete => Route::DeleteConfig((*task).into(), (*id).into()),
        _ => return None,
    })
}

/// True for a path the 0.3 binding serves (with any method).
pub fn is_v03_path(path: &str) -> bool {
    path.starts_with("/v1/")
}

pub async fn handle(
    service: &Service,
    parts: &http::request::Parts,
    body: Bytes,
    principal: Principal,
) -> Result<HttpResponse> {
    let route = route(&parts.method, parts.uri.path()).ok_or_else(|| {
        A2aError::method_not_found(&format!("{} {} (A2A 0.3 HTTP+JSON)", parts.method, parts.uri.path()))
    })?;
    let ctx = service.call_context(parts, principal, Version::V0_3)?;
    let _decoding = service.admit(&body).await?;
    let op = decode_op(parts, &body, &route)?;
    let (output, seq) = call(&service.engine, &ctx, op).await?;
    if let Output::Stream(events) = output {
        return Ok(sse_response(frame_stream(events, Framing::Rest03, &service.answers), service.limits.keep_alive));
    }
    let estimate = output.size_hint();
    let bytes = service.encode_answer(output, estimate, encode).await?;
    Ok(with_task_seq(json_response(StatusCode::OK, bytes), seq))
}

/// A result's 0.3 HTTP+JSON body.
fn encode(output: Output, mut buf: Vec<u8>) -> Result<Vec<u8>> {
    let body = match output {
        Output::Stream(_) => json!({}),
        Output::SendMessage(SendMessageResponse::Task(t)) => json!({"task": task_out(&t)}),
        Output::SendMessage(SendMessageResponse::Message(m)) => json!({"message": message_out(&m)}),
        Output::Task(t) => task_out(&t),
        Output::ListTasks(r) => json!({
            "tasks": r.tasks.iter().map(task_out).collect::<Vec<_>>(),
            "nextPageToken": r.next_page_token,
            "totalSize": r.total_size,
        }),
        Output::PushConfig(c) => config_out(&c),
        Output::PushConfigs(c) => json!({"configs": c.configs.iter().map(config_out).collect::<Vec<_>>()}),
        Output::Card(c) => v03::proto::card_out(&c),
        Output::Empty => json!({}),
    };
    serde_json::to_writer(&mut buf, &body).map_err(|e| A2aError::internal(e.to_string()))?;
    Ok(buf)
}

/// A request body with every field under its JSON name (ProtoJSON accepts proto names too; see
/// [`json_names`]): the one place where 0.3 bodies are read.
fn body03(parts: &http::request::Parts, body: &[u8]) -> Result<serde_json::Map<String, Value>> {
    json_names(body_object(parts, body)?)
}

fn decode_op(parts: &http::request::Parts, body: &[u8], route: &Route) -> Result<Op> {
    Ok(match route {
        Route::Send | Route::Stream => {
            let req = send_in(body03(parts, body)?)?;
            if *route == Route::Send {
                Op::SendMessage(req)
            } else {
                Op::SendStreamingMessage(req)
            }
        }
        Route::ListTasks => {
            let mut q = query_object(parts.uri.query())?;
            if let Some(Value::String(s)) = q.get("status") {
                let state = TaskState::parse_lenient(s).map(|s| s.as_str()).unwrap_or_default();
                q.insert("status".into(), Value::String(state.into()));
            }
            Op::ListTasks(decode(Value::Object(q), "")?)
        }
        Route::GetTask(id) => {
            // Query parameters, like body fields, by JSON name or proto name.
            let names = ["historyLength", "history_length"];
            let history_length =
                match a2a_protocol::version::query_param(parts.uri.query(), &names).filter(|h| !h.is_empty()) {
                    None => None,
                    Some(h) => Some(
                        h.parse::<i32>().map_err(|_| A2aError::invalid_field("historyLength", "is not an integer"))?,
                    ),
                };
            // proto3: 0 is the same as absent.
            let history_length = history_length.filter(|h| *h != 0);
            Op::GetTask(GetTaskRequest { tenant: String::new(), id: id.clone(), history_length })
        }
        Route::Cancel(id) => {
            Op::CancelTask(CancelTaskRequest { tenant: String::new(), id: id.clone(), metadata: None })
        }
        Route::Resubscribe(id) => Op::SubscribeToTask(SubscribeToTaskRequest { tenant: String::new(), id: id.clone() }),
        Route::CreateConfig(task_id) => {
            // The reference sends a CreateTaskPushNotificationConfigRequest ({parent, configId,
            // config}); other 0.3 clients send the TaskPushNotificationConfig itself ({name, ...}).
            let mut body = body03(parts, body)?;
            let (named, field) = match body.remove("config") {
                Some(Value::Object(config)) => (config, "config.pushNotificationConfig"),
                _ => (body.clone(), "pushNotificationConfig"),
            };
            let wire = named.get("pushNotificationConfig").cloned().unwrap_or(Value::Null);
            let mut config: v03::PushNotificationConfig = decode(wire, field)?;
            let named_id =
                named.get("name").and_then(Value::as_str).and_then(|n| n.rsplit_once("/pushNotificationConfigs/"));
            let id = body.get("configId").and_then(Value::as_str).or(named_id.map(|(_, id)| id));
            if let Some(id) = id.filter(|id| !id.is_empty()) {
                config.id = Some(id.to_string());
            }
            let wire = v03::TaskPushNotificationConfig { task_id: task_id.clone(), push_notification_config: config };
            Op::CreatePushConfig(wire.into_v1())
        }
        Route::ListConfigs(task_id) => Op::ListPushConfigs(ListTaskPushNotificationConfigsRequest {
            task_id: task_id.clone(),
            ..Default::default()
        }),
        Route::GetConfig(task_id, id) => Op::get_push_config_03(task_id.clone(), Some(id.clone())),
        Route::DeleteConfig(task_id, id) => Op::DeletePushConfig(DeleteTaskPushNotificationConfigRequest {
            tenant: String::new(),
            task_id: task_id.clone(),
            id: id.clone(),
        }),
        Route::Card => Op::GetExtendedCard,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(route(&Method::POST, "/v1/message:send"), Some(Route::Send));
        assert_eq!(route(&Method::GET, "/v1/tasks/t1:subscribe"), Some(Route::Resubscribe("t1".into())));
        assert_eq!(route(&Method::POST, "/v1/tasks/t1:resubscribe"), Some(Route::Resubscribe("t1".into())));
        assert_eq!(route(&Method::GET, "/v1/tasks/t1"), Some(Route::GetTask("t1".into())));
        assert_eq!(
            route(&Method::DELETE, "/v1/tasks/t1/pushNotificationConfigs/c"),
            Some(Route::DeleteConfig("t1".into(), "c".into()))
        );
        assert_eq!(route(&Method::GET, "/v1/message:send"), None);
        assert_eq!(route(&Method::GET, "/message:send"), None);
    }
}
