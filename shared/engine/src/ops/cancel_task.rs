//! CancelTask: JSON-RPC `CancelTask` (0.3 `tasks/cancel`), `POST /tasks/{id}:cancel`, spec §3.1.5.
//!
//! Marks the task cancel-requested, signals the running executor (cooperative cancel through the
//! work queue) and waits a bounded time for it to stop; a task with no executor running (waiting
//! for input), or one whose executor does not stop in time, is canceled by the engine itself.

use futures::future;
use futures::StreamExt;

use crate::engine::{follow, AgentEvent, CallContext, Engine};
use crate::ports::Job;
use a2a_protocol::error::{A2aError, ErrorKind, Result};
use a2a_protocol::types::{CancelTaskRequest, Task, TaskState, Validate};

pub async fn cancel_task(engine: &Engine, ctx: &CallContext, req: CancelTaskRequest) -> Result<Task> {
    req.validate("")?;
    let rec = engine.load_owned(ctx, &req.id).await?;
    if rec.state().is_terminal() {
        return Err(A2aError::not_cancelable(&req.id, rec.state()));
    }
    let committed = engine
        .store
        .update(&req.id, 0, &|r| {
            if r.state().is_terminal() {
                return Err(A2aError::not_cancelable(&r.task.id, r.state()));
            }
            r.cancel_requested = true;
            // The task moved on: repeating the request that started the turn is no longer a retry.
            r.turn = None;
            Ok(Vec::new())
        })
        .await?;

    if !committed.state.is_interrupted() {
        engine.queue.enqueue(Job::Cancel { task_id: req.id.clone() }).await?;
        let mut events = follow(engine.store.clone(), engine.hub.clone(), &req.id, rec.last_seq);
        let stopped = async {
            while let Some(Ok(ev)) = events.next().await {
                if ev.event.state().is_some_and(TaskState::is_terminal) {
                    return;
                }
            }
        };
        let _ = future::select(std::pin::pin!(stopped), engine.clock.sleep(engine.config.cancel_timeout)).await;
    }
    // Cancel it ourselves unless it already ended (the fold refuses events on a terminal task).
    let cancel = vec![AgentEvent::Status { state: TaskState::Canceled, message: None }];
    match engine.recorder.record(&req.id, cancel).await {
        // No run follows a cancel to queue its deliveries again: one more try here, then the log.
        Ok(r) if r.pushes_owed => {
            let from = r.committed.events.first().map_or(0, |e| e.seq);
            if let Err(e) = engine.recorder.requeue_pushes(&req.id, from).await {
                tracing::error!(task_id = %req.id, error = %e, "the cancel's webhook deliveries could not be queued");
            }
        }
        Ok(_) => {}
        Err(e) if e.kind == ErrorKind::UnsupportedOperation => {}
        Err(e) => return Err(e),
    }
    let task = engine.store.load(&req.id).await?.ok_or_else(|| A2aError::task_not_found(&req.id))?.task;
    if task.status.state != TaskState::Canceled {
        return Err(A2aError::not_cancelable(&req.id, task.status.state));
    }
    Ok(task)
}
