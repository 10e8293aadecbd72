//! The JSON form of the 0.3 proto (`a2a.v1` as 0.3 defined it), which the 0.3 HTTP+JSON binding
//! speaks: message parts under `content`, file parts as `{"file": {"fileWithUri" | "fileWithBytes",
//! "mimeType", "name"}}`, data parts as `{"data": {"data": {...}}}`, `TASK_STATE_CANCELLED`, `final`
//! on status updates, push configs named `tasks/{id}/pushNotificationConfigs/{configId}`, and a
//! `blocking` that is false when absent (proto3). Conversions to and from the 1.0 model.
//!
//! Request bodies are read the way ProtoJSON parsers read them: every field by its JSON name
//! (`pushNotificationConfig`) or by its proto name (`push_notification_config`); [`json_names`]
//! settles that once for the whole body. `fileWithBytes` is read in either encoding 0.3 clients
//! send: once (ProtoJSON clients such as @a2a-js/sdk) or twice (a2a-sdk 0.3 for Python encodes its
//! base64 text again), and written as ProtoJSON writes bytes (base64, once); see
//! `docs/adr/0001-v03-rest-file-bytes.md`.

use base64::Engine as _;
use serde_json::{json, Map, Value};

use crate::error::{A2aError, Result};
use crate::types::serde_helpers::base64_bytes;
use crate::types::*;
use crate::v03;

// ---------------------------------------------------------------------------------------------
// Field names: JSON names and proto names
// ---------------------------------------------------------------------------------------------

/// A 0.3 HTTP+JSON request body with every field under its JSON name: ProtoJSON parsers accept a
/// field under its proto name too (`push_notification_config` for `pushNotificationConfig`), and
/// 0.3 clients send either (the 0.3 TCK's REST client sends proto names). Done once here, so that
/// no reader after it looks for two spellings. Free-form `google.protobuf.Struct` values (every
/// `metadata`, a data part's `data`) are the sender's own and stay as sent. A field given under both
/// names is refused, naming it.
pub fn json_names(body: Map<String, Value>) -> Result<Map<String, Value>> {
    rename_object(body, "", "")
}

/// The JSON name protoc derives from a proto field name: each `_` dropped and the letter after it
/// upper-cased.
fn json_name(proto: &str) -> String {
    let mut out = String::with_capacity(proto.len());
    let mut upper = false;
    for c in proto.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// `object` (the value of `key`, at `path`) with its fields renamed, recursively.
fn rename_object(object: Map<String, Value>, key: &str, path: &str) -> Result<Map<String, Value>> {
    let mut out = Map::with_capacity(object.len());
    for (name, value) in object {
        let renamed = if name.contains('_') { json_name(&name) } else { name.clone() };
        let at = if path.is_empty() { renamed.clone() } else { format!("{path}.{renamed}") };
        if out.contains_key(&renamed) {
            return Err(A2aError::invalid_field(
                &at,
                format!("is given twice (as {renamed:?} and as its proto name); send one"),
            ));
        }
        // A Struct's keys are data, not field names: `metadata`, and the `data` of a DataPart
        // (`{"data": {"data": {...}}}`).
        let free = renamed == "metadata" || (renamed == "data" && key == "data");
        let value = if free { value } else { rename_value(value, &renamed, &at)? };
        out.insert(renamed, value);
    }
    Ok(out)
}

fn rename_value(value: Value, key: &str, path: &str) -> Result<Value> {
    Ok(match value {
        Value::Object(object) => Value::Object(rename_object(object, key, path)?),
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .enumerate()
                .map(|(i, item)| rename_value(item, key, &format!("{path}[{i}]")))
                .collect::<Result<_>>()?,
        ),
        scalar => scalar,
    })
}

// ---------------------------------------------------------------------------------------------
// 0.3 proto JSON -> 1.0
// ---------------------------------------------------------------------------------------------

