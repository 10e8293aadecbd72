//! The task runner: takes jobs from the work queue, runs the user's executor with a cancellation
//! signal and an event sink, and makes sure every run ends in a recorded state (a run that returns
//! without one completes; a failing or panicking run fails; a cancelled run is canceled).

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use a2a_protocol::error::A2aError;

use crate::auth::Principal;
use crate::engine::{AgentEvent, Engine};
use crate::executor::{AgentError, AgentExecutor, EventSink, RequestContext};
use crate::ports::Job;
use a2a_protocol::error::Result;
use a2a_protocol::types::{Message, TaskState};
use a2a_telemetry::metrics::{self, Measurement};
use a2a_telemetry::spans;

/// Deliveries of one turn after which it fails instead of running: a turn whose run keeps taking
/// its process down (a crash, an out-of-memory kill) must not be run forever. SQS's dead-letter
/// queues take a job after as many receives.
pub const MAX_DELIVERIES: u32 = 5;

/// Which run of a turn a job asks for.
struct Run {
    turn: u64,
    attempt: u32,
    extensions: Vec<String>,
    pushes_owed: bool,
}

pub struct Runner {
    engine: Arc<Engine>,
    executor: Arc<dyn AgentExecutor>,
    running: Mutex<HashMap<String, CancellationToken>>,
    claim_turns: bool,
}

/// The run's job fails when a webhook delivery of the turn could not be queued: SQS hands it out
/// again, which queues the turn's deliveries again (the SQLite store's start-up sweep queues what
/// is owed after a restart).
fn pushes_owed(task_id: &str) -> A2aError {
    A2aError::internal(format!("task {task_id}: a webhook delivery of this turn could not be queued"))
}

impl Runner {
    pub fn new(engine: Arc<Engine>, executor: Arc<dyn AgentExecutor>) -> Self {
        Self { engine, executor, running: Mutex::new(HashMap::new()), claim_turns: false }
    }

    /// A runner fed by a queue that may hand one job to two consumers at once (SQS delivers at
    /// least once): before starting the agent it claims the turn with a conditional write, so one
    /// of two runners given the same turn runs it and the other lets it be. In-process queues hand a
    /// job to one runner and skip this write.
    pub fn claiming_turns(mut self) -> Self {
        self.claim_turns = true;
        self
    }

    /// Handles one job to the end. Redelivered or stale jobs are no-ops.
    pub async fn handle(&self, job: Job) -> Result<()> {
        self.handle_attempt(job, 1).await
    }

    /// Handles a job delivered for the `attempt`-th time (a queue's receive count). A task found
    /// WORKING on a later attempt was being run by a runner that crashed: it ends FAILED rather than
    /// staying WORKING forever (its agent may have had side effects, so it is not run again).
    pub async fn handle_attempt(&self, job: Job, attempt: u32) -> Result<()> {
        match job {
            Job::Execute { task_id, message_id, turn, extensions, pushes_owed } => {
                self.execute(&task_id, &message_id, Run { turn, attempt, extensions, pushes_owed }).await
            }
            Job::Cancel { task_id } => {
                if let Some(token) = self.running.lock().get(&task_id) {
                    token.cancel();
                }
                Ok(())
            }
        }
    }

    /// Turns whose executor runs in this process now.
    pub fn running(&self) -> usize {
        self.running.lock().len()
    }

    /// True while an executor runs `task_id` in this process.
    pub fn is_running(&self, task_id: &str) -> bool {
        self.running.lock().contains_key(task_id)
    }

