//! `sqs-task-runner`: runs the agent (`AgentExecutor`) for execute and cancel jobs from the work
//! queue, with partial batch failures and heartbeats; a redelivered job whose task was left WORKING by
//! a crashed run ends the task FAILED. Plug your own agent in where the executor is chosen.

use std::sync::Arc;

use a2a::adapters::memory::SystemClock;
use a2a::executor::{AgentExecutor, ConformanceAgent, EchoAgent};
use a2a::lambda::sqs::serve_tasks;
use a2a::lambda::{init_tracing, Deps};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    init_tracing();
    // Your agent goes here.
    let executor: Arc<dyn AgentExecutor> = match std::env::var("A2A_AGENT").as_deref() {
        Ok("conformance") => Arc::new(ConformanceAgent::new(Arc::new(SystemClock))),
        _ => Arc::new(EchoAgent),
    };
    let deps = Deps::from_env(Some(executor)).await?;
    serve_tasks(Arc::new(deps)).await
}
