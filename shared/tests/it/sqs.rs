//! The SQS side on moto, through the embedded AWS backend: a duplicate SendMessage and a
//! redelivered execute job run the agent once; a webhook that always fails is tried the configured
//! number of times, then SQS moves the notification to the dead-letter queue.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use a2a::adapters::aws::sqs::PollSettings;
use a2a::adapters::aws::AwsSettings;
use a2a::embedded::{start, AwsOptions, Backend, Embedded, EmbeddedConfig};
use a2a::executor::{AgentError, AgentExecutor, EventSink, RequestContext};
use a2a::ports::Job;
use a2a::ssrf::AllowList;
use a2a::webhook::RetryPolicy;
use async_trait::async_trait;
use bytes::Bytes;
use serde_json::{json, Value};

struct Counting(Arc<AtomicUsize>);

#[async_trait]
impl AgentExecutor for Counting {
    async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), AgentError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        events.complete_with_text(ctx.message.text()).await?;
        Ok(())
    }
}

async fn aws_agent(table: &str, executor: Arc<dyn AgentExecutor>, push_attempts: u32) -> Embedded {
    aws_agent_with(table, executor, push_attempts, Duration::from_secs(30)).await
}

async fn aws_agent_with(
    table: &str,
    executor: Arc<dyn AgentExecutor>,
    push_attempts: u32,
    visibility: Duration,
) -> Embedded {
    start(EmbeddedConfig {
        backend: Backend::Aws(AwsOptions {
            settings: AwsSettings {
                table_name: table.into(),
                task_queue_url: None,
                push_queue_url: None,
                ttl_seconds: None,
                page_token_secret: Some("test".into()),
                push_max_attempts: push_attempts,
            },
            create_resources: true,
            poll: PollSettings { wait: Duration::from_secs(1), visibility },
        }),
        store_limits: a2a::admission::StoreLimits { max_tasks: 1000, ..Default::default() },
        webhook_allow: AllowList::parse("127.0.0.1/32").unwrap(),
        push_retry: RetryPolicy {
            max_attempts: push_attempts,
            base: Duration::from_millis(100),
            max_delay: Duration::from_secs(1),
        },
        push_timeout: Duration::from_secs(2),
        ..EmbeddedConfig::new("http://agent.test", executor)
    })
    .await
    .unwrap()
}

async fn rpc(a: &Embedded, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let req = http::Request::post("/")
        .header("content-type", "application/json")
        .header("A2A-Version", "1.0")
        .body(Bytes::from(body.to_string()))
        .unwrap();
    serde_json::from_slice(&a.service.handle(req).await.into_body().bytes()).unwrap()
}

