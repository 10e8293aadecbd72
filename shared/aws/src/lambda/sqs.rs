//! The SQS-triggered functions' handlers: `sqs-task-runner` (work queue) and `sqs-push-delivery`
//! (push queue). Both report partial batch failures (`batchItemFailures`, with the event source
//! mapping's ReportBatchItemFailures on): a failed record comes back after its visibility timeout and
//! lands in the dead-letter queue after `maxReceiveCount`. The queues are FIFO, so once a record of a
//! message group fails, the later records of that group in the batch are failed too (unprocessed),
//! which keeps each group in order.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};
use lambda_runtime::{service_fn, LambdaEvent};
use tokio_util::sync::CancellationToken;

use super::Deps;
use crate::sqs::{attempt_of, attempt_push, RUN_RETRY_AFTER, SQS};
use a2a_engine::ports::Job;
use a2a_engine::runner::Runner;
use a2a_telemetry::spans::{self, Queue};
use a2a_telemetry::TraceContext;
use tracing::Instrument;

/// The failures of one FIFO batch: once a record of a group fails, the later records of that
/// group are failed unprocessed, so the group comes back in order.
#[derive(Default)]
struct FifoBatch {
    failed_groups: HashSet<String>,
    response: SqsBatchResponse,
}

impl FifoBatch {
    fn group_of(record: &SqsMessage) -> String {
        record.attributes.get("MessageGroupId").cloned().unwrap_or_default()
    }

    /// True (and the record is failed) when an earlier record of its group failed.
    fn blocked(&mut self, record: &SqsMessage) -> bool {
        let blocked = self.failed_groups.contains(&Self::group_of(record));
        if blocked {
            self.fail(record);
        }
        blocked
    }

    fn fail(&mut self, record: &SqsMessage) {
        let mut f = BatchItemFailure::default();
        f.item_identifier = record.message_id.clone().unwrap_or_default();
        self.response.batch_item_failures.push(f);
        self.failed_groups.insert(Self::group_of(record));
    }
}

/// The trace a record was sent in: its `traceparent` attribute, else `AWSTraceHeader`.
fn trace_of(record: &SqsMessage) -> Option<TraceContext> {
    use a2a_telemetry::context::{AWS_TRACE_HEADER, TRACEPARENT, TRACESTATE};
    let text = |k: &str| record.message_attributes.get(k).and_then(|a| a.string_value.as_deref());
    let xray = record.attributes.get(AWS_TRACE_HEADER).map(String::as_str);
    TraceContext::from_carrier(text(TRACEPARENT), text(TRACESTATE), xray)
}

/// The CONSUMER span of one record (and its queue lag, measured).
fn process_span(queue: Queue, task_id: &str, record: &SqsMessage) -> tracing::Span {
    crate::sqs::record_lag(
        queue,
        record.attributes.get("SentTimestamp").map(String::as_str),
        attempt_of(&record.attributes),
    );
    let span = spans::queue_process(SQS, queue, task_id, attempt_of(&record.attributes), trace_of(record).as_ref());
    spans::message_sent(&span, record.message_id.as_deref());
    span
}

/// Visibility a running job keeps renewing (the function's timeout must stay below the queue's
/// visibility timeout anyway; the heartbeat covers runs that approach it).
const HEARTBEAT_VISIBILITY: Duration = Duration::from_secs(120);

async fn set_visibility(sqs: &aws_sdk_sqs::Client, url: &str, receipt: &str, visibility: Duration) {
    let secs = i32::try_from(visibility.as_secs()).unwrap_or(i32::MAX);
    if let Err(e) =
        sqs.change_message_visibility().queue_url(url).receipt_handle(receipt).visibility_timeout(secs).send().await
    {
        tracing::warn!(error = ?e, "ChangeMessageVisibility failed");
    }
}

/// Keeps a record invisible while `stop` is not cancelled.
fn heartbeat(sqs: aws_sdk_sqs::Client, url: Option<String>, receipt: Option<String>, stop: CancellationToken) {
    let (Some(url), Some(receipt)) = (url, receipt) else { return };
    tokio::spawn(async move {
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep(HEARTBEAT_VISIBILITY / 3) => set_visibility(&sqs, &url, &receipt, HEARTBEAT_VISIBILITY).await,
            }
        }
    });
}

