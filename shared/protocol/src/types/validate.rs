//! Checks of the proto's `REQUIRED` field behaviours that serde's presence checks cannot express:
//! required strings must be non-empty, required arrays must hold at least one element, required
//! enums must not be `UNSPECIFIED` (spec §5.7). Also the server's bounds on what a client may make
//! it keep: ids, metadata, push config tokens and credentials. Errors name the field by its JSON path.

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

/// Longest id a client may choose (messageId, contextId, taskId, push config id, referenceTaskIds).
pub const MAX_ID_LEN: usize = 256;
/// Largest `metadata` of a message, a part or a request, in bytes of its JSON.
pub const MAX_METADATA_BYTES: usize = 16 * 1024;
/// Longest push config token and authentication credentials.
pub const MAX_SECRET_LEN: usize = 4096;

fn bounded(path: &str, name: &str, value: &str, max: usize) -> Result<()> {
    if value.len() > max {
        Err(A2aError::invalid_field(&field(path, name), format!("is {} bytes long; the limit is {max}", value.len())))
    } else {
        Ok(())
    }
}

/// A value each webhook delivery sends in an HTTP header (the token, the authentication's scheme
/// and credentials): a control character there (a line break, above all) makes every delivery
/// fail, so it is refused when the config is made.
fn header_value(path: &str, name: &str, value: &str) -> Result<()> {
    match value.chars().find(|c| c.is_ascii_control() && *c != '\t') {
        Some(c) => Err(A2aError::invalid_field(
            &field(path, name),
            format!("must not contain control characters (found {c:?}): it is sent in an HTTP header"),
        )),
        None => Ok(()),
    }
}

fn bounded_metadata(path: &str, metadata: Option<&Struct>) -> Result<()> {
    let Some(m) = metadata else { return Ok(()) };
    let size = serde_json::to_vec(m).map_or(usize::MAX, |v| v.len());
    if size > MAX_METADATA_BYTES {
        return Err(A2aError::invalid_field(
            &field(path, "metadata"),
            format!("is {size} bytes of JSON; the limit is {MAX_METADATA_BYTES}"),
        ));
    }
    Ok(())
}

/// An id the request looks up (a task's, a config's): required, and no longer than any id the
/// server keeps (a longer one names nothing, and would only be repeated back in the error).
fn lookup_id(path: &str, name: &str, value: &str) -> Result<()> {
    non_empty(path, name, value)?;
    bounded(path, name, value, MAX_ID_LEN)
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
        bounded(path, "messageId", &self.message_id, MAX_ID_LEN)?;
        bounded(path, "contextId", &self.context_id, MAX_ID_LEN)?;
        bounded(path, "taskId", &self.task_id, MAX_ID_LEN)?;
        for (i, r) in self.reference_task_ids.iter().enumerate() {
            bounded(path, &format!("referenceTaskIds[{i}]"), r, MAX_ID_LEN)?;
        }
        bounded_metadata(path, self.metadata.as_deref())?;
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
        bounded_metadata(path, self.metadata.as_deref())
    }
}

impl Validate for SendMessageRequest {
    fn validate(&self, path: &str) -> Result<()> {
        self.message.validate(&field(path, "message"))?;
        bounded_metadata(path, self.metadata.as_ref())?;
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
                let p = field(path, "configuration.taskPushNotificationConfig");
                non_empty(&p, "url", &push.url)?;
                push.bounds(&p)?;
            }
        }
        Ok(())
    }
}

impl TaskPushNotificationConfig {
    /// The sizes a config may have (the URL's own limit is the SSRF guard's).
    fn bounds(&self, path: &str) -> Result<()> {
        bounded(path, "id", &self.id, MAX_ID_LEN)?;
        bounded(path, "token", &self.token, MAX_SECRET_LEN)?;
        header_value(path, "token", &self.token)?;
        if let Some(auth) = &self.authentication {
            let p = field(path, "authentication");
            bounded(&p, "scheme", &auth.scheme, MAX_ID_LEN)?;
            bounded(&p, "credentials", &auth.credentials, MAX_SECRET_LEN)?;
            header_value(&p, "scheme", &auth.scheme)?;
            header_value(&p, "credentials", &auth.credentials)?;
        }
        Ok(())
    }
}

impl Validate for TaskPushNotificationConfig {
    fn validate(&self, path: &str) -> Result<()> {
        lookup_id(path, "taskId", &self.task_id)?;
        non_empty(path, "url", &self.url)?;
        if let Some(auth) = &self.authentication {
            non_empty(&field(path, "authentication"), "scheme", &auth.scheme)?;
        }
        self.bounds(path)
    }
}

impl Validate for GetTaskRequest {
    fn validate(&self, path: &str) -> Result<()> {
        lookup_id(path, "id", &self.id)?;
        if matches!(self.history_length, Some(h) if h < 0) {
            return Err(A2aError::invalid_field(&field(path, "historyLength"), "must not be negative"));
        }
        Ok(())
    }
}

impl Validate for CancelTaskRequest {
    fn validate(&self, path: &str) -> Result<()> {
        lookup_id(path, "id", &self.id)
    }
}

impl Validate for SubscribeToTaskRequest {
    fn validate(&self, path: &str) -> Result<()> {
        lookup_id(path, "id", &self.id)
    }
}

impl Validate for GetTaskPushNotificationConfigRequest {
    fn validate(&self, path: &str) -> Result<()> {
        lookup_id(path, "taskId", &self.task_id)?;
        lookup_id(path, "id", &self.id)
    }
}

impl Validate for ListTaskPushNotificationConfigsRequest {
    fn validate(&self, path: &str) -> Result<()> {
        lookup_id(path, "taskId", &self.task_id)?;
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
