//! What the edge does with a request, and how it starts a stream from the origin's answer.

use bytes::Bytes;
use http::Method;
use serde_json::{Map, Value};

use super::hub::SubscribeSpec;
use super::PUBLISH_PATH;
use a2a_engine::card::is_public_path;
use a2a_engine::ports::EventRecord;
use a2a_http::rest::{self, Route};
use a2a_http::service::{jsonrpc_error_response, rest_error, HttpResponse};
use a2a_protocol::error::A2aError;
use a2a_protocol::sse::Framing;
use a2a_protocol::types::{SendMessageResponse, StreamResponse, Task};
use a2a_protocol::v03;

/// Where a request goes.
#[derive(Debug, Clone, PartialEq)]
pub enum EdgeRoute {
    /// The agent card, served from the edge's configuration.
    Card,
    /// A task runner pushing events.
    Publish,
    /// A streaming call, answered at the edge after one origin call.
    Stream(StreamCall),
    /// Everything else: forwarded to the origin unchanged.
    Proxy,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    /// SendStreamingMessage / `message/stream`: the origin creates or continues the task.
    Send,
    /// SubscribeToTask / `tasks/resubscribe`: the origin shows the task (and checks the caller).
    Subscribe,
}

/// A streaming call and the non-streaming origin request that starts it.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamCall {
    pub kind: StreamKind,
    pub framing: Framing,
    pub origin_method: Method,
    /// Path and query on the origin.
    pub origin_path: String,
    pub origin_body: Option<Bytes>,
    /// The message names no task: it creates one.
    pub new_task: bool,
}

/// Routes a request. Anything the edge cannot read (bad JSON, unknown methods) is proxied, so the
/// origin gives the client its exact protocol error.
pub fn classify(method: &Method, path: &str, query: Option<&str>, body: &[u8]) -> EdgeRoute {
    if is_public_path(path) {
        return EdgeRoute::Card;
    }
    if path == PUBLISH_PATH {
        return EdgeRoute::Publish;
    }
    let with_query = |p: &str| match query {
        Some(q) => format!("{p}?{q}"),
        None => p.to_string(),
    };
    // `/v1/…` is the 0.3 HTTP+JSON binding (or a tenant named v1): the origin tells them apart by
    // the version header and streams those itself.
    if a2a_http::rest03::is_v03_path(path) {
        return EdgeRoute::Proxy;
    }
    let call = if path == "/" {
        if method != Method::POST {
            return EdgeRoute::Proxy;
        }
        jsonrpc_call(body, with_query("/"))
    } else {
        match rest::route(method, path) {
            Ok((Route::SendStreamingMessage, _)) => rest_send(path, body).map(|(p, b, new_task)| StreamCall {
                kind: StreamKind::Send,
                framing: Framing::Rest,
                origin_method: Method::POST,
                origin_path: with_query(&p),
                origin_body: Some(b),
                new_task,
            }),
            Ok((Route::SubscribeToTask { .. }, _)) => path.strip_suffix(":subscribe").map(|p| StreamCall {
                kind: StreamKind::Subscribe,
                framing: Framing::Rest,
                origin_method: Method::GET,
                origin_path: with_query(p),
                origin_body: None,
                new_task: false,
            }),
            _ => None,
        }
    };
    call.map_or(EdgeRoute::Proxy, EdgeRoute::Stream)
}

fn object(body: &[u8]) -> Option<Map<String, Value>> {
    match serde_json::from_slice(body) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

/// The message of a send request names no task.
fn opens_new_task(params: &Map<String, Value>) -> bool {
    let message = params.get("message");
    let task_id = message.and_then(|m| m.get("taskId").or_else(|| m.get("task_id")));
    task_id.and_then(Value::as_str).is_none_or(str::is_empty)
}

/// Sets `configuration.<key> = value` (replacing the snake_case spelling too).
fn configure(params: &mut Map<String, Value>, key: &str, snake: &str, value: bool) -> Option<()> {
    let config = params.entry("configuration").or_insert_with(|| Value::Object(Map::new()));
    let config = config.as_object_mut()?;
    config.remove(snake);
    config.insert(key.into(), Value::Bool(value));
    Some(())
}

fn rest_send(path: &str, body: &[u8]) -> Option<(String, Bytes, bool)> {
    let mut req = object(body)?;
    let new_task = opens_new_task(&req);
    configure(&mut req, "returnImmediately", "return_immediately", true)?;
    let prefix = path.strip_suffix("message:stream")?;
    Some((format!("{prefix}message:send"), Bytes::from(serde_json::to_vec(&req).ok()?), new_task))
}

fn jsonrpc_call(body: &[u8], origin_path: String) -> Option<StreamCall> {
    let mut req = object(body)?;
    if req.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return None;
    }
    let id = a2a_protocol::rpc_id::RpcId::from_value(req.get("id")?)?;
    let method = req.get("method").and_then(Value::as_str)?.to_string();
    let params = req.entry("params").or_insert_with(|| Value::Object(Map::new())).as_object_mut()?;
    let (kind, v03, origin_method) = match method.as_str() {
        "SendStreamingMessage" => {
            configure(params, "returnImmediately", "return_immediately", true)?;
            (StreamKind::Send, false, "SendMessage")
        }
        "message/stream" => {
            configure(params, "blocking", "blocking", false)?;
            (StreamKind::Send, true, "message/send")
        }
        "SubscribeToTask" => (StreamKind::Subscribe, false, "GetTask"),
        "tasks/resubscribe" => (StreamKind::Subscribe, true, "tasks/get"),
        _ => return None,
    };
    let new_task = kind == StreamKind::Send && opens_new_task(params);
    req.insert("method".into(), Value::String(origin_method.into()));
    Some(StreamCall {
        kind,
        framing: Framing::JsonRpc { id, v03 },
        origin_method: Method::POST,
        origin_path,
        origin_body: Some(Bytes::from(serde_json::to_vec(&req).ok()?)),
        new_task,
    })
}

