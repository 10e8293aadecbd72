//! Push notifications end to end: the embedded agent delivers a task's events to a webhook receiver
//! on 127.0.0.1 (allow-listed), in order, with the config's headers; a failing receiver gets
//! retries with growing delays; one that always fails ends in the dead-letter list.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use a2a::embedded::{start, Embedded, EmbeddedConfig};
use a2a::executor::ConformanceAgent;
use a2a::ssrf::AllowList;
use a2a::webhook::RetryPolicy;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use parking_lot::Mutex;
use serde_json::{json, Value};

#[derive(Clone, Debug)]
struct Hit {
    at: Instant,
    headers: http::HeaderMap,
    body: Value,
}

/// A webhook receiver: answers the statuses of `script` in turn (then 200), records every hit.
async fn receiver(script: Vec<u16>) -> (String, Arc<Mutex<Vec<Hit>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/webhook", listener.local_addr().unwrap());
    let hits = Arc::new(Mutex::new(Vec::<Hit>::new()));
    let script = Arc::new(Mutex::new(script.into_iter()));
    let (h, s) = (hits.clone(), script.clone());
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let (h, s) = (h.clone(), s.clone());
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
                    let (h, s) = (h.clone(), s.clone());
                    async move {
                        let (parts, body) = req.into_parts();
                        let body = body.collect().await.unwrap().to_bytes();
                        h.lock().push(Hit {
                            at: Instant::now(),
                            headers: parts.headers,
                            body: serde_json::from_slice(&body).unwrap(),
                        });
                        let status = s.lock().next().unwrap_or(200);
                        Ok::<_, Infallible>(
                            hyper::Response::builder().status(status).body(Full::new(Bytes::new())).unwrap(),
                        )
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    (url, hits)
}

async fn agent(max_attempts: u32) -> Embedded {
    let mut conformance = ConformanceAgent::new(Arc::new(a2a::adapters::memory::SystemClock));
    conformance.long_task = Duration::from_millis(300);
    start(EmbeddedConfig {
        store_limits: a2a::admission::StoreLimits { max_tasks: 1000, ..Default::default() },
        webhook_allow: AllowList::parse("127.0.0.1/32").unwrap(),
        push_retry: RetryPolicy { max_attempts, base: Duration::from_millis(100), max_delay: Duration::from_secs(2) },
        push_timeout: Duration::from_secs(2),
        ..EmbeddedConfig::new("http://agent.test", Arc::new(conformance))
    })
    .await
    .unwrap()
}

async fn send_with_webhook(a: &Embedded, message_id: &str, url: &str) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": "hi"}]},
        "configuration": {"taskPushNotificationConfig": {"url": url, "token": "tok-123",
            "authentication": {"scheme": "Bearer", "credentials": "s3cret"}}}}});
    let req = http::Request::post("/")
        .header("content-type", "application/json")
        .header("A2A-Version", "1.0")
        .body(Bytes::from(body.to_string()))
        .unwrap();
    let resp = a.service.handle(req).await;
    serde_json::from_slice(&resp.into_body().bytes()).unwrap()
}

