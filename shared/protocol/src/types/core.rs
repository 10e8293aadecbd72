//! Task, Message, Part, Artifact, the streaming events and the one-of response wrappers.

use std::fmt;
use std::sync::Arc;

use bytes::Bytes;

use chrono::{DateTime, Utc};
use serde::de::{self, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::serde_helpers::{base64_bytes, is_false, opt_timestamp};
use super::Struct;

/// Generates a string enum that serializes by its proto name and also reads the proto number.
macro_rules! proto_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident = $num:literal => $wire:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub enum $name {
            #[default]
            $($variant),+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The ProtoJSON name, e.g. `TASK_STATE_WORKING`.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $wire),+ }
            }

            pub fn number(self) -> i32 {
                match self { $($name::$variant => $num),+ }
            }

            pub fn from_number(n: i64) -> Option<Self> {
                match n { $($num => Some($name::$variant),)+ _ => None }
            }

            pub fn from_name(s: &str) -> Option<Self> {
                match s { $($wire => Some($name::$variant),)+ _ => None }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                match Value::deserialize(d)? {
                    Value::String(s) => $name::from_name(&s).or_else(|| $name::from_alias(&s)).ok_or_else(|| {
                        de::Error::custom(format!(
                            "unknown {} {:?}; expected one of {}",
                            stringify!($name),
                            s,
                            [$($wire),+].join(", ")
                        ))
                    }),
                    Value::Number(n) => n
                        .as_i64()
                        .and_then($name::from_number)
                        .ok_or_else(|| de::Error::custom(format!("unknown {} number {n}", stringify!($name)))),
                    other => Err(de::Error::custom(format!(
                        "expected a {} name, got {}",
                        stringify!($name),
                        other
                    ))),
                }
            }
        }
    };
}

proto_enum!(
    /// The lifecycle state of a task.
    TaskState {
        Unspecified = 0 => "TASK_STATE_UNSPECIFIED",
        Submitted = 1 => "TASK_STATE_SUBMITTED",
        Working = 2 => "TASK_STATE_WORKING",
        Completed = 3 => "TASK_STATE_COMPLETED",
        Failed = 4 => "TASK_STATE_FAILED",
        Canceled = 5 => "TASK_STATE_CANCELED",
        InputRequired = 6 => "TASK_STATE_INPUT_REQUIRED",
        Rejected = 7 => "TASK_STATE_REJECTED",
        AuthRequired = 8 => "TASK_STATE_AUTH_REQUIRED",
    }
);

impl TaskState {
    /// Completed, failed, canceled or rejected: no further change is possible.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Canceled | Self::Rejected)
    }

    /// Waiting on the client (input or authorization).
    pub fn is_interrupted(self) -> bool {
        matches!(self, Self::InputRequired | Self::AuthRequired)
    }

    /// A blocking SendMessage returns and a stream closes at these states.
    pub fn ends_turn(self) -> bool {
        self.is_terminal() || self.is_interrupted()
    }

    /// The short lower-case form used by 0.3 and by REST query parameters (`input-required`).
    pub fn short_name(self) -> &'static str {
        match self {
            Self::Unspecified => "unknown",
            Self::Submitted => "submitted",
            Self::Working => "working",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Canceled => "canceled",
            Self::InputRequired => "input-required",
            Self::Rejected => "rejected",
            Self::AuthRequired => "auth-required",
        }
    }

    /// Reads the ProtoJSON name, the 0.3 kebab form, or the snake variant (`input_required`).
    pub fn parse_lenient(raw: &str) -> Option<Self> {
        Self::from_name(raw).or_else(|| Self::from_alias(raw))
    }

    /// The 0.3 kebab form or the snake variant (`input_required`), as older clients send.
    fn from_alias(raw: &str) -> Option<Self> {
        let norm = raw.trim().to_ascii_lowercase().replace('_', "-");
        let norm = norm.strip_prefix("task-state-").unwrap_or(&norm);
        Self::ALL.iter().copied().find(|s| s.short_name() == norm || (norm == "unspecified" && *s == Self::Unspecified))
    }
}

