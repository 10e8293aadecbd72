//! A2A 0.3 JSON-RPC for agents that speak nothing newer: 1.0 operations as 0.3 methods
//! (`message/send`, `tasks/get`, `tasks/pushNotificationConfig/set`, ...), their params written and
//! their results read through the project's 0.3 wire model ([`a2a_protocol::v03`]), so callers keep the
//! 1.0 types.

use serde_json::{json, Value};

use super::{ClientError, ClientResult};
use a2a_protocol::error::A2aError;
use a2a_protocol::types as v1;
use a2a_protocol::v03;

fn bad(e: impl std::fmt::Display) -> ClientError {
    ClientError::InvalidResponse(format!("0.3: {e}"))
}

fn read<T: serde::de::DeserializeOwned>(value: &Value) -> ClientResult<T> {
    serde_json::from_value(value.clone()).map_err(bad)
}

fn write<T: serde::Serialize>(value: &T) -> ClientResult<Value> {
    serde_json::to_value(value).map_err(bad)
}

/// The 0.3 method and params of a 1.0 operation.
pub(crate) fn request(method: &str, params: &Value) -> ClientResult<(&'static str, Value)> {
    let field = |name: &str| params.get(name).cloned().unwrap_or(Value::Null);
    Ok(match method {
        "SendMessage" | "SendStreamingMessage" => {
            let req: v1::SendMessageRequest = read(params)?;
            let name = if method == "SendMessage" { "message/send" } else { "message/stream" };
            (name, write(&v03::MessageSendParams::from(&req))?)
        }
        "GetTask" => ("tasks/get", json!({"id": field("id"), "historyLength": field("historyLength")})),
        "CancelTask" => ("tasks/cancel", json!({"id": field("id")})),
        "SubscribeToTask" => ("tasks/resubscribe", json!({"id": field("id")})),
        "CreateTaskPushNotificationConfig" => {
            let config: v1::TaskPushNotificationConfig = read(params)?;
            ("tasks/pushNotificationConfig/set", write(&v03::TaskPushNotificationConfig::from(&config))?)
        }
        "GetTaskPushNotificationConfig" => (
            "tasks/pushNotificationConfig/get",
            json!({"id": field("taskId"), "pushNotificationConfigId": field("id")}),
        ),
        "ListTaskPushNotificationConfigs" => ("tasks/pushNotificationConfig/list", json!({"id": field("taskId")})),
        "DeleteTaskPushNotificationConfig" => (
            "tasks/pushNotificationConfig/delete",
            json!({"id": field("taskId"), "pushNotificationConfigId": field("id")}),
        ),
        "GetExtendedAgentCard" => ("agent/getAuthenticatedExtendedCard", json!({})),
        other => {
            return Err(ClientError::Protocol(A2aError::unsupported(format!("{other} is not part of A2A 0.3"))));
        }
    })
}

/// A 0.3 result as the 1.0 result of `method`.
pub(crate) fn result(method: &str, result: Value) -> ClientResult<Value> {
    match method {
        "SendMessage" | "SendStreamingMessage" | "SubscribeToTask" => write(&event(result)?),
        "GetTask" | "CancelTask" => {
            let task: v03::Task = read(&result)?;
            write(&task.into_v1("task").map_err(|e| bad(e.message))?)
        }
        "CreateTaskPushNotificationConfig" | "GetTaskPushNotificationConfig" => {
            write(&read::<v03::TaskPushNotificationConfig>(&result)?.into_v1())
        }
        "ListTaskPushNotificationConfigs" => {
            let configs: Vec<v03::TaskPushNotificationConfig> = read(&result)?;
            let configs: Vec<v1::TaskPushNotificationConfig> = configs.into_iter().map(|c| c.into_v1()).collect();
            Ok(json!({"configs": write(&configs)?}))
        }
        "GetExtendedAgentCard" => write(&v03::card_from_wire(result).map_err(|e| bad(e.message))?),
        _ => Ok(result),
    }
}

/// A 0.3 event (`kind`: task, message, status-update, artifact-update) as a 1.0 StreamResponse.
pub(crate) fn event(result: Value) -> ClientResult<v1::StreamResponse> {
    read::<v03::Event>(&result)?.into_v1().map_err(|e| bad(e.message))
}
