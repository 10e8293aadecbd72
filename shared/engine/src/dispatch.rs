//! The binding-independent call: a decoded operation in, its result out. Both bindings decode into
//! [`Op`] and encode [`Output`] in their own wire form.

use std::sync::Arc;

use crate::engine::{CallContext, Engine};
use crate::ops::{self, ResponseStream};
use a2a_protocol::error::Result;
use a2a_protocol::operation::Operation;
use a2a_protocol::types::*;

pub use a2a_protocol::types::{decode, decode_str};

pub enum Op {
    SendMessage(SendMessageRequest),
    SendStreamingMessage(SendMessageRequest),
    GetTask(GetTaskRequest),
    ListTasks(ListTasksRequest),
    CancelTask(CancelTaskRequest),
    SubscribeToTask(SubscribeToTaskRequest),
    CreatePushConfig(TaskPushNotificationConfig),
    GetPushConfig(GetTaskPushNotificationConfigRequest),
    /// 0.3 `get` without a config id: the task's config (0.3 §7.6.1).
    GetDefaultPushConfig {
        task_id: String,
    },
    ListPushConfigs(ListTaskPushNotificationConfigsRequest),
    DeletePushConfig(DeleteTaskPushNotificationConfigRequest),
    GetExtendedCard,
}

impl Op {
    /// The operation's name, for authorization.
    pub fn operation(&self) -> Operation {
        match self {
            Self::SendMessage(_) => Operation::SendMessage,
            Self::SendStreamingMessage(_) => Operation::SendStreamingMessage,
            Self::GetTask(_) => Operation::GetTask,
            Self::ListTasks(_) => Operation::ListTasks,
            Self::CancelTask(_) => Operation::CancelTask,
            Self::SubscribeToTask(_) => Operation::SubscribeToTask,
            Self::CreatePushConfig(_) => Operation::CreateTaskPushNotificationConfig,
            Self::GetPushConfig(_) | Self::GetDefaultPushConfig { .. } => Operation::GetTaskPushNotificationConfig,
            Self::ListPushConfigs(_) => Operation::ListTaskPushNotificationConfigs,
            Self::DeletePushConfig(_) => Operation::DeleteTaskPushNotificationConfig,
            Self::GetExtendedCard => Operation::GetExtendedAgentCard,
        }
    }

    /// Names the current request's span after the operation, with the ids the request names.
    fn trace(&self) {
        use a2a_telemetry::spans;
        spans::operation(self.operation().name());
        let task = match self {
            Self::SendMessage(r) | Self::SendStreamingMessage(r) => {
                spans::message(&r.message.message_id);
                spans::task(&r.message.task_id, &r.message.context_id);
                return;
            }
            Self::GetTask(GetTaskRequest { id, .. })
            | Self::CancelTask(CancelTaskRequest { id, .. })
            | Self::SubscribeToTask(SubscribeToTaskRequest { id, .. }) => id,
            Self::CreatePushConfig(TaskPushNotificationConfig { task_id, .. })
            | Self::GetPushConfig(GetTaskPushNotificationConfigRequest { task_id, .. })
            | Self::GetDefaultPushConfig { task_id }
            | Self::ListPushConfigs(ListTaskPushNotificationConfigsRequest { task_id, .. })
            | Self::DeletePushConfig(DeleteTaskPushNotificationConfigRequest { task_id, .. }) => task_id,
            Self::ListTasks(_) | Self::GetExtendedCard => return,
        };
        spans::task(task, "");
    }

    /// A 0.3 `get` of a push config, with or without the config id.
    pub fn get_push_config_03(task_id: String, config_id: Option<String>) -> Self {
        match config_id {
            Some(id) => {
                Self::GetPushConfig(GetTaskPushNotificationConfigRequest { tenant: String::new(), task_id, id })
            }
            None => Self::GetDefaultPushConfig { task_id },
        }
    }
}

impl Op {
    /// The operation of a 1.0 method name (JSON-RPC and gRPC share them) with its params as JSON
    /// (errors name fields under `field`); `None` for another name.
    pub fn decode_v1(method: &str, params: &str, field: &str) -> Result<Option<Self>> {
        let p = field;
        Ok(Some(match method {
            "SendMessage" => Op::SendMessage(decode_str(params, p)?),
            "SendStreamingMessage" => Op::SendStreamingMessage(decode_str(params, p)?),
            "GetTask" => Op::GetTask(decode_str(params, p)?),
            "ListTasks" => Op::ListTasks(decode_str(params, p)?),
            "CancelTask" => Op::CancelTask(decode_str(params, p)?),
            "SubscribeToTask" => Op::SubscribeToTask(decode_str(params, p)?),
            "CreateTaskPushNotificationConfig" => Op::CreatePushConfig(decode_str(params, p)?),
            "GetTaskPushNotificationConfig" => Op::GetPushConfig(decode_str(params, p)?),
            "ListTaskPushNotificationConfigs" => Op::ListPushConfigs(decode_str(params, p)?),
            "DeleteTaskPushNotificationConfig" => Op::DeletePushConfig(decode_str(params, p)?),
            "GetExtendedAgentCard" => Op::GetExtendedCard,
            _ => return Ok(None),
        }))
    }
}

