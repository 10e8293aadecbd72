//! What conformance suites and 0.3 clients check beyond the basics: repeated messageIds (a retry is
//! answered with the first attempt's task; any other reuse is a new message), exact JSON-RPC ids and
//! the order of envelope checks, authentication before everything else, the 0.3 HTTP+JSON binding,
//! 0.3 stream errors as events, `X-A2A-Extensions`, 0.3 push config lookups, and the card served
//! without a version header.

use crate::harness;

use harness::*;
use serde_json::{json, Value};

fn send(message: Value) -> Value {
    json!({"message": message})
}

fn text_msg(id: &str, text: &str, task_id: Option<&str>) -> Value {
    let mut m = msg(id, text);
    if let Some(t) = task_id {
        m["taskId"] = json!(t);
    }
    m
}

fn task(v: &Value) -> &Value {
    &v["result"]["task"]
}

#[tokio::test]
async fn a_retry_gets_the_same_task_and_any_other_reuse_is_a_new_message() {
    let a = agent().await;
    // A retry (same request) gets the first attempt's task; the agent ran once.
    let first = a.rpc("SendMessage", send(text_msg("tck-complete-task-r", "once", None))).await;
    let again = a.rpc("SendMessage", send(text_msg("tck-complete-task-r", "once", None))).await;
    assert_eq!(task(&first)["id"], task(&again)["id"]);
    assert_eq!(task(&again)["history"].as_array().unwrap().len(), 2, "{again}");

    // The same messageId with other content: a new task, not the old one.
    let other = a.rpc("SendMessage", send(text_msg("tck-complete-task-r", "different", None))).await;
    assert_ne!(task(&other)["id"], task(&first)["id"], "{other}");
    assert_eq!(task(&other)["history"][0]["parts"][0]["text"], "different");

    // The same request again after its task moved on (canceled): a new task.
    let waiting = a.rpc("SendMessage", send(text_msg("tck-input-required-r", "go", None))).await;
    let waiting_id = task(&waiting)["id"].as_str().unwrap().to_string();
    let canceled = a.rpc("CancelTask", json!({"id": waiting_id})).await;
    assert_eq!(canceled["result"]["status"]["state"], "TASK_STATE_CANCELED");
    let fresh = a.rpc("SendMessage", send(text_msg("tck-input-required-r", "go", None))).await;
    let fresh_id = task(&fresh)["id"].as_str().unwrap().to_string();
    assert_ne!(fresh_id, waiting_id);
    assert_eq!(task(&fresh)["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    // ...and a retry of that one finds it (not the canceled one).
    let retry = a.rpc("SendMessage", send(text_msg("tck-input-required-r", "go", None))).await;
    assert_eq!(task(&retry)["id"], fresh_id.as_str());

    // A follow-up that reuses the opener's messageId with new content is a new turn...
    let turn = a.rpc("SendMessage", send(text_msg("tck-input-required-r", "more", Some(&fresh_id)))).await;
    assert_eq!(task(&turn)["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{turn}");
    let history = task(&turn)["history"].as_array().unwrap().len();
    assert_eq!(history, 4, "opener, question, follow-up, question: {turn}");
    // ...repeating it is a retry (nothing runs again)...
    let same = a.rpc("SendMessage", send(text_msg("tck-input-required-r", "more", Some(&fresh_id)))).await;
    assert_eq!(task(&same)["history"].as_array().unwrap().len(), history);
    // ...and a second follow-up with that id but other text is a turn of its own.
    let turn2 = a.rpc("SendMessage", send(text_msg("tck-input-required-r", "even more", Some(&fresh_id)))).await;
    assert_eq!(task(&turn2)["history"].as_array().unwrap().len(), history + 2, "{turn2}");
    let done = a.rpc("SendMessage", send(text_msg("tck-complete-task-r", "done", Some(&fresh_id)))).await;
    assert_eq!(task(&done)["status"]["state"], "TASK_STATE_COMPLETED", "{done}");

    // An inline push config that comes with a reused messageId is stored with its new task.
    let with_push = json!({"message": text_msg("tck-complete-task-r", "once", None),
        "configuration": {"taskPushNotificationConfig": {"url": "https://93.184.216.34/x"}}});
    let pushed = a.rpc("SendMessage", with_push).await;
    let pushed_id = task(&pushed)["id"].as_str().unwrap();
    assert_ne!(pushed_id, task(&first)["id"].as_str().unwrap());
    let configs = a.rpc("ListTaskPushNotificationConfigs", json!({"taskId": pushed_id})).await;
    assert_eq!(configs["result"]["configs"].as_array().unwrap().len(), 1, "{configs}");
}

#[tokio::test]
async fn jsonrpc_ids_come_back_exactly_and_a_missing_id_is_judged_last() {
    let a = agent().await;
    let ct = [("content-type", "application/json"), ("A2A-Version", "1.0")];
    let big =
        r#"{"jsonrpc":"2.0","id":1234567890123456789012345678901234567890,"method":"GetTask","params":{"id":"x"}}"#;
    let r = a.call("POST", "/", &ct, Some(big)).await;
    let text = String::from_utf8_lossy(&r.raw);
    assert!(text.contains(r#""id":1234567890123456789012345678901234567890"#), "{text}");
    // Without an id: the method, then the params, then the id itself (as the 0.3 reference does).
    let no_id = |method: &str, params: &str| format!(r#"{{"jsonrpc":"2.0","method":"{method}","params":{params}}}"#);
    let r = a.call("POST", "/", &ct, Some(&no_id("Nope", "{}"))).await;
    assert_eq!((r.body["error"]["code"].as_i64(), &r.body["id"]), (Some(-32601), &Value::Null));
    let r = a.call("POST", "/", &ct, Some(&no_id("GetTask", r#"{"id": 3}"#))).await;
    assert_eq!(r.body["error"]["code"], -32602, "{}", r.body);
    assert!(r.body["error"]["message"].as_str().unwrap().contains("params.id"), "{}", r.body);
    let r = a.call("POST", "/", &ct, Some(&no_id("GetTask", r#"{"id": "t"}"#))).await;
    assert_eq!(r.body["error"]["code"], -32602);
    assert!(r.body["error"]["message"].as_str().unwrap().starts_with("id:"), "{}", r.body);
    let r = a.call("POST", "/", &ct, Some(r#"{"jsonrpc":"2.0","id":true,"method":"GetTask"}"#)).await;
    assert_eq!(r.body["error"]["code"], -32600);
}

#[tokio::test]
async fn authentication_comes_before_every_other_check() {
    let a = agent_with(Setup { api_keys: Some("alice:ka"), ..Default::default() }).await;
    let bad_params = r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"nope":1}}}"#;
    let r = a.call("POST", "/", &[("content-type", "application/json")], Some(bad_params)).await;
    assert_eq!((r.status, r.body["error"]["code"].as_i64()), (401, Some(-32010)), "{}", r.body);
    assert!(r.headers.contains_key("www-authenticate"));
    let r = a.call("POST", "/", &[("content-type", "text/plain")], Some("garbage")).await;
    assert_eq!(r.status, 401);
    for (method, path) in [("GET", "/no/such/route"), ("POST", "/message:send"), ("DELETE", "/tasks")] {
        let r = a.call(method, path, &[("A2A-Version", "9.9")], Some("{oops")).await;
        assert_eq!(r.status, 401, "{method} {path}: {}", r.body);
        assert!(r.headers.contains_key("www-authenticate"));
    }
    // The extended card needs a key here; anonymous deployments serve it to everyone (below).
    let r = a.rpc("GetExtendedAgentCard", json!({})).await;
    assert_eq!(r["error"]["code"], -32010);
}

/// One request, one API key: the header twice (or folded into a list by a proxy) is refused on
/// every binding, whichever of the keys is valid.
#[tokio::test]
async fn a_duplicated_api_key_header_is_refused_on_every_binding() {
    let a = agent_with(Setup { api_keys: Some("alice:ka,bob:kb"), ..Default::default() }).await;
    let ct = ("content-type", "application/json");
    let rpc = |method: &str| json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"id": "t"}}).to_string();
    let (v1, v03) = (rpc("GetTask"), rpc("tasks/get"));
    // JSON-RPC 1.0 and 0.3, HTTP+JSON 1.0 and 0.3 (gRPC: tests/grpc.rs).
    let v1_headers = [ct, ("A2A-Version", "1.0")];
    let calls = [
        ("POST", "/", &v1_headers[..], Some(v1.as_str())),
        ("POST", "/", &[ct][..], Some(v03.as_str())),
        ("GET", "/tasks/t", &[("A2A-Version", "1.0")][..], None),
        ("GET", "/v1/tasks/t", &[][..], None),
    ];
    for (method, path, headers, body) in calls {
        for keys in [
            &[("X-API-Key", "ka"), ("X-API-Key", "kb")][..],
            &[("X-API-Key", "ka"), ("x-api-key", "ka")],
            &[("X-API-Key", "ka, kb")],
        ] {
            let all: Vec<(&str, &str)> = headers.iter().copied().chain(keys.iter().copied()).collect();
            let r = a.call(method, path, &all, body).await;
            assert_eq!(r.status, 401, "{method} {path} {keys:?}: {}", r.body);
            let message = r.body["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains("X-API-Key header must be sent once"), "{method} {path}: {}", r.body);
            assert!(r.headers.contains_key("www-authenticate"));
        }
        // One key is fine (the task does not exist: the request got past authentication).
        let all: Vec<(&str, &str)> = headers.iter().copied().chain([("X-API-Key", "ka")]).collect();
        let r = a.call(method, path, &all, body).await;
        assert_ne!(r.status, 401, "{method} {path}: {}", r.body);
    }
}

#[tokio::test]
async fn the_card_without_a_version_serves_both_generations() {
    let a = agent_with(Setup { extended: true, ..Default::default() }).await;
    let r = a.call("GET", "/.well-known/agent-card.json", &[], None).await;
    // 0.3 readers: url, preferredTransport, the 0.3 interfaces (JSON-RPC and HTTP+JSON).
    assert_eq!(r.body["protocolVersion"], "0.3.0");
    assert_eq!(r.body["url"], "http://agent.test");
    let transports: Vec<&str> =
        r.body["additionalInterfaces"].as_array().unwrap().iter().map(|i| i["transport"].as_str().unwrap()).collect();
    assert_eq!(transports, ["JSONRPC", "HTTP+JSON"]);
    assert_eq!(r.body["supportsAuthenticatedExtendedCard"], true);
    // 1.0 readers: the 1.0 interfaces first, and the 1.0 capability name.
    assert_eq!(r.body["supportedInterfaces"][0]["protocolVersion"], "1.0");
    assert_eq!(r.body["capabilities"]["extendedAgentCard"], true);
    // Advertised because it can be had: no credentials are asked of anyone here.
    let ext = a.rpc("GetExtendedAgentCard", json!({})).await;
    assert_eq!(ext["result"]["name"], "Extended", "{ext}");
}

#[tokio::test]
async fn the_0_3_rest_binding() {
    let a = agent().await;
    let ct = [("content-type", "application/json")];
    // What the 0.3 reference client sends: no version header, the 0.3 proto's JSON.
    let body =
        json!({"message": {"messageId": "tck-artifact-file-03", "role": "ROLE_USER", "content": [{"text": "hi"}]},
        "configuration": {"blocking": true}})
        .to_string();
    let r = a.call("POST", "/v1/message:send", &ct, Some(&body)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let t = &r.body["task"];
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{t}");
    assert_eq!(t["history"][0]["content"][0]["text"], "hi");
    let file = &t["artifacts"][0]["parts"][0]["file"];
    assert_eq!((file["name"].as_str(), file["mimeType"].as_str()), (Some("output.txt"), Some("text/plain")));
    let id = t["id"].as_str().unwrap().to_string();
    let r = a.call("GET", &format!("/v1/tasks/{id}?historyLength=1"), &[], None).await;
    assert_eq!((r.status, r.body["id"].as_str()), (200, Some(id.as_str())));
    assert_eq!(r.body["history"].as_array().unwrap().len(), 1);
    let r = a.call("POST", &format!("/v1/tasks/{id}:cancel"), &ct, Some("{}")).await;
    assert_eq!(r.status, 409);
    let r = a.call("GET", "/v1/tasks/nope", &[], None).await;
    assert_eq!(r.status, 404);

    // Push configs: created through 0.3, named the 0.3 way.
    let cfg = json!({"parent": format!("tasks/{id}"), "configId": "c1",
        "config": {"pushNotificationConfig": {"url": "https://93.184.216.34/03", "token": "t"}}})
    .to_string();
    let r = a.call("POST", &format!("/v1/tasks/{id}/pushNotificationConfigs"), &ct, Some(&cfg)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["name"], format!("tasks/{id}/pushNotificationConfigs/c1"));
    assert_eq!(r.body["pushNotificationConfig"]["url"], "https://93.184.216.34/03");
    let r = a.call("GET", &format!("/v1/tasks/{id}/pushNotificationConfigs/c1"), &[], None).await;
    assert_eq!(r.body["pushNotificationConfig"]["token"], "t");

    // Streams: the 0.3 proto's StreamResponse JSON, `final` on the last status.
    let body = json!({"message": {"messageId": "tck-stream-001-03", "role": "ROLE_USER", "content": [{"text": "go"}]}})
        .to_string();
    let (status, events) = a.sse("POST", "/v1/message:stream", &ct, Some(&body)).await;
    assert_eq!(status, 200);
    let kinds: Vec<&str> =
        events.iter().map(|(_, _, v)| v.as_object().unwrap().keys().next().unwrap().as_str()).collect();
    assert_eq!(kinds, ["task", "statusUpdate", "artifactUpdate", "statusUpdate"], "{events:?}");
    assert_eq!(events[3].2["statusUpdate"]["final"], true);

    // The extended card is not configured here; the 1.0 routes still want the 1.0 header.
    let r = a.call("GET", "/v1/card", &[], None).await;
    assert_eq!(r.status, 400, "{}", r.body);
    let r = a.call("POST", "/message:send", &ct, Some(&body)).await;
    assert_eq!(r.status, 400);
    assert!(r.body["error"]["details"][0]["metadata"]["hint"].as_str().unwrap().contains("/v1/"), "{}", r.body);
}

#[tokio::test]
async fn the_0_3_streams_report_refusals_as_events() {
    let a = agent().await;
    let body =
        json!({"jsonrpc": "2.0", "id": "s1", "method": "tasks/resubscribe", "params": {"id": "nope"}}).to_string();
    let (status, events) = a.sse("POST", "/", &[("content-type", "application/json")], Some(&body)).await;
    assert_eq!(status, 200);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].2["id"], "s1");
    assert_eq!(events[0].2["error"]["code"], -32001);
    // Params that are not an object: refused as an event too.
    for params in [json!([1]), json!("x")] {
        let body = json!({"jsonrpc": "2.0", "id": "s2", "method": "message/stream", "params": params}).to_string();
        let (status, events) = a.sse("POST", "/", &[("content-type", "application/json")], Some(&body)).await;
        assert_eq!(status, 200);
        assert_eq!((events.len(), &events[0].2["error"]["code"]), (1, &json!(-32602)), "{params}: {events:?}");
    }
    // 1.0 clients read the plain JSON error.
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask", "params": {"id": "nope"}}).to_string();
    let r = a.call("POST", "/", &[("content-type", "application/json"), ("A2A-Version", "1.0")], Some(&body)).await;
    assert_eq!(r.body["error"]["code"], -32001);
}

#[tokio::test]
async fn the_0_3_extension_header_and_config_lookups() {
    let mut card = a2a::card::default_card();
    card.capabilities.extensions.push(a2a::types::AgentExtension {
        uri: "urn:x:required".into(),
        description: String::new(),
        required: true,
        params: None,
    });
    let a = agent_with(Setup { card: Some(card), ..Default::default() }).await;
    let ct = [("content-type", "application/json")];
    let call = |method: &str, params: Value| {
        json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string()
    };
    let message = json!({"message": {"kind": "message", "messageId": "tck-input-required-ext", "role": "user",
        "parts": [{"kind": "text", "text": "x"}]}});
    let r = a.call("POST", "/", &ct, Some(&call("message/send", message.clone()))).await;
    assert_eq!(r.body["error"]["code"], -32008, "{}", r.body);
    let with_ext = [("content-type", "application/json"), ("X-A2A-Extensions", "urn:x:required")];
    let r = a.call("POST", "/", &with_ext, Some(&call("message/send", message))).await;
    assert_eq!(r.body["result"]["status"]["state"], "input-required", "{}", r.body);
    let id = r.body["result"]["id"].as_str().unwrap().to_string();

    // 0.3 `get` without a config id: the task's config (0.3 §7.6.1), whatever its id.
    let r = a.call("POST", "/", &with_ext, Some(&call("tasks/pushNotificationConfig/get", json!({"id": id})))).await;
    assert_eq!(r.body["error"]["code"], -32001, "none yet: {}", r.body);
    let set = json!({"taskId": id, "pushNotificationConfig": {"id": "mine", "url": "https://93.184.216.34/a"}});
    let r = a.call("POST", "/", &with_ext, Some(&call("tasks/pushNotificationConfig/set", set))).await;
    assert_eq!(r.body["result"]["pushNotificationConfig"]["id"], "mine");
    let r = a.call("POST", "/", &with_ext, Some(&call("tasks/pushNotificationConfig/get", json!({"id": id})))).await;
    assert_eq!(r.body["result"]["pushNotificationConfig"]["url"], "https://93.184.216.34/a", "{}", r.body);
}

/// 0.3 HTTP+JSON bodies as ProtoJSON parsers read them: fields by JSON name or proto name (the 0.3
/// TCK's REST client sends proto names), free-form metadata and data as sent; `fileWithBytes` is the
/// bytes' base64, once, on output, and read once- or twice-encoded (a2a-sdk 0.3 for Python).
#[tokio::test]
async fn the_0_3_rest_binding_reads_proto_names_and_bytes_once() {
    use base64::engine::general_purpose::STANDARD as B64;
    use base64::Engine;
    let a = agent().await;
    let ct = [("content-type", "application/json")];
    let bytes: &[u8] = b"\x00\x01\xfe\xffknown bytes\n";
    let once = B64.encode(bytes);
    let twice = B64.encode(&once);
    for (sent, how) in [(&once, "once"), (&twice, "twice")] {
        let body = json!({
            "message": {"message_id": format!("proto-names-{how}"), "role": "ROLE_USER", "content": [
                {"text": "files"},
                {"file": {"file_with_bytes": sent, "mime_type": "application/octet-stream", "name": "k.bin"}},
                {"data": {"data": {"snake_key": {"inner_key": 1}}}, "metadata": {"part_key": true}}
            ], "metadata": {"my_key": {"nested_key": 2}}},
            "configuration": {"blocking": true, "accepted_output_modes": ["text/plain"], "history_length": 5},
            "metadata": {"request_key": 3}
        });
        let r = a.call("POST", "/v1/message:send", &ct, Some(&body.to_string())).await;
        assert_eq!(r.status, 200, "{how}: {}", r.body);
        let id = r.body["task"]["id"].as_str().unwrap().to_string();
        let r = a.call("GET", &format!("/v1/tasks/{id}"), &[], None).await;
        let m = &r.body["history"][0];
        assert_eq!(m["messageId"], format!("proto-names-{how}"), "{}", r.body);
        let file = &m["content"][1]["file"];
        assert_eq!(file["fileWithBytes"], once.as_str(), "{how}: base64 once on output");
        assert_eq!(
            (file["mimeType"].as_str(), file["name"].as_str()),
            (Some("application/octet-stream"), Some("k.bin"))
        );
        assert_eq!(m["content"][2]["data"]["data"], json!({"snake_key": {"inner_key": 1}}), "data as sent");
        assert_eq!(m["content"][2]["metadata"], json!({"part_key": true}));
        assert_eq!(m["metadata"], json!({"my_key": {"nested_key": 2}}), "metadata as sent");
        // Every client gets ProtoJSON, whatever its User-Agent (docs/adr/0001-v03-rest-file-bytes.md).
        let r = a.call("GET", &format!("/v1/tasks/{id}"), &[("user-agent", "python-httpx/0.28.1")], None).await;
        assert_eq!(r.body["history"][0]["content"][1]["file"]["fileWithBytes"], once.as_str(), "{how}");
    }

    // CreateTaskPushNotificationConfig with proto names (what the 0.3 TCK sends).
    let r = a.call("GET", "/v1/tasks?pageSize=1", &[], None).await;
    let id = r.body["tasks"][0]["id"].as_str().unwrap().to_string();
    let path = format!("/v1/tasks/{id}/pushNotificationConfigs");
    let cfg = json!({"parent": format!("tasks/{id}"), "config_id": "snake",
        "config": {"push_notification_config": {"url": "https://93.184.216.34/p", "token": "t",
            "authentication": {"schemes": ["Bearer"], "credentials": "c"}}}});
    let r = a.call("POST", &path, &ct, Some(&cfg.to_string())).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["name"], format!("tasks/{id}/pushNotificationConfigs/snake"));
    assert_eq!(r.body["pushNotificationConfig"]["url"], "https://93.184.216.34/p");
    let r = a.call("GET", &format!("/v1/tasks/{id}?history_length=1"), &[], None).await;
    assert_eq!(r.body["history"].as_array().map(Vec::len), Some(1), "{}", r.body);

    // One field under both names, and bytes that are not base64: refused, naming the field.
    let both = json!({"config": {"pushNotificationConfig": {"url": "https://93.184.216.34/a"},
        "push_notification_config": {"url": "https://93.184.216.34/b"}}});
    let r = a.call("POST", &path, &ct, Some(&both.to_string())).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body["error"]["message"].as_str().unwrap().contains("config.pushNotificationConfig"), "{}", r.body);
    let bad = json!({"message": {"messageId": "bad-bytes", "role": "ROLE_USER",
        "content": [{"file": {"fileWithBytes": "not base64!"}}]}});
    let r = a.call("POST", "/v1/message:send", &ct, Some(&bad.to_string())).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(
        r.body["error"]["message"].as_str().unwrap().contains("message.content[0].file.fileWithBytes"),
        "{}",
        r.body
    );
}

/// A 0.3 data part's data is an object: any other value is refused on the way in, naming the
/// part; a 1.0 task's data that is not an object goes out to 0.3 clients as `{"value": …}`, which
/// they can read (a bare string or array broke a2a-sdk 0.3's parsing of the whole task).
#[tokio::test]
async fn a_0_3_data_part_is_an_object_both_ways() {
    let a = agent().await;
    let ct = [("content-type", "application/json")];
    let call = |method: &str, params: Value| {
        json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string()
    };
    let message = json!({"message": {"kind": "message", "messageId": "m-data-03", "role": "user",
        "parts": [{"kind": "data", "data": "just a string"}]}});
    let r = a.call("POST", "/", &ct, Some(&call("message/send", message))).await;
    assert_eq!(r.body["error"]["code"], -32602, "{}", r.body);
    assert!(r.body["error"]["message"].as_str().unwrap().contains("parts[0]"), "{}", r.body);

    let sent = a
        .rpc(
            "SendMessage",
            json!({"message": {"messageId": "m-data-10", "role": "ROLE_USER", "parts": [{"data": "x"}, {"data": {"k": 1}}]}}),
        )
        .await;
    let id = sent["result"]["task"]["id"].as_str().expect("a task");
    let r = a.call("POST", "/", &ct, Some(&call("tasks/get", json!({"id": id})))).await;
    let parts = &r.body["result"]["history"][0]["parts"];
    assert_eq!(parts[0], json!({"kind": "data", "data": {"value": "x"}}), "{}", r.body);
    assert_eq!(parts[1], json!({"kind": "data", "data": {"k": 1}}), "{}", r.body);
}
