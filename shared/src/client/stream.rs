//! Streams: the SSE answer of SendStreamingMessage or SubscribeToTask read event by event, and
//! resumed when the connection drops before the turn ends: SubscribeToTask again with
//! `Last-Event-ID` set to the last sequence number seen (bounded attempts, growing delays), events
//! already delivered skipped, so none is lost or repeated. A task that finished while the client was
//! away is still delivered (the agent replays what the client missed, or the client reads the task).

use std::collections::VecDeque;
use std::time::Duration;

use bytes::BytesMut;
use futures::StreamExt;
use serde_json::{json, Value};

use super::transport::unexpected;
use super::{Binding, Client, ClientError, ClientResult, Event, EventStream};
use crate::error::{A2aError, ErrorKind};
use crate::types::{GetTaskRequest, SendMessageRequest, StreamResponse};

/// Largest SSE event read.
const MAX_EVENT: usize = 16 * 1024 * 1024;
const FIRST_DELAY: Duration = Duration::from_millis(200);
const MAX_DELAY: Duration = Duration::from_secs(5);

pub(crate) enum Start {
    Send(SendMessageRequest),
    Subscribe { task_id: String, after: Option<u64> },
}

pub(crate) async fn open(client: Client, start: Start) -> ClientResult<EventStream> {
    let (method, params, after) = match &start {
        Start::Send(req) => ("SendStreamingMessage", serde_json::to_value(req).unwrap_or_default(), None),
        Start::Subscribe { task_id, after } => ("SubscribeToTask", json!({"id": task_id}), *after),
    };
    let resp = events_of(&client, client.send(method, &params, after).await?).await?;
    let task_id = match start {
        Start::Subscribe { task_id, .. } => Some(task_id),
        Start::Send(_) => None,
    };
    let state = State {
        client,
        resp: Some(resp),
        decoder: SseDecoder::default(),
        pending: VecDeque::new(),
        task_id,
        last_seq: after,
        ended: false,
        attempts: 0,
    };
    Ok(futures::stream::unfold(state, next).boxed())
}

/// The answer if it is an event stream; its error otherwise.
async fn events_of(client: &Client, resp: reqwest::Response) -> ClientResult<reqwest::Response> {
    let status = resp.status().as_u16();
    let is_sse = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if is_sse && status == 200 {
        return Ok(resp);
    }
    let body = resp.bytes().await?;
    let value: Value = serde_json::from_slice(&body).map_err(|_| unexpected(status, &body))?;
    Err(match (client.binding, value.get("error")) {
        (Binding::JsonRpc | Binding::JsonRpc03, Some(error)) => ClientError::Protocol(A2aError::from_jsonrpc(error)),
        (Binding::HttpJson, Some(_)) => ClientError::Protocol(A2aError::from_rest(status, &value)),
        _ => unexpected(status, &body),
    })
}

struct State {
    client: Client,
    resp: Option<reqwest::Response>,
    decoder: SseDecoder,
    pending: VecDeque<Event>,
    task_id: Option<String>,
    last_seq: Option<u64>,
    ended: bool,
    attempts: u32,
}

async fn next(mut st: State) -> Option<(ClientResult<Event>, State)> {
    loop {
        if let Some(ev) = st.pending.pop_front() {
            return Some((Ok(ev), st));
        }
        if st.ended {
            return None;
        }
        let resp = st.resp.as_mut()?;
        let chunk = tokio::time::timeout(st.client.options.timeout, resp.chunk()).await;
        let failure = match chunk {
            Ok(Ok(Some(bytes))) => match st.take(&bytes) {
                Ok(()) => continue,
                Err(e) => Some(e),
            },
            // The connection ended (or broke, or went silent) before the turn did.
            _ => match st.resume().await {
                Ok(()) => continue,
                Err(e) => Some(e),
            },
        };
        st.ended = true;
        st.pending.clear();
        return failure.map(|e| (Err(e), st));
    }
}

impl State {
    /// Reads the events in `bytes`.
    fn take(&mut self, bytes: &[u8]) -> ClientResult<()> {
        for frame in self.decoder.push(bytes).map_err(ClientError::InvalidResponse)? {
            let seq = frame.id.as_deref().and_then(|id| id.trim().parse::<u64>().ok());
            if seq.is_some_and(|s| self.last_seq.is_some_and(|last| s <= last)) {
                continue; // delivered before the connection dropped
            }
            let event = self.read(&frame.data)?;
            if self.task_id.is_none() && !event.task_id().is_empty() {
                self.task_id = Some(event.task_id().to_string());
            }
            self.last_seq = seq.or(self.last_seq);
            // A message without a task, or a terminal or interrupted state, ends the stream.
            self.ended = event.ends_turn() || (matches!(event, StreamResponse::Message(_)) && self.task_id.is_none());
            self.pending.push_back(Event { seq, event });
            if self.ended {
                break;
            }
        }
        Ok(())
    }

