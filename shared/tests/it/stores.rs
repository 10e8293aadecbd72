//! One operation-level suite for the store ports, run against the memory adapters, the embedded SQL
//! store (a fresh SQLite file) and the DynamoDB adapter on moto: create/load/update/event log, gap-free sequence numbers under 50
//! concurrent writers, ListTasks pagination with every filter, forged page tokens, push configs,
//! and (DynamoDB) the 400 KB item limit.

use crate::common;

use std::sync::Arc;

use a2a::adapters::memory::MemoryStore;
use a2a::engine::{apply_all, AgentEvent};
use a2a::error::ErrorKind;
use a2a::ports::*;
use a2a::types::*;
use chrono::{Duration as Days, TimeZone, Utc};

struct Stores {
    name: &'static str,
    tasks: Arc<dyn TaskStore>,
    configs: Arc<dyn PushConfigStore>,
    /// A store whose page tokens use another secret (for the forged-token case).
    other: Arc<dyn TaskStore>,
    /// The SQL stores' directories, removed when the case ends.
    _dirs: Vec<common::TempDir>,
}

async fn all_stores() -> Vec<Stores> {
    let memory = Arc::new(MemoryStore::default());
    let (sqlite, dir) = common::sqlite_store("stores").await;
    let (other, other_dir) = common::sqlite_store("stores-other").await;
    let mut out = vec![
        Stores {
            name: "memory",
            tasks: memory.clone(),
            configs: memory,
            other: Arc::new(MemoryStore::default()),
            _dirs: Vec::new(),
        },
        Stores { name: "sqlite", tasks: sqlite.clone(), configs: sqlite, other, _dirs: vec![dir, other_dir] },
    ];
    if common::aws_available() {
        let d = common::dynamo_store("secret-1").await;
        out.push(Stores {
            name: "dynamodb",
            tasks: d.clone(),
            configs: d,
            other: common::dynamo_store("secret-2").await,
            _dirs: Vec::new(),
        });
    }
    out
}

fn record(id: &str, owner: &str, ctx: &str, minutes: i64) -> TaskRecord {
    let at = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap() + Days::minutes(minutes);
    crate::common::submitted_at(id, owner, ctx, at)
}