/// The origin's answer to [`StreamCall`]'s request.
#[derive(Debug, Clone, Copy)]
pub struct OriginReply<'a> {
    pub status: u16,
    /// The [`a2a_protocol::sse::TASK_SEQ_HEADER`] header.
    pub task_seq: Option<&'a str>,
    pub body: &'a [u8],
}

/// How to answer the client.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// The origin refused (auth, validation, unknown task…): its response goes to the client as is.
    PassThrough,
    /// Refused at the edge, in the client's binding.
    Fail(A2aError),
    /// A stream of this one frame (the agent answered with a message, or the turn already ended).
    Single(Bytes),
    /// Attach the client to the task's hub.
    Attach { task_id: String, spec: SubscribeSpec },
    /// The origin's answer is not one the edge can continue from (an origin without the sequence
    /// header): forward the streaming call itself to the origin.
    Fallback,
}

/// Decides how to stream from the origin's answer; `last_event_id` is the client's resume point.
pub fn plan(call: &StreamCall, reply: OriginReply<'_>, last_event_id: Option<u64>) -> Plan {
    if reply.status != 200 {
        return Plan::PassThrough;
    }
    let Ok(mut body) = serde_json::from_slice::<Value>(reply.body) else {
        return Plan::Fallback;
    };
    let result = match &call.framing {
        Framing::Rest | Framing::Rest03 => body,
        Framing::JsonRpc { .. } => {
            if body.get("error").is_some() {
                return Plan::PassThrough;
            }
            body["result"].take()
        }
    };
    let decoded = match (&call.framing, call.kind) {
        (Framing::JsonRpc { v03: true, .. }, _) => {
            serde_json::from_value::<v03::Event>(result).ok().and_then(|e| e.into_v1().ok())
        }
        (_, StreamKind::Send) => serde_json::from_value::<SendMessageResponse>(result).ok().map(|r| match r {
            SendMessageResponse::Task(t) => StreamResponse::Task(t),
            SendMessageResponse::Message(m) => StreamResponse::Message(m),
        }),
        (_, StreamKind::Subscribe) => serde_json::from_value::<Task>(result).ok().map(StreamResponse::Task),
    };
    let task = match decoded {
        Some(StreamResponse::Task(task)) => task,
        Some(message @ StreamResponse::Message(_)) => return Plan::Single(call.framing.event(None, &message)),
        _ => return Plan::Fallback,
    };
    let Some(seq) = reply.task_seq.and_then(|s| s.trim().parse::<u64>().ok()) else {
        return Plan::Fallback;
    };
    let state = task.status.state;
    let task_id = task.id.clone();
    let opening = EventRecord { seq, event: StreamResponse::Task(task) };
    match call.kind {
        StreamKind::Send if state.ends_turn() => Plan::Single(call.framing.event(Some(seq), &opening.event)),
        StreamKind::Send => Plan::Attach {
            task_id,
            spec: SubscribeSpec {
                framing: call.framing.clone(),
                opening: Some(opening),
                after: seq,
                hold_opening: call.new_task,
                known: seq,
            },
        },
        StreamKind::Subscribe => {
            let resume = last_event_id.filter(|id| *id < seq);
            if state.is_terminal() && resume.is_none() {
                return Plan::Fail(
                    A2aError::unsupported(format!(
                        "task {task_id} is {state}: a terminal task cannot be subscribed to"
                    ))
                    .with("taskId", task_id),
                );
            }
            let spec = match last_event_id {
                Some(after) => SubscribeSpec {
                    framing: call.framing.clone(),
                    opening: None,
                    after,
                    hold_opening: false,
                    known: seq,
                },
                None => SubscribeSpec {
                    framing: call.framing.clone(),
                    opening: Some(opening),
                    after: seq,
                    hold_opening: false,
                    known: seq,
                },
            };
            Plan::Attach { task_id, spec }
        }
    }
}