impl Role {
    /// The 0.3 lower-case forms.
    fn from_alias(raw: &str) -> Option<Self> {
        match raw {
            "user" => Some(Self::User),
            "agent" => Some(Self::Agent),
            _ => None,
        }
    }
}

proto_enum!(
    /// Who sent a message.
    Role {
        Unspecified = 0 => "ROLE_UNSPECIFIED",
        User = 1 => "ROLE_USER",
        Agent = 2 => "ROLE_AGENT",
    }
);

/// The content of a part: exactly one of these members is present on the wire. Text, bytes and data
/// are shared, not copied, when a part is cloned: the same content sits in a task's history or
/// artifacts, in its event log and in every stream and webhook job that carries it.
#[derive(Debug, Clone, PartialEq)]
pub enum PartContent {
    Text(Arc<str>),
    /// Inline bytes, base64 on the wire.
    Raw(Bytes),
    Url(String),
    /// Any JSON value (`google.protobuf.Value`).
    Data(Arc<Value>),
}

/// The smallest unit of content in a Message or Artifact.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub content: PartContent,
    /// Boxed: few parts carry metadata, and a part is copied into the task's history or artifacts
    /// and into the event that announced it.
    pub metadata: Option<Box<Struct>>,
    /// The file name and media type ([`Part::filename`], [`Part::media_type`]), boxed: most parts
    /// carry neither, and a part is held in the history, the artifacts and the event log.
    names: Option<Box<PartNames>>,
}

#[derive(Debug, Clone, PartialEq, Default)]
struct PartNames {
    filename: String,
    media_type: String,
}

impl Part {
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(PartContent::Text(Arc::from(text.into())))
    }

    pub fn raw(bytes: impl Into<Bytes>) -> Self {
        Self::new(PartContent::Raw(bytes.into()))
    }

    pub fn url(url: impl Into<String>) -> Self {
        Self::new(PartContent::Url(url.into()))
    }

    pub fn data(value: Value) -> Self {
        Self::new(PartContent::Data(Arc::new(value)))
    }

    pub fn new(content: PartContent) -> Self {
        Self { content, metadata: None, names: None }
    }

    pub fn with_metadata(mut self, metadata: Option<Struct>) -> Self {
        self.metadata = metadata.map(Box::new);
        self
    }

    /// The file name (empty: none).
    pub fn filename(&self) -> &str {
        self.names.as_ref().map_or("", |n| &n.filename)
    }

    /// The media type (empty: none).
    pub fn media_type(&self) -> &str {
        self.names.as_ref().map_or("", |n| &n.media_type)
    }

    pub fn with_filename(mut self, name: impl Into<String>) -> Self {
        self.set_names(Some(name.into()), None);
        self
    }

    pub fn with_media_type(mut self, media_type: impl Into<String>) -> Self {
        self.set_names(None, Some(media_type.into()));
        self
    }

    /// Sets what is given; no box is made for empty names.
    fn set_names(&mut self, filename: Option<String>, media_type: Option<String>) {
        let empty = filename.as_ref().is_none_or(String::is_empty) && media_type.as_ref().is_none_or(String::is_empty);
        if empty && self.names.is_none() {
            return;
        }
        let names = self.names.get_or_insert_with(Box::default);
        if let Some(filename) = filename {
            names.filename = filename;
        }
        if let Some(media_type) = media_type {
            names.media_type = media_type;
        }
        if names.filename.is_empty() && names.media_type.is_empty() {
            self.names = None;
        }
    }

    pub fn as_text(&self) -> Option<&str> {
        match &self.content {
            PartContent::Text(t) => Some(t),
            _ => None,
        }
    }
}

