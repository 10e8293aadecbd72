//! DeleteTaskPushNotificationConfig: JSON-RPC `DeleteTaskPushNotificationConfig`
//! (0.3 `tasks/pushNotificationConfig/delete`), `DELETE /tasks/{taskId}/pushNotificationConfigs/{id}`,
//! spec §3.1.10. Idempotent: deleting a config that is gone succeeds.

use crate::engine::{CallContext, Engine};
use crate::error::Result;
use crate::types::{DeleteTaskPushNotificationConfigRequest, Validate};

pub async fn delete_push_config(
    engine: &Engine,
    ctx: &CallContext,
    req: DeleteTaskPushNotificationConfigRequest,
) -> Result<()> {
    super::require_push(engine)?;
    req.validate("")?;
    engine.load_owned(ctx, &req.task_id).await?;
    engine.push_configs.delete(&req.task_id, &req.id).await
}
