//! The benchmark's limit: a bare hyper HTTP/1.1 server that does what no A2A server can do with
//! less — read each request's whole body and answer a fixed body (a real blocking SendMessage
//! answer of a2a-local, captured by `scripts/bench`) with `content-type: application/json`. Same
//! runtime (multi-threaded tokio, one worker per core), same hyper, same TCP_NODELAY as
//! `a2a-local`, so the difference is the A2A work.
//!   cargo run --release -p a2a-bench --bin bare_http -- 127.0.0.1:8081 answer.json
#![allow(clippy::print_stdout)] // it prints where it listens

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(addr), Some(file)) = (args.first(), args.get(1)) else {
        return Err("usage: bare_http HOST:PORT ANSWER_FILE".into());
    };
    let answer = Bytes::from(std::fs::read(file)?);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async move {
        let listener = TcpListener::bind(addr).await?;
        println!("bare_http listening on {addr}, answering {} bytes", answer.len());
        loop {
            let (stream, _) = listener.accept().await?;
            let _ = stream.set_nodelay(true);
            let answer = answer.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request: Request<hyper::body::Incoming>| {
                    let answer = answer.clone();
                    async move {
                        // Read the whole request, as any server that parses it must.
                        let _body = request.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                        let response = Response::builder()
                            .header("content-type", "application/json")
                            .body(Full::new(answer))
                            .unwrap_or_default();
                        Ok::<_, Infallible>(response)
                    }
                });
                let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
            });
        }
    })
}
