//! Router-level tests: requests go through `Service::handle` (no socket) against the embedded
//! engine with the conformance agent, and assertions are on what a client sees on the wire.

use crate::harness;

use std::sync::Arc;
use std::time::Duration;

use a2a::card::default_card;
use a2a::http::Body;
use a2a::types::AgentExtension;
use bytes::Bytes;
use futures::StreamExt;
use harness::*;
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn agent_card_versions_caching_and_errors() {
    let a = agent().await;
    let r = a.call("GET", "/.well-known/agent-card.json", &[("A2A-Version", "1.0")], None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["content-type"], "application/json");
    assert!(r.headers["cache-control"].to_str().unwrap().contains("max-age="));
    assert!(r.headers.contains_key("last-modified"));
    let ifaces = r.body["supportedInterfaces"].as_array().unwrap();
    assert!(ifaces.iter().any(|i| i["protocolBinding"] == "JSONRPC"
        && i["protocolVersion"] == "1.0"
        && i["url"] == "http://agent.test"));
    assert!(ifaces.iter().any(|i| i["protocolBinding"] == "HTTP+JSON" && i["protocolVersion"] == "1.0"));
    assert_eq!(r.body["capabilities"]["streaming"], true);
    let etag = r.headers["etag"].to_str().unwrap().to_string();
    let r2 =
        a.call("GET", "/.well-known/agent-card.json", &[("A2A-Version", "1.0"), ("If-None-Match", &etag)], None).await;
    assert_eq!(r2.status, 304);
    assert!(r2.raw.is_empty());

    // No version: the 0.3 form, at both paths.
    for path in ["/.well-known/agent.json", "/.well-known/agent-card.json"] {
        let r = a.call("GET", path, &[], None).await;
        assert_eq!(r.status, 200);
        assert_eq!(r.body["url"], "http://agent.test");
        assert_eq!(r.body["preferredTransport"], "JSONRPC");
        assert_eq!(r.body["protocolVersion"], "0.3.0");
    }
    let r = a.call("GET", "/.well-known/agent-card.json", &[("A2A-Version", "2.0")], None).await;
    assert_eq!(r.status, 400);
    assert_eq!(reason(&r.body), "VERSION_NOT_SUPPORTED");
}

#[tokio::test]
async fn blocking_send_completes_with_an_echo_artifact() {
    let a = agent().await;
    let v = a.rpc("SendMessage", json!({"message": msg("m-1", "hello there")})).await;
    let task = &v["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{v}");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "hello there");
    assert!(task["contextId"].as_str().is_some_and(|c| !c.is_empty()));
    assert_eq!(task["history"][0]["messageId"], "m-1");
    assert!(task["status"]["timestamp"].as_str().unwrap().ends_with('Z'));

    // historyLength 0 leaves history out; returnImmediately answers before the agent runs.
    let v = a.rpc("SendMessage", json!({"message": msg("m-2", "x"), "configuration": {"historyLength": 0}})).await;
    assert!(v["result"]["task"].get("history").is_none(), "{v}");
    let v = a
        .rpc(
            "SendMessage",
            json!({"message": msg("test-resubscribe-message-id-1", "x"), "configuration": {"returnImmediately": true}}),
        )
        .await;
    assert_eq!(v["result"]["task"]["status"]["state"], "TASK_STATE_SUBMITTED");
}

#[tokio::test]
async fn conformance_behaviours() {
    let a = agent().await;
    let send = |id: &'static str| a.rpc("SendMessage", json!({"message": msg(id, "hi")}));
    let v = send("tck-complete-task-1").await;
    assert_eq!(v["result"]["task"]["status"]["message"]["parts"][0]["text"], "Hello from TCK");
    let v = send("tck-artifact-text-1").await;
    assert_eq!(v["result"]["task"]["artifacts"][0]["parts"][0]["text"], "Generated text content");
    let v = send("tck-artifact-file-1").await;
    let part = &v["result"]["task"]["artifacts"][0]["parts"][0];
    assert_eq!(
        (part["raw"].as_str(), part["filename"].as_str(), part["mediaType"].as_str()),
        (Some("dGNr"), Some("output.txt"), Some("text/plain"))
    );
    let v = send("tck-artifact-file-url-1").await;
    assert_eq!(v["result"]["task"]["artifacts"][0]["parts"][0]["url"], "https://example.com/output.txt");
    let v = send("tck-artifact-data-1").await;
    assert_eq!(v["result"]["task"]["artifacts"][0]["parts"][0]["data"], json!({"key": "value", "count": 42}));
    let v = send("tck-message-response-1").await;
    assert_eq!(v["result"]["message"]["parts"][0]["text"], "Direct message response", "{v}");
    assert_eq!(v["result"]["message"]["role"], "ROLE_AGENT");
    let v = send("tck-reject-task-1").await;
    assert_eq!(v["result"]["task"]["status"]["state"], "TASK_STATE_REJECTED");
    assert_eq!(v["result"]["task"]["status"]["message"]["parts"][0]["text"], "rejected");
}

