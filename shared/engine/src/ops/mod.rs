//! One file per operation of spec §3, each headed by its JSON-RPC methods, REST route and section.
//! Operations are binding-independent: they take the engine, the call context and a 1.0 request.

mod cancel_task;
mod create_push_config;
mod delete_push_config;
mod get_extended_card;
mod get_push_config;
mod get_task;
mod list_push_configs;
mod list_tasks;
mod send_message;
mod send_streaming_message;
mod subscribe_to_task;
mod turn;

pub use cancel_task::cancel_task;
pub use create_push_config::create_push_config;
pub use delete_push_config::delete_push_config;
pub use get_extended_card::get_extended_card;
pub use get_push_config::{get_default_push_config, get_push_config};
pub use get_task::get_task;
pub use list_push_configs::list_push_configs;
pub use list_tasks::list_tasks;
pub use send_message::send_message;
pub use send_streaming_message::send_streaming_message;
pub use subscribe_to_task::subscribe_to_task;

use std::sync::Arc;

use futures::stream::BoxStream;

use crate::engine::{CallContext, Engine};
use crate::ports::SharedEvent;
use a2a_protocol::error::{A2aError, Result};
use a2a_protocol::types::{Task, Validate};

/// A stream of protocol events; `seq` is the SSE `id` (the task's event sequence number).
pub type ResponseStream = BoxStream<'static, Result<StreamItem>>;

/// An event of a stream, shared with the other streams that send it (its encodings too); one that
/// only this stream sends (a task snapshot) is an [`crate::ports::EventRecord::shared`] of its own.
pub type StreamItem = Arc<SharedEvent>;

/// Applies `historyLength` (spec §3.2.4): unset → the server default, 0 → none, n → the last n.
pub fn trim_history(task: &mut Task, requested: Option<i32>, default: Option<usize>) {
    let keep = match requested {
        Some(n) => Some(usize::try_from(n).unwrap_or(0)),
        None => default,
    };
    if let Some(keep) = keep {
        let len = task.history.len();
        if keep < len {
            task.history.drain(..len - keep);
        }
    }
}

fn require_streaming(engine: &Engine) -> Result<()> {
    if engine.card.streaming() {
        Ok(())
    } else {
        Err(A2aError::unsupported("streaming is not supported by this agent (capabilities.streaming is false)"))
    }
}

fn require_push(engine: &Engine) -> Result<()> {
    if engine.card.push_notifications() {
        Ok(())
    } else {
        Err(A2aError::push_not_supported())
    }
}

/// The common start of the push-config operations: the capability is on, the request is valid and
/// the task is the caller's.
async fn push_config_task(engine: &Engine, ctx: &CallContext, req: &impl Validate, task_id: &str) -> Result<()> {
    require_push(engine)?;
    req.validate("")?;
    engine.load_owned(ctx, task_id).await.map(|_| ())
}
