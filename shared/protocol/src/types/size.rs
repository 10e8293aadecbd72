//! What protocol values take in memory, approximately: content bytes plus a fixed overhead per
//! object. The memory store's byte budget is made of these, and the engine tells the store with them
//! how much an update may add before the store applies it.

use serde_json::Value;

use super::{Artifact, Message, Part, PartContent, StreamResponse, Struct, Task, TaskPushNotificationConfig};

fn json_size(v: &Value) -> usize {
    16 + match v {
        Value::String(s) => s.len(),
        Value::Array(items) => items.iter().map(json_size).sum(),
        Value::Object(map) => map.iter().map(|(k, v)| k.len() + json_size(v)).sum(),
        _ => 0,
    }
}

fn struct_size(m: Option<&Struct>) -> usize {
    m.map_or(0, |m| m.iter().map(|(k, v)| k.len() + json_size(v)).sum())
}

fn part_size(p: &Part) -> usize {
    96 + p.filename().len()
        + p.media_type().len()
        + struct_size(p.metadata.as_deref())
        + match &p.content {
            PartContent::Text(t) => t.len(),
            PartContent::Raw(b) => b.len(),
            PartContent::Url(u) => u.len(),
            PartContent::Data(v) => json_size(v),
        }
}

pub fn parts_size(parts: &[Part]) -> usize {
    parts.iter().map(part_size).sum()
}

pub fn message_size(m: &Message) -> usize {
    200 + parts_size(&m.parts) + struct_size(m.metadata.as_deref())
}

pub fn artifact_size(a: &Artifact) -> usize {
    200 + a.name.len() + a.description.len() + parts_size(&a.parts) + struct_size(a.metadata.as_deref())
}

pub fn task_size(t: &Task) -> usize {
    let history: usize = t.history.iter().map(message_size).sum();
    let artifacts: usize = t.artifacts.iter().flatten().map(artifact_size).sum();
    512 + t.id.len() + t.context_id.len() + history + artifacts + struct_size(t.metadata.as_deref())
}

pub fn config_size(c: &TaskPushNotificationConfig) -> usize {
    256 + c.url.len() + c.id.len() + c.token.len() + c.authentication.as_ref().map_or(0, |a| a.credentials.len())
}

/// An estimate of the encoded (JSON) size of a value of `size`: raw bytes grow by a third as
/// base64, so the estimate is high for text and right for bytes; the answers budget corrects it to
/// the real size once encoded.
pub fn encoded(size: usize) -> usize {
    size.saturating_add(size / 3)
}

/// About what a stream event takes encoded, contents included (see [`encoded`]).
pub fn answer_size(e: &StreamResponse) -> usize {
    encoded(match e {
        StreamResponse::ArtifactUpdate(u) => artifact_size(&u.artifact),
        StreamResponse::StatusUpdate(u) => 256 + u.status.message.as_deref().map_or(0, message_size),
        StreamResponse::Message(m) => message_size(m),
        StreamResponse::Task(t) => task_size(t),
    })
}

/// What an event adds to the store's byte total: its own structure and parts (the part contents
/// are shared with the task), except a snapshot, which holds a whole task.
pub fn event_size(e: &StreamResponse) -> usize {
    64 + match e {
        StreamResponse::ArtifactUpdate(u) => 96 * u.artifact.parts.len(),
        StreamResponse::StatusUpdate(u) => u.status.message.as_ref().map_or(0, |m| 96 * m.parts.len()),
        StreamResponse::Message(m) => 96 * m.parts.len(),
        StreamResponse::Task(t) => task_size(t),
    }
}