impl Serialize for Part {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        match &self.content {
            PartContent::Text(t) => map.serialize_entry("text", &**t)?,
            PartContent::Raw(b) => map.serialize_entry("raw", &base64_bytes::encode(b))?,
            PartContent::Url(u) => map.serialize_entry("url", u)?,
            PartContent::Data(v) => map.serialize_entry("data", &**v)?,
        }
        if let Some(m) = &self.metadata {
            map.serialize_entry("metadata", m)?;
        }
        if !self.filename().is_empty() {
            map.serialize_entry("filename", self.filename())?;
        }
        if !self.media_type().is_empty() {
            map.serialize_entry("mediaType", self.media_type())?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Part {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Wire {
            text: Option<String>,
            raw: Option<String>,
            url: Option<String>,
            #[serde(default, deserialize_with = "present_value")]
            data: Option<Value>,
            metadata: Option<Struct>,
            #[serde(default)]
            filename: String,
            #[serde(default, alias = "media_type")]
            media_type: String,
            #[serde(default, rename = "mediaType")]
            media_type_camel: Option<String>,
        }
        let w = Wire::deserialize(d)?;
        let mut members = Vec::with_capacity(1);
        if let Some(t) = w.text {
            members.push(PartContent::Text(t.into()));
        }
        if let Some(r) = w.raw {
            members.push(PartContent::Raw(
                base64_bytes::decode(&r).map_err(|e| de::Error::custom(format!("raw: {e}")))?.into(),
            ));
        }
        if let Some(u) = w.url {
            members.push(PartContent::Url(u));
        }
        if let Some(v) = w.data {
            members.push(PartContent::Data(Arc::new(v)));
        }
        if members.len() != 1 {
            return Err(de::Error::custom(format!(
                "a part must have exactly one of text, raw, url, data (found {})",
                members.len()
            )));
        }
        let content = members.pop().ok_or_else(|| de::Error::custom("empty part"))?;
        let mut part = Part { content, metadata: w.metadata.map(Box::new), names: None };
        part.set_names(Some(w.filename), Some(w.media_type_camel.unwrap_or(w.media_type)));
        Ok(part)
    }
}

/// Distinguishes `"data": null` (present, a JSON null) from a missing `data`.
fn present_value<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// One communication turn between client and agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    #[serde(default, alias = "message_id")]
    pub message_id: String,
    #[serde(default, alias = "context_id", skip_serializing_if = "String::is_empty")]
    pub context_id: String,
    #[serde(default, alias = "task_id", skip_serializing_if = "String::is_empty")]
    pub task_id: String,
    #[serde(default)]
    pub role: Role,
    #[serde(default, deserialize_with = "super::bounds::bounded_parts")]
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Box<Struct>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    #[serde(default, alias = "reference_task_ids", skip_serializing_if = "Vec::is_empty")]
    pub reference_task_ids: Vec<String>,
}

impl Message {
    pub fn new(role: Role, parts: Vec<Part>) -> Self {
        Self {
            message_id: uuid::Uuid::new_v4().to_string(),
            context_id: String::new(),
            task_id: String::new(),
            role,
            parts,
            metadata: None,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        }
    }

    pub fn agent_text(text: impl Into<String>) -> Self {
        Self::new(Role::Agent, vec![Part::text(text)])
    }

    pub fn user_text(text: impl Into<String>) -> Self {
        Self::new(Role::User, vec![Part::text(text)])
    }

    /// All text parts joined by newlines.
    pub fn text(&self) -> String {
        self.parts.iter().filter_map(Part::as_text).collect::<Vec<_>>().join("\n")
    }
}

/// An output of a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    #[serde(default, alias = "artifact_id")]
    pub artifact_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default, deserialize_with = "super::bounds::bounded_parts")]
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Box<Struct>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

impl Artifact {
    pub fn new(parts: Vec<Part>) -> Self {
        Self {
            artifact_id: uuid::Uuid::new_v4().to_string(),
            name: String::new(),
            description: String::new(),
            parts,
            metadata: None,
            extensions: Vec::new(),
        }
    }

    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.artifact_id = id.into();
        self
    }

    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