    async fn execute(&self, task_id: &str, message_id: &str, run: Run) -> Result<()> {
        let attempt = run.attempt;
        let Some(rec) = self.engine.store.load(task_id).await? else {
            tracing::warn!(task_id, "execute job for an unknown task dropped");
            return Ok(());
        };
        // A run delivered again may have stopped between committing events and queueing their
        // webhook deliveries: queue the turn's again first, so that they stay in order.
        if rec.has_push && (attempt > 1 || run.pushes_owed) {
            self.engine.recorder.requeue_pushes(task_id, run.turn).await?;
        }
        let claimed = rec.turn.as_ref().is_some_and(|t| t.claimed_by.is_some());
        if attempt > 1 && (rec.state() == TaskState::Working || claimed) && !self.is_running(task_id) {
            tracing::error!(task_id, attempt, "the previous run of this task was interrupted; the task fails");
            let why = "the agent's run was interrupted (the server running it stopped mid-turn) and is not run twice; send the message again to retry";
            return self.close_turn(task_id, TaskState::Failed, Some(why.into()), false).await;
        }
        // Only a task waiting for its turn to run is picked up, which makes redelivery harmless.
        if rec.state() != TaskState::Submitted {
            tracing::debug!(task_id, state = %rec.state(), "execute job for a task that is not SUBMITTED ignored");
            return Ok(());
        }
        // A SUBMITTED task's last event is the one that opened its current turn: a job of an earlier
        // turn, delivered again late, must not run that turn with its old message.
        if run.turn < rec.last_seq {
            tracing::debug!(task_id, turn = run.turn, "execute job of an earlier turn ignored");
            return Ok(());
        }
        let Some(message) = rec.task.history.iter().rev().find(|m| m.message_id == message_id).cloned() else {
            tracing::warn!(task_id, message_id, "execute job for a message the task does not hold dropped");
            return Ok(());
        };
        if attempt > MAX_DELIVERIES {
            tracing::error!(task_id, attempt, "a turn delivered too many times fails");
            let why = format!(
                "the turn was delivered {attempt} times without finishing (the process running it stopped each time) and is not run again"
            );
            return self.close_turn(task_id, TaskState::Failed, Some(why), false).await;
        }
        if rec.cancel_requested {
            // Canceled before it ever ran: do not start the agent at all.
            return self.close_turn(task_id, TaskState::Canceled, None, false).await;
        }
        if self.claim_turns && !self.claim(task_id, run.turn).await? {
            tracing::debug!(task_id, turn = run.turn, "another runner took this turn");
            return Ok(());
        }
        let cancel = CancellationToken::new();
        self.running.lock().insert(task_id.to_string(), cancel.clone());
        let ctx = RequestContext {
            task_id: task_id.to_string(),
            context_id: rec.task.context_id.clone(),
            is_new_task: rec.task.history.len() <= 1,
            message,
            task: rec.task,
            principal: Principal::owner(&rec.owner),
            cancel: cancel.clone(),
            extensions: run.extensions,
            run_id: format!("{task_id}/{}", run.turn),
            attempt: run.attempt,
        };
        let span = spans::invoke_agent(&self.engine.card.card.name, task_id, &ctx.context_id, &ctx.run_id, attempt);
        let sink = EventSink::new(self.engine.recorder.clone(), task_id.to_string()).in_span(span.clone());
        let started = metrics::start();
        let result = self.run_turn(task_id, ctx, sink.clone(), cancel).instrument(span.clone()).await;
        let ended = sink.last_state().map_or("", TaskState::as_str);
        if started.is_some() {
            let seconds = metrics::seconds_since(started);
            metrics::record(Measurement::Turn { state: ended, seconds });
            if sink.last_state().is_some_and(TaskState::is_terminal) {
                metrics::record(Measurement::TaskFinished { state: ended });
            }
        }
        let failed =
            result.is_err() || sink.last_state().is_some_and(|s| matches!(s, TaskState::Failed | TaskState::Rejected));
        let (events, chunks) = sink.counts();
        spans::turn_ended(&span, ended, failed, events, chunks);
        span.in_scope(|| tracing::debug!(task_id, state = ended, events, chunks, "turn ended"));
        result?;
        match sink.pushes_owed() {
            false => Ok(()),
            true => Err(pushes_owed(task_id)),
        }
    }

