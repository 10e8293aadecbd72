//! The A2A 0.3 wire forms (seed 001, `a2a-v0.3.0.schema.json`) and their conversion to and from the
//! 1.0 model: `kind`-tagged parts (`text`, `file` with `bytes` | `uri`, `data`), results and events
//! (`task`, `message`, `status-update` with `final`, `artifact-update`), kebab-case states, roles
//! `user` / `agent`; the 0.3 card (`card`), and the JSON of the 0.3 proto that the 0.3 HTTP+JSON
//! binding speaks (`proto`).

mod card;
pub mod proto;

pub use card::{card_from_wire, card_to_wire};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{A2aError, Result};
use crate::types::serde_helpers::{base64_bytes, is_false, opt_i32};
use crate::types::{self as v1, PartContent, Struct};

// ---------------------------------------------------------------------------------------------
// Parts, messages, tasks, events
// ---------------------------------------------------------------------------------------------

/// A 0.3 part. On input the `kind` tag may be missing (some 0.3 clients omit it); the member
/// present (`text`, `file`, `data`) decides then.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Part {
    Text {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Struct>,
    },
    File {
        file: FileContent,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Struct>,
    },
    Data {
        data: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        metadata: Option<Struct>,
    },
}

impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::Error;
        #[derive(Deserialize)]
        struct Wire {
            kind: Option<String>,
            text: Option<String>,
            file: Option<FileContent>,
            data: Option<Value>,
            metadata: Option<Struct>,
        }
        let w = Wire::deserialize(d)?;
        let kind = match w.kind.as_deref() {
            Some(k) => k.to_string(),
            None if w.text.is_some() => "text".into(),
            None if w.file.is_some() => "file".into(),
            None if w.data.is_some() => "data".into(),
            None => return Err(D::Error::custom("a part needs a kind (text, file or data)")),
        };
        let metadata = w.metadata;
        match kind.as_str() {
            "text" => Ok(Part::Text { text: w.text.ok_or_else(|| D::Error::missing_field("text"))?, metadata }),
            "file" => Ok(Part::File { file: w.file.ok_or_else(|| D::Error::missing_field("file"))?, metadata }),
            "data" => match w.data.ok_or_else(|| D::Error::missing_field("data"))? {
                data @ Value::Object(_) => Ok(Part::Data { data, metadata }),
                _ => Err(D::Error::custom("a data part's data must be a JSON object in A2A 0.3")),
            },
            other => Err(D::Error::custom(format!("unknown part kind {other:?}; expected text, file or data"))),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileContent {
    #[serde(default, alias = "fileWithBytes", skip_serializing_if = "Option::is_none")]
    pub bytes: Option<String>,
    #[serde(default, alias = "fileWithUri", skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

fn opt(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

impl From<&v1::Part> for Part {
    fn from(p: &v1::Part) -> Self {
        let metadata = p.metadata.as_deref().cloned();
        let file = |bytes, uri| Part::File {
            file: FileContent { bytes, uri, mime_type: opt(p.media_type()), name: opt(p.filename()) },
            metadata: metadata.clone(),
        };
        match &p.content {
            PartContent::Text(t) => Part::Text { text: t.to_string(), metadata },
            PartContent::Raw(b) => file(Some(base64_bytes::encode(b)), None),
            PartContent::Url(u) => file(None, Some(u.clone())),
            // 0.3 data is an object: any other 1.0 value goes out as `{"value": …}` (as the 0.3
            // HTTP+JSON binding's proto form carries it), which 0.3 clients can read.
            PartContent::Data(d) => match Value::clone(d) {
                data @ Value::Object(_) => Part::Data { data, metadata },
                other => Part::Data { data: serde_json::json!({ "value": other }), metadata },
            },
        }
    }
}

impl Part {
    fn into_v1(self, path: &str) -> Result<v1::Part> {
        Ok(match self {
            Part::Text { text, metadata } => v1::Part::text(text).with_metadata(metadata),
            Part::Data { data, metadata } => v1::Part::data(data).with_metadata(metadata),
            Part::File { file, metadata } => {
                let content = match (file.bytes, file.uri) {
                    (Some(b), None) => PartContent::Raw(
                        base64_bytes::decode(&b)
                            .map_err(|e| A2aError::invalid_field(&format!("{path}.file.bytes"), e))?
                            .into(),
                    ),
                    (None, Some(u)) => PartContent::Url(u),
                    _ => {
                        return Err(A2aError::invalid_field(
                            &format!("{path}.file"),
                            "must have exactly one of bytes, uri",
                        ))
                    }
                };
                v1::Part::new(content)
                    .with_metadata(metadata)
                    .with_filename(file.name.unwrap_or_default())
                    .with_media_type(file.mime_type.unwrap_or_default())
            }
        })
    }
}

/// Converts a list of parts, naming a bad one by its index under `path`.
fn parts_into_v1(parts: Vec<Part>, path: &str) -> Result<Vec<v1::Part>> {
    parts.into_iter().enumerate().map(|(i, p)| p.into_v1(&format!("{path}.parts[{i}]"))).collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Agent,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    #[serde(default)]
    pub kind: MessageKind,
    #[serde(default)]
    pub message_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    pub role: Role,
    #[serde(deserialize_with = "crate::types::bounds::bounded_parts")]
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reference_task_ids: Vec<String>,
}

/// The `kind` discriminator of a message; tolerated when absent on input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MessageKind {
    #[default]
    Message,
}

impl From<&v1::Message> for Message {
    fn from(m: &v1::Message) -> Self {
        Self {
            kind: MessageKind::Message,
            message_id: m.message_id.clone(),
            context_id: opt(&m.context_id),
            task_id: opt(&m.task_id),
            role: if m.role == v1::Role::Agent { Role::Agent } else { Role::User },
            parts: m.parts.iter().map(Part::from).collect(),
            metadata: m.metadata.as_deref().cloned(),
            extensions: m.extensions.clone(),
            reference_task_ids: m.reference_task_ids.clone(),
        }
    }
}

impl Message {
    pub fn into_v1(self, path: &str) -> Result<v1::Message> {
        let parts = parts_into_v1(self.parts, path)?;
        Ok(v1::Message {
            message_id: self.message_id,
            context_id: self.context_id.unwrap_or_default(),
            task_id: self.task_id.unwrap_or_default(),
            role: match self.role {
                Role::User => v1::Role::User,
                Role::Agent => v1::Role::Agent,
            },
            parts,
            metadata: self.metadata.map(Box::new),
            extensions: self.extensions,
            reference_task_ids: self.reference_task_ids,
        })
    }
}

/// 0.3 task states (kebab-case), including the 0.3-only `unknown`.
pub fn state_to_wire(s: v1::TaskState) -> &'static str {
    s.short_name()
}

pub fn state_from_wire(s: &str) -> Option<v1::TaskState> {
    match s {
        "unknown" => Some(v1::TaskState::Unspecified),
        other => v1::TaskState::ALL.iter().copied().find(|st| st.short_name() == other),
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskStatus {
    pub state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

impl From<&v1::TaskStatus> for TaskStatus {
    fn from(s: &v1::TaskStatus) -> Self {
        Self {
            state: state_to_wire(s.state).to_string(),
            message: s.message.as_deref().map(Message::from),
            timestamp: s.timestamp.as_ref().map(v1::serde_helpers::timestamp::format),
        }
    }
}

impl TaskStatus {
    fn into_v1(self, path: &str) -> Result<v1::TaskStatus> {
        Ok(v1::TaskStatus {
            state: state_from_wire(&self.state).ok_or_else(|| {
                A2aError::invalid_field(&format!("{path}.state"), format!("unknown state {:?}", self.state))
            })?,
            message: self.message.map(|m| m.into_v1(&format!("{path}.message")).map(Box::new)).transpose()?,
            timestamp: self
                .timestamp
                .map(|t| v1::serde_helpers::timestamp::parse(&t))
                .transpose()
                .map_err(|e| A2aError::invalid_field(&format!("{path}.timestamp"), e))?,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    #[serde(default)]
    pub artifact_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(deserialize_with = "crate::types::bounds::bounded_parts")]
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

impl From<&v1::Artifact> for Artifact {
    fn from(a: &v1::Artifact) -> Self {
        Self {
            artifact_id: a.artifact_id.clone(),
            name: opt(&a.name),
            description: opt(&a.description),
            parts: a.parts.iter().map(Part::from).collect(),
            metadata: a.metadata.as_deref().cloned(),
            extensions: a.extensions.clone(),
        }
    }
}

impl Artifact {
    fn into_v1(self, path: &str) -> Result<v1::Artifact> {
        let parts = parts_into_v1(self.parts, path)?;
        Ok(v1::Artifact {
            artifact_id: self.artifact_id,
            name: self.name.unwrap_or_default(),
            description: self.description.unwrap_or_default(),
            parts,
            metadata: self.metadata.map(Box::new),
            extensions: self.extensions,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub id: String,
    #[serde(default)]
    pub context_id: String,
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<Vec<Artifact>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<Message>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

impl From<&v1::Task> for Task {
    fn from(t: &v1::Task) -> Self {
        Self {
            id: t.id.clone(),
            context_id: t.context_id.clone(),
            status: TaskStatus::from(&t.status),
            artifacts: t.artifacts.as_ref().map(|a| a.iter().map(Artifact::from).collect()),
            history: (!t.history.is_empty()).then(|| t.history.iter().map(Message::from).collect()),
            metadata: t.metadata.as_deref().cloned(),
        }
    }
}

impl Task {
    pub fn into_v1(self, path: &str) -> Result<v1::Task> {
        Ok(v1::Task {
            id: self.id,
            context_id: self.context_id,
            status: self.status.into_v1(&format!("{path}.status"))?,
            artifacts: self
                .artifacts
                .map(|a| a.into_iter().enumerate().map(|(i, a)| a.into_v1(&format!("{path}.artifacts[{i}]"))).collect())
                .transpose()?,
            history: self
                .history
                .unwrap_or_default()
                .into_iter()
                .enumerate()
                .map(|(i, m)| m.into_v1(&format!("{path}.history[{i}]")))
                .collect::<Result<_>>()?,
            metadata: self.metadata.map(Box::new),
        })
    }
}

/// A 0.3 result or stream event, tagged by `kind` (`task`, `message`, `status-update`,
/// `artifact-update`). A [`Message`] writes its own `kind`; the others get it added.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Task(Task),
    Message(Message),
    StatusUpdate(StatusUpdate),
    ArtifactUpdate(ArtifactUpdate),
}

impl Serialize for Event {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::Error;
        let (kind, value) = match self {
            Event::Message(m) => return m.serialize(s),
            Event::Task(t) => ("task", serde_json::to_value(t)),
            Event::StatusUpdate(u) => ("status-update", serde_json::to_value(u)),
            Event::ArtifactUpdate(u) => ("artifact-update", serde_json::to_value(u)),
        };
        let mut value = value.map_err(S::Error::custom)?;
        if let Value::Object(m) = &mut value {
            m.insert("kind".into(), Value::String(kind.into()));
        }
        value.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::Error;
        let value = Value::deserialize(d)?;
        let kind = value.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
        let parsed = match kind.as_str() {
            "task" => serde_json::from_value(value).map(Event::Task),
            "message" => serde_json::from_value(value).map(Event::Message),
            "status-update" => serde_json::from_value(value).map(Event::StatusUpdate),
            "artifact-update" => serde_json::from_value(value).map(Event::ArtifactUpdate),
            other => {
                return Err(D::Error::custom(format!(
                    "unknown kind {other:?}; expected task, message, status-update or artifact-update"
                )))
            }
        };
        parsed.map_err(D::Error::custom)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusUpdate {
    pub task_id: String,
    #[serde(default)]
    pub context_id: String,
    pub status: TaskStatus,
    #[serde(rename = "final", default)]
    pub is_final: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactUpdate {
    pub task_id: String,
    #[serde(default)]
    pub context_id: String,
    pub artifact: Artifact,
    #[serde(default, skip_serializing_if = "is_false")]
    pub append: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub last_chunk: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

impl From<&v1::StreamResponse> for Event {
    fn from(ev: &v1::StreamResponse) -> Self {
        match ev {
            v1::StreamResponse::Task(t) => Event::Task(Task::from(t)),
            v1::StreamResponse::Message(m) => Event::Message(Message::from(m)),
            v1::StreamResponse::StatusUpdate(u) => Event::StatusUpdate(StatusUpdate {
                task_id: u.task_id.clone(),
                context_id: u.context_id.clone(),
                status: TaskStatus::from(&u.status),
                is_final: u.status.state.ends_turn(),
                metadata: u.metadata.clone(),
            }),
            v1::StreamResponse::ArtifactUpdate(u) => Event::ArtifactUpdate(ArtifactUpdate {
                task_id: u.task_id.clone(),
                context_id: u.context_id.clone(),
                artifact: Artifact::from(&u.artifact),
                append: u.append,
                last_chunk: u.last_chunk,
                metadata: u.metadata.clone(),
            }),
        }
    }
}

impl Event {
    pub fn into_v1(self) -> Result<v1::StreamResponse> {
        Ok(match self {
            Event::Task(t) => v1::StreamResponse::Task(t.into_v1("task")?),
            Event::Message(m) => v1::StreamResponse::Message(m.into_v1("message")?),
            Event::StatusUpdate(u) => v1::StreamResponse::StatusUpdate(v1::TaskStatusUpdateEvent {
                task_id: u.task_id,
                context_id: u.context_id,
                status: u.status.into_v1("status")?,
                metadata: u.metadata,
            }),
            Event::ArtifactUpdate(u) => v1::StreamResponse::ArtifactUpdate(v1::TaskArtifactUpdateEvent {
                task_id: u.task_id,
                context_id: u.context_id,
                artifact: u.artifact.into_v1("artifact")?,
                append: u.append,
                last_chunk: u.last_chunk,
                metadata: u.metadata,
            }),
        })
    }
}

/// `message/send` result: a task or a message, tagged by `kind`.
pub fn send_result(r: &v1::SendMessageResponse) -> Event {
    match r {
        v1::SendMessageResponse::Task(t) => Event::Task(Task::from(t)),
        v1::SendMessageResponse::Message(m) => Event::Message(Message::from(m)),
    }
}

// ---------------------------------------------------------------------------------------------
// Request parameters
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushAuthentication {
    #[serde(default)]
    pub schemes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushNotificationConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<PushAuthentication>,
}

impl PushNotificationConfig {
    pub fn into_v1(self, task_id: String) -> v1::TaskPushNotificationConfig {
        v1::TaskPushNotificationConfig {
            tenant: String::new(),
            id: self.id.unwrap_or_default(),
            task_id,
            url: self.url,
            token: self.token.unwrap_or_default(),
            authentication: self.authentication.map(|a| v1::AuthenticationInfo {
                scheme: a.schemes.into_iter().next().unwrap_or_default(),
                credentials: a.credentials.unwrap_or_default(),
            }),
            v03_payloads: true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    pub task_id: String,
    pub push_notification_config: PushNotificationConfig,
}

impl TaskPushNotificationConfig {
    /// The 1.0 config; one registered without an id is addressed by its task id (0.3 clients get
    /// it back with `tasks/pushNotificationConfig/get` and no config id).
    pub fn into_v1(self) -> v1::TaskPushNotificationConfig {
        let mut config = self.push_notification_config.into_v1(self.task_id);
        if config.id.is_empty() {
            config.id.clone_from(&config.task_id);
        }
        config
    }
}

impl From<&v1::TaskPushNotificationConfig> for TaskPushNotificationConfig {
    fn from(c: &v1::TaskPushNotificationConfig) -> Self {
        Self {
            task_id: c.task_id.clone(),
            push_notification_config: PushNotificationConfig {
                id: opt(&c.id),
                url: c.url.clone(),
                token: opt(&c.token),
                authentication: c
                    .authentication
                    .as_ref()
                    .map(|a| PushAuthentication { schemes: vec![a.scheme.clone()], credentials: opt(&a.credentials) }),
            },
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendConfiguration {
    #[serde(default)]
    pub accepted_output_modes: Vec<String>,
    /// 0.3 defaults to blocking when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocking: Option<bool>,
    #[serde(default, with = "opt_i32", skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_notification_config: Option<PushNotificationConfig>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageSendParams {
    pub message: Message,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

impl MessageSendParams {
    pub fn into_v1(self) -> Result<v1::SendMessageRequest> {
        let message = self.message.into_v1("message")?;
        let configuration = self.configuration.map(|c| v1::SendMessageConfiguration {
            accepted_output_modes: c.accepted_output_modes,
            task_push_notification_config: c.push_notification_config.map(|p| p.into_v1(message.task_id.clone())),
            history_length: c.history_length,
            return_immediately: c.blocking == Some(false),
        });
        Ok(v1::SendMessageRequest { tenant: String::new(), message, configuration, metadata: self.metadata })
    }
}

impl From<&v1::SendMessageRequest> for MessageSendParams {
    fn from(r: &v1::SendMessageRequest) -> Self {
        Self {
            message: Message::from(&r.message),
            configuration: r.configuration.as_ref().map(|c| SendConfiguration {
                accepted_output_modes: c.accepted_output_modes.clone(),
                blocking: c.return_immediately.then_some(false),
                history_length: c.history_length,
                push_notification_config: c
                    .task_push_notification_config
                    .as_ref()
                    .map(|p| TaskPushNotificationConfig::from(p).push_notification_config),
            }),
            metadata: r.metadata.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskQueryParams {
    pub id: String,
    #[serde(default, with = "opt_i32", skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskIdParams {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

/// `tasks/pushNotificationConfig/get` and `/delete`: `id` is the task, the config id is optional
/// for `get` (0.3 allowed omitting it when a task has one config).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushConfigParams {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_notification_config_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

impl PushConfigParams {
    /// `delete` needs the config id; `field` names it in the error.
    pub fn delete_request(self, field: &str) -> Result<v1::DeleteTaskPushNotificationConfigRequest> {
        let id = self.push_notification_config_id.ok_or_else(|| A2aError::invalid_field(field, "is required"))?;
        Ok(v1::DeleteTaskPushNotificationConfigRequest { tenant: String::new(), task_id: self.id, id })
    }
}
