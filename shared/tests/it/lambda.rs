//! The Lambda functions' handlers fed with the fixtures of `events/`, on moto: each HTTP fixture
//! through its function's endpoint (status and body asserted), the SQS batches through the task
//! runner and push delivery handlers (`batchItemFailures` asserted), and end to end:
//! http-send-message → SQS → sqs-task-runner → event log → http-get-task sees COMPLETED, and the
//! response-streaming function replays the task's events.

use crate::common;
use crate::harness;

use std::sync::Arc;
use std::time::Duration;

use a2a::adapters::aws::{resources, AwsSettings};
use a2a::auth::{AuthSettings, OidcSettings};
use a2a::card::default_card;
use a2a::executor::http::{HttpAgent, HttpAgentConfig};
use a2a::executor::{AgentExecutor, EchoAgent};
use a2a::lambda::http::{handle, handle_streaming, handle_streaming_with, Endpoint};
use a2a::lambda::sqs::{deliver_pushes, run_tasks};
use a2a::lambda::{Deps, LambdaSettings};
use a2a::operation::Operation;
use a2a::signing::CardSigning;
use a2a::ssrf::AllowList;
use aws_lambda_events::event::sqs::SqsEvent;
use bytes::Bytes;
use http_body_util::BodyExt;
use serde_json::{json, Value};

const TASK_ID: &str = "ef9f775b-88b9-5707-8613-11ab00b8d6bb";

pub(crate) fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!("{}/../events/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn http_fixture(name: &str) -> lambda_http::Request {
    lambda_http::request::from_str(&fixture(name)).unwrap()
}

async fn call(deps: &Deps, endpoint: Endpoint, name: &str) -> (u16, Value) {
    let resp = handle(&deps.service, endpoint, http_fixture(name)).await;
    let status = resp.status().as_u16();
    let body = match resp.into_body() {
        lambda_http::Body::Text(t) => serde_json::from_str(&t).unwrap_or(Value::String(t)),
        lambda_http::Body::Empty => Value::Null,
        other => panic!("unexpected body {other:?}"),
    };
    (status, body)
}

pub(crate) struct World {
    pub(crate) http: Deps,
    pub(crate) runner: Deps,
    pub(crate) sqs: aws_sdk_sqs::Client,
    pub(crate) work_url: String,
    /// What the functions were configured with (another "sandbox" builds its own Deps from it).
    pub(crate) settings: LambdaSettings,
}

pub(crate) async fn world(webhook: &str) -> World {
    world_with(webhook, 3).await
}

/// `push_attempts`: the push queue's maxReceiveCount (and the retry policy's attempts).
async fn world_with(webhook: &str, push_attempts: u32) -> World {
    world_running(webhook, push_attempts, Arc::new(EchoAgent)).await
}

/// A world whose task runner runs `executor`.
async fn world_running(webhook: &str, push_attempts: u32, executor: Arc<dyn AgentExecutor>) -> World {
    world_from(webhook, push_attempts, executor, AuthSettings::default(), Default::default(), vec![]).await
}

async fn world_from(
    webhook: &str,
    push_attempts: u32,
    executor: Arc<dyn AgentExecutor>,
    auth: AuthSettings,
    card_signing: CardSigning,
    card_signing_kms: Vec<String>,
) -> World {
    let sdk = a2a::adapters::aws::sdk_config().await;
    let table = format!("fx-{}", uuid::Uuid::new_v4().simple());
    resources::ensure_table(&aws_sdk_dynamodb::Client::new(&sdk), &table, false).await.unwrap();
    let sqs = common::sqs_client().await;
    let (work_url, _) =
        resources::ensure_fifo_queue(&sqs, &format!("{table}-work"), Duration::from_secs(30), 3).await.unwrap();
    let (push_url, _) =
        resources::ensure_fifo_queue(&sqs, &format!("{table}-push"), Duration::from_secs(30), push_attempts)
            .await
            .unwrap();
    let settings = LambdaSettings {
        aws: AwsSettings {
            table_name: table,
            task_queue_url: Some(work_url.clone()),
            push_queue_url: Some(push_url),
            ttl_seconds: None,
            page_token_secret: Some("fixtures".into()),
            push_max_attempts: push_attempts,
        },
        public_url: "https://agent.example.com".into(),
        card: default_card(),
        extended_card: None,
        auth,
        webhook_allow: AllowList::parse(webhook).unwrap(),
        blocking_timeout: Duration::from_secs(10),
        push_timeout: Duration::from_secs(2),
        edge: None,
        card_signing,
        card_signing_kms,
    };
    let http = Deps::new(settings.clone(), None).await.unwrap();
    let runner = Deps::new(settings.clone(), Some(executor)).await.unwrap();
    World { http, runner, sqs, work_url, settings }
}

