//! The publisher side of the edge hub: an embedded agent configured with an edge URL posts every
//! event of a task, in order, each request signed over its exact body and timestamp, and retries a
//! failed publish with the same batch. (The worker side runs under wrangler dev in tests/edge.)

use crate::common;

use std::sync::Arc;

use a2a::adapters::edge_publisher::EdgeSettings;
use a2a::edge::{signature, PublishBatch, PUBLISH_PATH};
use a2a::embedded::{start, EmbeddedConfig};
use a2a::executor::ConformanceAgent;
use bytes::Bytes;

#[tokio::test]
async fn every_event_is_published_signed_in_order_with_retries() {
    let (url, hits) = common::webhook_receiver(vec![503]).await;
    let base = url.trim_end_matches("/hook").to_string();
    let edge = EdgeSettings { max_attempts: 3, ..EdgeSettings::new(&base, "edge-secret") };
    let a = start(EmbeddedConfig {
        store_limits: a2a::admission::StoreLimits { max_tasks: 100, ..Default::default() },
        edge: Some(edge),
        ..EmbeddedConfig::new(
            "http://agent.test",
            Arc::new(ConformanceAgent::new(Arc::new(a2a::adapters::memory::SystemClock))),
        )
    })
    .await
    .unwrap();
    let body = r#"{"message": {"messageId": "tck-stream-001-e", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}"#;
    let req = http::Request::post("/message:send")
        .header("content-type", "application/json")
        .header("A2A-Version", "1.0")
        .body(Bytes::from(body))
        .unwrap();
    let resp = a.service.handle(req).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()[a2a::sse::TASK_SEQ_HEADER], "3", "the blocking answer reflects all 3 events");
    a.engine.hub.flush().await;

    let hits = hits.lock().clone();
    assert!(hits.len() >= 2, "one refused publish and its retry at least: {hits:?}");
    let now = chrono::Utc::now().timestamp();
    for hit in &hits {
        assert_eq!(hit.path, PUBLISH_PATH);
        let header = |name: &str| hit.headers.get(name).and_then(|v| v.to_str().ok());
        signature::verify(
            b"edge-secret",
            header(signature::TIMESTAMP_HEADER),
            header(signature::SIGNATURE_HEADER),
            &hit.raw,
            now,
        )
        .unwrap();
        assert!(signature::verify(
            b"other",
            header(signature::TIMESTAMP_HEADER),
            header(signature::SIGNATURE_HEADER),
            &hit.raw,
            now
        )
        .is_err());
    }
    let batches: Vec<PublishBatch> = hits.iter().map(|h| PublishBatch::parse(&h.raw).unwrap()).collect();
    assert_eq!(batches[0], batches[1], "the refused batch is retried as is");
    let seqs: Vec<u64> = batches[1..].iter().flat_map(|b| b.events.iter().map(|e| e.seq)).collect();
    assert_eq!(seqs, [1, 2, 3]);
    let last = batches.last().unwrap().events.last().unwrap();
    assert_eq!(last.event.state(), Some(a2a::types::TaskState::Completed));
}
