//! The streaming path under fan-out: `subscribers` SSE clients on one task, events per second
//! delivered to all of them. Against a2a-local running the default agent (`agent/`, one artifact
//! chunk per word of the message):
//! 1. a message with no text opens a task that waits for input (INPUT_REQUIRED);
//! 2. `subscribers` HTTP+JSON SubscribeToTask streams attach (each has its first event, the task);
//! 3. a non-blocking follow-up of `words` words runs the turn: SUBMITTED, WORKING, `words + 1`
//!    artifact chunks, COMPLETED reach every subscriber.
//!
//! Prints, per subscriber count, the events each subscriber received, the time from the follow-up to
//! the last event at the last subscriber, and events/s (all subscribers together and per
//! subscriber); fails if any subscriber missed an event or the run takes longer than 120 s.
//!   cargo run --release -p a2a-bench --bin fanout -- http://127.0.0.1:8080 1,10,100 2000
#![allow(clippy::print_stdout)] // its report is its output

use std::time::{Duration, Instant};

use a2a::sse::SseDecoder;
use serde_json::{json, Value};
use tokio::sync::mpsc;

/// No run may take longer (a lost event must fail the benchmark, not hang it).
const LIMIT: Duration = Duration::from_secs(120);

type Error = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let base = args.first().ok_or("usage: fanout BASE_URL [subscribers=1,10,100] [words=2000]")?.clone();
    let counts: Vec<usize> =
        args.get(1).map_or("1,10,100", String::as_str).split(',').map(str::parse).collect::<Result<_, _>>()?;
    let words: usize = args.get(2).map_or(Ok(2000), |s| s.parse())?;
    let http = reqwest::Client::builder().pool_max_idle_per_host(0).build()?;
    println!("| subscribers | events each | time to the last event | events/s (all) | events/s (each) |");
    println!("|-------------|-------------|------------------------|----------------|-----------------|");
    for subscribers in counts {
        let run = tokio::time::timeout(LIMIT, fan_out(&http, &base, subscribers, words)).await;
        let (each, elapsed) = run.map_err(|_| format!("{subscribers} subscribers: not done in {LIMIT:?}"))??;
        let secs = elapsed.as_secs_f64();
        println!(
            "| {subscribers:>11} | {each:>11} | {:>19.1} ms | {:>14.0} | {:>15.0} |",
            secs * 1e3,
            (each * subscribers) as f64 / secs,
            each as f64 / secs
        );
    }
    Ok(())
}

/// One run: returns the events every subscriber received and the time the last one arrived.
async fn fan_out(
    http: &reqwest::Client,
    base: &str,
    subscribers: usize,
    words: usize,
) -> Result<(usize, Duration), Error> {
    let opened = send(http, base, json!({"message": message(None, "")})).await?;
    let task_id = opened["task"]["id"].as_str().ok_or_else(|| format!("no task in {opened}"))?.to_owned();
    let state = &opened["task"]["status"]["state"];
    if state != "TASK_STATE_INPUT_REQUIRED" {
        return Err(format!("the agent should wait for input, the task is {state}").into());
    }
    let (ready_tx, mut ready_rx) = mpsc::channel(subscribers);
    let mut streams = Vec::with_capacity(subscribers);
    for _ in 0..subscribers {
        let (http, url, ready) = (http.clone(), format!("{base}/tasks/{task_id}:subscribe"), ready_tx.clone());
        streams.push(tokio::spawn(async move { subscribe(&http, &url, ready).await }));
    }
    drop(ready_tx);
    for _ in 0..subscribers {
        ready_rx.recv().await.ok_or("a subscriber ended before its first event")?;
    }
    let text = (0..words).map(|i| format!("w{i}")).collect::<Vec<_>>().join(" ");
    let started = Instant::now();
    send(http, base, json!({"message": message(Some(&task_id), &text), "configuration": {"returnImmediately": true}}))
        .await?;
    let mut counts = Vec::with_capacity(subscribers);
    let mut last = started;
    for stream in streams {
        let (count, at) = stream.await??;
        counts.push(count);
        last = last.max(at);
    }
    // SUBMITTED, WORKING, the first chunk and one per word, COMPLETED.
    let expected = words + 4;
    if let Some(short) = counts.iter().find(|&&c| c != expected) {
        return Err(format!("a subscriber received {short} events of the turn, not {expected}").into());
    }
    Ok((expected, last - started))
}

fn message(task_id: Option<&str>, text: &str) -> Value {
    let mut message =
        json!({"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER", "parts": [{"text": text}]});
    if let Some(id) = task_id {
        message["taskId"] = json!(id);
    }
    message
}

async fn send(http: &reqwest::Client, base: &str, body: Value) -> Result<Value, Error> {
    let response = http
        .post(format!("{base}/message:send"))
        .header("A2A-Version", "1.0")
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&body)?)
        .send()
        .await?;
    let status = response.status();
    let bytes = response.bytes().await?;
    let body: Value = serde_json::from_slice(&bytes)?;
    if !status.is_success() {
        return Err(format!("SendMessage: {status} {body}").into());
    }
    Ok(body)
}

/// Reads one SubscribeToTask stream to its end; counts the events after the first (the task as it
/// was) and notes when the last one arrived. Decoding frames is all it does with them (no JSON): the
/// subscribers share the two cores with the server.
async fn subscribe(http: &reqwest::Client, url: &str, ready: mpsc::Sender<()>) -> Result<(usize, Instant), Error> {
    let mut response = http.post(url).header("A2A-Version", "1.0").send().await?;
    if !response.status().is_success() {
        return Err(format!("SubscribeToTask: {}", response.status()).into());
    }
    let (mut decoder, mut frames, mut last) = (SseDecoder::new(1 << 20), 0usize, Instant::now());
    while let Some(chunk) = response.chunk().await? {
        let got = decoder.push(&chunk).map_err(|e| format!("the stream {e}"))?.len();
        if got > 0 {
            if frames == 0 {
                ready.send(()).await?;
            }
            frames += got;
            last = Instant::now();
        }
    }
    Ok((frames.saturating_sub(1), last))
}
