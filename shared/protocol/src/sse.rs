//! Server-Sent Events framing: `id:` carries the task's event sequence number so that a client can
//! resume with `Last-Event-ID`; `: keep-alive` comments keep idle connections open. [`Framing`]
//! writes protocol events in the shape of each binding (used by the origin and the edge alike);
//! [`SseDecoder`] reads a stream back into events (the client, and agents over HTTP that answer
//! with SSE).

use std::sync::OnceLock;

use bytes::Bytes;

use crate::error::A2aError;
use crate::lines::LineBuffer;
use crate::rpc_id::{error_body, result_body_around, RpcId};
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
        self.frame(seq, &Payload::of(self).encode(event))
    }

    /// [`Framing::event`] of a shared event: its payload for this framing is encoded once, by the
    /// first stream that sends it, and copied by the others.
    pub fn shared(&self, event: &SharedEvent) -> Bytes {
        self.frame(Some(event.seq), event.payload(Payload::of(self)))
    }

    /// The SSE frame of an encoded payload.
    fn frame(&self, seq: Option<u64>, payload: &str) -> Bytes {
        match self {
            Self::Rest | Self::Rest03 => frame(seq, None, payload),
            Self::JsonRpc { id, .. } => frame(seq, None, &result_body_around(id, payload)),
        }
    }

    pub fn error(&self, err: &A2aError) -> Bytes {
        match self {
            Self::Rest | Self::Rest03 => frame(None, Some("error"), &err.to_rest().to_string()),
            Self::JsonRpc { id, .. } => frame(None, None, &String::from_utf8_lossy(&error_body(id, &err.to_jsonrpc()))),
        }
    }
}

/// The JSON a stream event is written in, which several framings share (the 1.0 event is the
/// HTTP+JSON event and the JSON-RPC result alike).
#[derive(Debug, Clone, Copy)]
enum Payload {
    V1,
    /// The 0.3 proto's StreamResponse JSON (0.3 HTTP+JSON).
    Rest03,
    /// The 0.3 JSON-RPC result.
    JsonRpc03,
}

impl Payload {
    const COUNT: usize = 3;

    fn of(framing: &Framing) -> Self {
        match framing {
            Framing::Rest | Framing::JsonRpc { v03: false, .. } => Self::V1,
            Framing::Rest03 => Self::Rest03,
            Framing::JsonRpc { v03: true, .. } => Self::JsonRpc03,
        }
    }

    fn encode(self, event: &StreamResponse) -> String {
        let text = match self {
            Self::V1 => serde_json::to_string(event),
            Self::Rest03 => serde_json::to_string(&v03::proto::event_out(event)),
            Self::JsonRpc03 => serde_json::to_string(&v03::Event::from(event)),
        };
        text.unwrap_or_else(|_| "null".into())
    }
}

/// One event of a task's log as every stream that sends it shares it (each gets an `Arc` of it):
/// the JSON of each payload kind is encoded at most once, so fanning an event out to many
/// subscribers costs one encoding per kind, not one per subscriber.
#[derive(Debug)]
pub struct SharedEvent {
    /// The event's sequence number (its SSE id).
    pub seq: u64,
    pub event: StreamResponse,
    payloads: [OnceLock<String>; Payload::COUNT],
}

impl SharedEvent {
    pub fn new(seq: u64, event: StreamResponse) -> Self {
        Self { seq, event, payloads: Default::default() }
    }

    fn payload(&self, kind: Payload) -> &str {
        self.payloads[kind as usize].get_or_init(|| kind.encode(&self.event))
    }
}

impl PartialEq for SharedEvent {
    fn eq(&self, other: &Self) -> bool {
        self.seq == other.seq && self.event == other.event
    }
}

/// Parses `Last-Event-ID` (a decimal sequence number; anything else is ignored).
pub fn last_event_id(headers: &http::HeaderMap) -> Option<u64> {
    headers.get("last-event-id").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse().ok())
}

/// One event of an SSE stream as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseFrame {
    pub id: Option<String>,
    pub data: String,
}

/// Why a stream could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseError {
    NotUtf8,
    /// An event grew past the decoder's limit (bytes).
    TooLarge(usize),
}

impl std::fmt::Display for SseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SseError::NotUtf8 => write!(f, "is not UTF-8"),
            SseError::TooLarge(max) => write!(f, "has an event larger than {max} bytes"),
        }
    }
}

/// Cuts an SSE byte stream into events, whatever the chunk boundaries (`data:` lines joined, `id:`
/// kept, comments and other fields skipped), each at most `max` bytes (memory stays bounded
/// whatever the peer sends), in time linear in the bytes received ([`LineBuffer`]).
#[derive(Debug)]
pub struct SseDecoder {
    lines: LineBuffer,
    data: Option<String>,
    id: Option<String>,
    max: usize,
}

impl SseDecoder {
    pub fn new(max: usize) -> Self {
        Self { lines: LineBuffer::new(), data: None, id: None, max }
    }

