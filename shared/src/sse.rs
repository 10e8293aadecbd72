//! Server-Sent Events framing: `id:` carries the task's event sequence number so that a client can
//! resume with `Last-Event-ID`; `: keep-alive` comments keep idle connections open. [`Framing`]
//! writes protocol events in the shape of each binding (used by the origin and the edge alike).

use bytes::Bytes;
use futures::stream::BoxStream;
use serde_json::Value;

use crate::error::A2aError;
use crate::rpc_id::{error_body, result_body, RpcId};
use crate::types::StreamResponse;
use crate::v03;

pub const CONTENT_TYPE: &str = "text/event-stream";
/// Response header of GetTask and SendMessage: the sequence number of the last task event the
/// returned task reflects. An edge hub continues a stream right after it.
pub const TASK_SEQ_HEADER: &str = "a2a-task-seq";
pub const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";
/// Interval between keep-alive comments on an idle stream.
pub const KEEP_ALIVE_EVERY: std::time::Duration = std::time::Duration::from_secs(15);

/// One SSE event. `data` must be a single line (compact JSON is).
pub fn frame(id: Option<u64>, event: Option<&str>, data: &str) -> Bytes {
    let mut out = String::with_capacity(data.len() + 32);
    if let Some(id) = id {
        out.push_str("id: ");
        out.push_str(&id.to_string());
        out.push('\n');
    }
    if let Some(event) = event {
        out.push_str("event: ");
        out.push_str(event);
        out.push('\n');
    }
    for line in data.split('\n') {
        out.push_str("data: ");
        out.push_str(line);
        out.push('\n');
    }
    out.push('\n');
    Bytes::from(out)
}

/// How a binding writes stream events: HTTP+JSON sends the StreamResponse itself (errors as
/// `event: error` with an AIP-193 body), in 1.0 ProtoJSON or in the 0.3 proto's JSON; JSON-RPC wraps
/// each in a response carrying the request id, in the payload version of the method that opened
/// the stream.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "binding", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum Framing {
    Rest,
    /// The 0.3 HTTP+JSON binding: the 0.3 proto's StreamResponse JSON.
    Rest03,
    JsonRpc {
        id: RpcId,
        v03: bool,
    },
}

impl Framing {
    pub fn event(&self, seq: Option<u64>, event: &StreamResponse) -> Bytes {
        match self {
            Self::Rest => frame(seq, None, &serde_json::to_string(event).unwrap_or_default()),
            Self::Rest03 => frame(seq, None, &v03::proto::event_out(event).to_string()),
            Self::JsonRpc { id, v03 } => {
                let result =
                    if *v03 { serde_json::to_value(v03::Event::from(event)) } else { serde_json::to_value(event) };
                let body = result_body(id, &result.unwrap_or(Value::Null));
                frame(seq, None, &String::from_utf8_lossy(&body))
            }
        }
    }

    pub fn error(&self, err: &A2aError) -> Bytes {
        match self {
            Self::Rest | Self::Rest03 => frame(None, Some("error"), &err.to_rest().to_string()),
            Self::JsonRpc { id, .. } => frame(None, None, &String::from_utf8_lossy(&error_body(id, &err.to_jsonrpc()))),
        }
    }
}

/// Parses `Last-Event-ID` (a decimal sequence number; anything else is ignored).
pub fn last_event_id(headers: &http::HeaderMap) -> Option<u64> {
    headers.get("last-event-id").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse().ok())
}

/// Interleaves keep-alive comments into an SSE byte stream whenever it is idle for `every`.
#[cfg(feature = "runtime")]
pub fn with_keepalive(inner: BoxStream<'static, Bytes>, every: std::time::Duration) -> BoxStream<'static, Bytes> {
    use futures::StreamExt;
    let state = (inner, false);
    futures::stream::unfold(state, move |(mut inner, done)| async move {
        if done {
            return None;
        }
        match tokio::time::timeout(every, inner.next()).await {
            Ok(Some(bytes)) => Some((bytes, (inner, false))),
            Ok(None) => None,
            Err(_) => Some((Bytes::from_static(KEEP_ALIVE), (inner, false))),
        }
    })
    .boxed()
}

/// Without a runtime there is no timer: the stream passes through unchanged.
#[cfg(not(feature = "runtime"))]
pub fn with_keepalive(inner: BoxStream<'static, Bytes>, _every: std::time::Duration) -> BoxStream<'static, Bytes> {
    inner
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames() {
        assert_eq!(&frame(Some(3), None, "{}")[..], b"id: 3\ndata: {}\n\n");
        assert_eq!(&frame(None, Some("error"), "a\nb")[..], b"event: error\ndata: a\ndata: b\n\n");
    }

    fn rpc(text: &str) -> RpcId {
        RpcId::from_value(&serde_json::from_str(text).unwrap()).unwrap()
    }

    #[test]
    fn framing_per_binding() {
        use crate::types::{TaskState, TaskStatus, TaskStatusUpdateEvent};
        let status = TaskStatus { state: TaskState::Completed, message: None, timestamp: None };
        let ev = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            status,
            metadata: None,
        });
        let rest = Framing::Rest.event(Some(4), &ev);
        assert!(rest.starts_with(b"id: 4\ndata: {\"statusUpdate\":"), "{rest:?}");
        let framed = Framing::JsonRpc { id: rpc("\"r\""), v03: false }.event(Some(4), &ev);
        assert!(String::from_utf8_lossy(&framed).contains(r#""id":"r","result":{"statusUpdate""#));
        let old = String::from_utf8_lossy(&Framing::JsonRpc { id: rpc("1"), v03: true }.event(None, &ev)).into_owned();
        assert!(old.contains(r#""kind":"status-update""#) && old.contains(r#""final":true"#), "{old}");
        let err = A2aError::task_not_found("t");
        assert!(Framing::Rest.error(&err).starts_with(b"event: error\n"));
        assert!(String::from_utf8_lossy(&Framing::JsonRpc { id: rpc("1"), v03: false }.error(&err)).contains("-32001"));
    }
}
