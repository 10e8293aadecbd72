//! The gRPC limit: a bare hyper HTTP/2 server that does what no gRPC A2A server can do with less —
//! read each call's whole request and answer a fixed message (a2a-local's own blocking
//! SendMessage answer, given as the JSON-RPC answer `scripts/bench` captured, encoded once) as a
//! gRPC response: headers, one DATA frame, the `grpc-status: 0` trailers. Same runtime, same hyper
//! HTTP/2, same executor as a2a-local's gRPC listener, so the difference is the A2A work (and
//! tonic's). Driven by `grpc_load` like a2a-local.
//!   cargo run --release -p a2a-bench --bin bare_grpc -- 127.0.0.1:8082 answer.json
#![allow(clippy::print_stdout)] // it prints where it listens

use std::convert::Infallible;

use bytes::{BufMut, Bytes, BytesMut};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper::server::conn::http2;
use hyper::service::service_fn;
use hyper::{HeaderMap, Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(addr), Some(file)) = (args.first(), args.get(1)) else {
        return Err("usage: bare_grpc HOST:PORT JSONRPC_ANSWER_FILE".into());
    };
    let answer: serde_json::Value = serde_json::from_slice(&std::fs::read(file)?)?;
    let message = a2a::grpc::encode("lf.a2a.v1.SendMessageResponse", answer["result"].clone())?;
    let mut framed = BytesMut::with_capacity(message.len() + 5);
    framed.put_u8(0);
    framed.put_u32(u32::try_from(message.len())?);
    framed.put_slice(&message);
    let framed = framed.freeze();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async move {
        let listener = TcpListener::bind(addr).await?;
        println!("bare_grpc listening on {addr}, answering {} bytes", framed.len());
        loop {
            let (stream, _) = listener.accept().await?;
            let _ = stream.set_nodelay(true);
            let framed = framed.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request: Request<hyper::body::Incoming>| {
                    let framed = framed.clone();
                    async move {
                        // Read the whole request, as any server that decodes it must.
                        let _body = request.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                        let mut trailers = HeaderMap::new();
                        trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
                        let frames: [Result<Frame<Bytes>, Infallible>; 2] =
                            [Ok(Frame::data(framed)), Ok(Frame::trailers(trailers))];
                        let mut response = Response::new(StreamBody::new(futures::stream::iter(frames)));
                        response
                            .headers_mut()
                            .insert("content-type", http::HeaderValue::from_static("application/grpc"));
                        Ok::<_, Infallible>(response)
                    }
                });
                let _ = http2::Builder::new(TokioExecutor::new()).serve_connection(TokioIo::new(stream), service).await;
            });
        }
    })
}
