//! GetTaskPushNotificationConfig: JSON-RPC `GetTaskPushNotificationConfig`
//! (0.3 `tasks/pushNotificationConfig/get`), `GET /tasks/{taskId}/pushNotificationConfigs/{id}`, §3.1.8.

use crate::engine::{CallContext, Engine};
use crate::error::{A2aError, Result};
use crate::types::{GetTaskPushNotificationConfigRequest, TaskPushNotificationConfig};

pub async fn get_push_config(
    engine: &Engine,
    ctx: &CallContext,
    req: GetTaskPushNotificationConfigRequest,
) -> Result<TaskPushNotificationConfig> {
    super::push_config_task(engine, ctx, &req, &req.task_id).await?;
    engine.push_configs.get(&req.task_id, &req.id).await?.ok_or_else(|| {
        A2aError::new(
            crate::error::ErrorKind::TaskNotFound,
            format!("push notification config {} not found for task {}", req.id, req.task_id),
        )
        .with("taskId", req.task_id.clone())
        .with("configId", req.id.clone())
    })
}
