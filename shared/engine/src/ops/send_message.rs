//! SendMessage: JSON-RPC `SendMessage` (0.3 `message/send`), `POST /message:send`, spec §3.1.1.
//!
//! Blocking by default: waits until the turn ends (terminal or interrupted state) or the blocking
//! deadline passes, then returns the task as it stands. `returnImmediately` returns the SUBMITTED
//! task at once. An agent that answers a new task with a message gets that message returned.
//! A returned task comes with the sequence number of the last event it reflects.

use std::sync::Arc;

use futures::future::{self, Either};
use futures::StreamExt;

use super::turn::start_turn;
use crate::engine::{follow, CallContext, Engine};
use a2a_protocol::error::{A2aError, Result};
use a2a_protocol::types::{SendMessageRequest, SendMessageResponse, StreamResponse};

pub async fn send_message(
    engine: &Arc<Engine>,
    ctx: &CallContext,
    req: SendMessageRequest,
) -> Result<(SendMessageResponse, Option<u64>)> {
    let history_length = req.configuration.as_ref().and_then(|c| c.history_length);
    let return_immediately = req.configuration.as_ref().is_some_and(|c| c.return_immediately);
    let turn = start_turn(engine, ctx, req).await?;
    let task_id = turn.snapshot.id.clone();
    if return_immediately || (turn.duplicate && !turn.is_new_task) {
        let mut task = turn.snapshot;
        super::trim_history(&mut task, history_length, engine.config.default_history_length);
        return Ok((SendMessageResponse::Task(task), Some(turn.start_seq)));
    }

    // A repeated new-task request waits like the first one did: from the task's first event (so a
    // direct message answer is found again, and an ended turn is seen at once).
    let from = if turn.duplicate { 0 } else { turn.start_seq };
    let mut events = follow(engine.store.clone(), engine.hub.clone(), &task_id, from);
    let wait = async {
        let mut first = true;
        while let Some(ev) = events.next().await {
            let ev = ev?;
            if let (true, true, StreamResponse::Message(m)) = (turn.is_new_task, first, &ev.event) {
                return Ok(Some(m.clone()));
            }
            first = false;
        }
        Ok::<_, A2aError>(None)
    };
    let deadline = engine.clock.sleep(engine.config.blocking_timeout);
    if let Either::Left((outcome, _)) = future::select(std::pin::pin!(wait), deadline).await {
        if let Some(message) = outcome? {
            return Ok((SendMessageResponse::Message(message), None));
        }
    }
    let rec = engine.store.load(&task_id).await?.ok_or_else(|| A2aError::task_not_found(&task_id))?;
    let mut task = rec.task;
    super::trim_history(&mut task, history_length, engine.config.default_history_length);
    Ok((SendMessageResponse::Task(task), Some(rec.last_seq)))
}
