//! A small load generator for the gRPC binding (`ghz` is not packaged; h2load counts HTTP statuses,
//! not gRPC ones): blocking `SendMessage` calls, each with a unique messageId, from `connections`
//! HTTP/2 connections with one call in flight each (like wrk's `-c`), for `seconds`. Prints
//! requests/s, p50 and p99, and fails if any call did not succeed.
//!   cargo run --release -p a2a-bench --bin grpc_load -- 127.0.0.1:50051 10 32
#![allow(clippy::print_stdout)] // its report is its output

use std::time::{Duration, Instant};

use a2a::grpc::{codec::Raw, encode};
use bytes::Bytes;
use http::uri::PathAndQuery;
use serde_json::json;
use tonic::transport::Channel;

/// A messageId of fixed width, rewritten in place per call (so the request is encoded once).
const PLACEHOLDER: &str = "bench-00000000000000000000";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let addr = args.first().ok_or("usage: grpc_load HOST:PORT [seconds] [connections]")?.clone();
    let seconds: u64 = args.get(1).map_or(Ok(10), |s| s.parse())?;
    let connections: usize = args.get(2).map_or(Ok(32), |s| s.parse())?;
    let body =
        json!({"message": {"messageId": PLACEHOLDER, "role": "ROLE_USER", "parts": [{"text": "hello benchmark"}]}});
    let template = encode("lf.a2a.v1.SendMessageRequest", body)?.to_vec();
    let at = template.windows(PLACEHOLDER.len()).position(|w| w == PLACEHOLDER.as_bytes()).ok_or("placeholder")?;

    let until = Instant::now() + Duration::from_secs(seconds);
    let mut workers = Vec::new();
    for worker in 0..connections {
        let channel = Channel::from_shared(format!("http://{addr}"))?.connect().await?;
        let mut template = template.clone();
        workers.push(tokio::spawn(async move {
            let mut grpc = tonic::client::Grpc::new(channel);
            let path = PathAndQuery::from_static("/lf.a2a.v1.A2AService/SendMessage");
            let (mut latencies, mut failures, mut first_error) = (Vec::new(), 0u64, None);
            let mut n = 0u64;
            while Instant::now() < until {
                n += 1;
                let id = format!("bench-{worker:06}-{n:013}");
                template[at..at + PLACEHOLDER.len()].copy_from_slice(id.as_bytes());
                let started = Instant::now();
                let result = match grpc.ready().await {
                    Ok(()) => {
                        let req = tonic::Request::new(Bytes::copy_from_slice(&template));
                        grpc.unary::<Bytes, Bytes, Raw>(req, path.clone(), Raw).await.map(drop)
                    }
                    Err(e) => Err(tonic::Status::unavailable(e.to_string())),
                };
                match result {
                    Ok(()) => latencies.push(started.elapsed()),
                    Err(status) => {
                        failures += 1;
                        first_error.get_or_insert(status);
                    }
                }
            }
            (latencies, failures, first_error)
        }));
    }
    let (mut latencies, mut failures, mut first_error) = (Vec::new(), 0, None);
    for worker in workers {
        let (l, f, e) = worker.await?;
        latencies.extend(l);
        failures += f;
        first_error = first_error.or(e);
    }
    latencies.sort();
    let pct = |p: usize| latencies.get(latencies.len().saturating_sub(1) * p / 100).copied().unwrap_or_default();
    let ms = |d: Duration| format!("{:.2}ms", d.as_secs_f64() * 1e3);
    println!(
        "requests/s {:.2} p50 {} p99 {} calls {} failures {failures}",
        latencies.len() as f64 / seconds as f64,
        ms(pct(50)),
        ms(pct(99)),
        latencies.len()
    );
    if failures > 0 {
        return Err(format!("{failures} calls failed, the first with {first_error:?}").into());
    }
    Ok(())
}