    /// Claims `turn` of the task for a run of this process: false when another run has it, or
    /// the task moved on meanwhile.
    async fn claim(&self, task_id: &str, turn: u64) -> Result<bool> {
        let run = uuid::Uuid::new_v4().to_string();
        let claimed = self
            .engine
            .store
            .update(task_id, 0, &|rec| {
                let taken = || A2aError::unsupported("the turn was taken by another run");
                if rec.state() != TaskState::Submitted || rec.last_seq != turn {
                    return Err(taken());
                }
                match rec.turn.as_mut() {
                    Some(key) if key.claimed_by.is_none() => {
                        key.claimed_by = Some(run.as_str().into());
                        Ok(Vec::new())
                    }
                    _ => Err(taken()),
                }
            })
            .await;
        match claimed {
            Ok(_) => Ok(true),
            Err(e) if e.kind == a2a_protocol::error::ErrorKind::UnsupportedOperation => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Runs the executor, then records the ending the executor did not record itself.
    async fn run_turn(
        &self,
        task_id: &str,
        ctx: RequestContext,
        sink: EventSink,
        cancel: CancellationToken,
    ) -> Result<()> {
        let outcome = AssertUnwindSafe(self.executor.execute(ctx, sink.clone())).catch_unwind().await;
        self.running.lock().remove(task_id);
        // The usual ending: the agent itself ended the turn and nobody cancelled. Nothing to add.
        if matches!(outcome, Ok(Ok(())))
            && !cancel.is_cancelled()
            && sink.last_state().is_some_and(TaskState::ends_turn)
        {
            return Ok(());
        }

        let closing = match outcome {
            Ok(Ok(())) if cancel.is_cancelled() => Some((TaskState::Canceled, None)),
            Ok(Ok(())) => Some((TaskState::Completed, None)),
            Ok(Err(AgentError::Rejected(why))) => Some((TaskState::Rejected, Some(why))),
            Ok(Err(AgentError::Failed(why))) => Some((TaskState::Failed, Some(why))),
            Err(_) => {
                tracing::error!(task_id, "the agent panicked; task failed");
                Some((TaskState::Failed, Some("the agent crashed".to_string())))
            }
        };
        if let Some((state, why)) = closing {
            self.close_turn(task_id, state, why, sink.pushes_owed()).await?;
            sink.ended(state);
        }
        Ok(())
    }

    /// Records `state` unless the executor already ended the turn itself; `hold_pushes`: the turn
    /// owes deliveries already, so this one waits for their requeue too (order).
    async fn close_turn(&self, task_id: &str, state: TaskState, why: Option<String>, hold_pushes: bool) -> Result<()> {
        let Some(rec) = self.engine.store.load(task_id).await? else {
            return Ok(());
        };
        let current = rec.state();
        let cancelled_mid_turn = state == TaskState::Canceled && !current.is_terminal();
        if current.ends_turn() && !cancelled_mid_turn {
            return Ok(());
        }
        let message = why.map(Message::agent_text);
        match self.engine.recorder.record_with(task_id, vec![AgentEvent::Status { state, message }], !hold_pushes).await
        {
            Ok(r) if r.pushes_owed => Err(pushes_owed(task_id)),
            Ok(_) => Ok(()),
            // Someone else (CancelTask's fallback) ended the task first: nothing left to do.
            Err(e) if e.kind == a2a_protocol::error::ErrorKind::UnsupportedOperation => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Consumes an in-process work queue (memory or durable), one spawned run per job, each
    /// continuing the trace its job was sent in; tells the queue when each run is over.
    #[cfg(feature = "runtime")]
    pub fn spawn(
        self: Arc<Self>,
        mut jobs: tokio::sync::mpsc::UnboundedReceiver<crate::memory::Queued>,
    ) -> tokio::task::JoinHandle<()> {
        use crate::memory::IN_PROCESS_QUEUE;
        tokio::spawn(async move {
            while let Some(crate::memory::Queued { job, trace, sent, attempt, done }) = jobs.recv().await {
                if sent.is_some() {
                    let seconds = metrics::seconds_since(sent);
                    metrics::record(Measurement::QueueLag { queue: spans::Queue::Tasks, seconds });
                }
                let runner = self.clone();
                let span =
                    spans::queue_process(IN_PROCESS_QUEUE, spans::Queue::Tasks, job.task_id(), attempt, trace.as_ref());
                tokio::spawn(
                    async move {
                        if let Err(e) = runner.handle_attempt(job, attempt).await {
                            tracing::error!(error = %e, "task run failed");
                        }
                        // A run that failed to record its ending is not retried by delivering the job
                        // again: the task's state says what happened (a run cut off mid-turn fails).
                        if let Some(done) = done {
                            done();
                        }
                    }
                    .instrument(span),
                );
            }
        })
    }
}
