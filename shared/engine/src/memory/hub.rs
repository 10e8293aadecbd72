//! [`MemoryHub`]: the in-process broadcast of a task's events to the streams that follow it.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use futures::stream::{self, BoxStream, StreamExt};
use parking_lot::Mutex;
use tokio::sync::broadcast;

use crate::ports::{EventRecord, HubMessage, SharedEvent, StreamHub};
use a2a_protocol::types::size::event_size;

/// An in-process broadcast hub: one channel per task while someone listens. The channel goes when
/// its last subscriber does (a task left waiting for input keeps nothing here) or the task ends.
/// Slots hold an `Arc` of the event, which every subscriber shares with its encodings, so a
/// channel costs about 1.5 KiB however large the events are; a blocking SendMessage opens one per
/// request, so it stays small: a subscriber that falls more than `capacity` events behind catches
/// up elsewhere (see `engine::follow`). While two or more streams follow a task, its channel also
/// keeps the events they get (published, or read back by one that fell behind; at most
/// [`SHARED_EVENTS`] and [`SHARED_BYTES`]), until the last of those streams is gone: a stream that
/// fell behind, even past the task's end, takes them from there with their encodings rather than
/// reading and encoding its own copy from the store.
pub struct MemoryHub {
    channels: Arc<Mutex<HashMap<String, Channel>>>,
    capacity: usize,
}

/// Most events a task's channel keeps for the streams that fall behind.
const SHARED_EVENTS: usize = 16384;
/// Most bytes (in [`event_size`] terms) those events may hold.
const SHARED_BYTES: usize = 16 << 20;

struct Channel {
    /// `None` once the task ended: its streams read what is left, then end.
    tx: Option<broadcast::Sender<Arc<SharedEvent>>>,
    /// Subscriptions alive.
    streams: usize,
    /// Events shared by the task's streams, by sequence number, with their sizes.
    shared: BTreeMap<u64, (Arc<SharedEvent>, usize)>,
    shared_bytes: usize,
}

impl Channel {
    fn new() -> Self {
        Self { tx: None, streams: 0, shared: BTreeMap::new(), shared_bytes: 0 }
    }

    /// Whether the task has streams to share events between.
    fn sharing(&self) -> bool {
        self.streams > 1
    }

    /// The kept copy of `event`, kept now if it was not (the oldest give way).
    fn keep(&mut self, event: EventRecord) -> Arc<SharedEvent> {
        if let Some((kept, _)) = self.shared.get(&event.seq) {
            return kept.clone();
        }
        let size = event_size(&event.event);
        let kept = event.shared();
        self.shared_bytes += size;
        self.shared.insert(kept.seq, (kept.clone(), size));
        while self.shared.len() > SHARED_EVENTS || (self.shared_bytes > SHARED_BYTES && self.shared.len() > 1) {
            if let Some((_, (_, size))) = self.shared.pop_first() {
                self.shared_bytes -= size;
            }
        }
        kept
    }

    fn forget(&mut self) {
        self.shared.clear();
        self.shared_bytes = 0;
    }

    /// The kept events from `after + 1` on, up to the first one missing (`None`: not even that one).
    fn after(&self, after: u64) -> Option<Vec<Arc<SharedEvent>>> {
        let next = after.checked_add(1)?;
        self.shared.contains_key(&next).then(|| {
            let run = self.shared.range(next..).zip(next..).take_while(|((seq, _), want)| *seq == want);
            run.map(|((_, (event, _)), _)| event.clone()).collect()
        })
    }
}

impl Default for MemoryHub {
    fn default() -> Self {
        Self { channels: Arc::default(), capacity: 32 }
    }
}

/// A subscription; dropping the last one of a task drops the task's channel (and what it kept).
struct Subscription {
    rx: broadcast::Receiver<Arc<SharedEvent>>,
    channels: Arc<Mutex<HashMap<String, Channel>>>,
    task_id: String,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut channels = self.channels.lock();
        if let Some(channel) = channels.get_mut(&self.task_id) {
            channel.streams = channel.streams.saturating_sub(1);
            if channel.streams == 0 {
                channels.remove(&self.task_id);
            }
        }
    }
}

impl MemoryHub {
    /// Tasks with a channel (someone listening).
    pub fn channels(&self) -> usize {
        self.channels.lock().len()
    }
}

impl StreamHub for MemoryHub {
    fn publish(&self, task_id: &str, event: &EventRecord) {
        let mut channels = self.channels.lock();
        let Some(channel) = channels.get_mut(task_id) else { return };
        // One copy for every subscriber, which also share its encodings.
        let shared = if channel.sharing() {
            channel.keep(event.clone())
        } else {
            // One stream: nobody to share with.
            channel.forget();
            event.clone().shared()
        };
        if let Some(tx) = &channel.tx {
            let _ = tx.send(shared);
        }
    }

