//! SubscribeToTask: JSON-RPC `SubscribeToTask` (0.3 `tasks/resubscribe`),
//! `GET|POST /tasks/{id}:subscribe`, spec §3.1.6.
//!
//! The Task snapshot comes first (its SSE id is the last event it includes), then live events.
//! A reconnect with `Last-Event-ID` gets exactly the events after that id instead, then goes live
//! (an id past the task's last event is ignored: the snapshot comes first).
//! Terminal tasks are refused, unless the reconnecting client still misses events of it.

use std::sync::Arc;

use futures::stream::{self, StreamExt};

use super::ResponseStream;
use crate::engine::{follow, CallContext, Engine};
use crate::ports::EventRecord;
use a2a_protocol::error::{A2aError, Result};
use a2a_protocol::types::{StreamResponse, SubscribeToTaskRequest, Validate};

pub async fn subscribe_to_task(
    engine: &Arc<Engine>,
    ctx: &CallContext,
    req: SubscribeToTaskRequest,
) -> Result<ResponseStream> {
    super::require_streaming(engine)?;
    req.validate("")?;
    let rec = engine.load_owned(ctx, &req.id).await?;
    // An id past the task's last event was never sent by this task: the client resumes nothing
    // and gets the snapshot, as without one (else it would wait for events it thinks it has, and
    // never learn how the task ended).
    let last_event_id = ctx.last_event_id.filter(|id| *id <= rec.last_seq);
    let resume_from = last_event_id.filter(|id| *id < rec.last_seq);
    if rec.state().is_terminal() && resume_from.is_none() {
        return Err(A2aError::unsupported(format!(
            "task {} is {}: a terminal task cannot be subscribed to",
            req.id,
            rec.state()
        ))
        .with("taskId", req.id.clone()));
    }
    let after = last_event_id.unwrap_or(rec.last_seq);
    let live = follow(engine.store.clone(), engine.hub.clone(), &req.id, after);
    if last_event_id.is_some() {
        return Ok(live);
    }
    let snapshot = EventRecord { seq: rec.last_seq, event: StreamResponse::Task(rec.task) }.shared();
    Ok(stream::iter([Ok(snapshot)]).chain(live).boxed())
}
