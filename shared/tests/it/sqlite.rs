//! The embedded SQL store across restarts: what a "process" leaves in its data directory is there for
//! the next one. A process here is a tokio runtime of its own running the embedded agent on the SQL
//! backend; a crash is that runtime shut down at once (every task dropped where it stood, nothing
//! flushed), which is what `kill -9` does to a2a-local (tests/crash does that to the real binary).

use crate::common::{self, submitted as record, TempDir};

use std::sync::Arc;
use std::time::Duration;

use a2a::adapters::sqlite::{open, Durability, SqliteOptions};
use a2a::admission::StoreLimits;
use a2a::embedded::{start, Backend, Embedded, EmbeddedConfig, SqliteBackend};
use a2a::engine::{apply_all, AgentEvent};
use a2a::error::ErrorKind;
use a2a::executor::{AgentError, AgentExecutor, EventSink, RequestContext};
use a2a::ports::*;
use a2a::types::*;
use async_trait::async_trait;
use bytes::Bytes;
use parking_lot::Mutex;
use serde_json::{json, Value};

/// A "process": its own runtime, so that dropping it stops everything it ran, mid-flight.
struct Process {
    runtime: tokio::runtime::Runtime,
    agent: Embedded,
}

impl Process {
    fn start(dir: &TempDir, executor: Arc<dyn AgentExecutor>, retry_base: Duration, allow: &str) -> Self {
        Self::with_backlog(dir, executor, retry_base, allow, a2a::push::DEFAULT_PUSH_BACKLOG)
    }