#[tokio::test]
async fn multi_turn_input_required_and_task_rules() {
    let a = agent().await;
    let v = a.rpc("SendMessage", json!({"message": msg("tck-input-required-1", "book")})).await;
    let task = v["result"]["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    let (task_id, context_id) = (task["id"].as_str().unwrap(), task["contextId"].as_str().unwrap());

    // Mismatching contextId is rejected, naming the field.
    let bad = json!({"message": {"messageId": "f0", "role": "ROLE_USER", "taskId": task_id, "contextId": "other", "parts": [{"text": "x"}]}});
    let v = a.rpc("SendMessage", bad).await;
    assert_eq!(v["error"]["code"], -32602);
    assert!(v["error"]["message"].as_str().unwrap().contains("message.contextId"));

    // Follow-up with the taskId only: contextId inherited, task continues and completes.
    let follow = json!({"message": {"messageId": "follow-1", "role": "ROLE_USER", "taskId": task_id, "parts": [{"text": "NYC"}]}});
    let v = a.rpc("SendMessage", follow.clone()).await;
    let t = &v["result"]["task"];
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{v}");
    assert_eq!(t["contextId"], context_id);
    assert_eq!(t["history"].as_array().unwrap().len(), 3, "user, agent question, user answer: {t}");
    assert_eq!(t["artifacts"][0]["parts"][0]["text"], "NYC", "the follow-up ran as its own messageId says: {t}");

    // A repeated follow-up is not replayed: the task comes back as it stands.
    let v = a.rpc("SendMessage", follow).await;
    assert_eq!(v["result"]["task"]["history"].as_array().unwrap().len(), 3, "{v}");
    // Terminal tasks take no more messages; unknown tasks are not found.
    let late = json!({"message": {"messageId": "follow-2", "role": "ROLE_USER", "taskId": task_id, "parts": [{"text": "more"}]}});
    let v = a.rpc("SendMessage", late).await;
    assert_eq!(v["error"]["code"], -32004);
    assert_eq!(reason(&v["error"]), "UNSUPPORTED_OPERATION");
    let unknown =
        json!({"message": {"messageId": "u", "role": "ROLE_USER", "taskId": "nope", "parts": [{"text": "x"}]}});
    let v = a.rpc("SendMessage", unknown).await;
    assert_eq!(v["error"]["code"], -32001);
    assert_eq!(v["error"]["data"][0]["metadata"]["taskId"], "nope");
    assert_eq!(v["error"]["data"][0]["domain"], "a2a-protocol.org");
}

#[tokio::test]
async fn get_list_cancel() {
    let a = agent().await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let ctx = if i % 2 == 0 { "ctx-even" } else { "ctx-odd" };
        let v = a.rpc("SendMessage", json!({"message": {"messageId": format!("m{i}"), "role": "ROLE_USER", "contextId": ctx, "parts": [{"text": "x"}]}})).await;
        ids.push(v["result"]["task"]["id"].as_str().unwrap().to_string());
    }
    let v = a.rpc("GetTask", json!({"id": ids[0], "historyLength": 1})).await;
    assert_eq!(v["result"]["history"].as_array().unwrap().len(), 1);
    let v = a.rpc("GetTask", json!({"id": "missing"})).await;
    assert_eq!(v["error"]["code"], -32001);

    let v = a.rpc("ListTasks", json!({"pageSize": 2})).await;
    let r = &v["result"];
    assert_eq!(r["totalSize"], 5);
    assert_eq!(r["pageSize"], 2);
    assert_eq!(r["tasks"].as_array().unwrap().len(), 2);
    assert!(r["tasks"][0].get("artifacts").is_none(), "artifacts omitted without includeArtifacts");
    // Newest first: the last task created comes first.
    assert_eq!(r["tasks"][0]["id"], ids[4].as_str());
    let mut seen: Vec<String> =
        r["tasks"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap().to_string()).collect();
    let mut token = r["nextPageToken"].as_str().unwrap().to_string();
    while !token.is_empty() {
        let v = a.rpc("ListTasks", json!({"pageSize": 2, "pageToken": token})).await;
        seen.extend(v["result"]["tasks"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap().to_string()));
        token = v["result"]["nextPageToken"].as_str().unwrap().to_string();
    }
    seen.sort();
    let mut all = ids.clone();
    all.sort();
    assert_eq!(seen, all);

    let v = a.rpc("ListTasks", json!({"contextId": "ctx-even", "includeArtifacts": true})).await;
    assert_eq!(v["result"]["totalSize"], 3);
    assert_eq!(v["result"]["nextPageToken"], "");
    assert!(v["result"]["tasks"][0]["artifacts"].is_array());
    let v = a.rpc("ListTasks", json!({"status": "TASK_STATE_WORKING"})).await;
    assert_eq!(v["result"]["totalSize"], 0);
    let v = a.rpc("ListTasks", json!({"statusTimestampAfter": "2099-01-01T00:00:00Z"})).await;
    assert_eq!(v["result"]["totalSize"], 0);
    let v = a.rpc("ListTasks", json!({"pageToken": "forged.token"})).await;
    assert_eq!(v["error"]["code"], -32602);
    assert!(v["error"]["message"].as_str().unwrap().contains("pageToken"));

    // REST: query parameters per spec §11.
    let r = a.rest("GET", "/tasks?contextId=ctx-odd&status=completed&pageSize=10", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["totalSize"], 2);

    // Cancel: a completed task is not cancelable; a running one is canceled.
    let v = a.rpc("CancelTask", json!({"id": ids[0]})).await;
    assert_eq!(v["error"]["code"], -32002);
    let r = a.rest("POST", &format!("/tasks/{}:cancel", ids[0]), None).await;
    assert_eq!(r.status, 409);
    let v = a
        .rpc(
            "SendMessage",
            json!({"message": msg("test-resubscribe-message-id-2", "x"), "configuration": {"returnImmediately": true}}),
        )
        .await;
    let long = v["result"]["task"]["id"].as_str().unwrap().to_string();
    let v = a.rpc("CancelTask", json!({"id": long})).await;
    assert_eq!(v["result"]["status"]["state"], "TASK_STATE_CANCELED", "{v}");
    let v = a.rpc("GetTask", json!({"id": long})).await;
    assert_eq!(v["result"]["status"]["state"], "TASK_STATE_CANCELED");
}