/// A SUBMITTED task of the anonymous principal whose turn (message `message_id`) no runner took yet.
fn submitted(id: &str, message_id: &str, has_push: bool) -> a2a::ports::TaskRecord {
    let mut record = common::submitted(id, "anonymous");
    record.task.history[0].message_id = message_id.into();
    record.has_push = has_push;
    record.turn = Some(a2a::ports::TurnKey {
        message_id: message_id.into(),
        fingerprint: a2a::ports::Fingerprint([7; 16]),
        claimed_by: None,
    });
    record
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicates_and_redeliveries_run_the_agent_once() {
    if !common::aws_available() {
        return;
    }
    let runs = Arc::new(AtomicUsize::new(0));
    let table = format!("dup-{}", uuid::Uuid::new_v4().simple());
    let a = aws_agent(&table, Arc::new(Counting(runs.clone())), 3).await;
    let params = json!({"message": {"messageId": "only-once", "role": "ROLE_USER", "parts": [{"text": "hi"}]}});
    let first = rpc(&a, "SendMessage", params.clone()).await;
    assert_eq!(first["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{first}");
    let second = rpc(&a, "SendMessage", params).await;
    assert_eq!(first["result"]["task"]["id"], second["result"]["task"]["id"]);
    // SQS redelivers the execute job (a crashed consumer, a visibility timeout): a no-op.
    let task_id = first["result"]["task"]["id"].as_str().unwrap().to_string();
    a.runner
        .handle(Job::Execute {
            task_id: task_id.clone(),
            message_id: "only-once".into(),
            turn: 0,
            extensions: vec![],
            pushes_owed: false,
        })
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let task = rpc(&a, "GetTask", json!({"id": task_id})).await;
    assert_eq!(task["result"]["artifacts"].as_array().unwrap().len(), 1);

    // Another process on the same table (a second engine): the retry finds the same task there too,
    // while the same messageId with new content is a new message.
    let b = aws_agent(&table, Arc::new(Counting(runs.clone())), 3).await;
    let third = rpc(
        &b,
        "SendMessage",
        json!({"message": {"messageId": "only-once", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}),
    )
    .await;
    assert_eq!(third["result"]["task"]["id"], task_id.as_str(), "{third}");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "a retry in another process runs nothing");
    let other = rpc(
        &b,
        "SendMessage",
        json!({"message": {"messageId": "only-once", "role": "ROLE_USER", "parts": [{"text": "new"}]}}),
    )
    .await;
    assert_ne!(other["result"]["task"]["id"], task_id.as_str(), "{other}");
    assert_eq!(other["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_runners_given_one_job_at_once_run_the_agent_once() {
    if !common::aws_available() {
        return;
    }
    use a2a::types::TaskState;
    let runs = Arc::new(AtomicUsize::new(0));
    let table = format!("twice-{}", uuid::Uuid::new_v4().simple());
    let a = aws_agent(&table, Arc::new(Counting(runs.clone())), 3).await;
    let b = aws_agent(&table, Arc::new(Counting(runs.clone())), 3).await;
    for round in 0..5 {
        // A SUBMITTED task whose job SQS handed to both processes' runners at the same moment.
        let id = uuid::Uuid::new_v4().to_string();
        let record = submitted(&id, &format!("m-{round}"), false);
        assert!(a.engine.store.create(record, None).await.unwrap());
        let job = Job::Execute {
            task_id: id.clone(),
            message_id: format!("m-{round}"),
            turn: 0,
            extensions: vec![],
            pushes_owed: false,
        };
        let (x, y) = tokio::join!(a.runner.handle(job.clone()), b.runner.handle(job));
        x.unwrap();
        y.unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), round + 1, "round {round}: the agent ran once");
        let task = a.engine.store.load(&id).await.unwrap().unwrap();
        assert_eq!(task.state(), TaskState::Completed);
        assert_eq!(task.last_seq, 2, "one artifact and one status: no run's events twice");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_push_lands_in_the_dead_letter_queue() {
    if !common::aws_available() {
        return;
    }
    let (url, hits) = common::webhook_receiver(vec![500; 100]).await;
    let table = format!("dlq-{}", uuid::Uuid::new_v4().simple());
    let a = aws_agent(&table, Arc::new(Counting(Arc::new(AtomicUsize::new(0)))), 3).await;
    let params = json!({"message": {"messageId": "push-me", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
        "configuration": {"taskPushNotificationConfig": {"url": url, "token": "t"}}});
    let v = rpc(&a, "SendMessage", params).await;
    assert_eq!(v["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{v}");

    let sqs = common::sqs_client().await;
    let dlq = common::queue_url(&sqs, &format!("{table}-push-dlq.fifo")).await;
    let mut dead = Vec::new();
    for _ in 0..60 {
        let got =
            sqs.receive_message().queue_url(&dlq).max_number_of_messages(10).wait_time_seconds(1).send().await.unwrap();
        for m in got.messages() {
            dead.push(m.body().unwrap_or_default().to_string());
            sqs.delete_message().queue_url(&dlq).receipt_handle(m.receipt_handle().unwrap()).send().await.unwrap();
        }
        if dead.len() >= 2 {
            break;
        }
    }
    // Two events (the artifact and COMPLETED), each tried three times, both dead-lettered.
    assert_eq!(dead.len(), 2, "{dead:?}");
    let seqs: Vec<u64> =
        dead.iter().map(|b| serde_json::from_str::<Value>(b).unwrap()["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [1, 2]);
    assert_eq!(hits.lock().len(), 6);
}

/// Works for `0` seconds without a word, then completes; counts its runs.
struct Slow(Duration, Arc<AtomicUsize>);

#[async_trait]
impl AgentExecutor for Slow {
    async fn execute(&self, _ctx: RequestContext, events: EventSink) -> Result<(), AgentError> {
        self.1.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(self.0).await;
        events.complete(None).await?;
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_keep_a_long_job_from_being_redelivered() {
    if !common::aws_available() {
        return;
    }
    let runs = Arc::new(AtomicUsize::new(0));
    let table = format!("hb-{}", uuid::Uuid::new_v4().simple());
    // A 3 s visibility and a 7 s silent run: without heartbeats SQS would hand the job out again
    // (and the task, still SUBMITTED, would run a second time).
    let a =
        aws_agent_with(&table, Arc::new(Slow(Duration::from_secs(7), runs.clone())), 3, Duration::from_secs(3)).await;
    let params = json!({"message": {"messageId": "slow", "role": "ROLE_USER", "parts": [{"text": "hi"}]}});
    let v = rpc(&a, "SendMessage", params).await;
    assert_eq!(v["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED", "{v}");
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // The job was deleted once done: nothing is left on the work queue.
    let sqs = common::sqs_client().await;
    let url = common::queue_url(&sqs, &format!("{table}-work.fifo")).await;
    let attrs = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
        .send()
        .await
        .unwrap();
    let count = |k| attrs.attributes().unwrap().get(&k).unwrap().parse::<u32>().unwrap();
    assert_eq!(count(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessages), 0);
    assert_eq!(count(aws_sdk_sqs::types::QueueAttributeName::ApproximateNumberOfMessagesNotVisible), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_delivered_again_queues_the_webhook_deliveries_its_crashed_predecessor_did_not() {
    if !common::aws_available() {
        return;
    }
    use a2a::engine::{apply_all, AgentEvent};
    use a2a::types::{TaskPushNotificationConfig, TaskState};
    let runs = Arc::new(AtomicUsize::new(0));
    let (url, hits) = common::webhook_receiver(Vec::new()).await;
    let table = format!("owed-{}", uuid::Uuid::new_v4().simple());
    let a = aws_agent(&table, Arc::new(Counting(runs.clone())), 3).await;
    let id = uuid::Uuid::new_v4().to_string();
    let record = submitted(&id, "m", true);
    let now = chrono::Utc::now();
    assert!(a.engine.store.create(record, None).await.unwrap());
    let config = TaskPushNotificationConfig { id: "c".into(), task_id: id.clone(), url, ..Default::default() };
    a.engine.push_configs.put(config).await.unwrap();
    // The run committed its events straight through the store and stopped before queueing their
    // deliveries (the process was killed between the two).
    let events = vec![
        AgentEvent::Status { state: TaskState::Working, message: None },
        AgentEvent::Status { state: TaskState::Completed, message: None },
    ];
    a.engine.store.update(&id, 0, &|r| apply_all(r, &events, now)).await.unwrap();

    // SQS hands the job out again: the finished task is not run again, its deliveries are queued.
    let job =
        Job::Execute { task_id: id.clone(), message_id: "m".into(), turn: 0, extensions: vec![], pushes_owed: false };
    a.runner.handle_attempt(job.clone(), 2).await.unwrap();
    let seqs = |hits: &common::Hits| -> Vec<u64> {
        hits.lock().iter().map(|h| h.headers["a2a-event-id"].to_str().unwrap().parse().unwrap()).collect()
    };
    for _ in 0..100 {
        if seqs(&hits).len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(seqs(&hits), [1, 2], "both events delivered, in order");
    assert_eq!(runs.load(Ordering::SeqCst), 0, "a finished task is not run again");
    // Once more (a third delivery): SQS drops the deliveries it queued in the last 5 minutes.
    a.runner.handle_attempt(job, 3).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(seqs(&hits), [1, 2], "queued once within SQS's deduplication interval");
}
