//! `TaskHub`: the Durable Object of one task. It keeps the task's event log (in memory, persisted
//! in the object's storage), fans each published event out to the task's open streams in order,
//! replays from a sequence number, sends keep-alives, closes streams when the turn ends, and
//! expires its state (an alarm) once the task has ended or gone idle.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

use a2a::edge::hub::{Gap, SubscribeSpec, Subscriber, TaskLog, GAP_TIMEOUT_MS};
use a2a::edge::PublishBatch;
use a2a::ports::{EventRecord, SharedEvent};
use bytes::Bytes;
use futures::channel::mpsc;
use futures::future::{select, Either};
use futures::StreamExt;
use worker::{durable_object, DurableObject, Env, ListOptions, Request, Response, Result, State};

/// The hub's answer when it cannot serve a stream without a hole (the worker then asks the origin).
pub const GAP_STATUS: u16 = 409;
const EVENT_PREFIX: &str = "e:";
/// Durable Object storage takes at most 128 keys in one put (or delete).
const MAX_KEYS_PER_PUT: usize = 128;
/// How often a new stream checks whether the events it needs have arrived.
const CATCH_UP_POLL_MS: i64 = 100;

fn event_key(seq: u64) -> String {
    format!("{EVENT_PREFIX}{seq:020}")
}

fn now_ms() -> i64 {
    js_sys::Date::now() as i64
}

#[durable_object]
pub struct TaskHub {
    state: State,
    env: Env,
    inner: RefCell<Inner>,
}

#[derive(Default)]
struct Inner {
    /// `None` until loaded from storage.
    log: Option<TaskLog>,
    streams: Vec<(Subscriber, mpsc::UnboundedSender<Bytes>)>,
}

impl TaskHub {
    fn secs(&self, name: &str, default: u64) -> u64 {
        self.env.var(name).ok().and_then(|v| v.to_string().trim().parse().ok()).unwrap_or(default)
    }

    async fn load(&self) -> Result<()> {
        if self.inner.borrow().log.is_some() {
            return Ok(());
        }
        let stored = self.state.storage().list_with_options(ListOptions::new().prefix(EVENT_PREFIX)).await?;
        let mut events = Vec::new();
        for value in stored.values() {
            let text = value?.as_string().unwrap_or_default();
            match serde_json::from_str::<EventRecord>(&text) {
                Ok(ev) => events.push(ev),
                Err(e) => worker::console_error!("unreadable stored event: {e}"),
            }
        }
        let mut inner = self.inner.borrow_mut();
        if inner.log.is_none() {
            inner.log = Some(TaskLog::restore(events, now_ms()));
        }
        Ok(())
    }

    async fn publish(&self, batch: PublishBatch) -> Result<Response> {
        let accepted = {
            let mut inner = self.inner.borrow_mut();
            inner.log.get_or_insert_with(TaskLog::default).accept(batch.events, now_ms())
        };
        let storage = self.state.storage();
        if accepted.rebased {
            // The log restarted after a lost event: keep storage to what it holds now.
            storage.delete_all().await?;
            let held: Vec<Arc<SharedEvent>> = self
                .inner
                .borrow()
                .log
                .as_ref()
                .map(|l| l.after(l.floor()).unwrap_or_default().to_vec())
                .unwrap_or_default();
            self.store(&held).await?;
        } else {
            self.store(&accepted.released).await?;
        }
        if let Some(dropped) = &accepted.dropped {
            // The log dropped its oldest events (it is bounded): storage follows.
            let keys: Vec<String> = dropped.clone().map(event_key).collect();
            for chunk in keys.chunks(MAX_KEYS_PER_PUT) {
                storage.delete_multiple(chunk.to_vec()).await?;
            }
        }
        let ended = {
            let mut inner = self.inner.borrow_mut();
            let Inner { log, streams } = &mut *inner;
            let log = log.get_or_insert_with(TaskLog::default);
            if accepted.rebased {
                // These streams may have missed events: closing them makes their clients reconnect.
                streams.clear();
            }
            let last = log.last();
            streams.retain_mut(|(sub, tx)| {
                let frames = sub.feed(&accepted.released, last);
                let delivered = frames.into_iter().all(|f| tx.unbounded_send(f).is_ok());
                delivered && !sub.done()
            });
            log.ended()
        };
        let ttl = if ended { self.secs("EVENT_TTL_SECS", 3600) } else { self.secs("IDLE_TTL_SECS", 7 * 24 * 3600) };
        storage.set_alarm(Duration::from_secs(ttl)).await?;
        Ok(Response::empty()?.with_status(204))
    }

