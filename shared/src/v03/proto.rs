//! The JSON form of the 0.3 proto (`a2a.v1` as 0.3 defined it), which the 0.3 HTTP+JSON binding
//! speaks: message parts under `content`, file parts as `{"file": {"fileWithUri" | "fileWithBytes",
//! "mimeType", "name"}}`, data parts as `{"data": {"data": {...}}}`, `TASK_STATE_CANCELLED`, `final`
//! on status updates, push configs named `tasks/{id}/pushNotificationConfigs/{configId}`, and a
//! `blocking` that is false when absent (proto3). Conversions to and from the 1.0 model.
//!
//! The 0.3 reference sends `fileWithBytes` as the base64 text of the part's base64 string (its
//! client encodes the already-encoded string again); this module reads and writes it that way.

use base64::Engine as _;
use serde_json::{json, Map, Value};

use crate::error::{A2aError, Result};
use crate::types::*;
use crate::v03;

// ---------------------------------------------------------------------------------------------
// 0.3 proto JSON -> 1.0
// ---------------------------------------------------------------------------------------------

pub fn send_in(mut body: Map<String, Value>) -> Result<SendMessageRequest> {
    let message = body.remove("message").or_else(|| body.remove("request")).unwrap_or(Value::Null);
    let mut out = Map::new();
    out.insert("message".into(), message_in(message));
    if let Some(Value::Object(mut c)) = body.remove("configuration") {
        let mut config = Map::new();
        if let Some(modes) = c.remove("acceptedOutputModes") {
            config.insert("acceptedOutputModes".into(), modes);
        }
        if let Some(h) = c.remove("historyLength").filter(|h| h.as_i64() != Some(0)) {
            config.insert("historyLength".into(), h);
        }
        // proto3: an absent `blocking` is false.
        let blocking = c.remove("blocking").and_then(|b| b.as_bool()).unwrap_or(false);
        config.insert("returnImmediately".into(), Value::Bool(!blocking));
        if let Some(push) = c.remove("pushNotification") {
            let push: v03::PushNotificationConfig = decode(push, "configuration.pushNotification")?;
            let push =
                serde_json::to_value(push.into_v1(String::new())).map_err(|e| A2aError::internal(e.to_string()))?;
            config.insert("taskPushNotificationConfig".into(), push);
        }
        out.insert("configuration".into(), Value::Object(config));
    } else {
        out.insert("configuration".into(), json!({"returnImmediately": true}));
    }
    if let Some(metadata) = body.remove("metadata") {
        out.insert("metadata".into(), metadata);
    }
    let mut req: SendMessageRequest = decode(Value::Object(out), "")?;
    // A config registered along with a 0.3 message gets 0.3 payloads.
    if let Some(push) = req.configuration.as_mut().and_then(|c| c.task_push_notification_config.as_mut()) {
        push.v03_payloads = true;
    }
    Ok(req)
}

fn message_in(message: Value) -> Value {
    let Value::Object(mut m) = message else { return message };
    if let Some(Value::Array(parts)) = m.remove("content") {
        m.insert("parts".into(), Value::Array(parts.into_iter().map(part_in).collect()));
    }
    Value::Object(m)
}

fn part_in(part: Value) -> Value {
    let Value::Object(mut p) = part else { return part };
    if let Some(Value::Object(mut file)) = p.remove("file") {
        if let Some(uri) = file.remove("fileWithUri") {
            p.insert("url".into(), uri);
        }
        if let Some(Value::String(b)) = file.remove("fileWithBytes") {
            // The base64 text of the base64 string (see the module doc).
            let inner = base64::engine::general_purpose::STANDARD.decode(b.as_bytes()).ok();
            let raw = inner.and_then(|i| String::from_utf8(i).ok()).unwrap_or(b);
            p.insert("raw".into(), Value::String(raw));
        }
        if let Some(m) = file.remove("mimeType") {
            p.insert("mediaType".into(), m);
        }
        if let Some(n) = file.remove("name") {
            p.insert("filename".into(), n);
        }
    }
    if let Some(Value::Object(mut data)) = p.remove("data") {
        p.insert("data".into(), data.remove("data").unwrap_or(Value::Object(data)));
    }
    Value::Object(p)
}

