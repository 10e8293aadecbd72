//! The gRPC binding's message conversion, timed and counted per message: the direct reader and
//! writer (`a2a::grpc::proto_json`) beside the `DynamicMessage` route they replaced (bytes →
//! dynamic message → ProtoJSON text, and JSON value → dynamic message → bytes), on the benchmark's
//! request (a blocking SendMessage) and its answer (the echo agent's completed task).
//!   cargo run --release -p a2a-bench --bin proto_json [iterations=200000]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::time::Instant;

use a2a::grpc::proto_json::{read, write};
use a2a::grpc::wire::method;
use prost::Message as _;
use prost_reflect::{DeserializeOptions, DynamicMessage, MessageDescriptor};
use serde_json::json;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

/// Runs `f` `n` times: nanoseconds per run (the allocator not counting).
fn time(n: u32, mut f: impl FnMut()) -> f64 {
    let started = Instant::now();
    for _ in 0..n {
        f();
    }
    started.elapsed().as_nanos() as f64 / f64::from(n)
}

/// Runs `f` 1,000 times under the counting allocator: allocations per run.
fn allocations(mut f: impl FnMut()) -> f64 {
    let before = dhat::HeapStats::get().total_blocks;
    for _ in 0..1000 {
        f();
    }
    (dhat::HeapStats::get().total_blocks - before) as f64 / 1000.0
}

/// A named conversion to time.
type Row<'a> = (&'static str, Box<dyn FnMut() + 'a>);

fn main() {
    let n: u32 = std::env::args().nth(1).map_or(200_000, |s| s.parse().expect("iterations"));
    let send = method("SendMessage").expect("SendMessage");
    let (input, output): (MessageDescriptor, MessageDescriptor) = (send.input(), send.output());
    let request = json!({"message": {"messageId": "bench-000001-0000000000001", "role": "ROLE_USER",
                                     "parts": [{"text": "hello benchmark"}]}});
    let bytes = write::message(&input, &request).expect("request");
    let text = |id: &str| {
        json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": "hello benchmark"}],
                                 "contextId": "ctx-6f1c2a7e-8d7b-4b0e-9a43-2f1d9c3e5b71", "taskId": "task-3b9e1f0a-5c2d-4e8f-a1b7-9d6c3e2f4a80"})
    };
    let answer = json!({"task": {
        "id": "task-3b9e1f0a-5c2d-4e8f-a1b7-9d6c3e2f4a80", "contextId": "ctx-6f1c2a7e-8d7b-4b0e-9a43-2f1d9c3e5b71",
        "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-11-28T04:19:52.123Z"},
        "artifacts": [{"artifactId": "echo", "parts": [{"text": "hello benchmark"}]}],
        "history": [text("bench-000001-0000000000001"), text("echo-1")]
    }});
    let typed: a2a::types::SendMessageResponse = serde_json::from_value(answer.clone()).expect("typed answer");
    let options = DeserializeOptions::new().deny_unknown_fields(false);

    let mut rows: [Row<'_>; 4] = [
        (
            "read request: dynamic message",
            Box::new(|| {
                let m = DynamicMessage::decode(input.clone(), bytes.as_slice()).unwrap();
                std::hint::black_box(serde_json::to_string(&m).unwrap());
            }),
        ),
        (
            "read request: direct",
            Box::new(|| {
                let mut out = String::new();
                read::message(&input, &bytes, &mut out).unwrap();
                std::hint::black_box(out);
            }),
        ),
        (
            "write answer: dynamic message",
            Box::new(|| {
                let value = serde_json::to_value(&typed).unwrap();
                let m = DynamicMessage::deserialize_with_options(output.clone(), value, &options).unwrap();
                std::hint::black_box(m.encode_to_vec());
            }),
        ),
        (
            "write answer: direct",
            Box::new(|| {
                std::hint::black_box(write::message(&output, &typed).unwrap());
            }),
        ),
    ];
    println!("| conversion ({n} runs) | ns per message | allocations per message |");
    println!("|---|---|---|");
    let times: Vec<f64> = rows
        .iter_mut()
        .map(|(_, f)| {
            time(n / 10, &mut *f);
            time(n, &mut *f)
        })
        .collect();
    // Counted after timing: the counting allocator is slow while a profiler runs.
    let _profiler = dhat::Profiler::builder().testing().build();
    for ((name, f), ns) in rows.iter_mut().zip(times) {
        let allocs = allocations(&mut *f);
        println!("| {name} | {ns:.0} | {allocs:.1} |");
    }
}
