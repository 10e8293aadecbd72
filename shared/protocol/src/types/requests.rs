//! Request and response messages of the `A2AService` RPCs, and push notification configs.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::serde_helpers::{i32_lenient, is_false, is_zero, opt_i32, opt_timestamp};
use super::{Message, Struct, Task, TaskState};

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    #[serde(default, alias = "accepted_output_modes", skip_serializing_if = "Vec::is_empty")]
    pub accepted_output_modes: Vec<String>,
    // `pushNotificationConfig` is the 0.3 name, still used by an example of the 1.0 specification.
    #[serde(
        default,
        alias = "task_push_notification_config",
        alias = "pushNotificationConfig",
        skip_serializing_if = "Option::is_none"
    )]
    pub task_push_notification_config: Option<TaskPushNotificationConfig>,
    #[serde(default, alias = "history_length", with = "opt_i32", skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    #[serde(default, alias = "return_immediately", skip_serializing_if = "is_false")]
    pub return_immediately: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    pub message: Message,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequest {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    pub id: String,
    #[serde(default, alias = "history_length", with = "opt_i32", skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    #[serde(default, alias = "context_id", skip_serializing_if = "String::is_empty")]
    pub context_id: String,
    #[serde(default, skip_serializing_if = "is_unspecified")]
    pub status: TaskState,
    #[serde(default, alias = "page_size", with = "opt_i32", skip_serializing_if = "Option::is_none")]
    pub page_size: Option<i32>,
    #[serde(default, alias = "page_token", skip_serializing_if = "String::is_empty")]
    pub page_token: String,
    #[serde(default, alias = "history_length", with = "opt_i32", skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    #[serde(
        default,
        alias = "status_timestamp_after",
        with = "opt_timestamp",
        skip_serializing_if = "Option::is_none"
    )]
    pub status_timestamp_after: Option<DateTime<Utc>>,
    #[serde(default, alias = "include_artifacts", skip_serializing_if = "Option::is_none")]
    pub include_artifacts: Option<bool>,
}

fn is_unspecified(s: &TaskState) -> bool {
    *s == TaskState::Unspecified
}

/// `nextPageToken`, `pageSize` and `totalSize` are always written (REQUIRED), even when empty or zero.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResponse {
    #[serde(default)]
    pub tasks: Vec<Task>,
    #[serde(default)]
    pub next_page_token: String,
    #[serde(default, with = "i32_lenient")]
    pub page_size: i32,
    #[serde(default, with = "i32_lenient")]
    pub total_size: i32,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelTaskRequest {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeToTaskRequest {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    pub id: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskPushNotificationConfigRequest {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    #[serde(alias = "task_id")]
    pub task_id: String,
    pub id: String,
}

pub type DeleteTaskPushNotificationConfigRequest = GetTaskPushNotificationConfigRequest;

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsRequest {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    #[serde(alias = "task_id")]
    pub task_id: String,
    #[serde(default, alias = "page_size", with = "i32_lenient", skip_serializing_if = "is_zero")]
    pub page_size: i32,
    #[serde(default, alias = "page_token", skip_serializing_if = "String::is_empty")]
    pub page_token: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsResponse {
    #[serde(default)]
    pub configs: Vec<TaskPushNotificationConfig>,
    #[serde(default)]
    pub next_page_token: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct GetExtendedAgentCardRequest {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
}

/// Authentication the agent uses when calling a webhook. The credentials never appear in `Debug`.
#[derive(Clone, PartialEq, Serialize)]
pub struct AuthenticationInfo {
    pub scheme: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub credentials: String,
}

impl std::fmt::Debug for AuthenticationInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthenticationInfo").field("scheme", &self.scheme).field("credentials", &"<redacted>").finish()
    }
}

impl<'de> Deserialize<'de> for AuthenticationInfo {
    /// Also reads the 0.3 form `{"schemes": ["Bearer"], ...}` (the first scheme is used).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Wire {
            scheme: Option<String>,
            #[serde(default)]
            schemes: Vec<String>,
            #[serde(default)]
            credentials: String,
        }
        let w = Wire::deserialize(d)?;
        let scheme = w.scheme.or_else(|| w.schemes.into_iter().next()).unwrap_or_default();
        Ok(Self { scheme, credentials: w.credentials })
    }
}

/// A webhook registered for a task's updates.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    #[serde(default, alias = "task_id", skip_serializing_if = "String::is_empty")]
    pub task_id: String,
    pub url: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
    /// Server-side, never on the wire: the config was registered through A2A 0.3, so its webhook
    /// receives 0.3 payloads (the task as it stands, `kind`-tagged, as the 0.3 reference sends).
    #[serde(skip)]
    pub v03_payloads: bool,
}