#[tokio::test]
async fn cancel_an_interrupted_task() {
    let a = agent().await;
    let v = a.rpc("SendMessage", json!({"message": msg("tck-input-required-9", "x")})).await;
    let id = v["result"]["task"]["id"].as_str().unwrap().to_string();
    let r = a.rest("POST", &format!("/tasks/{id}:cancel"), Some(json!({}))).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["status"]["state"], "TASK_STATE_CANCELED");
}

#[tokio::test]
async fn streaming_order_in_both_versions() {
    let a = agent().await;
    let body = json!({"jsonrpc": "2.0", "id": "s1", "method": "SendStreamingMessage", "params": {"message": msg("tck-stream-001", "go")}}).to_string();
    let (status, events) =
        a.sse("POST", "/", &[("content-type", "application/json"), ("A2A-Version", "1.0")], Some(&body)).await;
    assert_eq!(status, 200);
    let kinds: Vec<&str> =
        events.iter().map(|(_, _, v)| v["result"].as_object().unwrap().keys().next().unwrap().as_str()).collect();
    assert_eq!(kinds, ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]);
    assert!(events.iter().all(|(_, _, v)| v["id"] == "s1"));
    let ids: Vec<u64> = events.iter().map(|(id, _, _)| id.unwrap()).collect();
    assert_eq!(ids, [0, 1, 2, 3]);
    assert_eq!(events[3].2["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED");

    // 0.3: kind-tagged events, `final` on the last status update, no version header.
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "message/stream", "params": {"message":
        {"kind": "message", "messageId": "tck-stream-ordering-001", "role": "user", "parts": [{"kind": "text", "text": "go"}]}}})
    .to_string();
    let (_, events) = a.sse("POST", "/", &[("content-type", "application/json")], Some(&body)).await;
    let kinds: Vec<&str> = events.iter().map(|(_, _, v)| v["result"]["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["task", "status-update", "artifact-update", "status-update"]);
    assert_eq!(events[0].2["result"]["status"]["state"], "submitted");
    assert_eq!(events[1].2["result"]["final"], false);
    assert_eq!(events[3].2["result"]["final"], true);
    assert_eq!(events[3].2["result"]["status"]["state"], "completed");

    // REST stream, chunked artifact; a message-only stream holds exactly one message.
    let body = json!({"message": msg("tck-stream-artifact-chunked", "go")}).to_string();
    let (_, events) = a
        .sse("POST", "/message:stream", &[("content-type", "application/json"), ("A2A-Version", "1.0")], Some(&body))
        .await;
    let chunks: Vec<&Value> = events.iter().filter_map(|(_, _, v)| v.get("artifactUpdate")).collect();
    assert_eq!(chunks.len(), 2);
    assert_eq!(chunks[1]["append"], true);
    assert_eq!(chunks[1]["lastChunk"], true);
    let body = json!({"message": msg("tck-message-response-2", "go")}).to_string();
    let (_, events) = a
        .sse("POST", "/message:stream", &[("content-type", "application/json"), ("A2A-Version", "1.0")], Some(&body))
        .await;
    assert_eq!(events.len(), 1);
    assert!(events[0].2.get("message").is_some());
}

#[tokio::test]
async fn subscribers_see_identical_events_and_resume_without_loss() {
    let a = Arc::new(agent().await);
    // A task whose events come one by one (the conformance agent's resubscribe case), and its
    // subscribe path.
    let running = |message_id: &'static str| {
        let a = a.clone();
        async move {
            let send = json!({"message": msg(message_id, "x"), "configuration": {"returnImmediately": true}});
            let v = a.rpc("SendMessage", send).await;
            format!("/tasks/{}:subscribe", v["result"]["task"]["id"].as_str().unwrap())
        }
    };
    let path = running("test-resubscribe-message-id-3").await;
    let id = path.trim_start_matches("/tasks/").trim_end_matches(":subscribe").to_string();
    let (a1, a2, p1, p2) = (a.clone(), a.clone(), path.clone(), path.clone());
    let s1 = tokio::spawn(async move { a1.sse("GET", &p1, &[("A2A-Version", "1.0")], None).await.1 });
    let s2 = tokio::spawn(async move { a2.sse("POST", &p2, &[("A2A-Version", "1.0")], None).await.1 });
    let (e1, e2) = (s1.await.unwrap(), s2.await.unwrap());
    assert!(e1[0].2.get("task").is_some(), "snapshot first");
    let tail = |e: &Sse| e.iter().skip(1).map(|(id, _, v)| (*id, v.clone())).collect::<Vec<_>>();
    // Both may have joined at different moments; the events both saw are identical and in order.
    let (t1, t2) = (tail(&e1), tail(&e2));
    let common: Vec<_> = t1.iter().filter(|x| t2.contains(x)).cloned().collect();
    assert!(!common.is_empty());
    assert_eq!(common, t2.iter().filter(|x| t1.contains(x)).cloned().collect::<Vec<_>>());
    assert_eq!(e1.last().unwrap().2["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED");

    // Reconnect with Last-Event-ID: exactly the events after it, even though the task has ended.
    let (_, replay) = a.sse("GET", &path, &[("A2A-Version", "1.0"), ("Last-Event-ID", "1")], None).await;
    let ids: Vec<u64> = replay.iter().map(|(id, _, _)| id.unwrap()).collect();
    let v = a.rpc("GetTask", json!({"id": id})).await;
    assert_eq!(v["result"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(ids, (2..=*ids.last().unwrap()).collect::<Vec<_>>());
    assert!(ids.len() >= 2);

    // A terminal task cannot be subscribed to afresh.
    let r = a.rest("GET", &path, None).await;
    assert_eq!(r.status, 400);
    assert_eq!(reason(&r.body), "UNSUPPORTED_OPERATION");

    // A Last-Event-ID past the task's last event resumes nothing: the snapshot comes first, then
    // the task's events to its end (not a silent stream that ends without saying how).
    let path = running("test-resubscribe-message-id-4").await;
    let (_, events) = a.sse("GET", &path, &[("A2A-Version", "1.0"), ("Last-Event-ID", "99")], None).await;
    assert!(events[0].2.get("task").is_some(), "snapshot first: {events:?}");
    assert_eq!(events.last().unwrap().2["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED");
}

#[tokio::test]
async fn push_config_crud_on_both_bindings() {
    let a = agent().await;
    let v = a.rpc("SendMessage", json!({"message": msg("m", "x")})).await;
    let id = v["result"]["task"]["id"].as_str().unwrap().to_string();
    let r = a
        .rest("POST", &format!("/tasks/{id}/pushNotificationConfigs"), Some(json!({"url": "https://93.184.216.34/a2a", "token": "tok", "authentication": {"scheme": "Bearer", "credentials": "secret"}})))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let cid = r.body["id"].as_str().unwrap().to_string();
    assert_eq!(r.body["taskId"], id.as_str());
    let r = a.rest("GET", &format!("/tasks/{id}/pushNotificationConfigs/{cid}"), None).await;
    assert_eq!(r.body["url"], "https://93.184.216.34/a2a");
    let v = a.rpc("ListTaskPushNotificationConfigs", json!({"taskId": id})).await;
    assert_eq!(v["result"]["configs"].as_array().unwrap().len(), 1);
    for _ in 0..2 {
        let r = a.rest("DELETE", &format!("/tasks/{id}/pushNotificationConfigs/{cid}"), None).await;
        assert_eq!(r.status, 200, "delete is idempotent");
    }
    let v = a.rpc("GetTaskPushNotificationConfig", json!({"taskId": id, "id": cid})).await;
    assert_eq!(v["error"]["code"], -32001);
    let v = a.rpc("CreateTaskPushNotificationConfig", json!({"taskId": id, "url": "not a url"})).await;
    assert_eq!(v["error"]["code"], -32602);
    // The SSRF guard: loopback, private and metadata addresses are refused at registration.
    for url in ["http://127.0.0.1:8080/cb", "http://169.254.169.254/latest", "http://[::1]/x", "http://localhost/x"] {
        let v = a.rpc("CreateTaskPushNotificationConfig", json!({"taskId": id, "url": url})).await;
        assert_eq!(v["error"]["code"], -32602, "{url}: {v}");
        assert!(v["error"]["message"].as_str().unwrap().starts_with("url"), "{v}");
    }
    let v = a.rpc("CreateTaskPushNotificationConfig", json!({"taskId": "nope", "url": "https://x.example"})).await;
    assert_eq!(v["error"]["code"], -32001);
    // Listed by id, a page of `pageSize` at a time (the order of creation does not matter).
    for cid in ["b", "a", "c"] {
        let v = a
            .rpc(
                "CreateTaskPushNotificationConfig",
                json!({"taskId": id, "id": cid, "url": "https://93.184.216.34/a2a"}),
            )
            .await;
        assert_eq!(v["result"]["id"], cid, "{v}");
    }
    let v = a.rpc("ListTaskPushNotificationConfigs", json!({"taskId": id})).await;
    let ids: Vec<&str> = v["result"]["configs"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!((ids, v["result"]["nextPageToken"].as_str()), (vec!["a", "b", "c"], Some("")), "{v}");
    let (mut token, mut pages) = (String::new(), Vec::new());
    loop {
        let r = a.rest("GET", &format!("/tasks/{id}/pushNotificationConfigs?pageSize=2&pageToken={token}"), None).await;
        assert_eq!(r.status, 200, "{}", r.body);
        pages.push(
            r.body["configs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["id"].as_str().unwrap().to_string())
                .collect::<Vec<_>>(),
        );
        token = r.body["nextPageToken"].as_str().unwrap_or_default().to_string();
        if token.is_empty() || pages.len() > 3 {
            break;
        }
    }
    assert_eq!(pages, [vec!["a", "b"], vec!["c"]]);
    let v = a.rpc("ListTaskPushNotificationConfigs", json!({"taskId": id, "pageToken": "garbage"})).await;
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().starts_with("pageToken"), "{v}");
    for cid in ["a", "b", "c"] {
        let r = a.rest("DELETE", &format!("/tasks/{id}/pushNotificationConfigs/{cid}"), None).await;
        assert_eq!(r.status, 200);
    }
    // What each delivery sends in a header must be a header value: a line break is refused at
    // registration (it would make every delivery fail), naming the field.
    let url = "https://93.184.216.34/a2a";
    for (config, named) in [
        (json!({"taskId": id, "url": url, "token": "a\r\nX-Injected: 1"}), "token"),
        (json!({"taskId": id, "url": url, "authentication": {"scheme": "Bearer\nX: y"}}), "authentication.scheme"),
        (
            json!({"taskId": id, "url": url, "authentication": {"scheme": "Bearer", "credentials": "a\u{0}b"}}),
            "authentication.credentials",
        ),
    ] {
        let v = a.rpc("CreateTaskPushNotificationConfig", config).await;
        assert_eq!(v["error"]["code"], -32602, "{named}: {v}");
        assert!(v["error"]["message"].as_str().unwrap().starts_with(named), "{named}: {v}");
    }
    let inline = json!({"message": msg("m-inline", "x"), "configuration": {"taskPushNotificationConfig": {"url": url, "token": "t\n"}}});
    let v = a.rpc("SendMessage", inline).await;
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("taskPushNotificationConfig.token"), "{v}");

    // 0.3 forms.
    let set = json!({"taskId": id, "pushNotificationConfig": {"url": "https://93.184.216.34/cb", "authentication": {"schemes": ["Bearer"], "credentials": "c"}}});
    let v = a.rpc_with("tasks/pushNotificationConfig/set", set, &[]).await;
    assert_eq!(v["result"]["pushNotificationConfig"]["id"], id.as_str(), "0.3 default config id is the task id: {v}");
    let v = a.rpc_with("tasks/pushNotificationConfig/get", json!({"id": id}), &[]).await;
    assert_eq!(v["result"]["pushNotificationConfig"]["authentication"]["schemes"][0], "Bearer");
    let v = a.rpc_with("tasks/pushNotificationConfig/list", json!({"id": id}), &[]).await;
    assert_eq!(v["result"].as_array().unwrap().len(), 1);
    let v =
        a.rpc_with("tasks/pushNotificationConfig/delete", json!({"id": id, "pushNotificationConfigId": id}), &[]).await;
    assert_eq!(v["result"], Value::Null);
    assert!(v.get("error").is_none());
}

/// An id longer than any the server keeps names nothing: refused naming the field, not looked up
/// and repeated back (over gRPC a repeated id could outgrow the client's trailer limit).
#[tokio::test]
async fn an_overlong_lookup_id_is_refused_naming_the_field() {
    let a = agent().await;
    let long = "a".repeat(4000);
    for (method, params, named) in [
        ("GetTask", json!({"id": long}), "id"),
        ("CancelTask", json!({"id": long}), "id"),
        ("GetTaskPushNotificationConfig", json!({"taskId": long, "id": "c"}), "taskId"),
        ("GetTaskPushNotificationConfig", json!({"taskId": "t", "id": long}), "id"),
        ("ListTaskPushNotificationConfigs", json!({"taskId": long}), "taskId"),
        ("DeleteTaskPushNotificationConfig", json!({"taskId": "t", "id": long}), "id"),
    ] {
        let v = a.rpc(method, params).await;
        assert_eq!(v["error"]["code"], -32602, "{method}: {v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.starts_with(&format!("{named}: is 4000 bytes long")), "{method}: {message}");
        assert!(!v.to_string().contains(&long), "{method}: the id is not repeated back");
    }
    let r = a.rest("GET", &format!("/tasks/{long}"), None).await;
    assert_eq!(r.status, 400, "{}", r.body);
}

#[tokio::test]
async fn push_notifications_off_in_the_card() {
    let mut card = default_card();
    card.capabilities.push_notifications = Some(false);
    let a = agent_with(Setup { card: Some(card), ..Default::default() }).await;
    let v = a.rpc("ListTaskPushNotificationConfigs", json!({"taskId": "t"})).await;
    assert_eq!(v["error"]["code"], -32003);
    let r = a.rest("GET", "/tasks/t/pushNotificationConfigs", None).await;
    assert_eq!((r.status, reason(&r.body)), (400, "PUSH_NOTIFICATION_NOT_SUPPORTED"));
}

#[tokio::test]
async fn extended_card_and_principals() {
    // Capability off.
    let a = agent().await;
    let v = a.rpc("GetExtendedAgentCard", json!({})).await;
    assert_eq!(v["error"]["code"], -32004);

    // Declared but not configured.
    let mut card = default_card();
    card.capabilities.extended_agent_card = Some(true);
    let a = agent_with(Setup { api_keys: Some("alice:ka,bob:kb"), card: Some(card), ..Default::default() }).await;
    let v = a.rpc_with("GetExtendedAgentCard", json!({}), &[("A2A-Version", "1.0"), ("X-API-Key", "ka")]).await;
    assert_eq!(v["error"]["code"], -32007);

    let a = agent_with(Setup { api_keys: Some("alice:ka,bob:kb"), extended: true, ..Default::default() }).await;
    let r = a.call("GET", "/.well-known/agent-card.json", &[("A2A-Version", "1.0")], None).await;
    assert_eq!(r.body["securitySchemes"]["apiKey"]["apiKeySecurityScheme"]["name"], "X-API-Key");
    assert_eq!(r.body["capabilities"]["extendedAgentCard"], true);
    let r = a.call("GET", "/extendedAgentCard", &[("A2A-Version", "1.0"), ("X-API-Key", "ka")], None).await;
    assert_eq!((r.status, r.body["name"].as_str()), (200, Some("Extended")));
    let r = a.call("GET", "/extendedAgentCard", &[("A2A-Version", "1.0")], None).await;
    assert_eq!(r.status, 401);
    let v = a.rpc_with("agent/getAuthenticatedExtendedCard", json!({}), &[("X-API-Key", "kb")]).await;
    assert_eq!(v["result"]["name"], "Extended");
    assert_eq!(v["result"]["protocolVersion"], "0.3.0");

    // Alice's task is invisible to Bob: not found, not forbidden, and not listed.
    let alice = [("A2A-Version", "1.0"), ("X-API-Key", "ka")];
    let bob = [("A2A-Version", "1.0"), ("X-API-Key", "kb")];
    let v = a.rpc_with("SendMessage", json!({"message": msg("a1", "secret")}), &alice).await;
    let id = v["result"]["task"]["id"].as_str().unwrap().to_string();
    let v = a.rpc_with("GetTask", json!({"id": id}), &bob).await;
    assert_eq!(v["error"]["code"], -32001);
    let v = a.rpc_with("ListTasks", json!({}), &bob).await;
    assert_eq!(v["result"]["totalSize"], 0);
    let v = a.rpc_with("ListTasks", json!({}), &alice).await;
    assert_eq!(v["result"]["totalSize"], 1);
    let v = a.rpc_with("CancelTask", json!({"id": id}), &bob).await;
    assert_eq!(v["error"]["code"], -32001);
    let r = a
        .call(
            "POST",
            "/",
            &[("content-type", "application/json")],
            Some(r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}"#),
        )
        .await;
    assert_eq!(r.status, 401);
}

#[tokio::test]
async fn version_negotiation_and_extensions() {
    let mut card = default_card();
    card.capabilities.extensions =
        vec![AgentExtension { uri: "urn:ext:required".into(), required: true, ..Default::default() }];
    let a = agent_with(Setup { card: Some(card), ..Default::default() }).await;
    let v = a.rpc("GetTask", json!({"id": "x"})).await;
    assert_eq!(v["error"]["code"], -32008);
    let v = a
        .rpc_with(
            "GetTask",
            json!({"id": "x"}),
            &[("A2A-Version", "1.0"), ("A2A-Extensions", "urn:other, urn:ext:required")],
        )
        .await;
    assert_eq!(v["error"]["code"], -32001, "extension activated: the call goes through");

    let a = agent().await;
    for version in ["2.0", "0.2", "banana"] {
        let v = a.rpc_with("GetTask", json!({"id": "x"}), &[("A2A-Version", version)]).await;
        assert_eq!(v["error"]["code"], -32009, "{version}");
        let r = a.call("GET", "/tasks/x", &[("A2A-Version", version)], None).await;
        assert_eq!((r.status, reason(&r.body)), (400, "VERSION_NOT_SUPPORTED"));
    }
    // Query parameter and OPVS alias.
    let r = a.call("GET", "/tasks/x?A2A-Version=1.0", &[], None).await;
    assert_eq!(reason(&r.body), "TASK_NOT_FOUND");
    let r = a.call("GET", "/tasks/x", &[("OPVS-Version", "1.0")], None).await;
    assert_eq!(reason(&r.body), "TASK_NOT_FOUND");
    // REST without a version is 0.3, which this server speaks over JSON-RPC only.
    let r = a.call("GET", "/tasks/x", &[], None).await;
    assert_eq!(reason(&r.body), "VERSION_NOT_SUPPORTED");
}

#[tokio::test]
async fn every_rest_route_with_and_without_tenant() {
    let a = agent().await;
    for prefix in ["", "/acme"] {
        let r = a
            .rest(
                "POST",
                &format!("{prefix}/message:send"),
                Some(json!({"message": msg(&format!("r1{prefix}"), "hi")})),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        let id = r.body["task"]["id"].as_str().unwrap().to_string();
        let checks: Vec<(&str, String, Option<Value>, u16)> = vec![
            ("GET", format!("{prefix}/tasks/{id}"), None, 200),
            ("GET", format!("{prefix}/tasks"), None, 200),
            ("POST", format!("{prefix}/tasks/{id}:cancel"), None, 409),
            ("GET", format!("{prefix}/tasks/{id}:subscribe"), None, 400),
            ("POST", format!("{prefix}/tasks/{id}:subscribe"), None, 400),
            (
                "POST",
                format!("{prefix}/tasks/{id}/pushNotificationConfigs"),
                Some(json!({"url": "https://93.184.216.34/x", "id": "c1"})),
                200,
            ),
            ("GET", format!("{prefix}/tasks/{id}/pushNotificationConfigs"), None, 200),
            ("GET", format!("{prefix}/tasks/{id}/pushNotificationConfigs/c1"), None, 200),
            ("DELETE", format!("{prefix}/tasks/{id}/pushNotificationConfigs/c1"), None, 200),
            ("GET", format!("{prefix}/extendedAgentCard"), None, 400),
            ("PUT", format!("{prefix}/tasks/{id}"), None, 405),
        ];
        for (method, path, body, status) in checks {
            let r = a.rest(method, &path, body).await;
            assert_eq!(r.status, status, "{method} {path}: {}", r.body);
            assert_eq!(r.headers["content-type"], "application/json", "{method} {path}");
        }
        let (status, events) = a
            .sse(
                "POST",
                &format!("{prefix}/message:stream"),
                &[("A2A-Version", "1.0"), ("content-type", "application/json")],
                Some(&json!({"message": msg(&format!("tck-stream-002{prefix}"), "x")}).to_string()),
            )
            .await;
        assert_eq!(status, 200);
        assert_eq!(events.len(), 2);
    }
    let r = a.rest("GET", "/nope/nope/nope", None).await;
    assert_eq!((r.status, r.body["error"]["status"].as_str()), (404, Some("UNIMPLEMENTED")));
}

#[tokio::test]
async fn bad_input_gets_precise_errors() {
    let a = agent_with(Setup { max_body: Some(4096), ..Default::default() }).await;
    let json_ct = [("content-type", "application/json"), ("A2A-Version", "1.0")];
    let cases: Vec<(&str, i64, &str)> = vec![
        ("{not json", -32700, "invalid JSON"),
        ("[]", -32600, "batch"),
        ("42", -32600, "object"),
        (r#"{"jsonrpc":"1.0","id":1,"method":"GetTask","params":{}}"#, -32600, "jsonrpc"),
        (r#"{"jsonrpc":"2.0","id":{},"method":"GetTask"}"#, -32600, "id"),
        (r#"{"jsonrpc":"2.0","id":1,"method":"Nope","params":{}}"#, -32601, "Nope"),
        (r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":[1]}"#, -32602, "params"),
        (r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{}}"#, -32602, "params"),
        (r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}"#, -32602, "message"),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"ROLE_USER","parts":[{"text":"x"}]}}}"#,
            -32602,
            "message.messageId",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_X","parts":[{"text":"x"}]}}}"#,
            -32602,
            "message.role",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}}"#,
            -32602,
            "message.parts",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x","url":"y"}]}}}"#,
            -32602,
            "message.parts[0]",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"raw":"!!"}]}}}"#,
            -32602,
            "message.parts[0]",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x","historyLength":"ten"}}"#,
            -32602,
            "historyLength",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"statusTimestampAfter":"yesterday"}}"#,
            -32602,
            "statusTimestampAfter",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"m","role":"robot","parts":[]}}}"#,
            -32602,
            "message.role",
        ),
    ];
    for (body, code, needle) in cases {
        let r = a.call("POST", "/", &json_ct, Some(body)).await;
        assert_eq!(r.status, 200, "{body}");
        assert_eq!(r.body["error"]["code"], code, "{body} -> {}", r.body);
        let message = r.body["error"]["message"].as_str().unwrap();
        assert!(message.contains(needle), "{body}: {message:?} should name {needle:?}");
    }
    // Content type refused before parsing; body over the limit refused.
    let r = a.call("POST", "/", &[("content-type", "text/plain")], Some("{}")).await;
    assert_eq!((r.status, r.body["error"]["code"].as_i64()), (415, Some(-32005)));
    assert_eq!(reason(&r.body["error"]), "CONTENT_TYPE_NOT_SUPPORTED");
    let r =
        a.call("POST", "/message:send", &[("content-type", "text/plain"), ("A2A-Version", "1.0")], Some("{}")).await;
    assert_eq!((r.status, r.body["error"]["status"].as_str()), (415, Some("INVALID_ARGUMENT")));
    let big = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{{"id":"{}"}}}}"#, "x".repeat(5000));
    let r = a.call("POST", "/", &json_ct, Some(&big)).await;
    assert_eq!(r.status, 413);
    let r = a.call("POST", "/message:send", &json_ct, Some(&big)).await;
    assert_eq!((r.status, r.body["error"]["status"].as_str()), (413, Some("RESOURCE_EXHAUSTED")));
    // REST: AIP-193 shape with the field named.
    let r =
        a.rest("POST", "/message:send", Some(json!({"message": {"messageId": "m", "parts": [{"text": "x"}]}}))).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.body["error"]["status"], "INVALID_ARGUMENT");
    assert!(r.body["error"]["message"].as_str().unwrap().contains("message.role"), "{}", r.body);
    let r = a.call("POST", "/message:send", &json_ct, Some("{oops")).await;
    assert_eq!((r.status, reason(&r.body)), (400, "PARSE_ERROR"));
    let r = a.call("GET", "/", &[], None).await;
    assert_eq!((r.status, r.body["error"]["code"].as_u64()), (405, Some(405)));
}

