//! The `conformance` agent: behaviour chosen by the prefix of each incoming message's `messageId`
//! (follow-ups included), as the official TCK expects, so that a conformance suite can drive every
//! protocol path (artifacts of each kind, direct messages,
//! multi-turn, rejection, streaming order, chunking, long-running cancellable tasks).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::future::{self, Either};
use serde_json::json;

use a2a_engine::executor::{AgentError, AgentExecutor, Chunk, EventSink, RequestContext};
use a2a_engine::ports::Clock;
use a2a_protocol::types::{Artifact, Message, Part};

#[derive(Clone)]
pub struct ConformanceAgent {
    /// How long `test-resubscribe-message-id` stays WORKING.
    pub long_task: Duration,
    clock: Arc<dyn Clock>,
}

impl ConformanceAgent {
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self { long_task: Duration::from_secs(4), clock }
    }
}

fn file_artifact() -> Artifact {
    Artifact::new(vec![Part::raw(b"tck".to_vec()).with_filename("output.txt").with_media_type("text/plain")])
}

fn text_artifact() -> Artifact {
    Artifact::new(vec![Part::text("Generated text content")])
}

#[async_trait]
impl AgentExecutor for ConformanceAgent {
    async fn execute(&self, ctx: RequestContext, ev: EventSink) -> Result<(), AgentError> {
        // Every message, a follow-up included, is routed by its own messageId (a `tck-input-required`
        // follow-up keeps the task INPUT_REQUIRED; a `tck-complete-task` one completes it).
        let id = ctx.message.message_id.as_str();
        if id.starts_with("tck-complete-task") {
            ev.complete(Some(Message::agent_text("Hello from TCK"))).await?;
        } else if id.starts_with("tck-artifact-text") || id.starts_with("tck-stream-artifact-text") {
            ev.artifact(text_artifact(), Chunk::Whole).await?;
            ev.complete(None).await?;
        } else if id.starts_with("tck-artifact-file-url") {
            let part =
                Part::url("https://example.com/output.txt").with_filename("output.txt").with_media_type("text/plain");
            ev.artifact(Artifact::new(vec![part]), Chunk::Whole).await?;
            ev.complete(None).await?;
        } else if id.starts_with("tck-artifact-file") || id.starts_with("tck-stream-artifact-file") {
            ev.artifact(file_artifact(), Chunk::Whole).await?;
            ev.complete(None).await?;
        } else if id.starts_with("tck-artifact-data") {
            let part = Part::data(json!({"key": "value", "count": 42})).with_media_type("application/json");
            ev.artifact(Artifact::new(vec![part]), Chunk::Whole).await?;
            ev.complete(None).await?;
        } else if id.starts_with("tck-message-response") {
            ev.message(Message::agent_text("Direct message response")).await?;
        } else if id.starts_with("tck-input-required") {
            ev.input_required(Message::agent_text("Please provide more input")).await?;
        } else if id.starts_with("tck-reject-task") {
            return Err(AgentError::Rejected("rejected".into()));
        } else if id.starts_with("tck-stream-artifact-chunked") {
            let first = Artifact::new(vec![Part::text("First chunk ")]);
            let second = Artifact { parts: vec![Part::text("second chunk")], ..first.clone() };
            ev.artifact(first, Chunk::First).await?;
            ev.artifact(second, Chunk::Last).await?;
            ev.complete(None).await?;
        } else if id.starts_with("tck-stream-002") {
            ev.complete(None).await?;
        } else if id.starts_with("tck-stream-001")
            || id.starts_with("tck-stream-003")
            || id.starts_with("tck-stream-ordering-001")
        {
            ev.working(None).await?;
            ev.artifact(Artifact::new(vec![Part::text("Streamed content")]), Chunk::Whole).await?;
            ev.complete(None).await?;
        } else if id.starts_with("test-resubscribe-message-id") {
            ev.working(Some(Message::agent_text("Working on it"))).await?;
            let cancelled = std::pin::pin!(ctx.cancel.cancelled());
            if let Either::Left(_) = future::select(cancelled, self.clock.sleep(self.long_task)).await {
                return Ok(());
            }
            ev.artifact(Artifact::new(vec![Part::text("Long task result")]), Chunk::Whole).await?;
            ev.complete(None).await?;
        } else {
            ev.complete_with_text(ctx.message.text()).await?;
        }
        Ok(())
    }
}