    /// The events `chunk` completes.
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<SseFrame>, SseError> {
        self.lines.extend(chunk);
        let mut out = Vec::new();
        while let Some(raw) = self.lines.next_line() {
            let line = std::str::from_utf8(&raw).map_err(|_| SseError::NotUtf8)?;
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if let Some(data) = self.data.take() {
                    out.push(SseFrame { id: self.id.take(), data });
                }
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "data" => {
                    let data = self.data.get_or_insert_with(String::new);
                    if !data.is_empty() {
                        data.push('\n');
                    }
                    data.push_str(value);
                }
                "id" => self.id = Some(value.to_string()),
                _ => {} // comments (keep-alives), event, retry
            }
            // Checked per line too: many small `data:` lines add up to one event.
            if self.data.as_ref().map_or(0, String::len) > self.max {
                return Err(SseError::TooLarge(self.max));
            }
        }
        if self.lines.pending().len() + self.data.as_ref().map_or(0, String::len) > self.max {
            return Err(SseError::TooLarge(self.max));
        }
        Ok(out)
    }

    /// Whether the stream stopped in the middle of an event.
    pub fn cut_off(&self) -> bool {
        !self.lines.pending().iter().all(u8::is_ascii_whitespace) || self.data.is_some()
    }

    /// Bytes searched for line ends so far: each received byte once.
    pub fn bytes_scanned(&self) -> u64 {
        self.lines.bytes_scanned()
    }
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

    /// One shared event framed for every binding and version: the same bytes as framing it alone,
    /// the JSON-RPC frame the envelope `result_body` writes, each payload encoded once and reused.
    #[test]
    fn a_shared_event_frames_like_a_lone_one() {
        use crate::types::{Message, Part};
        let mut message = Message::agent_text("a \"quoted\" line\nand another");
        message.parts.push(Part::text("more"));
        let shared = SharedEvent::new(9, StreamResponse::Message(message));
        let framings = [
            Framing::Rest,
            Framing::Rest03,
            Framing::JsonRpc { id: rpc("\"r-1\""), v03: false },
            Framing::JsonRpc { id: rpc("7"), v03: true },
        ];
        for framing in &framings {
            assert_eq!(framing.shared(&shared), framing.event(Some(9), &shared.event), "{framing:?}");
        }
        for (framing, id) in [(&framings[2], serde_json::json!("r-1")), (&framings[3], serde_json::json!(7))] {
            let frame = framing.shared(&shared);
            let data = std::str::from_utf8(&frame).unwrap().strip_prefix("id: 9\ndata: ").unwrap().trim_end();
            let body: serde_json::Value = serde_json::from_str(data).unwrap();
            let FrameBody { jsonrpc, id: got, .. } = serde_json::from_value(body.clone()).unwrap();
            assert_eq!((jsonrpc.as_str(), got), ("2.0", id));
            let expected: serde_json::Value =
                serde_json::from_slice(&crate::rpc_id::result_body(&rpc(&body["id"].to_string()), &body["result"]))
                    .unwrap();
            assert_eq!(body, expected);
        }
        let first = shared.payload(Payload::V1).as_ptr();
        framings[2].shared(&shared);
        assert_eq!(shared.payload(Payload::V1).as_ptr(), first, "the 1.0 payload is encoded once");
        assert!(shared.payloads.iter().all(|p| p.get().is_some()));
    }

    #[derive(serde::Deserialize)]
    struct FrameBody {
        jsonrpc: String,
        id: serde_json::Value,
    }

    #[test]
    fn events_arrive_whatever_the_cuts() {
        let text = ": keep-alive\n\nid: 1\ndata: {\"a\":\ndata: 1}\n\nid: 2\r\nevent: x\r\ndata: b\r\n\r\n";
        for cut in 1..text.len() {
            let mut d = SseDecoder::new(1 << 20);
            let mut frames = d.push(&text.as_bytes()[..cut]).unwrap();
            frames.extend(d.push(&text.as_bytes()[cut..]).unwrap());
            assert_eq!(
                frames,
                [
                    SseFrame { id: Some("1".into()), data: "{\"a\":\n1}".into() },
                    SseFrame { id: Some("2".into()), data: "b".into() }
                ],
                "cut at {cut}"
            );
            assert!(!d.cut_off());
        }
    }

    /// Byte by byte, `\r\n` and `\n` lines alike: the delimiters split across chunks.
    #[test]
    fn split_delimiters() {
        let text = "data: a\r\n\r\ndata: b\n\ndata: c\r\ndata: d\r\n\n";
        let mut d = SseDecoder::new(1 << 20);
        let mut frames = Vec::new();
        for byte in text.as_bytes() {
            frames.extend(d.push(std::slice::from_ref(byte)).unwrap());
        }
        let data: Vec<_> = frames.iter().map(|f| f.data.as_str()).collect();
        assert_eq!(data, ["a", "b", "c\nd"]);
        assert!(!d.cut_off());
        assert_eq!(d.bytes_scanned(), text.len() as u64);
    }

    /// A 15 MiB event in 4 KiB chunks: each byte is searched once (the decoder used to search the
    /// whole unfinished line again for every chunk: ~29 GB here, seconds of CPU).
    #[test]
    fn a_large_event_in_small_chunks_costs_linear_work() {
        let size = 15 << 20;
        let mut d = SseDecoder::new(16 << 20);
        assert!(d.push(b"id: 7\ndata: ").unwrap().is_empty());
        let chunk = [b'x'; 4096];
        let mut fed = "id: 7\ndata: ".len() as u64;
        for _ in 0..size / chunk.len() {
            assert!(d.push(&chunk).unwrap().is_empty());
            fed += chunk.len() as u64;
            assert!(d.bytes_scanned() <= fed, "{} bytes scanned for {fed} received", d.bytes_scanned());
        }
        let frames = d.push(b"\n\n").unwrap();
        assert_eq!((frames.len(), frames[0].data.len(), frames[0].id.as_deref()), (1, size, Some("7")));
        let total = (size + "id: 7\ndata: \n\n".len()) as u64;
        assert_eq!(d.bytes_scanned(), total);
    }

    #[test]
    fn an_unfinished_or_oversized_event_is_named() {
        let mut d = SseDecoder::new(16);
        d.push(b"data: {\"a\"").unwrap();
        assert!(d.cut_off());
        assert_eq!(d.push(&[b'x'; 32]).unwrap_err(), SseError::TooLarge(16));
        assert_eq!(SseDecoder::new(16).push(b"data: \xff\n").unwrap_err(), SseError::NotUtf8);
    }
}