/// A task's state at a point in time.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TaskStatus {
    #[serde(default)]
    pub state: TaskState,
    /// Boxed: most statuses carry none, and a status sits in every task and status event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Box<Message>>,
    #[serde(default, with = "opt_timestamp", skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<DateTime<Utc>>,
}

impl TaskStatus {
    pub fn new(state: TaskState, at: DateTime<Utc>) -> Self {
        Self { state, message: None, timestamp: Some(at) }
    }
}

/// The unit of work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub id: String,
    #[serde(default, alias = "context_id", skip_serializing_if = "String::is_empty")]
    pub context_id: String,
    pub status: TaskStatus,
    /// `None` leaves the field out entirely (ListTasks without `includeArtifacts`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<Vec<Artifact>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Box<Struct>>,
}

/// A change of a task's status, as streamed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    #[serde(default, alias = "task_id")]
    pub task_id: String,
    #[serde(default, alias = "context_id")]
    pub context_id: String,
    #[serde(default)]
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

/// A new or updated artifact, as streamed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    #[serde(default, alias = "task_id")]
    pub task_id: String,
    #[serde(default, alias = "context_id")]
    pub context_id: String,
    pub artifact: Artifact,
    #[serde(default, skip_serializing_if = "is_false")]
    pub append: bool,
    #[serde(default, alias = "last_chunk", skip_serializing_if = "is_false")]
    pub last_chunk: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Struct>,
}

/// `SendMessageResponse`: a one-of of `task` and `message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SendMessageResponse {
    Task(Task),
    Message(Message),
}

/// `StreamResponse`: exactly one of `task`, `message`, `statusUpdate`, `artifactUpdate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamResponse {
    Task(Task),
    Message(Message),
    #[serde(alias = "status_update")]
    StatusUpdate(TaskStatusUpdateEvent),
    #[serde(alias = "artifact_update")]
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

impl StreamResponse {
    /// The state this event moves its task to, if it is a status event or a task snapshot.
    pub fn state(&self) -> Option<TaskState> {
        match self {
            Self::Task(t) => Some(t.status.state),
            Self::StatusUpdate(u) => Some(u.status.state),
            _ => None,
        }
    }

    /// The event puts its task in a terminal or interrupted state: a stream of the turn ends here.
    pub fn ends_turn(&self) -> bool {
        self.state().is_some_and(|s| s.ends_turn())
    }

    pub fn task_id(&self) -> &str {
        match self {
            Self::Task(t) => &t.id,
            Self::Message(m) => &m.task_id,
            Self::StatusUpdate(u) => &u.task_id,
            Self::ArtifactUpdate(u) => &u.task_id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_boxes_its_names_only_when_it_has_some() {
        assert!(std::mem::size_of::<Part>() <= 56, "{}", std::mem::size_of::<Part>());
        let plain: Part = serde_json::from_str(r#"{"text": "x", "filename": "", "mediaType": ""}"#).unwrap();
        assert!(plain.names.is_none());
        assert_eq!(serde_json::to_string(&plain).unwrap(), r#"{"text":"x"}"#);
        let named: Part = serde_json::from_str(r#"{"raw": "AAE=", "filename": "f.bin", "media_type": "a/b"}"#).unwrap();
        assert_eq!((named.filename(), named.media_type()), ("f.bin", "a/b"));
        assert_eq!(serde_json::to_string(&named).unwrap(), r#"{"raw":"AAE=","filename":"f.bin","mediaType":"a/b"}"#);
        let cleared = named.with_filename("").with_media_type("");
        assert!(cleared.names.is_none());
        let typed = Part::url("https://x").with_media_type("text/plain");
        assert_eq!((typed.filename(), typed.media_type()), ("", "text/plain"));
    }
}