    /// Persists events, one storage write per [`MAX_KEYS_PER_PUT`] of them.
    async fn store(&self, events: &[Arc<SharedEvent>]) -> Result<()> {
        /// An [`EventRecord`]'s JSON, written from the shared event without copying it.
        #[derive(serde::Serialize)]
        struct Stored<'a> {
            seq: u64,
            event: &'a a2a::types::StreamResponse,
        }
        for chunk in events.chunks(MAX_KEYS_PER_PUT) {
            let entries = js_sys::Object::new();
            for ev in chunk {
                let stored = Stored { seq: ev.seq, event: &ev.event };
                let json = serde_json::to_string(&stored).map_err(|e| worker::Error::RustError(e.to_string()))?;
                js_sys::Reflect::set(&entries, &event_key(ev.seq).into(), &json.into())?;
            }
            self.state.storage().put_multiple_raw(entries).await?;
        }
        Ok(())
    }

    async fn subscribe(&self, spec: SubscribeSpec) -> Result<Response> {
        // Events the stream needs may still be in flight from the publisher: wait for them, boundedly.
        for _ in 0..GAP_TIMEOUT_MS / CATCH_UP_POLL_MS {
            let behind = self.inner.borrow().log.as_ref().is_none_or(|log| spec.behind(log));
            if !behind {
                break;
            }
            worker::Delay::from(Duration::from_millis(CATCH_UP_POLL_MS as u64)).await;
        }
        let (tx, rx) = mpsc::unbounded::<Bytes>();
        {
            let mut inner = self.inner.borrow_mut();
            let Inner { log, streams } = &mut *inner;
            let log = log.get_or_insert_with(TaskLog::default);
            log.start_after(spec.after);
            let (sub, frames) = match Subscriber::start(spec, log) {
                Ok(x) => x,
                Err(Gap) => return Response::error("events missing at the edge", GAP_STATUS),
            };
            for frame in frames {
                let _ = tx.unbounded_send(frame);
            }
            if !sub.done() {
                streams.push((sub, tx));
            }
        }
        let every = Duration::from_secs(self.secs("KEEP_ALIVE_SECS", 15).max(1));
        let frames = futures::stream::unfold(rx, move |mut rx| async move {
            let next = {
                let tick = std::pin::pin!(worker::Delay::from(every));
                match select(rx.next(), tick).await {
                    Either::Left((item, _)) => Some(item),
                    Either::Right(_) => None,
                }
            };
            match next {
                Some(Some(frame)) => Some((Ok(frame.to_vec()), rx)),
                Some(None) => None,
                None => Some((Ok(a2a::sse::KEEP_ALIVE.to_vec()), rx)),
            }
        });
        crate::glue::sse(frames)
    }
}

impl DurableObject for TaskHub {
    fn new(state: State, env: Env) -> Self {
        Self { state, env, inner: RefCell::new(Inner::default()) }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        self.load().await?;
        match req.path().as_str() {
            "/publish" => {
                let batch: PublishBatch = serde_json::from_slice(&req.bytes().await?)
                    .map_err(|e| worker::Error::RustError(format!("publish body: {e}")))?;
                self.publish(batch).await
            }
            "/subscribe" => {
                let spec: SubscribeSpec = serde_json::from_slice(&req.bytes().await?)
                    .map_err(|e| worker::Error::RustError(format!("subscribe spec: {e}")))?;
                self.subscribe(spec).await
            }
            _ => Response::error("not found", 404),
        }
    }

    /// The task ended (or went idle) long enough ago: forget it.
    async fn alarm(&self) -> Result<Response> {
        self.state.storage().delete_all().await?;
        let mut inner = self.inner.borrow_mut();
        inner.streams.clear();
        inner.log = Some(TaskLog::default());
        Response::ok("expired")
    }
}