/// An error response in the shape of the client's binding.
pub fn error_response(framing: &Framing, err: &A2aError) -> HttpResponse {
    match framing {
        Framing::Rest | Framing::Rest03 => rest_error(err),
        Framing::JsonRpc { id, .. } => jsonrpc_error_response(id, err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rpc(v: Value) -> a2a_protocol::rpc_id::RpcId {
        a2a_protocol::rpc_id::RpcId::from_value(&v).unwrap()
    }

    fn stream(route: EdgeRoute) -> StreamCall {
        match route {
            EdgeRoute::Stream(call) => call,
            other => panic!("not a stream: {other:?}"),
        }
    }

    fn body_of(call: &StreamCall) -> Value {
        serde_json::from_slice(call.origin_body.as_deref().unwrap()).unwrap()
    }

    #[test]
    fn routing_decisions() {
        let post = Method::POST;
        assert_eq!(classify(&Method::GET, a2a_engine::card::WELL_KNOWN_PATH, None, b""), EdgeRoute::Card);
        assert_eq!(classify(&Method::GET, a2a_engine::card::LEGACY_WELL_KNOWN_PATH, None, b""), EdgeRoute::Card);
        assert_eq!(classify(&post, PUBLISH_PATH, None, b"{}"), EdgeRoute::Publish);
        assert_eq!(classify(&post, "/message:send", None, b"{}"), EdgeRoute::Proxy);
        assert_eq!(classify(&Method::GET, "/tasks/t1", None, b""), EdgeRoute::Proxy);
        assert_eq!(classify(&Method::GET, "/tasks", None, b""), EdgeRoute::Proxy);
        assert_eq!(classify(&Method::GET, "/extendedAgentCard", None, b""), EdgeRoute::Proxy);
        // Unreadable streaming requests go to the origin, which names the problem.
        assert_eq!(classify(&post, "/message:stream", None, b"{oops"), EdgeRoute::Proxy);
        assert_eq!(classify(&post, "/", None, b"[]"), EdgeRoute::Proxy);
        assert_eq!(classify(&post, "/", None, br#"{"jsonrpc":"2.0","id":1,"method":"GetTask"}"#), EdgeRoute::Proxy);
        assert_eq!(classify(&post, "/", None, br#"{"jsonrpc":"2.0","method":"SubscribeToTask"}"#), EdgeRoute::Proxy);
    }

    #[test]
    fn rest_stream_calls() {
        let call =
            stream(classify(&Method::POST, "/acme/message:stream", Some("a=1"), br#"{"message":{"messageId":"m"}}"#));
        assert_eq!(
            (call.kind, call.origin_method.clone(), call.origin_path.as_str()),
            (StreamKind::Send, Method::POST, "/acme/message:send?a=1")
        );
        assert!(call.new_task);
        assert_eq!(body_of(&call)["configuration"]["returnImmediately"], true);
        let call = stream(classify(
            &Method::POST,
            "/message:stream",
            None,
            br#"{"message":{"taskId":"t"},"configuration":{"return_immediately":false,"historyLength":2}}"#,
        ));
        assert!(!call.new_task);
        assert_eq!(body_of(&call)["configuration"], json!({"historyLength": 2, "returnImmediately": true}));
        let call = stream(classify(&Method::GET, "/tasks/t1:subscribe", None, b""));
        assert_eq!(
            (call.kind, call.origin_method.clone(), call.origin_path.as_str()),
            (StreamKind::Subscribe, Method::GET, "/tasks/t1")
        );
        let call = stream(classify(&Method::POST, "/x/tasks/t1:subscribe", None, b""));
        assert_eq!(call.origin_path, "/x/tasks/t1");
    }

    #[test]
    fn jsonrpc_stream_calls() {
        let call = stream(classify(
            &Method::POST,
            "/",
            None,
            br#"{"jsonrpc":"2.0","id":"a","method":"SendStreamingMessage","params":{"message":{"messageId":"m"}}}"#,
        ));
        assert_eq!(call.framing, Framing::JsonRpc { id: rpc(json!("a")), v03: false });
        let body = body_of(&call);
        assert_eq!(
            (body["method"].as_str(), &body["params"]["configuration"]["returnImmediately"]),
            (Some("SendMessage"), &json!(true))
        );
        let call = stream(classify(
            &Method::POST,
            "/",
            None,
            br#"{"jsonrpc":"2.0","id":2,"method":"message/stream","params":{"message":{"taskId":"t","messageId":"m"}}}"#,
        ));
        assert!(!call.new_task);
        assert_eq!(call.framing, Framing::JsonRpc { id: rpc(json!(2)), v03: true });
        assert_eq!(body_of(&call)["params"]["configuration"]["blocking"], false);
        assert_eq!(body_of(&call)["method"], "message/send");
        let call = stream(classify(
            &Method::POST,
            "/",
            None,
            br#"{"jsonrpc":"2.0","id":3,"method":"tasks/resubscribe","params":{"id":"t"}}"#,
        ));
        assert_eq!((call.kind, body_of(&call)["method"].as_str()), (StreamKind::Subscribe, Some("tasks/get")));
        let call = stream(classify(
            &Method::POST,
            "/",
            None,
            br#"{"jsonrpc":"2.0","id":4,"method":"SubscribeToTask","params":{"id":"t"}}"#,
        ));
        assert_eq!(body_of(&call)["method"], "GetTask");
    }

    fn task_json(state: &str) -> Value {
        json!({"id": "t", "contextId": "c", "status": {"state": state}})
    }

    fn reply<'a>(status: u16, seq: Option<&'a str>, body: &'a [u8]) -> OriginReply<'a> {
        OriginReply { status, task_seq: seq, body }
    }

    #[test]
    fn plans_from_origin_answers() {
        let send = stream(classify(&Method::POST, "/message:stream", None, br#"{"message":{"messageId":"m"}}"#));
        assert_eq!(plan(&send, reply(400, None, b"{}"), None), Plan::PassThrough);
        let body = serde_json::to_vec(&json!({"task": task_json("TASK_STATE_SUBMITTED")})).unwrap();
        assert_eq!(plan(&send, reply(200, None, &body), None), Plan::Fallback);
        match plan(&send, reply(200, Some("0"), &body), None) {
            Plan::Attach { task_id, spec } => {
                assert_eq!((task_id.as_str(), spec.after, spec.hold_opening), ("t", 0, true));
                assert_eq!(spec.opening.unwrap().seq, 0);
            }
            other => panic!("{other:?}"),
        }
        let done = serde_json::to_vec(&json!({"task": task_json("TASK_STATE_COMPLETED")})).unwrap();
        assert!(
            matches!(plan(&send, reply(200, Some("4"), &done), None), Plan::Single(f) if f.starts_with(b"id: 4\n"))
        );
        let msg = serde_json::to_vec(
            &json!({"message": {"messageId": "r", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}}),
        )
        .unwrap();
        assert!(matches!(plan(&send, reply(200, None, &msg), None), Plan::Single(_)));
    }

    #[test]
    fn subscribe_plans() {
        let sub = stream(classify(&Method::GET, "/tasks/t:subscribe", None, b""));
        let working = serde_json::to_vec(&task_json("TASK_STATE_WORKING")).unwrap();
        match plan(&sub, reply(200, Some("3"), &working), Some(1)) {
            Plan::Attach { spec, .. } => assert_eq!((spec.opening, spec.after, spec.known), (None, 1, 3)),
            other => panic!("{other:?}"),
        }
        let done = serde_json::to_vec(&task_json("TASK_STATE_COMPLETED")).unwrap();
        match plan(&sub, reply(200, Some("3"), &done), None) {
            Plan::Fail(e) => assert_eq!(e.kind, a2a_protocol::ErrorKind::UnsupportedOperation),
            other => panic!("{other:?}"),
        }
        // A client that still misses events of a finished task gets them.
        assert!(matches!(plan(&sub, reply(200, Some("3"), &done), Some(2)), Plan::Attach { .. }));
        assert!(matches!(plan(&sub, reply(200, Some("3"), &done), Some(3)), Plan::Fail(_)));
        let rpc = stream(classify(
            &Method::POST,
            "/",
            None,
            br#"{"jsonrpc":"2.0","id":9,"method":"tasks/resubscribe","params":{"id":"t"}}"#,
        ));
        let err = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 9, "error": {"code": -32001, "message": "no"}}))
            .unwrap();
        assert_eq!(plan(&rpc, reply(200, None, &err), None), Plan::PassThrough);
        let v03 = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 9, "result": {"kind": "task", "id": "t", "contextId": "c", "status": {"state": "working"}}})).unwrap();
        assert!(matches!(plan(&rpc, reply(200, Some("5"), &v03), None), Plan::Attach { spec, .. } if spec.after == 5));
    }
}