/// The event the SQS event source mapping would hand a function for these received messages (with
/// their message attributes when `with_attributes`).
pub(crate) fn sqs_event(messages: &[aws_sdk_sqs::types::Message], with_attributes: bool) -> SqsEvent {
    let records: Vec<Value> = messages
        .iter()
        .map(|m| {
            let attrs: serde_json::Map<String, Value> =
                m.attributes().into_iter().flatten().map(|(k, v)| (k.as_str().to_string(), json!(v))).collect();
            let message_attrs: serde_json::Map<String, Value> = m
                .message_attributes()
                .into_iter()
                .flatten()
                .filter(|_| with_attributes)
                .map(|(k, v)| (k.clone(), json!({"stringValue": v.string_value(), "dataType": v.data_type()})))
                .collect();
            json!({"messageId": m.message_id(), "receiptHandle": m.receipt_handle(), "body": m.body(), "attributes": attrs,
                   "messageAttributes": message_attrs, "eventSource": "aws:sqs", "awsRegion": "us-east-1"})
        })
        .collect();
    serde_json::from_value(json!({"Records": records})).unwrap()
}

/// Plays the SQS event source mapping for the task runner: receives a batch, hands it to the
/// handler, deletes what succeeded. Returns the number of records handled.
async fn pump(w: &World) -> usize {
    pump_with(w, false).await
}

/// One receive of up to `max` messages from `url` as an event source mapping makes it (a 1 s long
/// poll, every system and message attribute).
async fn receive(
    sqs: &aws_sdk_sqs::Client,
    url: &str,
    max: i32,
) -> aws_sdk_sqs::operation::receive_message::ReceiveMessageOutput {
    sqs.receive_message()
        .queue_url(url)
        .max_number_of_messages(max)
        .wait_time_seconds(1)
        .message_system_attribute_names(aws_sdk_sqs::types::MessageSystemAttributeName::All)
        .message_attribute_names("All")
        .send()
        .await
        .unwrap()
}

/// [`pump`] until the one job queued has been handled (bounded: ten receives).
async fn pump_one(w: &World) {
    let mut handled = 0;
    for _ in 0..10 {
        handled += pump(w).await;
        if handled > 0 {
            break;
        }
    }
    assert_eq!(handled, 1, "one job handled");
}

