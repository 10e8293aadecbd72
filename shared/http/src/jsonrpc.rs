//! The JSON-RPC 2.0 binding (spec §9, and the 0.3 method names and payloads): envelope checks,
//! method table, params decoding with field paths, results and SSE streams wrapped in responses
//! carrying the request id.
//!
//! The order of checks: authentication (nothing about a request is judged for an unknown caller),
//! Content-Type, JSON syntax, the envelope (`jsonrpc`, the id's type, `method`), the method, its
//! params, then a missing id (as the 0.3 reference does: method, then params, then the id), the
//! version and the required extensions. Errors of 0.3 streaming methods travel as a one-event stream,
//! which is all a 0.3 streaming client reads.

use bytes::Bytes;
use http::StatusCode;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::response::{
    frame_stream, json_response, jsonrpc_error_response, jsonrpc_stream_error_response, require_json, sse_response,
    with_task_seq, HttpResponse,
};
use crate::service::Service;
use a2a_engine::dispatch::{call, decode_str, Op, Output};
use a2a_protocol::error::{A2aError, Result};
use a2a_protocol::rpc_id::{result_body_into, RpcId};
use a2a_protocol::sse::Framing;
use a2a_protocol::types::*;
use a2a_protocol::v03;
use a2a_protocol::version;

/// Which payload format a method speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wire {
    V1,
    V03,
}

/// The members of a request, as the client wrote them.
#[derive(Deserialize)]
struct RawEnvelope<'a> {
    #[serde(borrow, default)]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<&'a RawValue>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
}

/// A checked envelope: the id (`None`: absent or null), the method and the raw params object.
struct Envelope<'a> {
    id: Option<RpcId>,
    method: String,
    /// `None`: params that are not an object (judged in [`dispatch`], so that a 0.3 stream's
    /// refusal still comes as an event).
    params: Option<&'a str>,
}

pub async fn handle(service: &Service, parts: &http::request::Parts, body: Bytes) -> HttpResponse {
    let null = RpcId::null();
    let principal = match service.authenticate(parts).await {
        Ok(p) => p,
        // Refused before anything is judged; the id goes back if the envelope has a readable one.
        Err(e) => {
            let id = envelope(&body).ok().and_then(|env| env.id).unwrap_or(null);
            return jsonrpc_error_response(&id, &e);
        }
    };
    if let Err(e) = require_json(&parts.headers) {
        return jsonrpc_error_response(&null, &e);
    }
    let _decoding = match service.admit(&body).await {
        Ok(held) => held,
        Err(e) => return jsonrpc_error_response(&null, &e),
    };
    let envelope = match envelope(&body) {
        Ok(x) => x,
        Err((id, e)) => return jsonrpc_error_response(&id, &e),
    };
    let streaming_v03 = matches!(envelope.method.as_str(), "message/stream" | "tasks/resubscribe");
    let id = envelope.id.clone().unwrap_or_else(RpcId::null);
    match dispatch(service, parts, principal, envelope).await {
        Ok(resp) => resp,
        Err(e) if streaming_v03 => jsonrpc_stream_error_response(&id, &e, service.limits.keep_alive),
        Err(e) => jsonrpc_error_response(&id, &e),
    }
}

/// Checks the JSON-RPC envelope.
fn envelope(body: &[u8]) -> std::result::Result<Envelope<'_>, (RpcId, A2aError)> {
    let null = RpcId::null;
    let text = std::str::from_utf8(body).map_err(|_| (null(), A2aError::parse("the body is not UTF-8")))?;
    let whole: &RawValue =
        serde_json::from_str(text).map_err(|e| (null(), A2aError::parse(format!("invalid JSON: {e}"))))?;
    let raw = whole.get();
    if !raw.starts_with('{') {
        let what =
            if raw.starts_with('[') { "batch requests are not supported" } else { "the request must be a JSON object" };
        return Err((null(), A2aError::invalid_request(what)));
    }
    let env: RawEnvelope<'_> =
        serde_json::from_str(raw).map_err(|e| (null(), A2aError::invalid_request(format!("request: {e}"))))?;
    let id = match env.id {
        None => None,
        Some(raw) => Some(
            RpcId::from_raw(raw)
                .ok_or_else(|| (null(), A2aError::invalid_request("id: must be a string or a number")))?,
        ),
    };
    let reply_id = || id.clone().unwrap_or_else(null);
    if env.jsonrpc.map(RawValue::get) != Some("\"2.0\"") {
        return Err((reply_id(), A2aError::invalid_request("jsonrpc: must be exactly \"2.0\"")));
    }
    let method = env
        .method
        .and_then(|m| serde_json::from_str::<String>(m.get()).ok())
        .ok_or_else(|| (reply_id(), A2aError::invalid_request("method: must be a string")))?;
    let params = match env.params.map(RawValue::get) {
        None | Some("null") => Some("{}"),
        Some(p) if p.starts_with('{') => Some(p),
        Some(_) => None,
    };
    Ok(Envelope { id, method, params })
}

