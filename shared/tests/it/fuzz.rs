//! Property test: random and mutated JSON thrown at both bindings. Whatever arrives, the answer is
//! a well-formed protocol response (never a panic, never a 500): a JSON-RPC response with either a
//! result or an `error` holding an integer code and a message, or an AIP-193 error whose `code`
//! equals the HTTP status.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use a2a::embedded::{start, Embedded, EmbeddedConfig};
use a2a::executor::EchoAgent;
use a2a::http::Body;
use bytes::Bytes;
use proptest::prelude::*;
use serde_json::{json, Value};

struct World {
    rt: tokio::runtime::Runtime,
    agent: Embedded,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let agent = rt.block_on(async {
            start(EmbeddedConfig {
                engine: a2a::engine::EngineConfig { blocking_timeout: Duration::from_secs(5), ..Default::default() },
                limits: a2a::http::Limits { max_body: 64 * 1024, ..Default::default() },
                store_limits: a2a::admission::StoreLimits { max_tasks: 1000, ..Default::default() },
                ..EmbeddedConfig::new("http://agent.test", Arc::new(EchoAgent))
            })
            .await
            .unwrap()
        });
        World { rt, agent }
    })
}

fn handle(method: &str, path: &str, body: Vec<u8>) -> (u16, Value, bool) {
    let w = world();
    w.rt.block_on(async {
        let req = http::Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", "application/json")
            .header("A2A-Version", "1.0")
            .body(Bytes::from(body))
            .unwrap();
        let resp =
            tokio::time::timeout(Duration::from_secs(10), w.agent.service.handle(req)).await.expect("answered in time");
        let status = resp.status().as_u16();
        match resp.into_body() {
            Body::Full(b) => (status, serde_json::from_slice(&b).unwrap_or(Value::Null), false),
            Body::Sse(_) => (status, Value::Null, true),
        }
    })
}

fn assert_jsonrpc_shape(status: u16, body: &Value, stream: bool) {
    assert_ne!(status, 500, "{body}");
    if stream {
        assert_eq!(status, 200);
        return;
    }
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    match (body.get("result"), body.get("error")) {
        (Some(_), None) => {}
        (None, Some(e)) => {
            assert!(e["code"].is_i64(), "{body}");
            assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
            assert_eq!(e["data"][0]["domain"], "a2a-protocol.org", "{body}");
        }
        _ => panic!("neither result nor error: {body}"),
    }
}

fn assert_rest_shape(status: u16, body: &Value, stream: bool) {
    assert_ne!(status, 500, "{body}");
    if stream || status == 200 {
        return;
    }
    let e = &body["error"];
    assert_eq!(e["code"].as_u64(), Some(u64::from(status)), "{body}");
    assert!(e["status"].as_str().is_some_and(|s| !s.is_empty()), "{body}");
    assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
    assert_eq!(e["details"][0]["@type"], "type.googleapis.com/google.rpc.ErrorInfo", "{body}");
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        "[a-zA-Z0-9_:/\\-\\. ]{0,12}".prop_map(Value::from),
        prop::sample::select(vec!["ROLE_USER", "TASK_STATE_WORKING", "text", "messageId", "", "1.0", "working"])
            .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "message",
                    "messageId",
                    "role",
                    "parts",
                    "text",
                    "raw",
                    "url",
                    "data",
                    "taskId",
                    "contextId",
                    "id",
                    "configuration",
                    "historyLength",
                    "returnImmediately",
                    "pageSize",
                    "pageToken",
                    "status",
                    "metadata",
                    "taskPushNotificationConfig",
                    "kind",
                    "file",
                    "bytes",
                    "uri",
                    "params",
                    "jsonrpc",
                    "method",
                ])
                .prop_map(String::from),
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