// ---------------------------------------------------------------------------------------------
// 1.0 -> 0.3 proto JSON
// ---------------------------------------------------------------------------------------------

fn to_value(x: &impl serde::Serialize) -> Value {
    serde_json::to_value(x).unwrap_or(Value::Null)
}

pub fn message_out(m: &Message) -> Value {
    let mut v = to_value(m);
    if let Some(obj) = v.as_object_mut() {
        if let Some(Value::Array(parts)) = obj.remove("parts") {
            obj.insert("content".into(), Value::Array(parts.into_iter().map(part_out).collect()));
        }
        obj.remove("referenceTaskIds");
    }
    v
}

fn part_out(part: Value) -> Value {
    let Value::Object(mut p) = part else { return part };
    let filename = p.remove("filename");
    let media_type = p.remove("mediaType");
    let mut file = Map::new();
    if let Some(url) = p.remove("url") {
        file.insert("fileWithUri".into(), url);
    }
    if let Some(Value::String(raw)) = p.remove("raw") {
        file.insert("fileWithBytes".into(), Value::String(base64::engine::general_purpose::STANDARD.encode(raw)));
    }
    if !file.is_empty() {
        if let Some(m) = media_type {
            file.insert("mimeType".into(), m);
        }
        if let Some(n) = filename {
            file.insert("name".into(), n);
        }
        p.insert("file".into(), Value::Object(file));
    } else if let Some(data) = p.remove("data") {
        let data = if data.is_object() { data } else { json!({"value": data}) };
        p.insert("data".into(), json!({"data": data}));
    }
    Value::Object(p)
}

fn status_out(s: &TaskStatus) -> Value {
    let mut out = Map::new();
    let state = if s.state == TaskState::Canceled { "TASK_STATE_CANCELLED" } else { s.state.as_str() };
    out.insert("state".into(), Value::String(state.into()));
    if let Some(m) = &s.message {
        out.insert("message".into(), message_out(m));
    }
    if let Some(t) = &s.timestamp {
        out.insert("timestamp".into(), Value::String(crate::types::serde_helpers::timestamp::format(t)));
    }
    Value::Object(out)
}

fn artifact_out(a: &Artifact) -> Value {
    let mut v = to_value(a);
    if let Some(Value::Array(parts)) = v.get_mut("parts").map(Value::take) {
        v["parts"] = Value::Array(parts.into_iter().map(part_out).collect());
    }
    v
}

pub fn task_out(t: &Task) -> Value {
    let mut out = Map::new();
    out.insert("id".into(), Value::String(t.id.clone()));
    out.insert("contextId".into(), Value::String(t.context_id.clone()));
    out.insert("status".into(), status_out(&t.status));
    if let Some(artifacts) = t.artifacts.as_ref().filter(|a| !a.is_empty()) {
        out.insert("artifacts".into(), artifacts.iter().map(artifact_out).collect());
    }
    if !t.history.is_empty() {
        out.insert("history".into(), t.history.iter().map(message_out).collect());
    }
    if let Some(m) = &t.metadata {
        out.insert("metadata".into(), Value::Object(Struct::clone(m)));
    }
    Value::Object(out)
}

pub fn config_out(c: &TaskPushNotificationConfig) -> Value {
    let mut config = to_value(&v03::TaskPushNotificationConfig::from(c).push_notification_config);
    if config.get("id").is_none() {
        config["id"] = Value::String(c.id.clone());
    }
    json!({
        "name": format!("tasks/{}/pushNotificationConfigs/{}", c.task_id, c.id),
        "pushNotificationConfig": config,
    })
}

