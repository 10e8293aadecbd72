//! The direct reader and writer against `prost_reflect`'s `DynamicMessage` (the reference they
//! replace): the same messages from the same JSON, the same JSON from the same bytes.

use prost::Message as _;
use prost_reflect::{DeserializeOptions, DynamicMessage, MessageDescriptor};
use serde_json::{json, Value};

use super::{read, write};

fn descriptor(name: &str) -> MessageDescriptor {
    // The build's descriptor set (as `wire::DESCRIPTORS`, read here so this layer stays below it).
    prost_reflect::DescriptorPool::decode(&include_bytes!(concat!(env!("OUT_DIR"), "/a2a.fds"))[..])
        .expect("descriptors")
        .get_message_by_name(name)
        .expect("message")
}

fn reference(desc: &MessageDescriptor, json: &Value) -> DynamicMessage {
    let options = DeserializeOptions::new().deny_unknown_fields(false);
    DynamicMessage::deserialize_with_options(desc.clone(), json.clone(), &options).expect("reference deserializes")
}

fn read_json(desc: &MessageDescriptor, bytes: &[u8]) -> Value {
    let mut text = String::new();
    read::message(desc, bytes, &mut text).expect("reads");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// Writes `json` both ways and reads both encodings both ways: all four agree.
fn agrees(name: &str, json: Value) {
    let desc = descriptor(name);
    let expected = reference(&desc, &json);
    let bytes = write::message(&desc, &json).expect("writes");
    let decoded = DynamicMessage::decode(desc.clone(), bytes.as_slice()).expect("the written bytes decode");
    let expected_json = serde_json::to_value(&expected).expect("reference to JSON");
    assert_eq!(serde_json::to_value(&decoded).expect("to JSON"), expected_json, "{name}: written");
    // The same fields (re-encoded: explicit defaults fall away; a Struct's entries may come in
    // another order, so the lengths are compared).
    assert_eq!(decoded.encoded_len(), expected.encoded_len(), "{name}: written from {json}");
    assert_eq!(read_json(&desc, &expected.encode_to_vec()), expected_json, "{name}: read");
    assert_eq!(read_json(&desc, &bytes), expected_json, "{name}: read back");
}

#[test]
fn requests_agree_with_the_dynamic_reference() {
    agrees(
        "lf.a2a.v1.SendMessageRequest",
        json!({
            "tenant": "t",
            "message": {
                "messageId": "m-1", "contextId": "c", "taskId": "", "role": "ROLE_USER",
                "parts": [
                    {"text": "héllo \"quoted\"\n\t\u{1}", "metadata": {"k": "v"}},
                    {"raw": "AAEC/w==", "mediaType": "application/octet-stream", "filename": "f.bin"},
                    {"url": "https://example.com/x", "mediaType": "text/plain"},
                    {"data": {"n": 1.5, "i": 3, "neg": -2, "b": true, "z": null, "s": "x",
                              "list": [1, "two", [3], {"four": 4}, null, false], "empty": {}, "nolist": []}},
                    {"data": [1, 2]},
                    {"data": "just a string"},
                    {"data": null}
                ],
                "extensions": ["https://e/1", "https://e/2"],
                "referenceTaskIds": ["a", "b"],
                "metadata": {"deep": {"deeper": {"deepest": [[[]]]}}}
            },
            "configuration": {
                "acceptedOutputModes": ["text/plain"],
                "historyLength": 0,
                "returnImmediately": true,
                "taskPushNotificationConfig": {"url": "https://hook", "token": "tok", "authentication": {"scheme": "Bearer", "credentials": "c"}}
            },
            "metadata": {}
        }),
    );
    agrees(
        "lf.a2a.v1.ListTasksRequest",
        json!({"contextId": "c", "status": "TASK_STATE_WORKING", "pageSize": 50, "pageToken": "p", "historyLength": 2,
               "statusTimestampAfter": "2026-11-28T04:19:52.123456Z", "includeArtifacts": true}),
    );
    agrees("lf.a2a.v1.ListTasksRequest", json!({"pageSize": "7", "statusTimestampAfter": "2026-11-28T05:19:52+01:00"}));
    agrees("lf.a2a.v1.GetTaskRequest", json!({"id": "t-1", "historyLength": 3}));
    agrees("lf.a2a.v1.CancelTaskRequest", json!({}));
}

#[test]
fn answers_agree_with_the_dynamic_reference() {
    let message =
        json!({"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "hi"}], "taskId": "t", "contextId": "c"});
    let task = json!({
        "id": "t", "contextId": "c",
        "status": {"state": "TASK_STATE_COMPLETED", "message": message, "timestamp": "2026-11-28T04:19:52Z"},
        "artifacts": [{"artifactId": "a", "name": "n", "parts": [{"text": "x"}], "metadata": {"m": 1}, "extensions": ["e"]}],
        "history": [message, message],
        "metadata": {"owner": null, "count": 2}
    });
    agrees("lf.a2a.v1.Task", task.clone());
    agrees("lf.a2a.v1.SendMessageResponse", json!({"task": task}));
    agrees("lf.a2a.v1.SendMessageResponse", json!({"message": message}));
    agrees(
        "lf.a2a.v1.ListTasksResponse",
        json!({"tasks": [task, task], "nextPageToken": "", "pageSize": 2, "totalSize": 9}),
    );
    agrees(
        "lf.a2a.v1.StreamResponse",
        json!({"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}, "metadata": {}}}),
    );
    agrees(
        "lf.a2a.v1.StreamResponse",
        json!({"artifactUpdate": {"taskId": "t", "contextId": "c", "artifact": {"artifactId": "a", "parts": [{"text": "y"}]},
                                  "append": true, "lastChunk": false}}),
    );
    agrees(
        "lf.a2a.v1.AgentCard",
        json!({
            "name": "n", "description": "d", "version": "1",
            "supportedInterfaces": [{"url": "http://127.0.0.1/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {"streaming": true, "pushNotifications": false, "extensions": [{"uri": "u", "required": true, "params": {"p": [1]}}]},
            "securitySchemes": {
                "bearer": {"httpAuthSecurityScheme": {"scheme": "bearer", "bearerFormat": "JWT"}},
                "oauth": {"oauth2SecurityScheme": {"flows": {"clientCredentials": {"tokenUrl": "https://t", "scopes": {"read": "Read", "write": "Write"}}}}}
            },
            "securityRequirements": [{"schemes": {"bearer": {"list": ["a", "b"]}, "oauth": {"list": []}}}],
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "s", "name": "s", "description": "d", "tags": ["t"], "examples": ["e"]}]
        }),
    );
    agrees("google.protobuf.Empty", json!({}));
}

/// The typed answers serialize straight into the same bytes their JSON value gives.
#[test]
fn a_typed_value_writes_what_its_json_writes() {
    let task: a2a_protocol::types::Task = serde_json::from_value(json!({
        "id": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-11-28T04:19:52.5Z"},
        "history": [{"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}, {"data": {"a": [1, null]}}]}],
        "metadata": {"x": "y"}
    }))
    .expect("a task");
    let desc = descriptor("lf.a2a.v1.Task");
    let typed = write::message(&desc, &task).expect("typed");
    let via_json = write::message(&desc, &serde_json::to_value(&task).expect("json")).expect("json");
    assert_eq!(
        DynamicMessage::decode(desc.clone(), typed.as_slice()).expect("decodes"),
        DynamicMessage::decode(desc, via_json.as_slice()).expect("decodes")
    );
}

#[test]
fn wire_details_are_read_as_protobuf_says() {
    let desc = descriptor("lf.a2a.v1.Part");
    // text = "a", then url = "b": the oneof's last member set wins; a field without presence at its
    // default (filename = "") is left out; an unknown field (99) is skipped.
    let bytes = [0x0a, 1, b'a', 0x1a, 1, b'b', 0x32, 0, 0x98, 0x06, 1];
    assert_eq!(read_json(&desc, &bytes), json!({"url": "b"}));
    // A repeated string interleaved with other fields keeps its order.
    let desc = descriptor("lf.a2a.v1.SendMessageConfiguration");
    let bytes = [0x0a, 1, b'x', 0x20, 1, 0x0a, 1, b'y'];
    assert_eq!(read_json(&desc, &bytes), json!({"acceptedOutputModes": ["x", "y"], "returnImmediately": true}));
    // An explicitly present default keeps presence for optional fields.
    let desc = descriptor("lf.a2a.v1.GetTaskRequest");
    let present = write::message(&desc, &json!({"historyLength": 0})).expect("writes");
    assert_eq!(read_json(&desc, &present), json!({"historyLength": 0}));
}

#[test]
fn broken_input_is_an_error_not_a_panic() {
    let desc = descriptor("lf.a2a.v1.SendMessageRequest");
    let mut out = String::new();
    for bytes in [&[0x12, 5, 1][..], &[0x12][..], &[0x0f][..], &[0x12, 2, 0x0a, 0x80][..], &[0x0a, 1, 0xff][..]] {
        assert!(read::message(&desc, bytes, &mut out).is_err(), "{bytes:?}");
    }
    // A string field given a number, an unknown enum name, bad base64, a bad timestamp.
    for (name, json) in [
        ("lf.a2a.v1.GetTaskRequest", json!({"id": 5})),
        ("lf.a2a.v1.Message", json!({"role": "ROLE_NOBODY"})),
        ("lf.a2a.v1.Part", json!({"raw": "***"})),
        ("lf.a2a.v1.TaskStatus", json!({"timestamp": "yesterday"})),
        ("lf.a2a.v1.GetTaskRequest", json!({"historyLength": 1e12})),
    ] {
        assert!(write::message(&descriptor(name), &json).is_err(), "{name} {json}");
    }
}
