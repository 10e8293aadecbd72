//! A task's event log as its Durable Object keeps it, and the state of one stream reading it.
//!
//! The log takes published events in any order and any number of times, and releases them in
//! sequence order without gaps. Events it cannot place (a sequence number it never got) wait up to
//! [`GAP_TIMEOUT_MS`]; after that the log restarts at the first event it has, and streams that
//! would need the missing part are refused with [`Gap`] so that the edge serves them from the
//! origin instead: the hub never shows a stream with a hole in it.
//!
//! [`Subscriber`] replays and follows like the origin's streams: an optional opening snapshot, the
//! events after a sequence number, the end of the stream at a terminal or interrupted state (an old
//! interruption followed by newer events does not end it), and a new task that the agent answers
//! with a message shows just that message.
//!
//! The log holds each event once as an [`SharedEvent`]: every stream of the same kind (binding and
//! version) frames the payload the first of them encoded, as the origin's hub does.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;

use a2a_engine::ports::EventRecord;
use a2a_protocol::sse::{Framing, SharedEvent};
use a2a_protocol::types::size::answer_size;
use a2a_protocol::types::StreamResponse;

/// How long released events wait behind a missing one before the log gives up on it.
pub const GAP_TIMEOUT_MS: i64 = 5_000;

/// The most events the log holds (the origin's hub keeps as many for streams behind): past it, or
/// past [`MAX_BYTES`], the oldest quarter is dropped and a stream that needs them gets [`Gap`] (the
/// edge serves it from the origin). Events waiting behind a gap count against the same number.
pub const MAX_EVENTS: usize = 16_384;
/// The most bytes of events (about what they take encoded) the log holds.
pub const MAX_BYTES: usize = 16 << 20;

/// The log cannot serve events after this sequence number without a hole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gap;

#[derive(Debug, Default, Clone, PartialEq)]
pub struct TaskLog {
    /// Events up to this sequence number are not held (never received, or given up on).
    floor: u64,
    /// `floor + 1 ..= last`, contiguous.
    events: Vec<Arc<SharedEvent>>,
    /// What `events` take, about (see [`MAX_BYTES`]).
    bytes: usize,
    /// Received ahead of a missing event, with the time they arrived.
    pending: BTreeMap<u64, (StreamResponse, i64)>,
}

/// What [`TaskLog::accept`] did.
#[derive(Debug, Default, PartialEq)]
pub struct Accepted {
    /// Events that became available, in order: fan these out.
    pub released: Vec<Arc<SharedEvent>>,
    /// A gap was given up on: open streams can no longer be served gap-free.
    pub rebased: bool,
    /// The oldest events were dropped to keep the log within its bounds: these sequence numbers
    /// are no longer held (nor need to be stored).
    pub dropped: Option<std::ops::RangeInclusive<u64>>,
}

impl TaskLog {
    /// A log restored from storage (any order; duplicates and holes are sorted out).
    pub fn restore(events: Vec<EventRecord>, now_ms: i64) -> Self {
        let mut log = Self::default();
        let first = events.iter().map(|e| e.seq).min().unwrap_or(1);
        log.floor = first.saturating_sub(1);
        log.accept(events, now_ms);
        log
    }

    /// Sequence number of the last contiguous event (the floor when there is none).
    pub fn last(&self) -> u64 {
        self.events.last().map_or(self.floor, |e| e.seq)
    }

    pub fn floor(&self) -> u64 {
        self.floor
    }

    /// The last event is terminal: nothing more will come.
    pub fn ended(&self) -> bool {
        self.events.last().and_then(|e| e.event.state()).is_some_and(|s| s.is_terminal())
    }

    /// Events with `seq > after`, or [`Gap`] when some of them are not held.
    pub fn after(&self, after: u64) -> Result<&[Arc<SharedEvent>], Gap> {
        if after < self.floor {
            return Err(Gap);
        }
        let skip = usize::try_from(after - self.floor).unwrap_or(usize::MAX).min(self.events.len());
        Ok(&self.events[skip..])
    }

