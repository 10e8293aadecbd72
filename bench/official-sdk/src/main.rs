//! An echo agent on the official Rust SDK's server, as its hello-world example builds one
//! (`DefaultRequestHandler`, the in-memory task store, the JSON-RPC router on axum): it answers a
//! message with one text artifact and a COMPLETED status, what a2a-local's `--agent echo` records.
//! Usage: `official-sdk-echo ADDR` (e.g. 127.0.0.1:9100).

use std::sync::Arc;

use a2a::*;
use a2a_server::{AgentExecutor, DefaultRequestHandler, ExecutorContext, InMemoryTaskStore};
use futures::stream::{self, BoxStream, StreamExt};

struct Echo;

impl AgentExecutor for Echo {
    fn execute(&self, ctx: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let text = ctx.message.as_ref().and_then(|m| m.text()).unwrap_or_default().to_string();
        let artifact = TaskArtifactUpdateEvent {
            task_id: ctx.task_id.clone(),
            context_id: ctx.context_id.clone(),
            artifact: Artifact {
                artifact_id: "echo".into(),
                name: None,
                description: None,
                parts: vec![Part::text(text)],
                metadata: None,
                extensions: None,
            },
            append: None,
            last_chunk: Some(true),
            metadata: None,
        };
        let done = TaskStatusUpdateEvent {
            task_id: ctx.task_id,
            context_id: ctx.context_id,
            status: TaskStatus { state: TaskState::Completed, message: None, timestamp: None },
            metadata: None,
        };
        stream::iter([Ok(StreamResponse::ArtifactUpdate(artifact)), Ok(StreamResponse::StatusUpdate(done))]).boxed()
    }

    fn cancel(&self, _ctx: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        stream::empty().boxed()
    }
}

#[tokio::main]
async fn main() {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:9100".into());
    let handler = Arc::new(DefaultRequestHandler::new(Echo, InMemoryTaskStore::new()));
    let app = a2a_server::jsonrpc::jsonrpc_router(handler);
    let listener = tokio::net::TcpListener::bind(&addr).await.expect("bind");
    axum::serve(listener, app).await.expect("serve");
}