#[tokio::test]
async fn idle_streams_get_keep_alive_comments() {
    let a = agent().await;
    let v = a.rpc("SendMessage", json!({"message": msg("test-resubscribe-message-id-ka", "x"), "configuration": {"returnImmediately": true}})).await;
    let id = v["result"]["task"]["id"].as_str().unwrap().to_string();
    let (_, _, body) = a.send("GET", &format!("/tasks/{id}:subscribe"), &[("A2A-Version", "1.0")], None).await;
    let Body::Sse(stream) = body else { panic!("not a stream") };
    let chunks: Vec<Bytes> = tokio::time::timeout(Duration::from_secs(10), stream.collect()).await.unwrap();
    let text: String = chunks.iter().map(|c| String::from_utf8_lossy(c).into_owned()).collect();
    // The long task stays WORKING ~1.5 s; with a 200 ms keep-alive the idle stream gets comments.
    assert!(text.contains("\n\n: keep-alive\n\n") || text.starts_with(": keep-alive"), "{text}");
    assert!(text.contains("TASK_STATE_COMPLETED"));
}

#[tokio::test]
async fn send_message_is_idempotent_on_message_id() {
    let a = agent().await;
    let first = a.rpc("SendMessage", json!({"message": msg("same-id", "once")})).await;
    let again = a.rpc("SendMessage", json!({"message": msg("same-id", "once")})).await;
    assert_eq!(first["result"]["task"]["id"], again["result"]["task"]["id"]);
    assert_eq!(again["result"]["task"]["artifacts"].as_array().unwrap().len(), 1, "the agent ran once: {again}");
    assert_eq!(again["result"]["task"]["history"].as_array().unwrap().len(), 1);
    let v = a.rpc("ListTasks", json!({})).await;
    assert_eq!(v["result"]["totalSize"], 1);
    // The same messageId from the stream binding: the finished task, and the stream ends.
    let body = json!({"message": msg("same-id", "once")}).to_string();
    let (_, events) = a
        .sse("POST", "/message:stream", &[("content-type", "application/json"), ("A2A-Version", "1.0")], Some(&body))
        .await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].2["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    // Another principal with the same messageId gets its own task.
    let a = agent_with(Setup { api_keys: Some("alice:ka,bob:kb"), ..Default::default() }).await;
    let x = a
        .rpc_with("SendMessage", json!({"message": msg("shared", "x")}), &[("A2A-Version", "1.0"), ("X-API-Key", "ka")])
        .await;
    let y = a
        .rpc_with("SendMessage", json!({"message": msg("shared", "x")}), &[("A2A-Version", "1.0"), ("X-API-Key", "kb")])
        .await;
    assert_ne!(x["result"]["task"]["id"], y["result"]["task"]["id"]);
}

#[tokio::test]
async fn blocking_send_returns_the_task_as_it_stands_at_the_deadline() {
    // The Lambda deployment sets the deadline under API Gateway's 29 s; here 300 ms against an
    // agent that works ~1.5 s.
    let a = agent_with(Setup { blocking_timeout: Some(Duration::from_millis(300)), ..Default::default() }).await;
    let started = std::time::Instant::now();
    let v = a.rpc("SendMessage", json!({"message": msg("test-resubscribe-message-id-deadline", "x")})).await;
    let waited = started.elapsed();
    assert_eq!(v["result"]["task"]["status"]["state"], "TASK_STATE_WORKING", "{v}");
    assert!(waited >= Duration::from_millis(300), "{waited:?}");
    // The task goes on and completes; GetTask shows it.
    tokio::time::sleep(Duration::from_millis(1600)).await;
    let id = v["result"]["task"]["id"].as_str().unwrap();
    let v = a.rpc("GetTask", json!({"id": id})).await;
    assert_eq!(v["result"]["status"]["state"], "TASK_STATE_COMPLETED");
}