    /// Adds published events. Duplicates and events already released are ignored.
    pub fn accept(&mut self, events: Vec<EventRecord>, now_ms: i64) -> Accepted {
        for ev in events {
            // Past the bound an event is not taken: the hole it leaves is given up on like any
            // other, after GAP_TIMEOUT_MS.
            if ev.seq > self.last() && self.pending.len() < MAX_EVENTS {
                self.pending.entry(ev.seq).or_insert((ev.event, now_ms));
            }
        }
        let mut out = Accepted::default();
        loop {
            let next = self.last() + 1;
            if let Some((event, _)) = self.pending.remove(&next) {
                let shared = Arc::new(SharedEvent::new(next, event));
                self.bytes += answer_size(&shared.event);
                self.events.push(shared.clone());
                out.released.push(shared);
                continue;
            }
            let stale = self.pending.values().any(|(_, at)| now_ms - at >= GAP_TIMEOUT_MS);
            match self.pending.keys().next() {
                Some(&first) if stale => {
                    self.floor = first - 1;
                    self.events.clear();
                    self.bytes = 0;
                    out.rebased = true;
                }
                _ => break,
            }
        }
        out.dropped = self.trim();
        out
    }

    /// Drops the oldest events while the log is over a bound, down to three quarters of it (so
    /// that dropping is amortized), keeping the last event: the sequence numbers dropped.
    fn trim(&mut self) -> Option<std::ops::RangeInclusive<u64>> {
        if self.events.len() <= MAX_EVENTS && self.bytes <= MAX_BYTES {
            return None;
        }
        let (mut count, mut bytes) = (0, self.bytes);
        while count + 1 < self.events.len()
            && (self.events.len() - count > MAX_EVENTS / 4 * 3 || bytes > MAX_BYTES / 4 * 3)
        {
            bytes -= answer_size(&self.events[count].event);
            count += 1;
        }
        if count == 0 {
            return None;
        }
        let first = self.floor + 1;
        self.events.drain(..count);
        self.floor += count as u64;
        self.bytes = bytes;
        Some(first..=self.floor)
    }

    /// A log that holds nothing yet starts after `seq`: a stream whose snapshot already covers the
    /// events up to `seq` must not wait for them (the edge was set up, or the hub expired, after
    /// they were published).
    pub fn start_after(&mut self, seq: u64) {
        if self.events.is_empty() && seq > self.floor && self.pending.keys().next().is_none_or(|&p| p > seq) {
            self.floor = seq;
        }
    }

    /// Number of events waiting behind a gap.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }
}

/// What a stream asks the hub for.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeSpec {
    pub framing: Framing,
    /// The snapshot the stream opens with (its `seq` is the last event it reflects).
    pub opening: Option<EventRecord>,
    /// Send the events after this sequence number.
    pub after: u64,
    /// A new task: hold the opening until the first event, and send only that event if it is a
    /// message (the agent answered without a task).
    pub hold_opening: bool,
    /// The last sequence number the origin knew of when the stream started.
    #[serde(default)]
    pub known: u64,
}

impl SubscribeSpec {
    /// The stream needs events the hub does not hold yet (publishes in flight, or lost, or expired):
    /// the hub waits up to [`GAP_TIMEOUT_MS`] for them, then refuses with [`Gap`].
    pub fn behind(&self, log: &TaskLog) -> bool {
        self.after < self.known && log.last() < self.known
    }
}

/// One open stream.
#[derive(Debug)]
pub struct Subscriber {
    framing: Framing,
    held: Option<EventRecord>,
    last: u64,
    done: bool,
}

impl Subscriber {
    /// Opens a stream on `log`: the frames to send at once, and the subscriber to keep feeding.
    pub fn start(spec: SubscribeSpec, log: &TaskLog) -> Result<(Self, Vec<Bytes>), Gap> {
        if spec.behind(log) {
            return Err(Gap);
        }
        let backlog = log.after(spec.after)?;
        let mut sub = Self { framing: spec.framing, held: None, last: spec.after, done: false };
        let mut frames = Vec::new();
        match spec.opening {
            Some(opening) if spec.hold_opening => sub.held = Some(opening),
            Some(opening) => frames.push(sub.framing.event(Some(opening.seq), &opening.event)),
            None => {}
        }
        frames.extend(sub.feed(backlog, log.last()));
        Ok((sub, frames))
    }