/// The card of `GET /v1/card`. 0.3 clients disagree on its form: the Python reference reads the
/// JSON-RPC card (security schemes tagged by `type`), the JavaScript SDK the 0.3 proto's JSON (one-of
/// members such as `apiKeySecurityScheme`). Each scheme carries both; each reader ignores the other.
pub fn card_out(card: &AgentCard) -> Value {
    let mut out = v03::card_to_wire(card);
    if let Some(Value::Object(schemes)) = out.get_mut("securitySchemes") {
        for (name, scheme) in schemes.iter_mut() {
            let Some(proto) = card.security_schemes.get(name).map(to_value) else { continue };
            if let (Value::Object(both), Value::Object(proto)) = (scheme, proto) {
                both.extend(proto);
            }
        }
    }
    out
}

/// A stream event in the 0.3 proto's `StreamResponse` JSON.
pub fn event_out(event: &StreamResponse) -> Value {
    match event {
        StreamResponse::Task(t) => json!({"task": task_out(t)}),
        StreamResponse::Message(m) => json!({"message": message_out(m)}),
        StreamResponse::StatusUpdate(u) => {
            let mut v = json!({
                "taskId": u.task_id,
                "contextId": u.context_id,
                "status": status_out(&u.status),
                "final": u.status.state.ends_turn(),
            });
            if let Some(m) = &u.metadata {
                v["metadata"] = Value::Object(m.clone());
            }
            json!({"statusUpdate": v})
        }
        StreamResponse::ArtifactUpdate(u) => {
            let mut v = json!({
                "taskId": u.task_id,
                "contextId": u.context_id,
                "artifact": artifact_out(&u.artifact),
                "append": u.append,
                "lastChunk": u.last_chunk,
            });
            if let Some(m) = &u.metadata {
                v["metadata"] = Value::Object(m.clone());
            }
            json!({"artifactUpdate": v})
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_payloads_round_trip() {
        // What the 0.3 reference client sends for a text, a file-with-bytes and a data part.
        let body = json!({
            "message": {"messageId": "m", "role": "ROLE_USER", "content": [
                {"text": "hi"},
                {"file": {"fileWithBytes": "ZEdOcg==", "mimeType": "text/plain", "name": "a.txt"}},
                {"data": {"data": {"k": 1}}}
            ]},
            "configuration": {"blocking": true, "acceptedOutputModes": ["text/plain"]}
        });
        let Value::Object(body) = body else { unreachable!() };
        let req = send_in(body).unwrap();
        assert!(!req.configuration.as_ref().unwrap().return_immediately);
        assert_eq!(req.message.parts[0].content, PartContent::Text("hi".into()));
        // "ZEdOcg==" is base64 of "dGNr", the base64 string of "tck" (see the module doc).
        assert_eq!(req.message.parts[1].content, PartContent::Raw(bytes::Bytes::from_static(b"tck")));
        assert_eq!(req.message.parts[1].filename, "a.txt");
        assert_eq!(req.message.parts[2].content, PartContent::Data(std::sync::Arc::new(json!({"k": 1}))));
        let out = message_out(&req.message);
        assert_eq!(out["content"][1]["file"]["fileWithBytes"], "ZEdOcg==");
        assert_eq!(out["content"][2]["data"]["data"]["k"], 1);
        assert_eq!(out["role"], "ROLE_USER");
    }

    #[test]
    fn no_configuration_is_non_blocking() {
        let Value::Object(body) =
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "content": [{"text": "x"}]}})
        else {
            unreachable!()
        };
        assert!(send_in(body).unwrap().configuration.unwrap().return_immediately);
    }

    #[test]
    fn events_carry_final_and_cancelled() {
        let ev = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus { state: TaskState::Canceled, message: None, timestamp: None },
            metadata: None,
        });
        let v = event_out(&ev);
        assert_eq!(v["statusUpdate"]["final"], true);
        assert_eq!(v["statusUpdate"]["status"]["state"], "TASK_STATE_CANCELLED");
    }
}