    fn read(&self, data: &str) -> ClientResult<StreamResponse> {
        let value: Value = serde_json::from_str(data)
            .map_err(|e| ClientError::InvalidResponse(format!("a stream event is not JSON: {e}")))?;
        let payload = match self.client.binding {
            Binding::JsonRpc | Binding::JsonRpc03 => match (value.get("error"), value.get("result")) {
                (Some(error), _) => return Err(ClientError::Protocol(A2aError::from_jsonrpc(error))),
                (None, Some(result)) if self.client.binding == Binding::JsonRpc03 => {
                    return super::v03::event(result.clone());
                }
                (None, Some(result)) => result.clone(),
                _ => return Err(ClientError::InvalidResponse("a stream event is not a JSON-RPC response".into())),
            },
            Binding::HttpJson if value.get("error").is_some() => {
                return Err(ClientError::Protocol(A2aError::from_rest(200, &value)))
            }
            Binding::HttpJson => value,
        };
        serde_json::from_value(payload)
            .map_err(|e| ClientError::InvalidResponse(format!("a stream event is not a StreamResponse: {e}")))
    }

    /// Subscribes again after the last event seen; a task that ended meanwhile is read instead.
    async fn resume(&mut self) -> ClientResult<()> {
        self.resp = None;
        let task_id = self.task_id.clone().ok_or_else(|| {
            ClientError::Transport("the stream ended before it named its task; it cannot be resumed".into())
        })?;
        let params = json!({"id": task_id});
        loop {
            self.attempts += 1;
            if self.attempts > self.client.options.resume_attempts {
                return Err(ClientError::Transport(format!(
                    "the stream of task {task_id} dropped; {} reconnections failed",
                    self.client.options.resume_attempts
                )));
            }
            let factor = 2u32.saturating_pow(self.attempts - 1);
            tokio::time::sleep(FIRST_DELAY.saturating_mul(factor).min(MAX_DELAY)).await;
            self.decoder = SseDecoder::default();
            let sent = match self.client.send("SubscribeToTask", &params, self.last_seq).await {
                Ok(resp) => events_of(&self.client, resp).await,
                Err(e) => Err(e),
            };
            match sent {
                Ok(resp) => {
                    self.resp = Some(resp);
                    return Ok(());
                }
                // Finished, and nothing left to replay from where the client is: the task as it ended.
                Err(ClientError::Protocol(e)) if e.kind == ErrorKind::UnsupportedOperation => {
                    let req = GetTaskRequest { tenant: String::new(), id: task_id.clone(), history_length: None };
                    let task = self.client.get_task(req).await?;
                    self.pending.push_back(Event { seq: None, event: StreamResponse::Task(task) });
                    self.ended = true;
                    return Ok(());
                }
                Err(e @ ClientError::Protocol(_)) => return Err(e),
                Err(_) => continue, // not reachable yet: try again
            }
        }
    }
}

/// One event of an SSE stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseFrame {
    pub id: Option<String>,
    pub data: String,
}

/// Cuts an SSE byte stream into events, whatever the chunk boundaries (`data:` lines joined, `id:`
/// kept, comments and other fields skipped), each at most [`MAX_EVENT`] bytes.
#[derive(Debug, Default)]
pub struct SseDecoder {
    buf: BytesMut,
    data: Option<String>,
    id: Option<String>,
}

impl SseDecoder {
    pub fn push(&mut self, chunk: &[u8]) -> Result<Vec<SseFrame>, String> {
        self.buf.extend_from_slice(chunk);
        let mut out = Vec::new();
        while let Some(i) = self.buf.iter().position(|b| *b == b'\n') {
            let raw = self.buf.split_to(i + 1);
            let line = std::str::from_utf8(&raw).map_err(|_| "the stream is not UTF-8".to_string())?;
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
        }
        if self.buf.len() + self.data.as_ref().map_or(0, String::len) > MAX_EVENT {
            return Err(format!("a stream event is larger than {MAX_EVENT} bytes"));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_arrive_whatever_the_cuts() {
        let text = ": keep-alive\n\nid: 1\ndata: {\"a\":\ndata: 1}\n\nid: 2\r\nevent: x\r\ndata: b\r\n\r\n";
        for cut in 1..text.len() {
            let mut d = SseDecoder::default();
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
        }
    }
}