    /// Frames for newly released events; `log_last` is the log's last sequence number after them.
    pub fn feed(&mut self, events: &[Arc<SharedEvent>], log_last: u64) -> Vec<Bytes> {
        let mut frames = Vec::new();
        for ev in events {
            if self.done {
                break;
            }
            if ev.seq <= self.last {
                continue;
            }
            self.last = ev.seq;
            if let Some(opening) = self.held.take() {
                if matches!(ev.event, StreamResponse::Message(_)) {
                    frames.push(self.framing.shared(ev));
                    self.done = true;
                    break;
                }
                frames.push(self.framing.event(Some(opening.seq), &opening.event));
            }
            frames.push(self.framing.shared(ev));
            if ev.event.ends_turn() && ev.seq == log_last {
                self.done = true;
            }
        }
        frames
    }

    /// The stream has sent its last event: close it.
    pub fn done(&self) -> bool {
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_protocol::types::{Message, Part, Role, Task, TaskState, TaskStatus, TaskStatusUpdateEvent};

    fn status(seq: u64, state: TaskState) -> EventRecord {
        let status = TaskStatus { state, message: None, timestamp: None };
        let ev = TaskStatusUpdateEvent { task_id: "t".into(), context_id: "c".into(), status, metadata: None };
        EventRecord { seq, event: StreamResponse::StatusUpdate(ev) }
    }

    fn message(seq: u64) -> EventRecord {
        let m = Message {
            message_id: "m".into(),
            context_id: "c".into(),
            task_id: "t".into(),
            role: Role::Agent,
            parts: vec![Part::text("hi")],
            metadata: None,
            extensions: vec![],
            reference_task_ids: vec![],
        };
        EventRecord { seq, event: StreamResponse::Message(m) }
    }

    fn snapshot(seq: u64) -> EventRecord {
        let task = Task {
            id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus { state: TaskState::Submitted, message: None, timestamp: None },
            artifacts: None,
            history: vec![],
            metadata: None,
        };
        EventRecord { seq, event: StreamResponse::Task(task) }
    }

    fn ids(frames: &[Bytes]) -> Vec<String> {
        frames
            .iter()
            .map(|f| String::from_utf8_lossy(f).lines().next().unwrap_or_default().trim_start_matches("id: ").into())
            .collect()
    }

    fn spec(opening: Option<EventRecord>, after: u64, hold: bool) -> SubscribeSpec {
        SubscribeSpec { framing: Framing::Rest, opening, after, hold_opening: hold, known: after }
    }

    #[test]
    fn releases_in_order_once() {
        let mut log = TaskLog::default();
        let a = log.accept(vec![status(2, TaskState::Working), status(3, TaskState::Working)], 0);
        assert!(a.released.is_empty());
        assert_eq!(log.pending(), 2);
        let a = log.accept(vec![status(1, TaskState::Working), status(2, TaskState::Working)], 10);
        assert_eq!(a.released.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3]);
        assert!(log.accept(vec![status(3, TaskState::Working)], 20).released.is_empty());
        assert_eq!(log.last(), 3);
        assert_eq!(log.after(1).unwrap().len(), 2);
        assert_eq!(log.after(7).unwrap().len(), 0);
    }

    #[test]
    fn a_lasting_gap_rebases_and_refuses_old_cursors() {
        let mut log = TaskLog::default();
        log.accept(vec![status(1, TaskState::Working)], 0);
        assert!(!log.accept(vec![status(3, TaskState::Working)], 0).rebased);
        let a = log.accept(vec![status(4, TaskState::Completed)], GAP_TIMEOUT_MS);
        assert!(a.rebased);
        assert_eq!(a.released.iter().map(|e| e.seq).collect::<Vec<_>>(), [3, 4]);
        assert_eq!(log.after(1), Err(Gap));
        assert_eq!(log.after(2).unwrap().len(), 2);
        assert!(log.ended());
    }

