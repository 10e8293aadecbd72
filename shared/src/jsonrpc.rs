//! The JSON-RPC 2.0 binding (spec §9, and the 0.3 method names and payloads): envelope checks,
//! method table, params decoding with field paths, results and SSE streams wrapped in responses
//! carrying the request id.

use bytes::Bytes;
use http::StatusCode;
use serde_json::{json, Value};

use crate::dispatch::{call, decode, Op, Output};
use crate::error::{A2aError, Result};
use crate::http::{
    frame_stream, is_json_content_type, json_response, jsonrpc_error_response, sse_response, with_task_seq,
    HttpResponse, Service,
};
use crate::sse::Framing;
use crate::types::*;
use crate::v03;
use crate::version;

/// Which payload format a method speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wire {
    V1,
    V03,
}

pub async fn handle(service: &Service, parts: &http::request::Parts, body: Bytes) -> HttpResponse {
    if !is_json_content_type(&parts.headers) {
        let err = A2aError::invalid_request("Content-Type must be application/json for JSON-RPC requests");
        let mut resp = jsonrpc_error_response(&Value::Null, &err);
        *resp.status_mut() = StatusCode::UNSUPPORTED_MEDIA_TYPE;
        return resp;
    }
    let request: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return jsonrpc_error_response(&Value::Null, &A2aError::parse(format!("invalid JSON: {e}"))),
    };
    let (id, method, params) = match envelope(request) {
        Ok(x) => x,
        Err((id, e)) => return jsonrpc_error_response(&id, &e),
    };
    match dispatch(service, parts, &id, &method, params).await {
        Ok(resp) => resp,
        Err(e) => jsonrpc_error_response(&id, &e),
    }
}

/// Checks the JSON-RPC envelope and returns (id, method, params).
fn envelope(request: Value) -> std::result::Result<(Value, String, Value), (Value, A2aError)> {
    let Value::Object(mut obj) = request else {
        let what =
            if request.is_array() { "batch requests are not supported" } else { "the request must be a JSON object" };
        return Err((Value::Null, A2aError::invalid_request(what)));
    };
    let id = obj.remove("id").unwrap_or(Value::Null);
    let id_ok = matches!(id, Value::String(_) | Value::Number(_));
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err((
            if id_ok { id } else { Value::Null },
            A2aError::invalid_request("jsonrpc: must be exactly \"2.0\""),
        ));
    }
    if !id_ok {
        return Err((Value::Null, A2aError::invalid_request("id: must be a string or a number")));
    }
    let method = match obj.remove("method") {
        Some(Value::String(m)) => m,
        _ => return Err((id, A2aError::invalid_request("method: must be a string"))),
    };
    let params = match obj.remove("params") {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(p @ Value::Object(_)) => p,
        Some(_) => return Err((id, A2aError::invalid_params("params: must be an object"))),
    };
    Ok((id, method, params))
}

async fn dispatch(
    service: &Service,
    parts: &http::request::Parts,
    id: &Value,
    method: &str,
    params: Value,
) -> Result<HttpResponse> {
    let (op, wire) = decode_op(method, params)?;
    let version = version::negotiate(&parts.headers, parts.uri.query())?;
    let ctx = service.call_context(parts, version)?;
    let (output, seq) = call(&service.engine, &ctx, op).await?;
    let result = match (output, wire) {
        (Output::Stream(events), wire) => {
            let framing = Framing::JsonRpc { id: id.clone(), v03: wire == Wire::V03 };
            return Ok(sse_response(frame_stream(events, framing), service.limits.keep_alive));
        }
        (output, Wire::V1) => encode_v1(output),
        (output, Wire::V03) => encode_v03(output),
    };
    let body = json!({"jsonrpc": "2.0", "id": id, "result": result});
    Ok(with_task_seq(json_response(StatusCode::OK, serde_json::to_vec(&body).unwrap_or_default()), seq))
}

