//! The default agent: completes every task with an artifact echoing the message's text.

use async_trait::async_trait;

use a2a_engine::executor::{AgentError, AgentExecutor, EventSink, RequestContext};

#[derive(Debug, Default, Clone, Copy)]
pub struct EchoAgent;

#[async_trait]
impl AgentExecutor for EchoAgent {
    async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), AgentError> {
        events.complete_with_text(ctx.message.text()).await?;
        Ok(())
    }
}
