//! Following a task's events without gaps: subscribe to the hub first, then read the store's log
//! after the last event the client has, then go live, re-reading the log whenever the hub skips.

use std::collections::VecDeque;
use std::sync::Arc;

use futures::stream::{self, BoxStream, StreamExt};

use crate::ports::{HubMessage, SharedEvent, StreamHub, TaskStore};
use a2a_protocol::error::Result;

/// Events as streams share them.
pub type EventStream = BoxStream<'static, Result<Arc<SharedEvent>>>;

struct State {
    store: Arc<dyn TaskStore>,
    hub: Arc<dyn StreamHub>,
    live: BoxStream<'static, HubMessage>,
    task_id: String,
    last: u64,
    pending: VecDeque<Arc<SharedEvent>>,
    caught_up: bool,
    done: bool,
}

/// Events of `task_id` with `seq > after`, in order, until the task reaches a terminal or
/// interrupted state (an old interruption followed by newer events does not end the stream).
pub fn follow(store: Arc<dyn TaskStore>, hub: Arc<dyn StreamHub>, task_id: &str, after: u64) -> EventStream {
    let live = hub.subscribe(task_id);
    let state = State {
        store,
        hub,
        live,
        task_id: task_id.to_string(),
        last: after,
        pending: VecDeque::new(),
        caught_up: false,
        done: false,
    };
    stream::unfold(state, |mut st| async move {
        loop {
            if st.done {
                return None;
            }
            if let Some(ev) = st.pending.pop_front() {
                if ev.seq <= st.last {
                    continue;
                }
                st.last = ev.seq;
                if ev.event.ends_turn() && st.pending.is_empty() {
                    st.done = true;
                    if ev.event.state().is_some_and(|s| s.is_terminal()) {
                        // Nothing follows a terminal state: drop the channel this subscription may
                        // have re-created after the recorder closed it.
                        st.hub.close(&st.task_id);
                    }
                }
                return Some((Ok(ev), st));
            }
            if !st.caught_up {
                st.caught_up = true;
                match st.store.events_after(&st.task_id, st.last).await {
                    Ok(backlog) => st.pending.extend(st.hub.share(&st.task_id, backlog)),
                    Err(e) => {
                        st.done = true;
                        return Some((Err(e), st));
                    }
                }
                continue;
            }
            match st.live.next().await {
                Some(HubMessage::Event(ev)) if ev.seq <= st.last => {}
                Some(HubMessage::Event(ev)) if ev.seq == st.last + 1 => st.pending.push_back(ev),
                // A gap, a lag or the end: the hub may still hold what we missed (shared with the
                // other streams that follow the task); if not, the log has it.
                other => {
                    let closed = other.is_none();
                    if let Some(missed) = st.hub.replay(&st.task_id, st.last) {
                        st.pending.extend(missed);
                        continue;
                    }
                    match st.store.events_after(&st.task_id, st.last).await {
                        Ok(missed) if missed.is_empty() && closed => return None,
                        Ok(missed) => st.pending.extend(st.hub.share(&st.task_id, missed)),
                        Err(e) => {
                            st.done = true;
                            return Some((Err(e), st));
                        }
                    }
                }
            }
        }
    })
    .boxed()
}