    fn subscribe(&self, task_id: &str) -> BoxStream<'static, HubMessage> {
        let rx = {
            let mut channels = self.channels.lock();
            let channel = channels.entry(task_id.to_string()).or_insert_with(Channel::new);
            channel.streams += 1;
            channel.tx.get_or_insert_with(|| broadcast::channel(self.capacity).0).subscribe()
        };
        let sub = Subscription { rx, channels: self.channels.clone(), task_id: task_id.to_string() };
        stream::unfold(sub, |mut sub| async move {
            match sub.rx.recv().await {
                Ok(ev) => Some((HubMessage::Event(ev), sub)),
                Err(broadcast::error::RecvError::Lagged(_)) => Some((HubMessage::Lagged, sub)),
                Err(broadcast::error::RecvError::Closed) => None,
            }
        })
        .boxed()
    }

    /// Ends the task's streams once they have what was published; the events they share stay
    /// for those that fell behind, until the last of them is gone.
    fn close(&self, task_id: &str) {
        if let Some(channel) = self.channels.lock().get_mut(task_id) {
            channel.tx = None;
        }
    }

    fn replay(&self, task_id: &str, after: u64) -> Option<Vec<Arc<SharedEvent>>> {
        self.channels.lock().get(task_id)?.after(after)
    }

    fn share(&self, task_id: &str, events: Vec<EventRecord>) -> Vec<Arc<SharedEvent>> {
        if events.is_empty() {
            return Vec::new();
        }
        {
            // Every task's channel is behind this lock: only the kept copies are made under it.
            let mut channels = self.channels.lock();
            if let Some(channel) = channels.get_mut(task_id).filter(|c| c.sharing()) {
                return events.into_iter().map(|e| channel.keep(e)).collect();
            }
        }
        events.into_iter().map(EventRecord::shared).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{apply_all, follow, AgentEvent};
    use crate::memory::MemoryStore;
    use crate::ports::{TaskRecord, TaskStore};
    use a2a_protocol::types::{Artifact, Part, TaskState};
    use futures::FutureExt;

    /// Records `n` artifact chunks on task "t", then COMPLETED if `finish`, publishing each to `hub`.
    async fn run_turn(store: &MemoryStore, hub: &MemoryHub, n: usize, finish: bool) {
        let mut events: Vec<AgentEvent> = (0..n)
            .map(|i| AgentEvent::Artifact {
                artifact: Artifact::new(vec![Part::text(format!("chunk {i}"))]),
                append: i > 0,
                last_chunk: false,
            })
            .collect();
        if finish {
            events.push(AgentEvent::Status { state: TaskState::Completed, message: None });
        }
        for event in events {
            let one = [event];
            let committed =
                store.update("t", one[0].size(), &|r| apply_all(r, &one, chrono::Utc::now())).await.unwrap();
            for ev in &committed.events {
                hub.publish("t", ev);
            }
        }
    }

    /// Streams whose first poll found nothing (they wait for live events).
    fn waiting_streams(store: &Arc<MemoryStore>, hub: &Arc<MemoryHub>, n: usize) -> Vec<crate::engine::EventStream> {
        (0..n)
            .map(|_| {
                let mut s = follow(store.clone(), hub.clone(), "t", 0);
                assert!(s.next().now_or_never().is_none(), "nothing yet");
                s
            })
            .collect()
    }

    #[tokio::test]
    async fn streams_that_fall_behind_share_the_events_the_hub_kept() {
        let store = Arc::new(MemoryStore::default());
        store.create(TaskRecord::for_test("t", TaskState::Working), None).await.unwrap();
        let hub = Arc::new(MemoryHub { channels: Arc::default(), capacity: 4 });
        let streams = waiting_streams(&store, &hub, 3);
        // The turn runs to its end (and the task's channel is closed, as the recorder does) before
        // the streams read anything: each is 97 events behind.
        run_turn(&store, &hub, 100, true).await;
        hub.close("t");
        let mut got = Vec::new();
        for s in streams {
            let events: Vec<Arc<SharedEvent>> = s.map(Result::unwrap).collect().await;
            assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), (1..=101).collect::<Vec<_>>());
            got.push(events);
        }
        // They caught up from what the hub kept: the same events, shared (with their encodings).
        for (a, b) in got[0].iter().zip(&got[1]).chain(got[0].iter().zip(&got[2])) {
            assert!(Arc::ptr_eq(a, b), "event {} was copied", a.seq);
        }
        assert_eq!(hub.channels(), 0, "the streams are gone, and so is what the hub kept");
    }

    #[tokio::test]
    async fn a_lone_stream_that_falls_behind_reads_the_store() {
        let store = Arc::new(MemoryStore::default());
        store.create(TaskRecord::for_test("t", TaskState::Working), None).await.unwrap();
        let hub = Arc::new(MemoryHub { channels: Arc::default(), capacity: 4 });
        let mut streams = waiting_streams(&store, &hub, 1);
        run_turn(&store, &hub, 20, true).await;
        assert!(hub.replay("t", 0).is_none(), "one stream: nothing kept");
        let events: Vec<Arc<SharedEvent>> = streams.remove(0).map(Result::unwrap).collect().await;
        assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), (1..=21).collect::<Vec<_>>());
    }

    #[test]
    fn the_kept_events_are_bounded_and_given_back_up_to_a_gap() {
        let mut channel = Channel::new();
        let event = |seq| EventRecord {
            seq,
            event: a2a_protocol::types::StreamResponse::Message(a2a_protocol::types::Message::agent_text("x")),
        };
        for seq in 1..=(SHARED_EVENTS as u64 + 10) {
            channel.keep(event(seq));
        }
        assert_eq!(channel.shared.len(), SHARED_EVENTS);
        assert!(channel.after(5).is_none(), "events 6..=10 are gone");
        assert_eq!(channel.after(10).map(|v| v.len()), Some(SHARED_EVENTS));
        assert!(channel.after(SHARED_EVENTS as u64 + 10).is_none(), "nothing newer");
        // Kept once: a copy read back later is the kept one.
        let kept = channel.keep(event(100));
        assert!(Arc::ptr_eq(&kept, &channel.after(99).unwrap()[0]));
        // Out of order: given back in order, up to the first one missing.
        let mut channel = Channel::new();
        for seq in [1, 3, 2, 5] {
            channel.keep(event(seq));
        }
        assert_eq!(channel.after(0).unwrap().iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3]);
        assert!(channel.after(3).is_none(), "event 4 is missing");
    }
}