fn decode_op(method: &str, params: Value) -> Result<(Op, Wire)> {
    use Wire::*;
    Ok(match method {
        "SendMessage" => (Op::SendMessage(decode(params, "params")?), V1),
        "SendStreamingMessage" => (Op::SendStreamingMessage(decode(params, "params")?), V1),
        "GetTask" => (Op::GetTask(decode(params, "params")?), V1),
        "ListTasks" => (Op::ListTasks(decode(params, "params")?), V1),
        "CancelTask" => (Op::CancelTask(decode(params, "params")?), V1),
        "SubscribeToTask" => (Op::SubscribeToTask(decode(params, "params")?), V1),
        "CreateTaskPushNotificationConfig" => (Op::CreatePushConfig(decode(params, "params")?), V1),
        "GetTaskPushNotificationConfig" => (Op::GetPushConfig(decode(params, "params")?), V1),
        "ListTaskPushNotificationConfigs" | "ListTaskPushNotificationConfig" => {
            (Op::ListPushConfigs(decode(params, "params")?), V1)
        }
        "DeleteTaskPushNotificationConfig" => (Op::DeletePushConfig(decode(params, "params")?), V1),
        "GetExtendedAgentCard" => (Op::GetExtendedCard, V1),
        "message/send" => (Op::SendMessage(decode::<v03::MessageSendParams>(params, "params")?.into_v1()?), V03),
        "message/stream" => {
            (Op::SendStreamingMessage(decode::<v03::MessageSendParams>(params, "params")?.into_v1()?), V03)
        }
        "tasks/get" => {
            let p: v03::TaskQueryParams = decode(params, "params")?;
            (Op::GetTask(GetTaskRequest { tenant: String::new(), id: p.id, history_length: p.history_length }), V03)
        }
        "tasks/cancel" => {
            let p: v03::TaskIdParams = decode(params, "params")?;
            (Op::CancelTask(CancelTaskRequest { tenant: String::new(), id: p.id, metadata: p.metadata }), V03)
        }
        // Not in 0.3.0 itself, but 0.3-era clients send it; same semantics as ListTasks.
        "tasks/list" => (Op::ListTasks(decode(params, "params")?), V03),
        "tasks/resubscribe" => {
            let p: v03::TaskIdParams = decode(params, "params")?;
            (Op::SubscribeToTask(SubscribeToTaskRequest { tenant: String::new(), id: p.id }), V03)
        }
        "tasks/pushNotificationConfig/set" => {
            let p: v03::TaskPushNotificationConfig = decode(params, "params")?;
            let mut config = p.push_notification_config.into_v1(p.task_id);
            if config.id.is_empty() {
                // 0.3 clients address a config without id by its task id.
                config.id.clone_from(&config.task_id);
            }
            (Op::CreatePushConfig(config), V03)
        }
        "tasks/pushNotificationConfig/get" => {
            let p: v03::PushConfigParams = decode(params, "params")?;
            // 0.3 let `get` omit the config id: the task's default config (id = task id) is meant.
            let id = p.push_notification_config_id.unwrap_or_else(|| p.id.clone());
            (Op::GetPushConfig(GetTaskPushNotificationConfigRequest { tenant: String::new(), task_id: p.id, id }), V03)
        }
        "tasks/pushNotificationConfig/list" => {
            let p: v03::TaskIdParams = decode(params, "params")?;
            (Op::ListPushConfigs(ListTaskPushNotificationConfigsRequest { task_id: p.id, ..Default::default() }), V03)
        }
        "tasks/pushNotificationConfig/delete" => {
            let p: v03::PushConfigParams = decode(params, "params")?;
            let id = p
                .push_notification_config_id
                .ok_or_else(|| A2aError::invalid_field("params.pushNotificationConfigId", "is required"))?;
            (
                Op::DeletePushConfig(DeleteTaskPushNotificationConfigRequest {
                    tenant: String::new(),
                    task_id: p.id,
                    id,
                }),
                V03,
            )
        }
        "agent/getAuthenticatedExtendedCard" => (Op::GetExtendedCard, V03),
        other => return Err(A2aError::method_not_found(other)),
    })
}

fn encode_v1(output: Output) -> Value {
    let value = match output {
        Output::SendMessage(r) => serde_json::to_value(r),
        Output::Task(t) => serde_json::to_value(t),
        Output::ListTasks(r) => serde_json::to_value(r),
        Output::PushConfig(c) => serde_json::to_value(c),
        Output::PushConfigs(c) => serde_json::to_value(c),
        Output::Empty => Ok(json!({})),
        Output::Card(c) => serde_json::to_value(c),
        Output::Stream(_) => Ok(Value::Null),
    };
    value.unwrap_or(Value::Null)
}

fn encode_v03(output: Output) -> Value {
    let value = match output {
        Output::SendMessage(r) => serde_json::to_value(v03::send_result(&r)),
        Output::Task(t) => serde_json::to_value(v03::Event::Task(v03::Task::from(&t))),
        Output::ListTasks(r) => Ok(serde_json::json!({
            "tasks": r.tasks.iter().map(|t| v03::Event::Task(v03::Task::from(t))).collect::<Vec<_>>(),
            "nextPageToken": r.next_page_token,
            "pageSize": r.page_size,
            "totalSize": r.total_size,
        })),
        Output::PushConfig(c) => serde_json::to_value(v03::TaskPushNotificationConfig::from(&c)),
        Output::PushConfigs(c) => {
            serde_json::to_value(c.configs.iter().map(v03::TaskPushNotificationConfig::from).collect::<Vec<_>>())
        }
        Output::Empty => Ok(Value::Null),
        Output::Card(c) => Ok(v03::card_to_wire(&c)),
        Output::Stream(_) => Ok(Value::Null),
    };
    value.unwrap_or(Value::Null)
}