/// [`pump`], the records carrying their message attributes when `with_attributes`.
pub(crate) async fn pump_with(w: &World, with_attributes: bool) -> usize {
    let got = receive(&w.sqs, &w.work_url, 10).await;
    let event = sqs_event(got.messages(), with_attributes);
    let resp = run_tasks(&w.runner, w.runner.runner.as_ref().unwrap(), event).await;
    assert!(resp.batch_item_failures.is_empty(), "{resp:?}");
    for m in got.messages() {
        w.sqs.delete_message().queue_url(&w.work_url).receipt_handle(m.receipt_handle().unwrap()).send().await.unwrap();
    }
    got.messages().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fixture_through_its_function() {
    if !common::aws_available() {
        return;
    }
    let w = world("127.0.0.1/32").await;

    // http-send-message
    let (s, v) = call(&w.http, Endpoint::Operation(Operation::SendMessage), "apigw-v2_send-message_ok.json").await;
    assert_eq!((s, v["task"]["id"].as_str()), (200, Some(TASK_ID)), "{v}");
    assert_eq!(v["task"]["status"]["state"], "TASK_STATE_SUBMITTED");
    let (s, v) = call(&w.http, Endpoint::Operation(Operation::SendMessage), "apigw-v2_send-message_tenant.json").await;
    assert_eq!(s, 200, "{v}");
    let (s, v) =
        call(&w.http, Endpoint::Operation(Operation::SendMessage), "apigw-v2_send-message_bad-request.json").await;
    assert_eq!(s, 400);
    assert!(v["error"]["message"].as_str().unwrap().contains("message.messageId"), "{v}");
    // A request routed to the wrong function is refused, naming the function's operation.
    let (s, v) = call(&w.http, Endpoint::JsonRpc, "apigw-v2_jsonrpc_wrong-route.json").await;
    assert_eq!(s, 404, "{v}");

    // sqs-task-runner: the two queued jobs run; then the fixture batch (one poison record).
    assert_eq!(pump(&w).await, 2);
    let batch: SqsEvent = serde_json::from_str(&fixture("sqs_task-runner_batch.json")).unwrap();
    let resp = run_tasks(&w.runner, w.runner.runner.as_ref().unwrap(), batch).await;
    let failed: Vec<&str> = resp.batch_item_failures.iter().map(|f| f.item_identifier.as_str()).collect();
    assert_eq!(failed, ["0a0b0c0d-0000-4000-8000-000000000002"], "only the poison record fails");

    // http-get-task sees COMPLETED; the other HTTP functions on their fixtures.
    let (s, v) = call(&w.http, Endpoint::Operation(Operation::GetTask), "apigw-v2_get-task_ok.json").await;
    assert_eq!((s, v["status"]["state"].as_str()), (200, Some("TASK_STATE_COMPLETED")), "{v}");
    assert_eq!(v["artifacts"][0]["parts"][0]["text"], "hello from a fixture");
    assert_eq!(v["history"].as_array().unwrap().len(), 1);
    let (s, v) = call(&w.http, Endpoint::Operation(Operation::GetTask), "apigw-v2_get-task_not-found.json").await;
    assert_eq!((s, v["error"]["details"][0]["reason"].as_str()), (404, Some("TASK_NOT_FOUND")));
    let (s, v) = call(&w.http, Endpoint::Operation(Operation::ListTasks), "apigw-v2_list-tasks_ok.json").await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["nextPageToken"], "");
    let (s, v) = call(&w.http, Endpoint::Operation(Operation::CancelTask), "apigw-v2_cancel-task_ok.json").await;
    assert_eq!((s, v["error"]["details"][0]["reason"].as_str()), (409, Some("TASK_NOT_CANCELABLE")), "{v}");
    let (s, v) = call(
        &w.http,
        Endpoint::Operation(Operation::CreateTaskPushNotificationConfig),
        "apigw-v2_create-push-config_ok.json",
    )
    .await;
    assert_eq!((s, v["id"].as_str()), (200, Some("fixture-config")), "{v}");
    let (s, v) = call(
        &w.http,
        Endpoint::Operation(Operation::GetTaskPushNotificationConfig),
        "apigw-v2_get-push-config_ok.json",
    )
    .await;
    assert_eq!((s, v["url"].as_str()), (200, Some("https://93.184.216.34/a2a")));
    let (s, v) = call(
        &w.http,
        Endpoint::Operation(Operation::ListTaskPushNotificationConfigs),
        "apigw-v2_list-push-configs_ok.json",
    )
    .await;
    assert_eq!((s, v["configs"].as_array().map(Vec::len)), (200, Some(1)));
    let (s, _) = call(
        &w.http,
        Endpoint::Operation(Operation::DeleteTaskPushNotificationConfig),
        "apigw-v2_delete-push-config_ok.json",
    )
    .await;
    assert_eq!(s, 200);
    let (s, v) =
        call(&w.http, Endpoint::Operation(Operation::GetExtendedAgentCard), "apigw-v2_extended-card_unsupported.json")
            .await;
    assert_eq!((s, v["error"]["details"][0]["reason"].as_str()), (400, Some("UNSUPPORTED_OPERATION")));
    let (s, v) = call(&w.http, Endpoint::AgentCard, "apigw-v2_agent-card_ok.json").await;
    assert_eq!((s, v["supportedInterfaces"][0]["url"].as_str()), (200, Some("https://agent.example.com")));
    let (s, _) = call(&w.http, Endpoint::AgentCard, "function-url_agent-card_not-modified.json").await;
    assert_eq!(s, 304);
    let (s, v) = call(&w.http, Endpoint::JsonRpc, "apigw-v2_jsonrpc_get-task.json").await;
    assert_eq!((s, v["result"]["id"].as_str()), (200, Some(TASK_ID)), "{v}");
    let (s, v) = call(&w.http, Endpoint::JsonRpc, "apigw-v2_jsonrpc_message-send-0.3.json").await;
    assert_eq!((s, v["result"]["kind"].as_str()), (200, Some("task")), "{v}");

    // http-stream: a reconnect with Last-Event-ID 0 replays the finished task's events.
    let resp = handle_streaming(&w.http.service, http_fixture("function-url_stream_subscribe.json")).await;
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let body = String::from_utf8(resp.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap();
    assert!(body.starts_with("id: 1\n") && body.contains("TASK_STATE_COMPLETED"), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_and_push_delivery_end_to_end() {
    if !common::aws_available() {
        return;
    }
    let (hook, hits) = common::webhook_receiver(vec![]).await;
    let w = Arc::new(world("127.0.0.1/32").await);
    // http-stream for a new message: the runner (pumped here as SQS would) produces the events the
    // stream polls from the table.
    let pumping = {
        let w = w.clone();
        tokio::spawn(async move {
            for _ in 0..20 {
                if pump(&w).await > 0 {
                    return;
                }
            }
        })
    };
    let resp = handle_streaming(&w.http.service, http_fixture("function-url_stream_message.json")).await;
    let body = String::from_utf8(resp.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap();
    pumping.await.unwrap();
    let kinds: Vec<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| {
            if d.contains("\"task\"") {
                "task"
            } else if d.contains("artifactUpdate") {
                "artifact"
            } else {
                "status"
            }
        })
        .collect();
    assert_eq!(kinds, ["task", "artifact", "status"], "{body}");

    // sqs-push-delivery on its fixture: the fixture task's config points at a local receiver.
    let (s, _) = call(&w.http, Endpoint::Operation(Operation::SendMessage), "apigw-v2_send-message_ok.json").await;
    assert_eq!(s, 200);
    let cfg = json!({"id": "fixture-config", "url": hook, "token": "t"}).to_string();
    let req = http::Request::post(format!("/tasks/{TASK_ID}/pushNotificationConfigs"))
        .header("content-type", "application/json")
        .header("A2A-Version", "1.0")
        .body(Bytes::from(cfg))
        .unwrap();
    assert_eq!(w.http.service.handle(req).await.status(), 200);
    pump(&w).await;
    let batch: SqsEvent = serde_json::from_str(&fixture("sqs_push-delivery_batch.json")).unwrap();
    let resp = deliver_pushes(&w.http, batch).await;
    let failed: Vec<&str> = resp.batch_item_failures.iter().map(|f| f.item_identifier.as_str()).collect();
    assert_eq!(failed, ["0a0b0c0d-0000-4000-8000-000000000002"], "only the poison record fails");
    assert!(!hits.lock().is_empty(), "the fixture's event reached the webhook");
}

/// An agent over HTTP on 127.0.0.1 (the contract of docs/agent-http.md): answers every run with a
/// working status, a two-chunk artifact and completion, one NDJSON line each.
fn contract_answer(_: &Value) -> (&'static str, String) {
    let lines = [
        json!({"statusUpdate": {"status": {"state": "TASK_STATE_WORKING"}}}),
        json!({"artifactUpdate": {"artifact": {"artifactId": "a", "parts": [{"text": "over "}]}}}),
        json!({"artifactUpdate": {"artifact": {"artifactId": "a", "parts": [{"text": "HTTP"}]}, "append": true, "lastChunk": true}}),
        json!({"statusUpdate": {"status": {"state": "TASK_STATE_COMPLETED"}}}),
    ];
    ("application/x-ndjson", lines.iter().map(|l| format!("{l}\n")).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_task_runner_calls_an_agent_over_http() {
    if !common::aws_available() {
        return;
    }
    let (url, seen) = harness::recording_server(contract_answer).await;
    let agent = HttpAgent::new(HttpAgentConfig::new(url)).await.unwrap();
    let w = world_running("127.0.0.1/32", 3, Arc::new(agent)).await;
    // http-send-message (non-blocking), then the work queue through the sqs-task-runner handler.
    let (s, v) = call(&w.http, Endpoint::Operation(Operation::SendMessage), "apigw-v2_send-message_ok.json").await;
    assert_eq!(s, 200, "{v}");
    pump_one(&w).await;
    let (s, task) = call(&w.http, Endpoint::Operation(Operation::GetTask), "apigw-v2_get-task_ok.json").await;
    assert_eq!(s, 200);
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    assert_eq!(task["artifacts"][0]["parts"].as_array().unwrap().len(), 2, "{task}");
    let request = seen.lock()[0].clone();
    assert_eq!(request["kind"], "run");
    assert_eq!(request["contract"], "a2a-serverless/agent-http/1");
    assert_eq!(request["run"]["id"], format!("{TASK_ID}/0"));
    assert_eq!(request["message"]["messageId"], "fixture-message-1");
    assert_eq!(request["task"]["history"].as_array().unwrap().len(), 1);
}

/// An agent that says it is working, then takes a minute (longer than any deadline here).
struct Slow(Arc<std::sync::atomic::AtomicUsize>);

#[async_trait::async_trait]
impl AgentExecutor for Slow {
    async fn execute(
        &self,
        _: a2a::executor::RequestContext,
        events: a2a::executor::EventSink,
    ) -> Result<(), a2a::executor::AgentError> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        events.working(None).await?;
        tokio::time::sleep(Duration::from_secs(60)).await;
        events.complete_with_text("too late").await?;
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_that_reaches_its_deadline_mid_run_fails_the_task_cleanly_on_redelivery() {
    if !common::aws_available() {
        return;
    }
    let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let w = world_running("127.0.0.1/32", 3, Arc::new(Slow(runs.clone()))).await;
    let (s, v) = call(&w.http, Endpoint::Operation(Operation::SendMessage), "apigw-v2_send-message_ok.json").await;
    assert_eq!(s, 200, "{v}");

    // The first invocation runs in a sandbox of its own (a runtime) that the deadline ends: Lambda
    // stops the process at the deadline, its heartbeats included, without a word to the handler.
    let (settings, sqs, url, counter) = (w.settings.clone(), w.sqs.clone(), w.work_url.clone(), runs.clone());
    let receipt = std::thread::spawn(move || {
        let sandbox = tokio::runtime::Runtime::new().unwrap();
        let receipt = sandbox.block_on(async {
            let deps = Deps::new(settings, Some(Arc::new(Slow(counter)))).await.unwrap();
            for _ in 0..10 {
                let got = receive(&sqs, &url, 1).await;
                if got.messages().is_empty() {
                    continue;
                }
                let receipt = got.messages()[0].receipt_handle().unwrap().to_string();
                let runner = deps.runner.clone().unwrap();
                let handled = run_tasks(&deps, &runner, sqs_event(got.messages(), false));
                let deadline = tokio::time::timeout(Duration::from_secs(2), handled).await;
                assert!(deadline.is_err(), "the slow agent finished before the deadline");
                return receipt;
            }
            panic!("the job never arrived");
        });
        sandbox.shutdown_background();
        receipt
    })
    .join()
    .unwrap();
    let (_, task) = call(&w.http, Endpoint::Operation(Operation::GetTask), "apigw-v2_get-task_ok.json").await;
    assert_eq!(task["status"]["state"], "TASK_STATE_WORKING", "{task}");

    // Its visibility runs out (here at once): SQS hands the job out again, with a higher receive
    // count, to a runner that finds the turn cut off and fails it with the reason, without running
    // the agent a second time.
    w.sqs
        .change_message_visibility()
        .queue_url(&w.work_url)
        .receipt_handle(receipt)
        .visibility_timeout(0)
        .send()
        .await
        .unwrap();
    pump_one(&w).await;
    let (_, task) = call(&w.http, Endpoint::Operation(Operation::GetTask), "apigw-v2_get-task_ok.json").await;
    assert_eq!(task["status"]["state"], "TASK_STATE_FAILED", "{task}");
    let why = task["status"]["message"]["parts"][0]["text"].as_str().unwrap();
    assert!(why.contains("interrupted"), "{why}");
    assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 1, "the agent ran once");
}

/// Plays the push queue's event source mapping for `rounds` receives: each batch goes to the
/// sqs-push-delivery handler; the records it did not fail are deleted.
async fn pump_pushes(w: &World, push_url: &str, rounds: usize) {
    for _ in 0..rounds {
        let got = receive(&w.sqs, push_url, 1).await;
        if got.messages().is_empty() {
            continue;
        }
        let resp = deliver_pushes(&w.http, sqs_event(got.messages(), false)).await;
        for m in got.messages() {
            if !resp.batch_item_failures.iter().any(|f| Some(f.item_identifier.as_str()) == m.message_id()) {
                w.sqs
                    .delete_message()
                    .queue_url(push_url)
                    .receipt_handle(m.receipt_handle().unwrap())
                    .send()
                    .await
                    .unwrap();
            }
        }
    }
}

async fn send_with_webhook(w: &World, message_id: &str, url: &str) {
    let body = json!({"message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": "hi"}]},
        "configuration": {"returnImmediately": true, "taskPushNotificationConfig": {"url": url, "token": "tok-9",
            "authentication": {"scheme": "Bearer", "credentials": "s3cret"}}}});
    let req = http::Request::post("/message:send")
        .header("content-type", "application/json")
        .header("A2A-Version", "1.0")
        .body(Bytes::from(body.to_string()))
        .unwrap();
    assert_eq!(w.http.service.handle(req).await.status(), 200);
    assert_eq!(pump(w).await, 1, "the task runner ran the job");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_delivery_retries_with_growing_delays_then_dead_letters() {
    if !common::aws_available() {
        return;
    }
    let w = world_with("127.0.0.1/32", 6).await;
    let push_url = w.http.push_queue_url.clone().unwrap();

    // 500 three times, then 200: the first event is delivered on its fourth try, after growing
    // delays (the handler sets the message's visibility to the backoff: 1-2 s, 2-4 s, 4-8 s), and
    // the second event follows it, in order, with the config's headers.
    let (url, hits) = common::webhook_receiver(vec![500, 500, 500]).await;
    send_with_webhook(&w, "push-retry", &url).await;
    pump_pushes(&w, &push_url, 30).await;
    let hits = hits.lock().clone();
    assert_eq!(hits.len(), 5, "four tries of the first event, one of the second");
    let gaps: Vec<f64> = hits.windows(2).take(3).map(|p| (p[1].at - p[0].at).as_secs_f64()).collect();
    assert!(gaps[0] >= 0.9 && gaps[1] > gaps[0] && gaps[2] > gaps[1], "growing delays: {gaps:?}");
    let kinds: Vec<&str> =
        hits.iter().map(|h| if h.body.get("artifactUpdate").is_some() { "artifact" } else { "status" }).collect();
    assert_eq!(kinds, ["artifact", "artifact", "artifact", "artifact", "status"], "in order");
    for h in &hits {
        assert_eq!(h.headers["authorization"], "Bearer s3cret");
        assert_eq!(h.headers["a2a-notification-token"], "tok-9");
    }

    // Always 503: after the queue's maxReceiveCount (3) the notification is in the dead-letter queue.
    let w = world_with("127.0.0.1/32", 3).await;
    let push_url = w.http.push_queue_url.clone().unwrap();
    let (url, hits) = common::webhook_receiver(vec![503; 100]).await;
    send_with_webhook(&w, "push-dead", &url).await;
    pump_pushes(&w, &push_url, 30).await;
    let dlq = common::queue_url(&w.sqs, &format!("{}-push-dlq.fifo", w.http.store.table())).await;
    let dead = w.sqs.receive_message().queue_url(&dlq).max_number_of_messages(10).send().await.unwrap();
    // Both events (artifact, then COMPLETED), each after exactly three tries, in group order.
    assert_eq!(dead.messages().len(), 2);
    let seqs: Vec<u64> = dead
        .messages()
        .iter()
        .map(|m| serde_json::from_str::<Value>(m.body().unwrap()).unwrap()["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, [1, 2]);
    assert_eq!(hits.lock().len(), 6);
}

/// An HTTP fixture with its claims (`None`: no authorizer ran), path and route changed.
fn with_claims(name: &str, claims: Option<Value>, method: &str, path: &str) -> lambda_http::Request {
    let mut event: Value = serde_json::from_str(&fixture(name)).unwrap();
    match claims {
        Some(c) => event["requestContext"]["authorizer"] = json!({"jwt": {"claims": c, "scopes": null}}),
        None => {
            event["requestContext"].as_object_mut().unwrap().remove("authorizer");
        }
    }
    event["rawPath"] = json!(path);
    event["requestContext"]["http"]["method"] = json!(method);
    event["requestContext"]["http"]["path"] = json!(path);
    if method == "GET" {
        event.as_object_mut().unwrap().remove("body");
    }
    lambda_http::request::from_str(&event.to_string()).unwrap()
}

async fn answer(deps: &Deps, endpoint: Endpoint, event: lambda_http::Request) -> (u16, Vec<String>, Value) {
    let resp = handle(&deps.service, endpoint, event).await;
    let status = resp.status().as_u16();
    let challenges =
        resp.headers().get_all("www-authenticate").iter().map(|v| v.to_str().unwrap().to_string()).collect();
    let body = match resp.into_body() {
        lambda_http::Body::Text(t) => serde_json::from_str(&t).unwrap(),
        _ => Value::Null,
    };
    (status, challenges, body)
}

/// Behind API Gateway's JWT authorizer (SAM `AuthMode: jwt`) the functions take the principal and
/// scopes from the claims the gateway verified; a request that did not pass it is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jwt_authorizer_claims_are_the_principal() {
    if !common::aws_available() {
        return;
    }
    let auth = AuthSettings {
        oidc: Some(OidcSettings {
            issuer: "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_EXAMPLE".into(),
            required_scopes: Some("a2a/call".into()),
            token_url: Some("https://example.auth.us-east-1.amazoncognito.com/oauth2/token".into()),
            verified_by: a2a::auth::VerifiedBy::Gateway,
            ..Default::default()
        }),
        operation_scopes: Some("push=a2a/push".into()),
        ..Default::default()
    };
    let w = world_from("127.0.0.1/32", 3, Arc::new(EchoAgent), auth, Default::default(), vec![]).await;
    let fixture_name = "apigw-v2_send-message_jwt-authorizer.json";
    let (status, _, body) =
        answer(&w.http, Endpoint::Operation(Operation::SendMessage), http_fixture(fixture_name)).await;
    assert_eq!(status, 200, "{body}");
    let task_id = body["task"]["id"].as_str().unwrap().to_string();
    let claims: Value = serde_json::from_str::<Value>(&fixture(fixture_name)).unwrap()["requestContext"]["authorizer"]
        ["jwt"]["claims"]
        .clone();
    let get = |claims: Option<Value>| with_claims(fixture_name, claims, "GET", &format!("/tasks/{task_id}"));

    let (status, _, body) = answer(&w.http, Endpoint::Operation(Operation::GetTask), get(Some(claims.clone()))).await;
    assert_eq!((status, body["id"].as_str()), (200, Some(task_id.as_str())));
    // Another client's claims: another principal.
    let mut other = claims.clone();
    other["sub"] = json!("b0b");
    assert_eq!(answer(&w.http, Endpoint::Operation(Operation::GetTask), get(Some(other))).await.0, 404);
    // Not through the authorizer (a token, but no verified claims): refused, challenged.
    let (status, challenges, body) = answer(&w.http, Endpoint::Operation(Operation::GetTask), get(None)).await;
    assert_eq!(status, 401);
    assert_eq!(challenges.len(), 1);
    assert!(challenges[0].starts_with(r#"Bearer realm="a2a", error="invalid_token""#), "{challenges:?}");
    assert_eq!(body["error"]["details"][0]["reason"], "UNAUTHENTICATED");
    // Claims without the scope every request needs; then the per-operation scope.
    let mut narrow = claims.clone();
    narrow["scope"] = json!("a2a/other");
    let (status, challenges, _) = answer(&w.http, Endpoint::Operation(Operation::GetTask), get(Some(narrow))).await;
    assert_eq!(
        (status, challenges[0].as_str()),
        (403, r#"Bearer realm="a2a", error="insufficient_scope", scope="a2a/call""#)
    );
    let mut create =
        with_claims(fixture_name, Some(claims), "POST", &format!("/tasks/{task_id}/pushNotificationConfigs"));
    *create.body_mut() = lambda_http::Body::Text(json!({"url": "https://93.184.216.34/a2a"}).to_string());
    let (status, challenges, body) =
        answer(&w.http, Endpoint::Operation(Operation::CreateTaskPushNotificationConfig), create).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(challenges, [r#"Bearer realm="a2a", error="insufficient_scope", scope="a2a/push""#]);
    assert_eq!(body["error"]["status"], "PERMISSION_DENIED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_functions_sign_the_card_and_the_notifications() {
    if !common::aws_available() {
        return;
    }
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/signing");
    // CARD_SIGNING_KEYS_PEM: several PEM blocks in one variable.
    let pem = ["es256.pem", "eddsa.pem"].map(|f| std::fs::read_to_string(format!("{dir}/{f}")).unwrap()).join("");
    let signing = CardSigning::from_pem_blocks(&pem, None).unwrap();
    let w = world_from("127.0.0.1/32", 3, Arc::new(EchoAgent), AuthSettings::default(), signing, vec![]).await;
    check_signatures(&w, 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_functions_sign_with_keys_held_in_kms() {
    if !common::aws_available() {
        return;
    }
    let kms = aws_sdk_kms::Client::new(&a2a::adapters::aws::sdk_config().await);
    let mut ids = Vec::new();
    for spec in [aws_sdk_kms::types::KeySpec::EccNistP256, aws_sdk_kms::types::KeySpec::Rsa3072] {
        let key = kms.create_key().key_spec(spec).key_usage(aws_sdk_kms::types::KeyUsageType::SignVerify);
        ids.push(key.send().await.unwrap().key_metadata().unwrap().arn().unwrap().to_string());
    }
    // CARD_SIGNING_KMS_KEY_IDS: key ARNs, the second with its own kid.
    let kms_keys = vec![ids[0].clone(), format!("rsa-1={}", ids[1])];
    let w =
        world_from("127.0.0.1/32", 3, Arc::new(EchoAgent), AuthSettings::default(), CardSigning::default(), kms_keys)
            .await;
    let keys = check_signatures(&w, 2).await;
    assert_eq!(keys.iter().map(|k| k["kty"].as_str().unwrap()).collect::<Vec<_>>(), ["EC", "RSA"]);
    assert_eq!(keys[1]["kid"], "rsa-1");
}

/// The card served through the agent-card handler carries `signatures` signatures and verifies
/// with the JWKS served beside it (the first key: ES256); the push-delivery deliverer's JWT
/// verifies with the first key. Returns the JWKS's keys.
async fn check_signatures(w: &World, signatures: usize) -> Vec<Value> {
    let (s, card) = call(&w.http, Endpoint::AgentCard, "apigw-v2_agent-card_ok.json").await;
    assert_eq!((s, card["signatures"].as_array().map(Vec::len)), (200, Some(signatures)), "{card}");
    let mut jwks_request = http_fixture("apigw-v2_agent-card_ok.json");
    *jwks_request.uri_mut() = "https://agent.example.com/.well-known/jwks.json".parse().unwrap();
    let resp = handle(&w.http.service, Endpoint::AgentCard, jwks_request).await;
    let lambda_http::Body::Text(jwks) = resp.into_body() else { panic!("a JSON body") };
    let jwks: Value = serde_json::from_str(&jwks).unwrap();
    let keys = jwks["keys"].as_array().unwrap().clone();
    let verified = a2a::signing::card::verify(&card, &keys).unwrap();
    assert_eq!(verified.alg, "ES256");
    // The push-delivery function's deliverer signs with the first key.
    let (hook, hits) = common::webhook_receiver(vec![]).await;
    let job = a2a::ports::PushJob {
        config: a2a::types::TaskPushNotificationConfig {
            id: "c1".into(),
            task_id: "t1".into(),
            url: hook.clone(),
            ..Default::default()
        },
        event: a2a::ports::EventRecord {
            seq: 7,
            event: a2a::types::StreamResponse::Message(a2a::types::Message::user_text("hi")),
        },
        attempt: 1,
        trace: None,
    };
    assert!(matches!(w.http.deliverer.deliver(&job).await, a2a::push::Outcome::Delivered(200)));
    let hit = hits.lock()[0].clone();
    let token = hit.headers["a2a-notification-signature"].to_str().unwrap().to_string();
    let parts: Vec<&str> = token.split('.').collect();
    let b64 = |s: &str| base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, s).unwrap();
    let header: Value = serde_json::from_slice(&b64(parts[0])).unwrap();
    let claims: Value = serde_json::from_slice(&b64(parts[1])).unwrap();
    let jwk = keys.iter().find(|k| k["kid"] == header["kid"]).unwrap();
    a2a::signing::keys::verify(
        jwk,
        header["alg"].as_str().unwrap(),
        format!("{}.{}", parts[0], parts[1]).as_bytes(),
        &b64(parts[2]),
    )
    .unwrap();
    assert_eq!(
        (claims["iss"].as_str(), claims["aud"].as_str(), claims["jti"].as_str(), claims["seq"].as_u64()),
        (Some("https://agent.example.com"), Some(hook.as_str()), Some("t1/c1/7"), Some(7))
    );
    use sha2::Digest;
    let digest =
        base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, sha2::Sha256::digest(&hit.raw));
    assert_eq!(claims["body_sha256"].as_str(), Some(digest.as_str()));
    keys
}

/// `http-stream` with `PLAYGROUND=on` serves the page and its relay behind its own authentication,
/// refuses what the relay may not reach, and serves no webhook catchers (a delivery could reach
/// another execution environment); without it the paths are A2A's, and not found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_function_serves_the_playground_when_asked() {
    if !common::aws_available() {
        return;
    }
    use a2a::playground::{Playground, Settings};
    let w = world("").await;
    let settings = Settings {
        public_url: "https://agent.example".into(),
        allow: AllowList::default(),
        token_urls: Vec::new(),
        catchers: false,
    };
    let playground = Playground::new(settings).unwrap();
    let fixture = "function-url_stream_subscribe.json";
    let call = |method: &'static str, path: &'static str, body: Option<Value>| {
        let mut event = with_claims(fixture, None, method, path);
        if let Some(body) = body {
            *event.body_mut() = lambda_http::Body::Text(body.to_string());
            // The page's calls are JSON (the playground refuses other bodies: cross-site forms).
            event.headers_mut().insert("content-type", http::HeaderValue::from_static("application/json"));
        }
        event
    };
    let read = |resp: lambda_http::Response<_>| async move {
        let status = resp.status().as_u16();
        let kind = resp.headers().get("content-type").map(|v: &http::HeaderValue| v.to_str().unwrap().to_string());
        let body: Bytes = BodyExt::collect(resp.into_body()).await.unwrap().to_bytes();
        (status, kind.unwrap_or_default(), String::from_utf8(body.to_vec()).unwrap())
    };

    let (status, kind, page) =
        read(handle_streaming_with(&w.http.service, Some(&playground), call("GET", "/playground/", None)).await).await;
    assert_eq!((status, kind.as_str()), (200, "text/html; charset=utf-8"));
    assert!(page.contains("<title>A2A playground</title>"), "{page}");

    let refused = json!({"url": "http://169.254.169.254/latest/meta-data/", "method": "GET"});
    let resp =
        handle_streaming_with(&w.http.service, Some(&playground), call("POST", "/playground/api/relay", Some(refused)))
            .await;
    assert_eq!(resp.headers()["x-playground-relay"], "refused");
    let (status, _, body) = read(resp).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("169.254.169.254") && body.contains("\"field\":\"url\""), "{body}");

    let (status, _, body) = read(
        handle_streaming_with(
            &w.http.service,
            Some(&playground),
            call("POST", "/playground/api/catchers", Some(json!({}))),
        )
        .await,
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("use the playground of a2a-local"), "{body}");

    let (status, _, body) = read(handle_streaming(&w.http.service, call("GET", "/playground/", None)).await).await;
    assert_eq!(status, 404, "{body}");
}