async fn wait_for(hits: &Mutex<Vec<Hit>>, n: usize) -> Vec<Hit> {
    for _ in 0..200 {
        if hits.lock().len() >= n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    hits.lock().clone()
}

#[tokio::test]
async fn events_arrive_in_order_with_the_configured_headers() {
    let (url, hits) = receiver(vec![]).await;
    let a = agent(3).await;
    let v = send_with_webhook(&a, "tck-stream-001", &url).await;
    assert_eq!(v["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{v}");
    let hits = wait_for(&hits, 3).await;
    let kinds: Vec<String> = hits.iter().map(|h| h.body.as_object().unwrap().keys().next().unwrap().clone()).collect();
    assert_eq!(kinds, ["statusUpdate", "artifactUpdate", "statusUpdate"]);
    assert_eq!(hits[2].body["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED");
    for h in &hits {
        assert_eq!(h.headers["authorization"], "Bearer s3cret");
        assert_eq!(h.headers["a2a-notification-token"], "tok-123");
        assert_eq!(h.headers["content-type"], "application/json");
    }
    let ids: Vec<&str> = hits.iter().map(|h| h.headers["a2a-event-id"].to_str().unwrap()).collect();
    assert_eq!(ids, ["1", "2", "3"]);
}

#[tokio::test]
async fn failures_are_retried_with_growing_delays_in_order() {
    let (url, hits) = receiver(vec![500, 500, 500]).await;
    let a = agent(6).await;
    send_with_webhook(&a, "tck-stream-002", &url).await;
    let hits = wait_for(&hits, 4).await;
    assert_eq!(hits.len(), 4, "three failures, then the delivery");
    assert!(hits.iter().all(|h| h.body["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"));
    let gaps: Vec<Duration> = hits.windows(2).map(|w| w[1].at - w[0].at).collect();
    assert!(gaps[0] >= Duration::from_millis(50), "{gaps:?}");
    assert!(gaps[2] >= Duration::from_millis(200), "backoff grows: {gaps:?}");
    assert!(a.push.as_ref().unwrap().dead_letters().is_empty());
}

#[tokio::test]
async fn a_webhook_that_always_fails_is_dead_lettered() {
    let (url, hits) = receiver(vec![503; 100]).await;
    let a = agent(3).await;
    send_with_webhook(&a, "tck-stream-002", &url).await;
    let worker = a.push.clone().unwrap();
    for _ in 0..100 {
        if !worker.dead_letters().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let dead = worker.dead_letters();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].0.attempt, 3);
    assert!(dead[0].1.contains("503"), "{}", dead[0].1);
    assert_eq!(hits.lock().len(), 3);
}

/// A receiver slower than the load: every delivery of hundreds of tasks (each its own lane) arrives,
/// yet no more than `MAX_DELIVERIES_IN_FLIGHT` are attempted at once (each holds a connection).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_receiver_gets_at_most_the_cap_of_deliveries_at_once() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/webhook", listener.local_addr().unwrap());
    let (now, most, total) =
        (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (n, m, t) = (now.clone(), most.clone(), total.clone());
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let (n, m, t) = (n.clone(), m.clone(), t.clone());
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
                    let (n, m, t) = (n.clone(), m.clone(), t.clone());
                    async move {
                        let _ = req.into_body().collect().await;
                        m.fetch_max(n.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(300)).await;
                        n.fetch_sub(1, Ordering::SeqCst);
                        t.fetch_add(1, Ordering::SeqCst);
                        Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::new())))
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    let a = start(EmbeddedConfig {
        // All 400 sends come from one caller at once: let it hold them all.
        store_limits: a2a::admission::StoreLimits { max_tasks: 1000, principal_share: 100, ..Default::default() },
        webhook_allow: AllowList::parse("127.0.0.1/32").unwrap(),
        push_timeout: Duration::from_secs(10),
        ..EmbeddedConfig::new("http://agent.test", Arc::new(a2a::executor::EchoAgent))
    })
    .await
    .unwrap();
    const TASKS: usize = 400;
    let sends = (0..TASKS).map(|i| {
        let (a, url) = (&a, url.clone());
        async move { send_with_webhook(a, &format!("cap-{i}"), &url).await }
    });
    for answer in futures::future::join_all(sends).await {
        assert_eq!(answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    }
    let deliveries = 2 * TASKS; // the echo agent's artifact and its final status
    for _ in 0..300 {
        if total.load(Ordering::SeqCst) >= deliveries {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(total.load(Ordering::SeqCst), deliveries);
    let most = most.load(Ordering::SeqCst);
    assert!(most <= a2a::push::MAX_DELIVERIES_IN_FLIGHT, "{most} deliveries at once");
    assert!(most > a2a::push::MAX_DELIVERIES_IN_FLIGHT / 2, "lanes ran side by side: {most} at once");
}

/// A receiver that never answers holds every delivery sent to it until the push timeout: the
/// worker holds at most its backlog, and dead-letters the newest past it at once, with the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_backlog_new_deliveries_are_dead_lettered_at_once() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/webhook", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new(); // accepted, never answered
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    const BACKLOG: usize = 50;
    const TASKS: usize = 100;
    let a = start(EmbeddedConfig {
        store_limits: a2a::admission::StoreLimits { max_tasks: 1000, principal_share: 100, ..Default::default() },
        webhook_allow: AllowList::parse("127.0.0.1/32").unwrap(),
        push_timeout: Duration::from_secs(60),
        push_backlog: BACKLOG,
        ..EmbeddedConfig::new("http://agent.test", Arc::new(a2a::executor::EchoAgent))
    })
    .await
    .unwrap();
    let mut task_ids = Vec::new();
    for i in 0..TASKS {
        let answer = send_with_webhook(&a, &format!("backlog-{i}"), &url).await;
        assert_eq!(answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
        task_ids.push(answer["result"]["task"]["id"].as_str().unwrap().to_string());
    }
    let worker = a.push.as_ref().unwrap();
    let deliveries = 2 * TASKS; // the echo agent's artifact and its final status
    for _ in 0..100 {
        if worker.dead_letters().len() + worker.held() >= deliveries {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(worker.held(), BACKLOG, "full means full");
    let dead = worker.dead_letters();
    assert_eq!(dead.len(), deliveries - BACKLOG);
    assert!(dead.iter().all(|(job, why)| job.attempt == 1 && why.contains("push backlog is full")), "{:?}", dead[0].1);
    // One task after the other, two deliveries each: the first tasks' are held, the newest refused.
    let refused: std::collections::BTreeSet<&str> = dead.iter().map(|(job, _)| job.config.task_id.as_str()).collect();
    let newest: std::collections::BTreeSet<&str> = task_ids[BACKLOG / 2..].iter().map(String::as_str).collect();
    assert_eq!(refused, newest);
}