    fn with_backlog(
        dir: &TempDir,
        executor: Arc<dyn AgentExecutor>,
        retry_base: Duration,
        allow: &str,
        push_backlog: usize,
    ) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let backend = Backend::Sqlite(SqliteBackend {
            data_dir: dir.0.clone(),
            durability: Durability::Process,
            retention: None,
            max_file_bytes: None,
        });
        let agent = runtime
            .block_on(start(EmbeddedConfig {
                backend,
                webhook_allow: a2a::ssrf::AllowList::parse(allow).unwrap(),
                push_retry: a2a::webhook::RetryPolicy {
                    max_attempts: 8,
                    base: retry_base,
                    max_delay: Duration::from_secs(30),
                },
                push_timeout: Duration::from_secs(2),
                push_backlog,
                ..EmbeddedConfig::new("http://agent.test", executor)
            }))
            .unwrap();
        Self { runtime, agent }
    }

    fn call(&self, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let req = http::Request::post("/")
            .header("content-type", "application/json")
            .header("A2A-Version", "1.0")
            .body(Bytes::from(body.to_string()))
            .unwrap();
        let service = self.agent.service.clone();
        let resp = self.runtime.block_on(async move { service.handle(req).await });
        serde_json::from_slice(&resp.into_body().bytes()).unwrap()
    }

    fn send(&self, message_id: &str, return_immediately: bool, hook: Option<&str>) -> Value {
        let mut configuration = json!({"returnImmediately": return_immediately});
        if let Some(url) = hook {
            configuration["taskPushNotificationConfig"] = json!({"url": url, "token": "t"});
        }
        self.call(
            "SendMessage",
            json!({"message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": "hi"}]},
                   "configuration": configuration}),
        )
    }

    fn task(&self, id: &str) -> Value {
        self.call("GetTask", json!({"id": id}))["result"].clone()
    }

    /// Polls until `done` holds for the task (bounded: 10 s).
    fn wait_for(&self, id: &str, done: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..200 {
            let task = self.task(id);
            if done(&task) {
                return task;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("task {id} never got there: {}", self.task(id));
    }

    /// Like `kill -9`: every task of the runtime dropped where it stands, then (so that the next
    /// "process" may open the directory) everything it held let go. Unlike a real kill, the writer
    /// thread finishes the commits already handed to it; tests/crash kills the real binary.
    fn crash(self, dir: &TempDir) {
        self.runtime.shutdown_timeout(Duration::from_secs(2));
        drop(self.agent);
        let lock = std::fs::File::open(dir.0.join(a2a::adapters::sqlite::file::LOCK_FILE)).unwrap();
        for _ in 0..200 {
            if lock.try_lock().is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("the crashed process still holds its data directory");
    }
}

fn state(task: &Value) -> &str {
    task["status"]["state"].as_str().unwrap_or("")
}

/// Records each run it is given (run id, attempt); with `park`, a first delivery parks before the
/// agent does anything, or after WORKING (`after_working`), until the process dies; other runs echo.
struct Parking {
    seen: Mutex<Vec<(String, u32)>>,
    after_working: bool,
    park: bool,
}

#[async_trait]
impl AgentExecutor for Parking {
    async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), AgentError> {
        self.seen.lock().push((ctx.run_id.clone(), ctx.attempt));
        if self.park && ctx.attempt == 1 {
            if self.after_working {
                events.working(None).await?;
            }
            futures::future::pending::<()>().await;
        }
        events.artifact(Artifact::new(vec![Part::text(ctx.message.text())]), a2a::executor::Chunk::Whole).await?;
        events.complete(None).await?;
        Ok(())
    }
}

fn parking(after_working: bool, park: bool) -> Arc<Parking> {
    Arc::new(Parking { seen: Mutex::new(Vec::new()), after_working, park })
}

#[test]
fn a_turn_cut_off_before_its_agent_started_runs_again_with_the_same_run_id() {
    let dir = TempDir::new("sqlite-redeliver");
    let first = parking(false, true);
    let p = Process::start(&dir, first.clone(), Duration::from_millis(100), "");
    let task = p.send("m1", true, None)["result"]["task"].clone();
    let id = task["id"].as_str().unwrap().to_string();
    for _ in 0..100 {
        if !first.seen.lock().is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(state(&p.task(&id)), "TASK_STATE_SUBMITTED");
    p.crash(&dir);

    let second = parking(false, false);
    let p = Process::start(&dir, second.clone(), Duration::from_millis(100), "");
    let done = p.wait_for(&id, |t| state(t) == "TASK_STATE_COMPLETED");
    assert_eq!(done["artifacts"][0]["parts"][0]["text"], "hi");
    let (run_first, attempt_first) = first.seen.lock()[0].clone();
    assert_eq!(second.seen.lock().clone(), vec![(run_first, 2)], "same run id, a higher attempt");
    assert_eq!(attempt_first, 1);
}

#[test]
fn a_turn_cut_off_mid_run_fails_with_a_reason_and_is_not_run_twice() {
    let dir = TempDir::new("sqlite-midrun");
    let p = Process::start(&dir, parking(true, true), Duration::from_millis(100), "");
    let id = p.send("m1", true, None)["result"]["task"]["id"].as_str().unwrap().to_string();
    p.wait_for(&id, |t| state(t) == "TASK_STATE_WORKING");
    p.crash(&dir);

    let second = parking(true, false);
    let p = Process::start(&dir, second.clone(), Duration::from_millis(100), "");
    let failed = p.wait_for(&id, |t| state(t) == "TASK_STATE_FAILED");
    let why = failed["status"]["message"]["parts"][0]["text"].as_str().unwrap();
    assert!(why.contains("interrupted"), "{why}");
    assert!(second.seen.lock().iter().all(|(run, _)| !run.starts_with(&id)), "the agent is not run again");
    // The next turn on the task is refused as on any failed task; a new task runs normally.
    let next = p.send("m2", false, None);
    assert_eq!(state(&next["result"]["task"]), "TASK_STATE_COMPLETED", "{next}");
}

#[test]
fn a_turn_delivered_too_many_times_fails_instead_of_running_again() {
    let dir = TempDir::new("sqlite-poison");
    let agent = parking(false, true);
    let p = Process::start(&dir, agent.clone(), Duration::from_millis(100), "");
    let id = p.send("m1", true, None)["result"]["task"]["id"].as_str().unwrap().to_string();
    // The first delivery reaches the agent (which parks) before the poisoned one is handed over:
    // otherwise the poisoned one may end the task before the first ever starts.
    for _ in 0..250 {
        if !agent.seen.lock().is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let message_id = p.task(&id)["history"][0]["messageId"].as_str().unwrap().to_string();
    let job = Job::Execute { task_id: id.clone(), message_id, turn: 0, extensions: Vec::new(), pushes_owed: false };
    let runner = p.agent.runner.clone();
    let attempt = a2a::runner::MAX_DELIVERIES + 1;
    p.runtime.block_on(runner.handle_attempt(job, attempt)).unwrap();
    let failed = p.wait_for(&id, |t| state(t) == "TASK_STATE_FAILED");
    let why = failed["status"]["message"]["parts"][0]["text"].as_str().unwrap();
    assert!(why.contains(&format!("delivered {attempt} times")), "{why}");
    assert_eq!(agent.seen.lock().len(), 1, "only the first delivery reached the agent");
}

#[test]
fn tasks_events_configs_claims_and_page_tokens_outlive_the_process() {
    let dir = TempDir::new("sqlite-restart");
    let echo: Arc<dyn AgentExecutor> = Arc::new(a2a::executor::EchoAgent);
    let p = Process::start(&dir, echo.clone(), Duration::from_millis(100), "");
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(p.send(&format!("m{i}"), false, None)["result"]["task"]["id"].as_str().unwrap().to_string());
    }
    let before = p.task(&ids[0]);
    let page = p.call("ListTasks", json!({"pageSize": 2}))["result"].clone();
    let token = page["nextPageToken"].as_str().unwrap().to_string();
    assert!(!token.is_empty());
    p.crash(&dir);

    let p = Process::start(&dir, echo, Duration::from_millis(100), "");
    assert_eq!(p.task(&ids[0]).to_string(), before.to_string(), "the task as it was");
    let rest = p.call("ListTasks", json!({"pageSize": 10, "pageToken": token}))["result"].clone();
    assert_eq!(rest["tasks"].as_array().unwrap().len(), 3, "a page token from before the restart: {rest}");
    assert_eq!(rest["totalSize"], 5);
    // A retried SendMessage finds its task (the claim outlived the process).
    let again = p.send("m0", false, None);
    assert_eq!(again["result"]["task"]["id"], ids[0].as_str(), "{again}");
    // The event log answers a resubscription from where it stopped.
    let store = p.agent.sqlite.clone().unwrap();
    let seqs = |after| {
        p.runtime.block_on(store.events_after(&ids[0], after)).unwrap().iter().map(|e| e.seq).collect::<Vec<_>>()
    };
    let all = seqs(0);
    assert!(all.len() >= 2, "{all:?}");
    assert_eq!(seqs(1), all[1..], "the event log answers a resubscription from where it stopped");
}

#[test]
fn webhook_deliveries_waiting_at_a_crash_are_made_after_it_in_order_with_their_backoff() {
    let dir = TempDir::new("sqlite-push");
    let outside = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    // The receiver fails six requests, then takes everything: the first event's delivery is
    // waiting for a retry when the process dies, the one after it (the echo agent records an
    // artifact, then COMPLETED) waits behind it in its lane.
    let (url, hits) = outside.block_on(common::webhook_receiver(vec![503; 6]));
    let echo: Arc<dyn AgentExecutor> = Arc::new(a2a::executor::EchoAgent);
    let p = Process::start(&dir, echo.clone(), Duration::from_millis(600), "127.0.0.1/32");
    let id = p.send("m1", false, Some(&url))["result"]["task"]["id"].as_str().unwrap().to_string();
    for _ in 0..200 {
        if hits.lock().len() >= 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    p.crash(&dir);
    assert!(hits.lock().len() >= 2);

    let p = Process::start(&dir, echo, Duration::from_millis(100), "127.0.0.1/32");
    let store = p.agent.sqlite.clone().unwrap();
    let events = p.runtime.block_on(store.events_after(&id, 0)).unwrap();
    let want: Vec<String> = events.iter().map(|e| e.seq.to_string()).collect();
    assert_eq!(want, ["1", "2"]);
    for _ in 0..300 {
        if hits.lock().len() >= 6 + want.len() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let ids: Vec<String> =
        hits.lock().iter().map(|h| h.headers["a2a-event-id"].to_str().unwrap().to_string()).collect();
    assert!(ids[..6].iter().all(|i| i == "1"), "nothing overtakes the event being retried: {ids:?}");
    let mut answered = ids[6..].to_vec();
    answered.dedup();
    assert_eq!(answered, want, "every event, in order, after the restart: {ids:?}");
    assert_eq!(p.runtime.block_on(store.load(&id)).unwrap().unwrap().state(), TaskState::Completed);
}

/// Deliveries refused for a full backlog are dead in the file too: after a crash only the held ones
/// are owed.
#[test]
fn deliveries_refused_for_a_full_backlog_are_not_delivered_after_a_restart() {
    let dir = TempDir::new("sqlite-backlog");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let hook = format!("http://{}/hook", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new(); // accepted, never answered
        while let Ok((stream, _)) = listener.accept() {
            held.push(stream);
        }
    });
    let p = Process::with_backlog(&dir, Arc::new(a2a::executor::EchoAgent), Duration::from_secs(1), "127.0.0.1/32", 4);
    for i in 0..5 {
        let answer = p.send(&format!("backlog-{i}"), false, Some(&hook));
        assert_eq!(state(&answer["result"]["task"]), "TASK_STATE_COMPLETED", "{answer}");
    }
    let worker = p.agent.push.clone().unwrap();
    for _ in 0..200 {
        if worker.dead_letters().len() == 6 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!((worker.held(), worker.dead_letters().len()), (4, 6), "two deliveries a task: four held, six refused");
    p.crash(&dir);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let opened = runtime.block_on(open(SqliteOptions::new(&dir.0))).unwrap();
    assert_eq!(opened.recovered, (0, 4), "only the held deliveries are owed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_recorded_but_never_queued_for_a_webhook_are_queued_at_the_next_start() {
    let dir = TempDir::new("sqlite-owed");
    let opened = open(SqliteOptions::new(&dir.0)).await.unwrap();
    let store = opened.store.clone();
    let mut record = record("t1", "alice");
    record.has_push = true;
    store.create(record, None).await.unwrap();
    let config = TaskPushNotificationConfig {
        id: "c".into(),
        task_id: "t1".into(),
        url: "http://127.0.0.1:9/h".into(),
        ..Default::default()
    };
    store.put(config).await.unwrap();
    // Recorded straight through the store: the recorder's fan-out never ran (a crash just after).
    let events = vec![
        AgentEvent::Status { state: TaskState::Working, message: None },
        AgentEvent::Status { state: TaskState::Completed, message: None },
    ];
    let now = chrono::Utc::now();
    store.update("t1", 0, &|r| apply_all(r, &events, now)).await.unwrap();
    drop((opened, store));

    let mut opened = open(SqliteOptions::new(&dir.0)).await.unwrap();
    assert_eq!(opened.recovered, (0, 2), "two deliveries owed, queued once");
    let mut seqs = Vec::new();
    while let Ok(d) = opened.deliveries.try_recv() {
        seqs.push(d.job.event.seq);
    }
    assert_eq!(seqs, [1, 2]);
    drop(opened);
    // Queued now: the next start delivers them again from their rows, and owes nothing more.
    let opened = open(SqliteOptions::new(&dir.0)).await.unwrap();
    assert_eq!(opened.recovered, (0, 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_evict_in_the_file_and_the_sweep_deletes_what_outlived_its_retention() {
    let dir = TempDir::new("sqlite-limits");
    let options = SqliteOptions {
        limits: StoreLimits { max_tasks: 3, principal_share: 100, ..Default::default() },
        retention: Some(Duration::from_secs(3600)),
        ..SqliteOptions::new(&dir.0)
    };
    let opened = open(options.clone()).await.unwrap();
    let store = opened.store.clone();
    for i in 0..10 {
        let mut r = record(&format!("done{i}"), "alice");
        r.task.status = TaskStatus::new(TaskState::Completed, chrono::Utc::now());
        store.create(r, None).await.unwrap();
    }
    assert_eq!(store.len(), 3);
    assert!(store.load("done9").await.unwrap().is_some() && store.load("done0").await.unwrap().is_none());
    // Unfinished tasks never give way: the next one is refused once only they are left.
    for i in 0..3 {
        store.create(record(&format!("live{i}"), "alice"), None).await.unwrap();
    }
    let refused = store.create(record("one-more", "alice"), None).await.unwrap_err();
    assert_eq!(refused.kind, ErrorKind::ResourceExhausted);
    drop((opened, store));

    let opened = open(options.clone()).await.unwrap();
    assert_eq!(opened.store.len(), 3, "the evictions are in the file");
    let mut old = record("old", "bob");
    old.task.status = TaskStatus::new(TaskState::Completed, chrono::Utc::now() - chrono::Duration::hours(2));
    let opened_more = open(SqliteOptions { limits: StoreLimits::default(), ..options.clone() }).await;
    assert!(opened_more.is_err(), "one process per directory");
    drop(opened);
    let opened = open(SqliteOptions { limits: StoreLimits::default(), ..options }).await.unwrap();
    opened.store.create(old, None).await.unwrap();
    assert_eq!(opened.store.sweep().await.unwrap(), 1, "finished two hours ago, kept one");
    assert!(opened.store.load("old").await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_is_a_clear_retryable_error_and_nothing_half_written() {
    let dir = TempDir::new("sqlite-full");
    let options = SqliteOptions { max_file_bytes: Some(256 * 1024), ..SqliteOptions::new(&dir.0) };
    let opened = open(options.clone()).await.unwrap();
    let store = opened.store.clone();
    let mut full = None;
    for i in 0..200 {
        let mut r = record(&format!("t{i}"), "alice");
        r.task.history.push(Message::user_text("x".repeat(8 * 1024)));
        if let Err(e) = store.create(r, None).await {
            full = Some((i, e));
            break;
        }
    }
    let (kept, e) = full.expect("the cap is reached");
    assert_eq!(e.kind, ErrorKind::ResourceExhausted, "{e:?}");
    assert!(e.message.contains("storage is full"), "{}", e.message);
    assert!(store.load(&format!("t{kept}")).await.unwrap().is_none(), "the refused task is not half there");
    assert_eq!(store.len(), kept);
    drop((opened, store));
    let opened = open(options).await.unwrap();
    assert_eq!(opened.store.len(), kept, "every acknowledged task, nothing else");
    assert_eq!(opened.store.integrity_check().unwrap(), "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_synced_at_every_commit_keeps_the_same_and_empties_its_wal_at_a_stop() {
    let dir = TempDir::new("sqlite-power");
    let options = SqliteOptions { durability: Durability::Power, ..SqliteOptions::new(&dir.0) };
    let opened = open(options.clone()).await.unwrap();
    let events = [AgentEvent::Status { state: TaskState::Completed, message: None }];
    let mut writes = Vec::new();
    for n in 0..40 {
        let store = opened.store.clone();
        let events = events.clone();
        writes.push(tokio::spawn(async move {
            let id = format!("t{n}");
            store.create(record(&id, "alice"), None).await.unwrap();
            store.update(&id, 0, &|r| apply_all(r, &events, chrono::Utc::now())).await.unwrap();
        }));
    }
    for write in writes {
        write.await.unwrap();
    }
    drop(opened);
    let wal = dir.0.join(format!("{}-wal", a2a::adapters::sqlite::file::DB_FILE));
    assert_eq!(std::fs::metadata(&wal).map_or(0, |m| m.len()), 0, "a graceful stop checkpoints the WAL into the file");

    let opened = open(options).await.unwrap();
    assert_eq!(opened.store.len(), 40);
    for n in 0..40 {
        let task = opened.store.load(&format!("t{n}")).await.unwrap().unwrap();
        assert_eq!(task.state(), TaskState::Completed);
    }
    assert_eq!(opened.store.integrity_check().unwrap(), "ok");
}