const METHODS: &[&str] = &[
    "SendMessage",
    "GetTask",
    "ListTasks",
    "CancelTask",
    "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs",
    "DeleteTaskPushNotificationConfig",
    "GetExtendedAgentCard",
    "message/send",
    "tasks/get",
    "tasks/cancel",
    "tasks/pushNotificationConfig/set",
    "tasks/pushNotificationConfig/get",
    "tasks/list",
    "nope",
];

fn valid_send() -> Value {
    json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}], "contextId": "c"},
           "configuration": {"historyLength": 2, "acceptedOutputModes": ["text/plain"]}, "metadata": {"k": "v"}})
}

/// Replaces the value at a random path of `v` with `with`, or deletes it.
fn mutate(v: &mut Value, path: &[usize], with: Option<Value>) {
    let Some((&i, rest)) = path.split_first() else { return };
    match v {
        Value::Object(m) if !m.is_empty() => {
            let key = m.keys().nth(i % m.len()).unwrap().clone();
            if rest.is_empty() || !m[&key].is_object() && !m[&key].is_array() {
                match with {
                    Some(w) => {
                        m.insert(key, w);
                    }
                    None => {
                        m.remove(&key);
                    }
                }
            } else {
                mutate(m.get_mut(&key).unwrap(), rest, with);
            }
        }
        Value::Array(a) if !a.is_empty() => {
            let n = a.len();
            if rest.is_empty() {
                match with {
                    Some(w) => a[i % n] = w,
                    None => {
                        a.remove(i % n);
                    }
                }
            } else {
                mutate(&mut a[i % n], rest, with);
            }
        }
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_jsonrpc_params(method in prop::sample::select(METHODS), params in arb_json(), id in prop_oneof![Just(json!(1)), Just(json!("x")), Just(json!(null)), Just(json!([]))]) {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let (status, v, stream) = handle("POST", "/", serde_json::to_vec(&body).unwrap());
        assert_jsonrpc_shape(status, &v, stream);
    }

    #[test]
    fn random_jsonrpc_envelopes(envelope in arb_json()) {
        let (status, v, stream) = handle("POST", "/", serde_json::to_vec(&envelope).unwrap());
        assert_jsonrpc_shape(status, &v, stream);
    }

    #[test]
    fn mutated_send_message(path in prop::collection::vec(any::<usize>(), 1..4), with in prop::option::of(arb_json()), rest in any::<bool>()) {
        let mut params = valid_send();
        mutate(&mut params, &path, with);
        if rest {
            let (status, v, stream) = handle("POST", "/message:send", serde_json::to_vec(&params).unwrap());
            assert_rest_shape(status, &v, stream);
        } else {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params});
            let (status, v, stream) = handle("POST", "/", serde_json::to_vec(&body).unwrap());
            assert_jsonrpc_shape(status, &v, stream);
        }
    }

    #[test]
    fn random_rest_requests(
        route in prop::sample::select(vec![
            ("POST", "/message:send"), ("POST", "/message:stream"), ("GET", "/tasks"), ("GET", "/tasks/x"), ("POST", "/tasks/x:cancel"),
            ("POST", "/tasks/x/pushNotificationConfigs"), ("GET", "/t/tasks/x/pushNotificationConfigs/y"), ("DELETE", "/tasks/x/pushNotificationConfigs/y"),
            ("GET", "/tasks?pageSize=-3&status=zzz"), ("GET", "/tasks?historyLength=abc"), ("PATCH", "/tasks"), ("GET", "/extendedAgentCard"),
        ]),
        body in arb_json(),
        raw in prop::collection::vec(any::<u8>(), 0..64),
        use_raw in any::<bool>(),
    ) {
        let bytes = if use_raw { raw } else { serde_json::to_vec(&body).unwrap() };
        let (status, v, stream) = handle(route.0, route.1, bytes);
        assert_rest_shape(status, &v, stream);
    }

    #[test]
    fn random_bytes_to_jsonrpc(raw in prop::collection::vec(any::<u8>(), 0..256)) {
        let (status, v, stream) = handle("POST", "/", raw);
        assert_jsonrpc_shape(status, &v, stream);
    }
}