/// Runs every job of a work-queue batch, in order within each task's group.
pub async fn run_tasks(deps: &Deps, runner: &Runner, event: SqsEvent) -> SqsBatchResponse {
    let mut batch = FifoBatch::default();
    for record in event.records {
        if batch.blocked(&record) {
            continue;
        }
        let id = record.message_id.clone().unwrap_or_default();
        let job: Job = match serde_json::from_str(record.body.as_deref().unwrap_or_default()) {
            Ok(job) => job,
            Err(e) => {
                // A poison message: fail it so that it ends in the dead-letter queue for a look.
                tracing::error!(message_id = id, error = %e, "unreadable job");
                batch.fail(&record);
                continue;
            }
        };
        let stop = CancellationToken::new();
        heartbeat(deps.sqs.clone(), deps.task_queue_url.clone(), record.receipt_handle.clone(), stop.clone());
        let span = process_span(Queue::Tasks, job.task_id(), &record);
        let result = runner.handle_attempt(job, attempt_of(&record.attributes)).instrument(span).await;
        stop.cancel();
        if let Err(e) = result {
            tracing::error!(message_id = id, error = %e, "job failed; it will be retried");
            if let (Some(url), Some(receipt)) = (&deps.task_queue_url, &record.receipt_handle) {
                set_visibility(&deps.sqs, url, receipt, RUN_RETRY_AFTER).await;
            }
            batch.fail(&record);
        }
    }
    deps.engine.hub.flush().await;
    super::flush_telemetry().await;
    batch.response
}

/// Attempts every delivery of a push-queue batch; a failure sets the record's visibility to its
/// backoff delay before reporting it, so the retry waits as long as the policy says.
pub async fn deliver_pushes(deps: &Deps, event: SqsEvent) -> SqsBatchResponse {
    let mut batch = FifoBatch::default();
    for record in event.records {
        if batch.blocked(&record) {
            continue;
        }
        let id = record.message_id.clone().unwrap_or_default();
        let outcome = attempt_push(
            deps.store.as_ref(),
            deps.store.as_ref(),
            &deps.deliverer,
            &deps.retry,
            record.body.as_deref().unwrap_or_default(),
            attempt_of(&record.attributes),
        )
        .instrument(process_span(Queue::Push, "", &record))
        .await;
        let retry_in = match outcome {
            Ok(None) => continue,
            Ok(Some(delay)) => Some(delay),
            Err(e) => {
                tracing::error!(message_id = id, error = %e, "push delivery could not be attempted");
                None
            }
        };
        if let (Some(delay), Some(url), Some(receipt)) = (retry_in, &deps.push_queue_url, &record.receipt_handle) {
            set_visibility(&deps.sqs, url, receipt, delay).await;
        }
        batch.fail(&record);
    }
    super::flush_telemetry().await;
    batch.response
}

/// Runs the task-runner function until the runtime stops it (batches one at a time, or up to
/// `AWS_LAMBDA_MAX_CONCURRENCY` at once on Lambda Managed Instances).
pub async fn serve_tasks(deps: Arc<Deps>) -> Result<(), lambda_runtime::Error> {
    let runner = deps.runner.clone().ok_or("the task runner needs an executor: Deps::from_env(Some(executor))")?;
    lambda_runtime::run_concurrent(service_fn(move |event: LambdaEvent<SqsEvent>| {
        let (deps, runner) = (deps.clone(), runner.clone());
        async move { Ok::<_, lambda_runtime::Error>(run_tasks(&deps, &runner, event.payload).await) }
    }))
    .await
}

/// Runs the push-delivery function until the runtime stops it (concurrent as [`serve_tasks`]).
pub async fn serve_pushes(deps: Arc<Deps>) -> Result<(), lambda_runtime::Error> {
    lambda_runtime::run_concurrent(service_fn(move |event: LambdaEvent<SqsEvent>| {
        let deps = deps.clone();
        async move { Ok::<_, lambda_runtime::Error>(deliver_pushes(&deps, event.payload).await) }
    }))
    .await
}
