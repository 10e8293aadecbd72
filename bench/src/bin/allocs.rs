//! Allocations per request and bytes held per task, counted exactly: the embedded server (memory
//! backend, echo agent) behind a counting global allocator, driven in process through
//! `Service::handle` with the benchmark's requests (blocking JSON-RPC SendMessage, GetTask). What
//! the HTTP server (hyper) adds is left out: this counts the engine, the bindings and the store.
//! Run with `scripts/bench` (BENCH_ONLY=allocs) or
//! `cargo run --release -p a2a-bench --bin allocs [tasks=100000]`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::sync::Arc;
use std::time::Duration;

use a2a::embedded::{start, Embedded, EmbeddedConfig};
use a2a::executor::EchoAgent;
use a2a::http::Body;
use bytes::Bytes;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

/// Allocations made, bytes allocated, bytes live.
fn snapshot() -> (u64, u64, usize) {
    let s = dhat::HeapStats::get();
    (s.total_blocks, s.total_bytes, s.curr_bytes)
}

async fn call(a: &Embedded, body: String) -> Bytes {
    let req = http::Request::builder()
        .method("POST")
        .uri("/")
        .header("content-type", "application/json")
        .header("A2A-Version", "1.0")
        .body(Bytes::from(body))
        .unwrap();
    let resp = a.service.handle(req).await;
    assert!(resp.status().is_success(), "{}", resp.status());
    match resp.into_body() {
        Body::Full(b) => b,
        Body::Sse(_) => panic!("a blocking call answered with a stream"),
    }
}

fn send(i: usize) -> String {
    // The request wrk sends in bench/send_message.lua.
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{"message":{{"messageId":"m-{i}","role":"ROLE_USER","parts":[{{"text":"hello benchmark"}}]}}}}}}"#
    )
}

fn get(task_id: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{{"id":"{task_id}"}}}}"#)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // DHAT=1: also write dhat-heap.json (allocation sites; slow, use few tasks).
    let _profiler = if std::env::var_os("DHAT").is_some() {
        dhat::Profiler::new_heap()
    } else {
        dhat::Profiler::builder().testing().build()
    };
    let tasks: usize = std::env::args().nth(1).map_or(100_000, |n| n.parse().expect("tasks: a number"));
    let embedded = start(EmbeddedConfig {
        store_limits: a2a::admission::StoreLimits {
            // Room for the warm-up and the per-request rounds too: nothing may be evicted while counting.
            max_tasks: tasks + 20_000,
            ..Default::default()
        },
        ..EmbeddedConfig::new("http://127.0.0.1:1", Arc::new(EchoAgent))
    })
    .await
    .unwrap();

    let first = call(&embedded, send(usize::MAX)).await;
    let answer: serde_json::Value = serde_json::from_slice(&first).unwrap();
    let task_id = answer["result"]["task"]["id"].as_str().unwrap().to_string();
    for i in 0..1000 {
        call(&embedded, send(i)).await;
        call(&embedded, get(&task_id)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;

    println!("| request (in process, after warm-up) | allocations | bytes allocated |");
    println!("|---|---:|---:|");
    const N: usize = 10_000;
    let bodies: Vec<String> = (1000..1000 + N).map(send).collect();
    let (a0, b0, _) = snapshot();
    for body in bodies {
        call(&embedded, body).await;
    }
    let (a1, b1, _) = snapshot();
    println!("| blocking SendMessage (echo) | {} | {} |", (a1 - a0) / N as u64, (b1 - b0) / N as u64);
    let bodies: Vec<String> = (0..N).map(|_| get(&task_id)).collect();
    let (a0, b0, _) = snapshot();
    for body in bodies {
        call(&embedded, body).await;
    }
    let (a1, b1, _) = snapshot();
    println!("| GetTask | {} | {} |", (a1 - a0) / N as u64, (b1 - b0) / N as u64);

    tokio::time::sleep(Duration::from_millis(100)).await;
    let (_, _, live0) = snapshot();
    for i in 0..tasks {
        call(&embedded, send(100_000_000 + i)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (_, _, live1) = snapshot();
    let added = tasks.max(1);
    println!();
    println!("Bytes held per retained echo task ({added} tasks added): {}", (live1 - live0) / added);
}
