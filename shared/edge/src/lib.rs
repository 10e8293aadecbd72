//! The edge front (a Cloudflare Worker with one Durable Object per task), as pure logic the worker
//! glue calls and the host tests exercise, and (feature `publisher`) the origin's side, which
//! publishes every task event to it:
//!
//! - [`signature`]: the HMAC over the timestamp and body that authenticates the task runner's
//!   publishes;
//! - [`hub`]: a task's ordered event log as a Durable Object keeps it, and the per-stream state
//!   machine that replays, goes live and closes exactly like the origin's own streams;
//! - [`route`]: which requests the edge answers (card, publish, streams) and which it proxies,
//!   the origin call that starts a stream, and what the origin's answer means.
//!
//! A stream through the edge: the worker asks the origin to create the task (SendMessage with
//! `returnImmediately`) or to show it (GetTask), which also authenticates the caller; the origin's
//! answer carries the [`a2a_protocol::sse::TASK_SEQ_HEADER`] of the snapshot; the task's Durable Object
//! then sends the snapshot and every event after that sequence number. The runner publishes each
//! event to [`PUBLISH_PATH`], and the object fans it out to every open stream in order.

pub mod hub;
#[cfg(feature = "publisher")]
pub mod publisher;
pub mod route;
pub mod signature;

use a2a_engine::ports::EventRecord;

/// The internal endpoint through which task runners push events to the edge.
pub const PUBLISH_PATH: &str = "/_edge/publish";

/// The body of a publish: consecutive events of one task.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PublishBatch {
    pub task_id: String,
    pub events: Vec<EventRecord>,
}

impl PublishBatch {
    /// Parses and checks a publish body (the events must belong to `taskId`).
    pub fn parse(body: &[u8]) -> a2a_protocol::Result<Self> {
        let batch: Self = serde_json::from_slice(body)
            .map_err(|e| a2a_protocol::A2aError::invalid_params(format!("publish body: {e}")))?;
        if batch.task_id.is_empty() {
            return Err(a2a_protocol::A2aError::invalid_field("taskId", "is required"));
        }
        if let Some(i) = batch.events.iter().position(|e| e.event.task_id() != batch.task_id || e.seq == 0) {
            return Err(a2a_protocol::A2aError::invalid_field(
                &format!("events[{i}]"),
                "must belong to taskId and have a seq of 1 or more",
            ));
        }
        Ok(batch)
    }
}
