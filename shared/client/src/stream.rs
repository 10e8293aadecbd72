//! Streams: the SSE answer (or the gRPC server stream) of SendStreamingMessage or SubscribeToTask
//! read event by event, and resumed when the connection drops before the turn ends: SubscribeToTask
//! again with `Last-Event-ID` (gRPC: `last-event-id` metadata) set to the last sequence number seen
//! (bounded attempts, growing delays), events already delivered skipped, so none is lost or repeated. A task that finished while the client was
//! away is still delivered (the agent replays what the client missed, or the client reads the task).
//!
//! Bounds, whatever the agent sends: each event at most `max_answer_bytes`, each read within
//! `timeout` (a silence counts as a dropped connection), the whole stream within `stream_time`.

use std::collections::VecDeque;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{json, Value};
use tokio::time::Instant;

use super::transport::unexpected;
use super::{Binding, Client, ClientError, ClientResult, Event, EventStream};
use a2a_protocol::error::{A2aError, ErrorKind};
use a2a_protocol::sse::SseDecoder;
use a2a_protocol::types::{GetTaskRequest, SendMessageRequest, StreamResponse};

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
    let deadline = Instant::now() + client.options.stream_time;
    let limit = client.options.stream_time;
    let source = tokio::time::timeout_at(deadline, Source::open(&client, method, &params, after))
        .await
        .map_err(|_| ClientError::TooLong(limit))??;
    let task_id = match start {
        Start::Subscribe { task_id, .. } => Some(task_id),
        Start::Send(_) => None,
    };
    let state = State {
        client,
        source: Some(source),
        pending: VecDeque::new(),
        task_id,
        last_seq: after,
        ended: false,
        attempts: 0,
        deadline,
    };
    Ok(futures::stream::unfold(state, next).boxed())
}

/// Where the events come from: an SSE answer, or a gRPC server stream.
enum Source {
    Sse { resp: reqwest::Response, decoder: SseDecoder },
    Grpc(super::grpc::Messages),
}

/// A stream's events, numbered when the agent numbers them.
type Numbered = Vec<(Option<u64>, StreamResponse)>;

impl Source {
    async fn open(client: &Client, method: &str, params: &Value, after: Option<u64>) -> ClientResult<Self> {
        if client.binding == Binding::Grpc {
            return Ok(Self::Grpc(client.grpc_stream(method, params, after).await?));
        }
        let resp = events_of(client, client.send(method, params, after).await?).await?;
        Ok(Self::Sse { resp, decoder: SseDecoder::new(client.options.max_answer_bytes) })
    }

    /// The next events; `None` when the connection ended, broke or went silent.
    async fn pull(&mut self, client: &Client) -> ClientResult<Option<Numbered>> {
        let (resp, decoder) = match self {
            Self::Grpc(messages) => return Ok(messages.next(client.options.timeout).await?.map(|one| vec![one])),
            Self::Sse { resp, decoder } => (resp, decoder),
        };
        let Ok(Ok(Some(bytes))) = tokio::time::timeout(client.options.timeout, resp.chunk()).await else {
            return Ok(None);
        };
        let frames = decoder.push(&bytes).map_err(|e| match e {
            a2a_protocol::sse::SseError::TooLarge(max) => ClientError::TooLarge(max),
            e => ClientError::InvalidResponse(format!("the stream {e}")),
        })?;
        frames
            .into_iter()
            .map(|frame| {
                let seq = frame.id.as_deref().and_then(|id| id.trim().parse::<u64>().ok());
                Ok((seq, read(client.binding, &frame.data)?))
            })
            .collect::<ClientResult<_>>()
            .map(Some)
    }
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
    // Not a stream: an error to read whole, within the same bounds as any answer.
    let body = super::body::read(resp, client.options.max_answer_bytes, client.options.timeout).await?;
    let value: Value = serde_json::from_slice(&body).map_err(|_| unexpected(status, &body))?;
    Err(match (client.binding, value.get("error")) {
        (Binding::JsonRpc | Binding::JsonRpc03, Some(error)) => ClientError::Protocol(A2aError::from_jsonrpc(error)),
        (Binding::HttpJson | Binding::Grpc, Some(_)) => ClientError::Protocol(A2aError::from_rest(status, &value)),
        _ => unexpected(status, &body),
    })
}

/// One SSE event's data as a stream response (or the protocol error it carries).
fn read(binding: Binding, data: &str) -> ClientResult<StreamResponse> {
    let value: Value = serde_json::from_str(data)
        .map_err(|e| ClientError::InvalidResponse(format!("a stream event is not JSON: {e}")))?;
    let payload = match binding {
        Binding::JsonRpc | Binding::JsonRpc03 => match (value.get("error"), value.get("result")) {
            (Some(error), _) => return Err(ClientError::Protocol(A2aError::from_jsonrpc(error))),
            (None, Some(result)) if binding == Binding::JsonRpc03 => return super::v03::event(result.clone()),
            (None, Some(result)) => result.clone(),
            _ => return Err(ClientError::InvalidResponse("a stream event is not a JSON-RPC response".into())),
        },
        Binding::HttpJson | Binding::Grpc if value.get("error").is_some() => {
            return Err(ClientError::Protocol(A2aError::from_rest(200, &value)))
        }
        Binding::HttpJson | Binding::Grpc => value,
    };
    serde_json::from_value(payload)
        .map_err(|e| ClientError::InvalidResponse(format!("a stream event is not a StreamResponse: {e}")))
}

struct State {
    client: Client,
    source: Option<Source>,
    pending: VecDeque<Event>,
    task_id: Option<String>,
    last_seq: Option<u64>,
    ended: bool,
    attempts: u32,
    /// When the stream must have ended (`stream_time` after it was opened).
    deadline: Instant,
}

async fn next(mut st: State) -> Option<(ClientResult<Event>, State)> {
    loop {
        if let Some(ev) = st.pending.pop_front() {
            return Some((Ok(ev), st));
        }
        if st.ended {
            return None;
        }
        let (deadline, limit) = (st.deadline, st.client.options.stream_time);
        let too_long = |_| ClientError::TooLong(limit);
        let pulled = match st.source.as_mut() {
            Some(source) => tokio::time::timeout_at(deadline, source.pull(&st.client)).await.map_err(too_long),
            None => return None,
        };
        let failure = match pulled.and_then(|p| p) {
            Ok(Some(events)) => {
                st.take(events);
                continue;
            }
            // The connection ended (or broke, or went silent) before the turn did.
            Ok(None) => match tokio::time::timeout_at(deadline, st.resume()).await.map_err(too_long) {
                Ok(Ok(())) => continue,
                Ok(Err(e)) | Err(e) => Some(e),
            },
            Err(e) => Some(e),
        };
        st.ended = true;
        st.pending.clear();
        return failure.map(|e| (Err(e), st));
    }
}

impl State {
    /// Queues the events not delivered before, up to the one that ends the turn.
    fn take(&mut self, events: Numbered) {
        for (seq, event) in events {
            if seq.is_some_and(|s| self.last_seq.is_some_and(|last| s <= last)) {
                continue; // delivered before the connection dropped
            }
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
    }

    /// Subscribes again after the last event seen; a task that ended meanwhile is read instead.
    async fn resume(&mut self) -> ClientResult<()> {
        self.source = None;
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
            match Source::open(&self.client, "SubscribeToTask", &params, self.last_seq).await {
                Ok(source) => {
                    self.source = Some(source);
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
