//! GetTask: JSON-RPC `GetTask` (0.3 `tasks/get`), `GET /tasks/{id}`, spec §3.1.3.
//! The task comes with the sequence number of the last event it reflects.

use crate::engine::{CallContext, Engine};
use a2a_protocol::error::Result;
use a2a_protocol::types::{GetTaskRequest, Task, Validate};

pub async fn get_task(engine: &Engine, ctx: &CallContext, req: GetTaskRequest) -> Result<(Task, u64)> {
    req.validate("")?;
    let rec = engine.load_owned(ctx, &req.id).await?;
    let mut task = rec.task;
    super::trim_history(&mut task, req.history_length, engine.config.default_history_length);
    Ok((task, rec.last_seq))
}
