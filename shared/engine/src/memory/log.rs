//! A task's event log as the memory store keeps it: compact, since a finished task is held (with
//! its log) until evicted.
//!
//! A status or artifact update repeats its task's id and context id, and a `StreamResponse` is as
//! large as its largest variant (a whole task, about 400 bytes) whatever it holds. Kept here: the
//! update without the ids (the entry's own, put back on the way out), with its message, artifact
//! and metadata boxed, about 40 bytes plus what it really holds. Part contents stay shared with the
//! task (see `PartContent`).

use crate::ports::EventRecord;
use a2a_protocol::types::size::event_size;
use a2a_protocol::types::{
    Artifact, StreamResponse, Struct, Task, TaskArtifactUpdateEvent, TaskStatus, TaskStatusUpdateEvent,
};

#[derive(Debug)]
enum Kept {
    Status {
        status: TaskStatus,
        metadata: Option<Box<Struct>>,
    },
    Artifact {
        artifact: Box<Artifact>,
        append: bool,
        last_chunk: bool,
        metadata: Option<Box<Struct>>,
    },
    /// Anything else (a task snapshot, a message, an update naming other ids) as it came.
    Other(Box<StreamResponse>),
}

#[derive(Debug, Default)]
pub(super) struct EventLog {
    /// Event `seq` is at index `seq - 1`: sequence numbers are dense and start at 1.
    kept: Vec<Kept>,
    /// What the log counts for in the store's byte total.
    bytes: usize,
}

impl EventLog {
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn len(&self) -> usize {
        self.kept.len()
    }

    /// Appends the events just committed to `task`.
    pub fn append(&mut self, committed: &[EventRecord], task: &Task) {
        a2a_protocol::types::reserve_tight(&mut self.kept, committed.len());
        for record in committed {
            self.bytes += event_size(&record.event);
            self.kept.push(Kept::new(&record.event, task));
        }
    }

    /// The events with `seq > after`, as they were committed to `task`.
    pub fn after(&self, after: u64, task: &Task) -> Vec<EventRecord> {
        let start = usize::try_from(after).unwrap_or(usize::MAX).min(self.kept.len());
        self.kept[start..]
            .iter()
            .zip(start as u64 + 1..)
            .map(|(kept, seq)| EventRecord { seq, event: kept.event(task) })
            .collect()
    }
}

impl Kept {
    fn new(event: &StreamResponse, task: &Task) -> Self {
        let ours = |task_id: &str, context_id: &str| task_id == task.id && context_id == task.context_id;
        match event {
            StreamResponse::StatusUpdate(u) if ours(&u.task_id, &u.context_id) => {
                Kept::Status { status: u.status.clone(), metadata: u.metadata.clone().map(Box::new) }
            }
            StreamResponse::ArtifactUpdate(u) if ours(&u.task_id, &u.context_id) => Kept::Artifact {
                artifact: Box::new(u.artifact.clone()),
                append: u.append,
                last_chunk: u.last_chunk,
                metadata: u.metadata.clone().map(Box::new),
            },
            other => Kept::Other(Box::new(other.clone())),
        }
    }

    fn event(&self, task: &Task) -> StreamResponse {
        let (task_id, context_id) = (task.id.clone(), task.context_id.clone());
        match self {
            Kept::Status { status, metadata } => StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id,
                context_id,
                status: status.clone(),
                metadata: metadata.as_deref().cloned(),
            }),
            Kept::Artifact { artifact, append, last_chunk, metadata } => {
                StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                    task_id,
                    context_id,
                    artifact: Artifact::clone(artifact),
                    append: *append,
                    last_chunk: *last_chunk,
                    metadata: metadata.as_deref().cloned(),
                })
            }
            Kept::Other(event) => StreamResponse::clone(event),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_protocol::types::{Message, Part, TaskState};
    use chrono::Utc;

    #[test]
    fn events_come_back_as_they_were_committed() {
        let task = crate::ports::TaskRecord::for_test("t", TaskState::Working).task;
        let status = |state, message: Option<Message>| {
            StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id: task.id.clone(),
                context_id: task.context_id.clone(),
                status: TaskStatus { state, message: message.map(Box::new), timestamp: Some(Utc::now()) },
                metadata: None,
            })
        };
        let mut meta = Struct::new();
        meta.insert("k".into(), serde_json::json!([1, {"b": 2}]));
        let events = vec![
            status(TaskState::Working, None),
            StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: task.id.clone(),
                context_id: task.context_id.clone(),
                artifact: Artifact::new(vec![Part::text("chunk")]),
                append: true,
                last_chunk: false,
                metadata: Some(meta),
            }),
            StreamResponse::Message(Message::agent_text("hi")),
            // Another task's ids are kept as they are.
            StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                task_id: "elsewhere".into(),
                ..match status(TaskState::Failed, None) {
                    StreamResponse::StatusUpdate(u) => u,
                    _ => unreachable!(),
                }
            }),
            status(TaskState::Completed, Some(Message::agent_text("done"))),
        ];
        let committed: Vec<EventRecord> =
            events.into_iter().zip(1..).map(|(event, seq)| EventRecord { seq, event }).collect();
        let mut log = EventLog::default();
        log.append(&committed[..2], &task);
        log.append(&committed[2..], &task);
        assert_eq!(log.after(0, &task), committed);
        assert_eq!(log.after(3, &task), committed[3..]);
        assert!(log.after(9, &task).is_empty());
        assert!(log.bytes() > 0);
        assert!(std::mem::size_of::<Kept>() <= 48, "{}", std::mem::size_of::<Kept>());
    }
}
