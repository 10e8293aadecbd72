//! GetTaskPushNotificationConfig: JSON-RPC `GetTaskPushNotificationConfig`
//! (0.3 `tasks/pushNotificationConfig/get`), `GET /tasks/{taskId}/pushNotificationConfigs/{id}`, §3.1.8.
//! A 0.3 `get` without a config id returns the task's config (0.3 §7.6.1): the one addressed by the
//! task id (what a 0.3 `set` without id creates), else the task's first.

use crate::engine::{CallContext, Engine};
use a2a_protocol::error::{A2aError, Result};
use a2a_protocol::types::{GetTaskPushNotificationConfigRequest, TaskPushNotificationConfig};

pub async fn get_push_config(
    engine: &Engine,
    ctx: &CallContext,
    req: GetTaskPushNotificationConfigRequest,
) -> Result<TaskPushNotificationConfig> {
    super::push_config_task(engine, ctx, &req, &req.task_id).await?;
    engine.push_configs.get(&req.task_id, &req.id).await?.ok_or_else(|| not_found(&req.task_id, Some(&req.id)))
}

pub async fn get_default_push_config(
    engine: &Engine,
    ctx: &CallContext,
    task_id: &str,
) -> Result<TaskPushNotificationConfig> {
    let req =
        a2a_protocol::types::ListTaskPushNotificationConfigsRequest { task_id: task_id.into(), ..Default::default() };
    super::push_config_task(engine, ctx, &req, task_id).await?;
    let mut configs = engine.push_configs.list(task_id).await?;
    let pick = configs.iter().position(|c| c.id == task_id).unwrap_or(0);
    if pick < configs.len() {
        Ok(configs.swap_remove(pick))
    } else {
        Err(not_found(task_id, None))
    }
}

fn not_found(task_id: &str, id: Option<&str>) -> A2aError {
    let what = id.map_or_else(
        || "no push notification config".to_string(),
        |id| format!("push notification config {id} not found"),
    );
    let err = A2aError::new(a2a_protocol::error::ErrorKind::TaskNotFound, format!("{what} for task {task_id}"))
        .with("taskId", task_id.to_string());
    match id {
        Some(id) => err.with("configId", id.to_string()),
        None => err,
    }
}
