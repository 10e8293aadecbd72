//! CreateTaskPushNotificationConfig: JSON-RPC `CreateTaskPushNotificationConfig`
//! (0.3 `tasks/pushNotificationConfig/set`), `POST /tasks/{taskId}/pushNotificationConfigs`, §3.1.7.

use crate::engine::{CallContext, Engine};
use a2a_protocol::error::{A2aError, Result};
use a2a_protocol::types::TaskPushNotificationConfig;

pub async fn create_push_config(
    engine: &Engine,
    ctx: &CallContext,
    config: TaskPushNotificationConfig,
) -> Result<TaskPushNotificationConfig> {
    super::push_config_task(engine, ctx, &config, &config.task_id).await?;
    engine.webhooks.check(&config.url).await?;
    let held = engine.push_configs.list(&config.task_id).await?;
    if held.len() >= MAX_CONFIGS_PER_TASK && !held.iter().any(|c| c.id == config.id) {
        return Err(A2aError::invalid_field(
            "id",
            format!(
                "task {} already has {MAX_CONFIGS_PER_TASK} push configs, the most it may hold; delete one first",
                config.task_id
            ),
        ));
    }
    store_push_config(engine, config).await
}

/// The most push configs one task may hold.
pub const MAX_CONFIGS_PER_TASK: usize = 16;

/// Stores a config whose webhook URL was checked: assigns an id when the client gave none, marks
/// the task as having configs.
pub(super) async fn store_push_config(
    engine: &Engine,
    mut config: TaskPushNotificationConfig,
) -> Result<TaskPushNotificationConfig> {
    if config.id.is_empty() {
        config.id = uuid::Uuid::new_v4().to_string();
    }
    // Mark the task first: an event committed after this sees the flag and looks for configs.
    engine
        .store
        .update(&config.task_id, 0, &|r| {
            r.has_push = true;
            Ok(Vec::new())
        })
        .await?;
    engine.push_configs.put(config.clone()).await?;
    Ok(config)
}