    #[test]
    fn an_empty_log_starts_after_the_snapshot_and_a_lagging_one_refuses_resumes() {
        let mut log = TaskLog::default();
        log.start_after(4);
        let (mut sub, frames) = Subscriber::start(spec(Some(snapshot(4)), 4, false), &log).unwrap();
        assert_eq!(ids(&frames), ["4"]);
        let a = log.accept(vec![status(5, TaskState::Completed)], 0);
        assert_eq!(ids(&sub.feed(&a.released, log.last())), ["5"], "no wait for events 1..4");
        // A resume from 2 of a task the origin knows up to 7, on a hub that expired: refused.
        let expired = TaskLog::default();
        let resume = SubscribeSpec { framing: Framing::Rest, opening: None, after: 2, hold_opening: false, known: 7 };
        assert!(resume.behind(&expired));
        assert_eq!(Subscriber::start(resume.clone(), &expired).unwrap_err(), Gap);
        let mut caught_up = TaskLog::default();
        caught_up.accept((1..=7).map(|s| status(s, TaskState::Working)).collect(), 0);
        assert!(!resume.behind(&caught_up));
        assert_eq!(ids(&Subscriber::start(resume, &caught_up).unwrap().1), ["3", "4", "5", "6", "7"]);
    }

    #[test]
    fn streams_share_each_events_encoding_and_frame_it_as_a_lone_one_would() {
        let mut log = TaskLog::default();
        let a = log.accept(vec![status(1, TaskState::Working)], 0);
        assert!(Arc::ptr_eq(&a.released[0], &log.after(0).unwrap()[0]), "one event for the log and the fan-out");
        let (_, one) = Subscriber::start(spec(None, 0, false), &log).unwrap();
        let (_, two) = Subscriber::start(spec(None, 0, false), &log).unwrap();
        let alone = Framing::Rest.event(Some(1), &status(1, TaskState::Working).event);
        assert_eq!((&one[0], &two[0]), (&alone, &alone));
    }

    #[test]
    fn restore_starts_at_the_first_stored_event() {
        let log = TaskLog::restore(vec![status(6, TaskState::Working), status(5, TaskState::Working)], 0);
        assert_eq!((log.floor(), log.last()), (4, 6));
    }

    #[test]
    fn replay_then_live_then_close_at_the_end_of_the_turn() {
        let mut log = TaskLog::default();
        log.accept(vec![status(1, TaskState::Working), status(2, TaskState::Working)], 0);
        let (mut sub, frames) = Subscriber::start(spec(Some(snapshot(1)), 1, false), &log).unwrap();
        assert_eq!(ids(&frames), ["1", "2"]);
        let a = log.accept(vec![status(3, TaskState::InputRequired)], 0);
        assert_eq!(ids(&sub.feed(&a.released, log.last())), ["3"]);
        assert!(sub.done());
    }

    #[test]
    fn an_old_interruption_does_not_end_a_replay() {
        let mut log = TaskLog::default();
        log.accept(vec![status(1, TaskState::InputRequired), status(2, TaskState::Working)], 0);
        let (sub, frames) = Subscriber::start(spec(None, 0, false), &log).unwrap();
        assert_eq!(ids(&frames), ["1", "2"]);
        assert!(!sub.done());
    }

    #[test]
    fn a_new_task_answered_with_a_message_shows_only_the_message() {
        let mut log = TaskLog::default();
        let (mut sub, frames) = Subscriber::start(spec(Some(snapshot(0)), 0, true), &log).unwrap();
        assert!(frames.is_empty());
        let a = log.accept(vec![message(1), status(2, TaskState::Completed)], 0);
        let frames = sub.feed(&a.released, log.last());
        assert_eq!(frames.len(), 1);
        assert!(String::from_utf8_lossy(&frames[0]).contains("\"message\""));
        assert!(sub.done());
    }

