//! Checks of the proto's `REQUIRED` field behaviours that serde's presence checks cannot express:
//! required strings must be non-empty, required arrays must hold at least one element, required
//! enums must not be `UNSPECIFIED` (spec §5.7). Errors name the field by its JSON path.

use crate::error::{A2aError, Result};

use super::*;

pub trait Validate {
    /// `path` is the JSON path of `self` in the request, e.g. `message` or `params.message`.
    fn validate(&self, path: &str) -> Result<()>;
}

fn field(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

fn non_empty(path: &str, name: &str, value: &str) -> Result<()> {
    if value.trim().is_empty() {
        Err(A2aError::invalid_field(&field(path, name), "is required and must not be empty"))
    } else {
        Ok(())
    }
}

impl Validate for Message {
    fn validate(&self, path: &str) -> Result<()> {
        non_empty(path, "messageId", &self.message_id)?;
        if self.role == Role::Unspecified {
            return Err(A2aError::invalid_field(&field(path, "role"), "is required (ROLE_USER or ROLE_AGENT)"));
        }
        if self.parts.is_empty() {
            return Err(A2aError::invalid_field(&field(path, "parts"), "must contain at least one part"));
        }
        for (i, p) in self.parts.iter().enumerate() {
            p.validate(&field(path, &format!("parts[{i}]")))?;
        }
        Ok(())
    }
}

impl Validate for Part {
    fn validate(&self, path: &str) -> Result<()> {
        if let PartContent::Url(u) = &self.content {
            non_empty(path, "url", u)?;
        }
        Ok(())
    }
}

impl Validate for SendMessageRequest {
    fn validate(&self, path: &str) -> Result<()> {
        self.message.validate(&field(path, "message"))?;
        if let Some(cfg) = &self.configuration {
            if let Some(h) = cfg.history_length {
                if h < 0 {
                    return Err(A2aError::invalid_field(
                        &field(path, "configuration.historyLength"),
                        "must not be negative",
                    ));
                }
            }
            if let Some(push) = &cfg.task_push_notification_config {
                non_empty(&field(path, "configuration.taskPushNotificationConfig"), "url", &push.url)?;
            }
        }
        Ok(())
    }
}

impl Validate for TaskPushNotificationConfig {
    fn validate(&self, path: &str) -> Result<()> {
        non_empty(path, "taskId", &self.task_id)?;
        non_empty(path, "url", &self.url)?;
        if let Some(auth) = &self.authentication {
            non_empty(&field(path, "authentication"), "scheme", &auth.scheme)?;
        }
        Ok(())
    }
}

impl Validate for GetTaskRequest {
    fn validate(&self, path: &str) -> Result<()> {
        non_empty(path, "id", &self.id)?;
        if matches!(self.history_length, Some(h) if h < 0) {
            return Err(A2aError::invalid_field(&field(path, "historyLength"), "must not be negative"));
        }
        Ok(())
    }
}

impl Validate for CancelTaskRequest {
    fn validate(&self, path: &str) -> Result<()> {
        non_empty(path, "id", &self.id)
    }
}

impl Validate for SubscribeToTaskRequest {
    fn validate(&self, path: &str) -> Result<()> {
        non_empty(path, "id", &self.id)
    }
}

impl Validate for GetTaskPushNotificationConfigRequest {
    fn validate(&self, path: &str) -> Result<()> {
        non_empty(path, "taskId", &self.task_id)?;
        non_empty(path, "id", &self.id)
    }
}

impl Validate for ListTaskPushNotificationConfigsRequest {
    fn validate(&self, path: &str) -> Result<()> {
        non_empty(path, "taskId", &self.task_id)?;
        if self.page_size < 0 {
            return Err(A2aError::invalid_field(&field(path, "pageSize"), "must not be negative"));
        }
        Ok(())
    }
}

impl Validate for ListTasksRequest {
    fn validate(&self, path: &str) -> Result<()> {
        if let Some(size) = self.page_size {
            // 0 means the default (50) and anything above 100 is clamped: only negatives are wrong.
            if size < 0 {
                return Err(A2aError::invalid_field(
                    &field(path, "pageSize"),
                    format!("must not be negative, got {size}"),
                ));
            }
        }
        if matches!(self.history_length, Some(h) if h < 0) {
            return Err(A2aError::invalid_field(&field(path, "historyLength"), "must not be negative"));
        }
        Ok(())
    }
}

impl Validate for GetExtendedAgentCardRequest {
    fn validate(&self, _path: &str) -> Result<()> {
        Ok(())
    }
}

impl Validate for AgentCard {
    fn validate(&self, path: &str) -> Result<()> {
        non_empty(path, "name", &self.name)?;
        non_empty(path, "description", &self.description)?;
        non_empty(path, "version", &self.version)?;
        for (i, s) in self.skills.iter().enumerate() {
            let p = field(path, &format!("skills[{i}]"));
            non_empty(&p, "id", &s.id)?;
            non_empty(&p, "name", &s.name)?;
            non_empty(&p, "description", &s.description)?;
        }
        Ok(())
    }
}