async fn record_events(store: &dyn TaskStore, id: &str, events: Vec<AgentEvent>) -> a2a::Result<Committed> {
    let now = Utc::now();
    store.update(id, events.iter().map(AgentEvent::size).sum(), &|r| apply_all(r, &events, now)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_claims_move_only_from_where_they_pointed() {
    for s in all_stores().await {
        let owner = format!("o-{}", uuid::Uuid::new_v4());
        let (a, b, c) = (format!("a-{owner}"), format!("b-{owner}"), format!("c-{owner}"));
        let claim = |replaces: Option<&str>| MessageClaim {
            owner: owner.clone(),
            message_id: "m1".into(),
            replaces: replaces.map(str::to_string),
        };
        assert_eq!(s.tasks.claimed_task(&owner, "m1").await.unwrap(), None, "{}", s.name);
        let mut first = record(&a, &owner, "ctx", 0);
        first.turn = Some(TurnKey { message_id: "m1".into(), fingerprint: Fingerprint([0xf1; 16]), claimed_by: None });
        assert!(s.tasks.create(first, Some(&claim(None))).await.unwrap(), "{}", s.name);
        assert_eq!(s.tasks.claimed_task(&owner, "m1").await.unwrap().as_deref(), Some(a.as_str()), "{}", s.name);
        assert_eq!(s.tasks.claimed_task("someone-else", "m1").await.unwrap(), None, "{}: per owner", s.name);
        let turn = s.tasks.load(&a).await.unwrap().unwrap().turn.unwrap();
        assert_eq!(turn.fingerprint, Fingerprint([0xf1; 16]), "{}: the turn key is stored", s.name);
        // A racer that still believes the message unclaimed loses, and nothing is stored.
        assert!(!s.tasks.create(record(&b, &owner, "ctx", 0), Some(&claim(None))).await.unwrap(), "{}", s.name);
        assert!(s.tasks.load(&b).await.unwrap().is_none(), "{}", s.name);
        // One that saw the current claim moves it.
        assert!(s.tasks.create(record(&c, &owner, "ctx", 0), Some(&claim(Some(&a)))).await.unwrap(), "{}", s.name);
        assert_eq!(s.tasks.claimed_task(&owner, "m1").await.unwrap().as_deref(), Some(c.as_str()), "{}", s.name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_load_update_and_event_log() {
    for s in all_stores().await {
        let id = format!("task-{}", uuid::Uuid::new_v4());
        assert!(s.tasks.create(record(&id, "alice", "ctx", 0), None).await.unwrap(), "{}", s.name);
        assert!(
            !s.tasks.create(record(&id, "alice", "ctx", 0), None).await.unwrap(),
            "{}: create is conditional",
            s.name
        );
        let art = Artifact::new(vec![Part::text("a")]).with_name("out");
        let more = Artifact { parts: vec![Part::text("b")], ..art.clone() };
        let c = record_events(
            s.tasks.as_ref(),
            &id,
            vec![
                AgentEvent::Status { state: TaskState::Working, message: Some(Message::agent_text("on it")) },
                AgentEvent::Artifact { artifact: art.clone(), append: false, last_chunk: false },
                AgentEvent::Artifact { artifact: more, append: true, last_chunk: true },
            ],
        )
        .await
        .unwrap();
        assert_eq!(c.events.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3], "{}", s.name);
        record_events(s.tasks.as_ref(), &id, vec![AgentEvent::Status { state: TaskState::Completed, message: None }])
            .await
            .unwrap();

        let rec = s.tasks.load(&id).await.unwrap().unwrap();
        assert_eq!(rec.state(), TaskState::Completed, "{}", s.name);
        assert_eq!((rec.version, rec.last_seq), (3, 4), "{}", s.name);
        assert_eq!(rec.task.history.len(), 2, "{}: the first message and the status message", s.name);
        let arts = rec.task.artifacts.unwrap();
        assert_eq!(arts.len(), 1);
        assert_eq!(arts[0].parts, vec![Part::text("a"), Part::text("b")], "{}: chunks assembled", s.name);
        assert_eq!(arts[0].name, "out");
        let events = s.tasks.events_after(&id, 0).await.unwrap();
        assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3, 4]);
        assert_eq!(s.tasks.events_after(&id, 3).await.unwrap().len(), 1);
        assert_eq!(s.tasks.event(&id, 2).await.unwrap().unwrap().seq, 2);
        // A terminal task refuses events and stays as it was.
        let err =
            record_events(s.tasks.as_ref(), &id, vec![AgentEvent::Status { state: TaskState::Working, message: None }])
                .await;
        assert_eq!(err.unwrap_err().kind, ErrorKind::UnsupportedOperation);
        assert_eq!(s.tasks.load(&id).await.unwrap().unwrap().version, 3);
        assert!(s.tasks.load("missing").await.unwrap().is_none());
        // A replacement (append false) starts the artifact over.
        let id2 = format!("task-{}", uuid::Uuid::new_v4());
        s.tasks.create(record(&id2, "alice", "ctx", 0), None).await.unwrap();
        let a1 = Artifact::new(vec![Part::text("old")]);
        let a2 = Artifact { parts: vec![Part::text("new")], ..a1.clone() };
        record_events(
            s.tasks.as_ref(),
            &id2,
            vec![
                AgentEvent::Artifact { artifact: a1, append: false, last_chunk: true },
                AgentEvent::Artifact { artifact: a2, append: false, last_chunk: true },
            ],
        )
        .await
        .unwrap();
        let arts = s.tasks.load(&id2).await.unwrap().unwrap().task.artifacts.unwrap();
        assert_eq!(arts[0].parts, vec![Part::text("new")], "{}", s.name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_writers_lose_nothing() {
    for s in all_stores().await {
        let id = format!("task-{}", uuid::Uuid::new_v4());
        s.tasks.create(record(&id, "alice", "ctx", 0), None).await.unwrap();
        let mut handles = Vec::new();
        for i in 0..50 {
            let (store, id) = (s.tasks.clone(), id.clone());
            handles.push(tokio::spawn(async move {
                record_events(
                    store.as_ref(),
                    &id,
                    vec![AgentEvent::Message(Message::agent_text(format!("writer {i}")))],
                )
                .await
            }));
        }
        for h in handles {
            h.await.unwrap().unwrap();
        }
        let rec = s.tasks.load(&id).await.unwrap().unwrap();
        assert_eq!(rec.version, 51, "{}: no lost update", s.name);
        assert_eq!(rec.task.history.len(), 51, "{}", s.name);
        let seqs: Vec<u64> = s.tasks.events_after(&id, 0).await.unwrap().iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (1..=50).collect::<Vec<_>>(), "{}: gap-free, no duplicates", s.name);
        let mut writers: Vec<String> = rec.task.history[1..].iter().map(Message::text).collect();
        writers.sort();
        writers.dedup();
        assert_eq!(writers.len(), 50, "{}: every writer's message is there once", s.name);
    }
}

async fn page_all(store: &dyn TaskStore, mut q: TaskQuery) -> (Vec<String>, Vec<usize>, usize) {
    let mut ids = Vec::new();
    let mut sizes = Vec::new();
    let mut total = 0;
    for _ in 0..50 {
        let page = store.list(&q).await.unwrap();
        total = page.total_size;
        sizes.push(page.records.len());
        ids.extend(page.records.into_iter().map(|r| r.task.id));
        if page.next_page_token.is_empty() {
            break;
        }
        q.page_token = page.next_page_token;
    }
    (ids, sizes, total)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_pages_through_every_filter() {
    for s in all_stores().await {
        let owner = format!("owner-{}", uuid::Uuid::new_v4().simple());
        // Seven tasks of one owner, one minute apart; contexts alternate; every third completes.
        for i in 0..7 {
            let id = format!("{owner}-t{i}");
            s.tasks.create(record(&id, &owner, if i % 2 == 0 { "even" } else { "odd" }, i), None).await.unwrap();
            if i % 3 == 0 {
                let at = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap() + Days::minutes(i);
                let ev = vec![AgentEvent::Status { state: TaskState::Completed, message: None }];
                s.tasks.update(&id, 0, &|r| apply_all(r, &ev, at)).await.unwrap();
            }
        }
        s.tasks.create(record("someone-else", "bob", "even", 3), None).await.unwrap();
        let q = TaskQuery { owner: owner.clone(), page_size: 3, ..Default::default() };

        let (ids, sizes, total) = page_all(s.tasks.as_ref(), q.clone()).await;
        assert_eq!(total, 7, "{}", s.name);
        assert_eq!(sizes, [3, 3, 1], "{}", s.name);
        let want: Vec<String> = (0..7).rev().map(|i| format!("{owner}-t{i}")).collect();
        assert_eq!(ids, want, "{}: newest status first, every task once", s.name);

        let (ids, _, total) =
            page_all(s.tasks.as_ref(), TaskQuery { context_id: Some("even".into()), page_size: 2, ..q.clone() }).await;
        assert_eq!((ids.len(), total), (4, 4), "{}", s.name);
        let (ids, _, total) =
            page_all(s.tasks.as_ref(), TaskQuery { status: Some(TaskState::Completed), page_size: 2, ..q.clone() })
                .await;
        assert_eq!(total, 3, "{}", s.name);
        assert_eq!(ids, [6, 3, 0].map(|i| format!("{owner}-t{i}")), "{}", s.name);
        let after = Utc.with_ymd_and_hms(2026, 1, 1, 0, 4, 0).unwrap();
        let (ids, _, total) = page_all(s.tasks.as_ref(), TaskQuery { status_after: Some(after), ..q.clone() }).await;
        assert_eq!((ids.len(), total), (2, 2), "{}: strictly after 00:04", s.name);
        let (ids, _, total) = page_all(
            s.tasks.as_ref(),
            TaskQuery {
                context_id: Some("odd".into()),
                status: Some(TaskState::Submitted),
                status_after: Some(after - Days::minutes(10)),
                page_size: 1,
                ..q.clone()
            },
        )
        .await;
        assert_eq!((ids.len(), total), (2, 2), "{}: all filters at once (t5, t1)", s.name);

        // Forged and foreign tokens are refused, naming pageToken.
        let first = s.tasks.list(&q).await.unwrap();
        for bad in [
            "nope".to_string(),
            format!("{}x", first.next_page_token),
            s.other
                .list(&TaskQuery { owner: "x".into(), page_size: 1, ..Default::default() })
                .await
                .map(|_| "x.y".to_string())
                .unwrap(),
        ] {
            let err = s.tasks.list(&TaskQuery { page_token: bad.clone(), ..q.clone() }).await.unwrap_err();
            assert_eq!(err.kind, ErrorKind::InvalidParams, "{}: {bad}", s.name);
            assert!(err.message.contains("pageToken"), "{}", err.message);
        }
        // A page token with a later statusTimestampAfter: nothing lies between the two (an empty
        // page, not a failure).
        let later = Utc.with_ymd_and_hms(2027, 1, 1, 0, 0, 0).unwrap();
        let page = s
            .tasks
            .list(&TaskQuery { page_token: first.next_page_token.clone(), status_after: Some(later), ..q.clone() })
            .await
            .unwrap();
        assert!(page.records.is_empty() && page.next_page_token.is_empty(), "{}", s.name);
        // The token of one listing with another contextId: the in-process stores' cursors are a
        // position in time and go on from there; DynamoDB's belongs to one index and is refused.
        let other_context = TaskQuery {
            page_token: first.next_page_token.clone(),
            context_id: Some("even".into()),
            page_size: 10,
            ..q.clone()
        };
        match s.tasks.list(&other_context).await {
            Ok(page) if s.name != "dynamodb" => {
                let ids: Vec<&str> = page.records.iter().map(|r| r.task.id.as_str()).collect();
                assert_eq!(ids, [format!("{owner}-t2"), format!("{owner}-t0")], "{}", s.name);
            }
            Err(e) if s.name == "dynamodb" => {
                assert_eq!(e.kind, ErrorKind::InvalidParams, "{e}");
                assert!(e.message.contains("pageToken"), "{}", e.message);
            }
            other => panic!("{}: {other:?}", s.name),
        }
        s.other.create(record("o1", &owner, "even", 0), None).await.unwrap();
        s.other.create(record("o2", &owner, "even", 1), None).await.unwrap();
        let foreign = s.other.list(&TaskQuery { page_size: 1, ..q.clone() }).await.unwrap().next_page_token;
        assert!(!foreign.is_empty());
        assert_eq!(
            s.tasks.list(&TaskQuery { page_token: foreign, ..q.clone() }).await.unwrap_err().kind,
            ErrorKind::InvalidParams,
            "{}",
            s.name
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_configs_crud() {
    for s in all_stores().await {
        let cfg = |id: &str| TaskPushNotificationConfig {
            id: id.into(),
            task_id: "t1".into(),
            url: "https://h.example/cb".into(),
            token: "tok".into(),
            authentication: Some(AuthenticationInfo { scheme: "Bearer".into(), credentials: "secret".into() }),
            ..Default::default()
        };
        // Configs belong to a task (the memory store keeps them in it, so they go with it).
        s.tasks.create(record("t1", "alice", "ctx", 0), None).await.unwrap();
        s.configs.put(cfg("a")).await.unwrap();
        s.configs.put(cfg("b")).await.unwrap();
        s.configs.put(TaskPushNotificationConfig { url: "https://h.example/other".into(), ..cfg("a") }).await.unwrap();
        assert_eq!(
            s.configs.get("t1", "a").await.unwrap().unwrap().url,
            "https://h.example/other",
            "{}: put replaces",
            s.name
        );
        assert_eq!(s.configs.list("t1").await.unwrap().len(), 2, "{}", s.name);
        assert_eq!(s.configs.get("t1", "a").await.unwrap().unwrap().authentication.unwrap().credentials, "secret");
        s.configs.delete("t1", "a").await.unwrap();
        s.configs.delete("t1", "a").await.unwrap();
        assert!(s.configs.get("t1", "a").await.unwrap().is_none());
        assert_eq!(s.configs.list("t1").await.unwrap().len(), 1);
        assert!(s.configs.list("nothing").await.unwrap().is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_over_400_kb_are_refused_and_long_tasks_are_fine() {
    if !common::aws_available() {
        return;
    }
    let store = common::dynamo_store("s").await;
    let id = "big";
    store.create(record(id, "alice", "ctx", 0), None).await.unwrap();
    // One event of 450 KB: refused with a clear error, the task untouched.
    let huge = Message::agent_text("x".repeat(450 * 1024));
    let err = record_events(store.as_ref(), id, vec![AgentEvent::Message(huge)]).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidParams);
    assert!(err.message.contains("too large"), "{}", err.message);
    assert_eq!(store.load(id).await.unwrap().unwrap().version, 1);
    // Forty 30 KB chunks (1.2 MB in all) on one task: every item stays small.
    let art = Artifact::new(vec![Part::text("y".repeat(30 * 1024))]);
    for i in 0..40 {
        let ev = vec![AgentEvent::Artifact { artifact: art.clone(), append: i > 0, last_chunk: i == 39 }];
        record_events(store.as_ref(), id, ev).await.unwrap();
    }
    let rec = store.load(id).await.unwrap().unwrap();
    assert_eq!(rec.task.artifacts.unwrap()[0].parts.len(), 40);
    assert_eq!(store.events_after(id, 0).await.unwrap().len(), 40);
}