    #[test]
    fn a_held_opening_comes_before_the_first_update() {
        let mut log = TaskLog::default();
        log.accept(vec![status(1, TaskState::Working)], 0);
        let (sub, frames) = Subscriber::start(spec(Some(snapshot(0)), 0, true), &log).unwrap();
        assert_eq!(ids(&frames), ["0", "1"]);
        assert!(String::from_utf8_lossy(&frames[0]).contains("\"task\""));
        assert!(!sub.done());
    }

    #[test]
    fn last_event_id_resume_gets_exactly_the_missed_events() {
        let mut log = TaskLog::default();
        log.accept((1..=5).map(|s| status(s, TaskState::Working)).collect(), 0);
        let (_, frames) = Subscriber::start(spec(None, 3, false), &log).unwrap();
        assert_eq!(ids(&frames), ["4", "5"]);
        let framing =
            Framing::JsonRpc { id: a2a_protocol::rpc_id::RpcId::from_value(&serde_json::json!(7)).unwrap(), v03: true };
        let (_, frames) =
            Subscriber::start(SubscribeSpec { framing, opening: None, after: 4, hold_opening: false, known: 5 }, &log)
                .unwrap();
        let text = String::from_utf8_lossy(&frames[0]).into_owned();
        assert!(text.contains("\"id\":7") && text.contains("\"kind\":\"status-update\""), "{text}");
    }

    #[test]
    fn the_log_is_bounded_in_events_dropping_the_oldest() {
        let mut log = TaskLog::default();
        let n = MAX_EVENTS as u64;
        let accepted = log.accept((1..=n).map(|s| status(s, TaskState::Working)).collect(), 0);
        assert_eq!((accepted.released.len(), accepted.dropped), (MAX_EVENTS, None));
        let accepted = log.accept(vec![status(n + 1, TaskState::Working)], 0);
        let kept = MAX_EVENTS / 4 * 3;
        let dropped = n + 1 - kept as u64;
        assert_eq!(accepted.dropped, Some(1..=dropped));
        assert_eq!((log.floor(), log.last(), log.after(dropped).unwrap().len()), (dropped, n + 1, kept));
        // A stream that needs a dropped event is refused (the origin serves it), not given a hole.
        assert_eq!(Subscriber::start(spec(None, dropped - 1, false), &log).err(), Some(Gap));
        let (_, frames) = Subscriber::start(spec(None, n, false), &log).unwrap();
        assert_eq!(ids(&frames), [(n + 1).to_string()]);
        // Events ahead of a gap are bounded too.
        let mut log = TaskLog::default();
        log.accept((2..=n + 10).map(|s| status(s, TaskState::Working)).collect(), 0);
        assert_eq!(log.pending(), MAX_EVENTS);
    }

    #[test]
    fn the_log_is_bounded_in_bytes_keeping_the_last_event() {
        let big = |seq: u64| {
            let mut m = message(seq);
            let StreamResponse::Message(inner) = &mut m.event else { unreachable!() };
            inner.parts = vec![Part::text("x".repeat(MAX_BYTES / 5))];
            m
        };
        let mut log = TaskLog::default();
        let accepted = log.accept((1..=3).map(big).collect(), 0);
        assert_eq!(accepted.dropped, None);
        let accepted = log.accept(vec![big(4), big(5)], 0);
        let dropped = accepted.dropped.expect("over the byte bound");
        assert!(!log.after(log.floor()).unwrap().is_empty());
        assert_eq!((*dropped.start(), *dropped.end(), log.last()), (1, log.floor(), 5));
        assert!(log.after(log.floor()).unwrap().iter().map(|e| answer_size(&e.event)).sum::<usize>() <= MAX_BYTES);
        // One event over the whole bound is still held: the last event always is.
        let mut log = TaskLog::default();
        let mut huge = big(1);
        let StreamResponse::Message(inner) = &mut huge.event else { unreachable!() };
        inner.parts = vec![Part::text("x".repeat(MAX_BYTES + 1))];
        let accepted = log.accept(vec![huge], 0);
        assert_eq!((accepted.dropped, log.last(), log.floor()), (None, 1, 0));
    }
}