async fn dispatch(
    service: &Service,
    parts: &http::request::Parts,
    principal: a2a_engine::auth::Principal,
    envelope: Envelope<'_>,
) -> Result<HttpResponse> {
    let params = envelope.params.ok_or_else(|| A2aError::invalid_params("params: must be an object"))?;
    let (op, wire) = decode_op(&envelope.method, params)?;
    let id = envelope.id.ok_or_else(|| {
        A2aError::invalid_field("id", "is required: a request without an id is a notification, which A2A does not use")
    })?;
    let version = version::negotiate(&parts.headers, parts.uri.query())?;
    let ctx = service.call_context(parts, principal, version)?;
    let (output, seq) = call(&service.engine, &ctx, op).await?;
    if let Output::Stream(events) = output {
        let framing = Framing::JsonRpc { id, v03: wire == Wire::V03 };
        return Ok(sse_response(frame_stream(events, framing, &service.answers), service.limits.keep_alive));
    }
    let estimate = output.size_hint();
    let body = service
        .encode_answer(output, estimate, |output, buf| {
            Ok(match wire {
                Wire::V1 => result_body_into(buf, &id, &output),
                Wire::V03 => result_body_into(buf, &id, &encode_v03(output)),
            })
        })
        .await?;
    Ok(with_task_seq(json_response(StatusCode::OK, body), seq))
}

fn decode_op(method: &str, params: &str) -> Result<(Op, Wire)> {
    use Wire::*;
    let p = "params";
    if let Some(op) = Op::decode_v1(method, params, p)? {
        return Ok((op, V1));
    }
    Ok(match method {
        // A name some clients send for ListTaskPushNotificationConfigs.
        "ListTaskPushNotificationConfig" => (Op::ListPushConfigs(decode_str(params, p)?), V1),
        "message/send" => (Op::SendMessage(decode_str::<v03::MessageSendParams>(params, p)?.into_v1()?), V03),
        "message/stream" => {
            (Op::SendStreamingMessage(decode_str::<v03::MessageSendParams>(params, p)?.into_v1()?), V03)
        }
        "tasks/get" => {
            let q: v03::TaskQueryParams = decode_str(params, p)?;
            (Op::GetTask(GetTaskRequest { tenant: String::new(), id: q.id, history_length: q.history_length }), V03)
        }
        "tasks/cancel" => {
            let q: v03::TaskIdParams = decode_str(params, p)?;
            (Op::CancelTask(CancelTaskRequest { tenant: String::new(), id: q.id, metadata: q.metadata }), V03)
        }
        // Not in 0.3.0 itself, but 0.3-era clients send it; same semantics as ListTasks.
        "tasks/list" => (Op::ListTasks(decode_str(params, p)?), V03),
        "tasks/resubscribe" => {
            let q: v03::TaskIdParams = decode_str(params, p)?;
            (Op::SubscribeToTask(SubscribeToTaskRequest { tenant: String::new(), id: q.id }), V03)
        }
        "tasks/pushNotificationConfig/set" => {
            let q: v03::TaskPushNotificationConfig = decode_str(params, p)?;
            (Op::CreatePushConfig(q.into_v1()), V03)
        }
        "tasks/pushNotificationConfig/get" => {
            let q: v03::PushConfigParams = decode_str(params, p)?;
            (Op::get_push_config_03(q.id, q.push_notification_config_id), V03)
        }
        "tasks/pushNotificationConfig/list" => {
            let q: v03::TaskIdParams = decode_str(params, p)?;
            (Op::ListPushConfigs(ListTaskPushNotificationConfigsRequest { task_id: q.id, ..Default::default() }), V03)
        }
        "tasks/pushNotificationConfig/delete" => {
            let q: v03::PushConfigParams = decode_str(params, p)?;
            (Op::DeletePushConfig(q.delete_request("params.pushNotificationConfigId")?), V03)
        }
        "agent/getAuthenticatedExtendedCard" => (Op::GetExtendedCard, V03),
        other => return Err(A2aError::method_not_found(other)),
    })
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
