//! DeleteTaskPushNotificationConfig: JSON-RPC `DeleteTaskPushNotificationConfig`
//! (0.3 `tasks/pushNotificationConfig/delete`), `DELETE /tasks/{taskId}/pushNotificationConfigs/{id}`,
//! spec §3.1.10. Idempotent: deleting a config that is gone succeeds.

use crate::engine::{CallContext, Engine};
use a2a_protocol::error::Result;
use a2a_protocol::types::DeleteTaskPushNotificationConfigRequest;

pub async fn delete_push_config(
    engine: &Engine,
    ctx: &CallContext,
    req: DeleteTaskPushNotificationConfigRequest,
) -> Result<()> {
    super::push_config_task(engine, ctx, &req, &req.task_id).await?;
    engine.push_configs.delete(&req.task_id, &req.id).await
}
