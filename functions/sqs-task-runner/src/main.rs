//! `sqs-task-runner`: runs the agent (`AgentExecutor`) for execute and cancel jobs from the work
//! queue, with partial batch failures and heartbeats; a redelivered job whose task was left WORKING by
//! a crashed run ends the task FAILED. The agent comes from the `agent` crate, chosen by `A2A_AGENT`
//! (`agent`, `echo`, `conformance`) or `AGENT_URL` (an agent in any language over HTTP).

use std::sync::Arc;

use a2a::executor::AgentChoice;
use a2a::lambda::sqs::serve_tasks;
use a2a::lambda::{init_tracing, Deps};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    init_tracing();
    let executor = agent::executor(AgentChoice::from_env()?).await?;
    let deps = Deps::from_env(agent::CARD, Some(executor)).await?;
    serve_tasks(Arc::new(deps)).await
}
