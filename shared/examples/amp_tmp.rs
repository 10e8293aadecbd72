#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]
use bytes::Bytes;
#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;
fn main() {
    let n: usize = std::env::args().nth(1).map(|a| a.parse().unwrap()).unwrap_or(100_000);
    let mode = std::env::args().nth(2).unwrap_or_default();
    let parts: Vec<serde_json::Value> = (0..n).map(|_| serde_json::json!({"text": ""})).collect();
    let req = serde_json::json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": parts}});
    let text = req.to_string();
    let bytes: Bytes = a2a::grpc::encode("lf.a2a.v1.SendMessageRequest", req).unwrap();
    let _p = dhat::Profiler::builder().testing().build();
    let base = dhat::HeapStats::get();
    if mode == "json" {
        let v: a2a::types::SendMessageRequest = a2a::types::decode_str(&text, "").unwrap();
        let s = dhat::HeapStats::get();
        println!(
            "json {} B: peak +{} live +{}",
            text.len(),
            s.max_bytes - base.curr_bytes,
            s.curr_bytes - base.curr_bytes
        );
        drop(v);
    } else {
        let j = a2a::grpc::decode("lf.a2a.v1.SendMessageRequest", bytes.clone()).unwrap();
        let s = dhat::HeapStats::get();
        println!(
            "proto {} B -> json value: peak +{} live +{}",
            bytes.len(),
            s.max_bytes - base.curr_bytes,
            s.curr_bytes - base.curr_bytes
        );
        drop(j);
    }
}
