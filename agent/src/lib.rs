//! The agent this deployment serves: the one crate you edit.
//!
//! - [`CARD`] is the agent card (`card.json` beside this crate; any subset of an A2A 1.0
//!   `AgentCard`, the server fills in interfaces, capabilities and security schemes). Every function
//!   and `a2a-local` serve it unless told otherwise (`--card` / `A2A_CARD`).
//! - [`Agent`] is the agent itself, an `AgentExecutor`. `a2a-local` and the `sqs-task-runner`
//!   Lambda function run it through [`executor`], which also offers the built-in agents and an agent
//!   in any language over HTTP, chosen by configuration (`--agent` / `A2A_AGENT`, `--agent-url` /
//!   `AGENT_URL`), so changing agents never means editing a `main.rs`.

/// The agent card file of this deployment.
pub const CARD: &str = include_str!("../card.json");

#[cfg(feature = "executor")]
pub use own::{executor, Agent};

#[cfg(feature = "executor")]
mod own {
    use std::sync::Arc;

    use a2a::executor::AgentChoice;
    use a2a::prelude::*;

    /// The agent. Replace the body of `execute` with what your agent does; report progress through
    /// `events` (status, artifacts in chunks, messages). Returning `Ok(())` without a final state
    /// completes the task; `Err(AgentError::Failed(why))` fails it.
    #[derive(Debug, Default)]
    pub struct Agent;

    #[async_trait]
    impl AgentExecutor for Agent {
        async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), AgentError> {
            let text = ctx.message.text();
            if text.trim().is_empty() {
                // Multi-turn: ask, and the client's next message continues this task.
                events.input_required(Message::agent_text("What should I answer?")).await?;
                return Ok(());
            }
            events.working(None).await?;
            // Stream the answer as one artifact in chunks: `append` extends it, the last chunk
            // says so. Each chunk reaches open streams as it is recorded.
            let words: Vec<&str> = text.split_whitespace().collect();
            let answer = Artifact::new(vec![Part::text("You said:")]).with_name("answer");
            events.artifact(answer.clone(), if words.is_empty() { Chunk::Whole } else { Chunk::First }).await?;
            for (i, word) in words.iter().enumerate() {
                if ctx.cancel.is_cancelled() {
                    return Ok(()); // the runner records CANCELED
                }
                let chunk = Artifact { parts: vec![Part::text(format!(" {word}"))], ..answer.clone() };
                events.artifact(chunk, if i + 1 == words.len() { Chunk::Last } else { Chunk::Middle }).await?;
            }
            events.complete(None).await?;
            Ok(())
        }
    }

    /// The executor `choice` names: this crate's [`Agent`], a built-in one, or an agent over HTTP.
    pub async fn executor(choice: AgentChoice) -> a2a::Result<Arc<dyn AgentExecutor>> {
        choice.build(|| Arc::new(Agent)).await
    }
}