pub enum Output {
    SendMessage(SendMessageResponse),
    Task(Task),
    ListTasks(ListTasksResponse),
    PushConfig(TaskPushNotificationConfig),
    PushConfigs(ListTaskPushNotificationConfigsResponse),
    Empty,
    Card(AgentCard),
    Stream(ResponseStream),
}

impl Output {
    /// About how many bytes the encoded answer takes (contents plus structure; raw bytes as base64),
    /// known before it is encoded: what it is held against in the answers budget.
    pub fn size_hint(&self) -> usize {
        use a2a_protocol::types::size::{config_size, encoded, message_size, task_size};
        match self {
            Self::SendMessage(SendMessageResponse::Task(t)) | Self::Task(t) => encoded(task_size(t)),
            Self::SendMessage(SendMessageResponse::Message(m)) => encoded(message_size(m)),
            Self::ListTasks(r) => encoded(r.tasks.iter().map(task_size).sum()),
            Self::PushConfig(c) => config_size(c),
            Self::PushConfigs(r) => r.configs.iter().map(config_size).sum(),
            Self::Card(_) | Self::Empty | Self::Stream(_) => 0,
        }
    }

    /// The 1.0 result as a JSON value (what the gRPC binding converts to protobuf).
    pub fn into_json(self) -> serde_json::Value {
        serde_json::to_value(&self).unwrap_or(serde_json::Value::Null)
    }
}

/// The 1.0 result as ProtoJSON, written straight from the typed result (a stream has none: its
/// events are encoded one by one).
impl serde::Serialize for Output {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            Output::SendMessage(r) => r.serialize(s),
            Output::Task(t) => t.serialize(s),
            Output::ListTasks(r) => r.serialize(s),
            Output::PushConfig(c) => c.serialize(s),
            Output::PushConfigs(c) => c.serialize(s),
            Output::Empty => s.serialize_map(Some(0))?.end(),
            Output::Card(c) => c.serialize(s),
            Output::Stream(_) => s.serialize_unit(),
        }
    }
}

/// Runs `op` for a caller allowed it (the authenticator's per-operation check comes first). A task result comes with the sequence number of the last event it reflects (sent as
/// the [`a2a_protocol::sse::TASK_SEQ_HEADER`] header, so that an edge hub can continue from there).
pub async fn call(engine: &Arc<Engine>, ctx: &CallContext, op: Op) -> Result<(Output, Option<u64>)> {
    use a2a_telemetry::metrics::{self, Measurement, Outcome};
    op.trace();
    let operation = op.operation().name();
    let started = metrics::start();
    let result = run(engine, ctx, op).await;
    if started.is_some() {
        let (outcome, error) = match &result {
            Ok(_) => (Outcome::Ok, None),
            Err(e) => (Outcome::of_status(e.spec().http_status), Some(e.spec().reason)),
        };
        let seconds = metrics::seconds_since(started);
        metrics::record(Measurement::Operation { operation, outcome, error, seconds });
        if let Ok((Output::Stream(stream), seq)) = result {
            return Ok((Output::Stream(counted(stream, operation)), seq));
        }
    }
    result
}

/// A stream counted among the open ones while it lives.
fn counted(stream: ResponseStream, operation: &'static str) -> ResponseStream {
    use a2a_telemetry::metrics::{self, Measurement};
    struct Open(&'static str);
    impl Drop for Open {
        fn drop(&mut self) {
            metrics::record(Measurement::Streams { operation: self.0, delta: -1 });
        }
    }
    metrics::record(Measurement::Streams { operation, delta: 1 });
    let open = Open(operation);
    Box::pin(futures::StreamExt::map(stream, move |item| {
        let _ = &open;
        item
    }))
}

async fn run(engine: &Arc<Engine>, ctx: &CallContext, op: Op) -> Result<(Output, Option<u64>)> {
    engine.auth.authorize(&ctx.principal, op.operation())?;
    let output = match op {
        Op::SendMessage(r) => {
            let (response, seq) = ops::send_message(engine, ctx, r).await?;
            return Ok((Output::SendMessage(response), seq));
        }
        Op::GetTask(r) => {
            let (task, seq) = ops::get_task(engine, ctx, r).await?;
            return Ok((Output::Task(task), Some(seq)));
        }
        Op::SendStreamingMessage(r) => Output::Stream(ops::send_streaming_message(engine, ctx, r).await?),
        Op::ListTasks(r) => Output::ListTasks(ops::list_tasks(engine, ctx, r).await?),
        Op::CancelTask(r) => Output::Task(ops::cancel_task(engine, ctx, r).await?),
        Op::SubscribeToTask(r) => Output::Stream(ops::subscribe_to_task(engine, ctx, r).await?),
        Op::CreatePushConfig(r) => Output::PushConfig(ops::create_push_config(engine, ctx, r).await?),
        Op::GetPushConfig(r) => Output::PushConfig(ops::get_push_config(engine, ctx, r).await?),
        Op::GetDefaultPushConfig { task_id } => {
            Output::PushConfig(ops::get_default_push_config(engine, ctx, &task_id).await?)
        }
        Op::ListPushConfigs(r) => Output::PushConfigs(ops::list_push_configs(engine, ctx, r).await?),
        Op::DeletePushConfig(r) => {
            ops::delete_push_config(engine, ctx, r).await?;
            Output::Empty
        }
        Op::GetExtendedCard => Output::Card(ops::get_extended_card(engine, ctx)?),
    };
    Ok((output, None))
}