pub fn send_in(mut body: Map<String, Value>) -> Result<SendMessageRequest> {
    let message = body.remove("message").or_else(|| body.remove("request")).unwrap_or(Value::Null);
    let mut out = Map::new();
    out.insert("message".into(), message_in(message)?);
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

fn message_in(message: Value) -> Result<Value> {
    let Value::Object(mut m) = message else { return Ok(message) };
    if let Some(Value::Array(parts)) = m.remove("content") {
        let parts = parts.into_iter().enumerate().map(|(i, p)| part_in(p, i)).collect::<Result<_>>()?;
        m.insert("parts".into(), Value::Array(parts));
    }
    Ok(Value::Object(m))
}

fn part_in(part: Value, index: usize) -> Result<Value> {
    let Value::Object(mut p) = part else { return Ok(part) };
    if let Some(Value::Object(mut file)) = p.remove("file") {
        if let Some(uri) = file.remove("fileWithUri") {
            p.insert("url".into(), uri);
        }
        match file.remove("fileWithBytes") {
            Some(Value::String(b)) => {
                let raw = file_bytes_in(&b).ok_or_else(|| {
                    A2aError::invalid_field(&format!("message.content[{index}].file.fileWithBytes"), "is not base64")
                })?;
                p.insert("raw".into(), Value::String(raw));
            }
            Some(other) => {
                p.insert("raw".into(), other); // not a string: the 1.0 decoder names it
            }
            None => {}
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
    Ok(Value::Object(p))
}

/// The base64 of a file part's bytes (the 1.0 `raw`) from the `fileWithBytes` a 0.3 client sent:
/// the bytes' base64 (ProtoJSON), or the base64 of that base64 text (a2a-sdk 0.3 for Python, which
/// encodes its already-encoded string again). It is taken for the second only when the once-decoded
/// bytes are themselves canonical base64 (standard alphabet, padded, re-encoding to the same
/// text), which bytes encoded once rarely are; see `docs/adr/0001-v03-rest-file-bytes.md` for the
/// ambiguity that remains. `None`: not base64 at all.
fn file_bytes_in(text: &str) -> Option<String> {
    let once = base64_bytes::decode(text).ok()?;
    match std::str::from_utf8(&once) {
        Ok(inner) if is_canonical_base64(inner) => Some(inner.to_string()),
        _ => Some(text.trim().to_string()),
    }
}

fn is_canonical_base64(text: &str) -> bool {
    let standard = base64::engine::general_purpose::STANDARD;
    !text.is_empty() && standard.decode(text).is_ok_and(|bytes| standard.encode(bytes) == text)
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
    if let Some(raw) = p.remove("raw") {
        // The 1.0 `raw` is the bytes' base64 already: ProtoJSON's `bytes`, once.
        file.insert("fileWithBytes".into(), raw);
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
        assert_eq!(req.message.parts[1].filename(), "a.txt");
        assert_eq!(req.message.parts[2].content, PartContent::Data(std::sync::Arc::new(json!({"k": 1}))));
        let out = message_out(&req.message);
        // ProtoJSON: base64 of the bytes, once.
        assert_eq!(out["content"][1]["file"]["fileWithBytes"], "dGNr");
        assert_eq!(out["content"][2]["data"]["data"]["k"], 1);
        assert_eq!(out["role"], "ROLE_USER");
    }

    #[test]
    fn file_bytes_once_or_twice() {
        let b64 = base64::engine::general_purpose::STANDARD;
        // Once: bytes that are not base64 text themselves, in any ProtoJSON spelling.
        for sent in ["AAH+/w==", "AAH-_w", "AAH+/w"] {
            assert_eq!(file_bytes_in(sent).as_deref(), Some(sent), "{sent}");
        }
        // Twice (a2a-sdk 0.3): the inner base64 text is the bytes' base64.
        let inner = b64.encode(b"\x00\x01\xfe\xff");
        assert_eq!(file_bytes_in(&b64.encode(&inner)), Some(inner));
        assert_eq!(file_bytes_in("ZEdOcg=="), Some("dGNr".to_string()));
        // The inner text must be canonical base64: "abc" and "ab==" (non-zero trailing bits) are not.
        for text in ["abc", "ab==", "dGNr\n"] {
            let sent = b64.encode(text);
            assert_eq!(file_bytes_in(&sent), Some(sent.clone()), "{text:?}");
        }
        assert_eq!(file_bytes_in(""), Some(String::new()));
        assert_eq!(file_bytes_in("not base64!"), None);
    }

    #[test]
    fn proto_names_are_json_names_except_in_structs() {
        let Value::Object(body) = json!({
            "config_id": "c",
            "config": {"push_notification_config": {"url": "u", "authentication": {"schemes": ["x"]}}},
            "message": {"message_id": "m", "reference_task_ids": ["t"], "metadata": {"a_b": {"c_d": 1}},
                "content": [{"data": {"data": {"x_y": [{"z_w": 1}]}}, "metadata": {"p_q": 1}},
                            {"file": {"file_with_uri": "u", "mime_type": "t"}}]},
        }) else {
            unreachable!()
        };
        let out = Value::Object(json_names(body).unwrap());
        assert_eq!(
            out,
            json!({
                "configId": "c",
                "config": {"pushNotificationConfig": {"url": "u", "authentication": {"schemes": ["x"]}}},
                "message": {"messageId": "m", "referenceTaskIds": ["t"], "metadata": {"a_b": {"c_d": 1}},
                    "content": [{"data": {"data": {"x_y": [{"z_w": 1}]}}, "metadata": {"p_q": 1}},
                                {"file": {"fileWithUri": "u", "mimeType": "t"}}]},
            })
        );
        let Value::Object(twice) =
            json!({"message": {"content": [{"text": "a"}, {"mime_type": "a", "mimeType": "b"}]}})
        else {
            unreachable!()
        };
        let err = json_names(twice).unwrap_err();
        assert_eq!(err.metadata.get("field").map(String::as_str), Some("message.content[1].mimeType"), "{err:?}");
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
