//! ListTaskPushNotificationConfigs: JSON-RPC `ListTaskPushNotificationConfigs`
//! (0.3 `tasks/pushNotificationConfig/list`), `GET /tasks/{taskId}/pushNotificationConfigs`, §3.1.9.
//! A task holds few configs, so every config comes in one page.

use crate::engine::{CallContext, Engine};
use a2a_protocol::error::Result;
use a2a_protocol::types::{ListTaskPushNotificationConfigsRequest, ListTaskPushNotificationConfigsResponse};

pub async fn list_push_configs(
    engine: &Engine,
    ctx: &CallContext,
    req: ListTaskPushNotificationConfigsRequest,
) -> Result<ListTaskPushNotificationConfigsResponse> {
    super::push_config_task(engine, ctx, &req, &req.task_id).await?;
    let configs = engine.push_configs.list(&req.task_id).await?;
    Ok(ListTaskPushNotificationConfigsResponse { configs, next_page_token: String::new() })
}
