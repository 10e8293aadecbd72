//! SendStreamingMessage: JSON-RPC `SendStreamingMessage` (0.3 `message/stream`),
//! `POST /message:stream`, spec §3.1.2.
//!
//! The stream is either exactly one Message (the agent answered directly), or the Task followed by
//! its status and artifact updates until the turn ends. Which one is known only once the agent's
//! first event arrives, so the stream waits for it before writing anything.

use std::sync::Arc;

use futures::stream::{self, StreamExt};

use super::turn::start_turn;
use super::{ResponseStream, StreamItem};
use crate::engine::{follow, CallContext, Engine};
use crate::ports::EventRecord;
use a2a_protocol::error::Result;
use a2a_protocol::types::{SendMessageRequest, StreamResponse};

pub async fn send_streaming_message(
    engine: &Arc<Engine>,
    ctx: &CallContext,
    req: SendMessageRequest,
) -> Result<ResponseStream> {
    super::require_streaming(engine)?;
    let history_length = req.configuration.as_ref().and_then(|c| c.history_length);
    let turn = start_turn(engine, ctx, req).await?;
    let mut snapshot = turn.snapshot;
    super::trim_history(&mut snapshot, history_length, engine.config.default_history_length);
    if turn.duplicate {
        // A repeated request: show the task as it stands, then whatever is still to come.
        let ended = snapshot.status.state.ends_turn();
        let task_id = snapshot.id.clone();
        let opening = EventRecord { seq: turn.start_seq, event: StreamResponse::Task(snapshot) }.shared();
        if ended {
            return Ok(stream::iter([Ok(opening)]).boxed());
        }
        let rest = follow(engine.store.clone(), engine.hub.clone(), &task_id, turn.start_seq);
        return Ok(stream::iter([Ok(opening)]).chain(rest).boxed());
    }
    let opening = EventRecord { seq: turn.start_seq, event: StreamResponse::Task(snapshot) }.shared();
    let mut events = follow(engine.store.clone(), engine.hub.clone(), opening.event.task_id(), turn.start_seq);
    let is_new_task = turn.is_new_task;

    let head = stream::once(async move {
        let first = events.next().await;
        let items: Vec<Result<StreamItem>> = match first {
            None => vec![Ok(opening)],
            Some(Err(e)) => vec![Ok(opening), Err(e)],
            Some(Ok(ev)) => {
                if is_new_task && matches!(ev.event, StreamResponse::Message(_)) {
                    return stream::iter(vec![Ok(ev)]).boxed();
                }
                vec![Ok(opening), Ok(ev)]
            }
        };
        stream::iter(items).chain(events).boxed()
    });
    Ok(head.flatten().boxed())
}
