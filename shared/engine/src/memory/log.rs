//! A task's event log as the memory store keeps it: compact, since a finished task is held (with
//! its log) until evicted.
//!
//! A status or artifact update repeats its task's id and context id, and a `StreamResponse` is as
//! large as its largest variant (a whole task, about 400 bytes) whatever it holds. Kept here: the
//! update without the ids (the entry's own, put back on the way out), with its message, artifact
//! and metadata boxed, about 40 bytes plus what it really holds. Part contents stay shared with the
//! task (see `PartContent`). Once the task has ended its artifacts no longer change: an update that
//! set an artifact to what the task ends with is then kept as the artifact's place in the task
//! ([`EventLog::settle`]), not as a second copy.

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
    /// An artifact update whose artifact is the ended task's artifact at `index`, as it is now.
    TaskArtifact {
        index: u32,
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

    /// The task has ended (its artifacts will not change again): the last update of each of its
    /// artifacts that set it whole (not an append) to what the task holds is kept as the place of
    /// that artifact in the task instead of a copy of it.
    pub fn settle(&mut self, task: &Task) {
        let Some(artifacts) = &task.artifacts else { return };
        for (index, artifact) in artifacts.iter().enumerate() {
            let Ok(index) = u32::try_from(index) else { return };
            let last = self.kept.iter_mut().rev().find(|kept| match kept {
                Kept::Artifact { artifact: a, .. } => a.artifact_id == artifact.artifact_id,
                Kept::TaskArtifact { index: i, .. } => *i == index,
                _ => false,
            });
            let Some(kept) = last else { continue };
            if let Kept::Artifact { artifact: a, append: false, last_chunk, metadata } = kept {
                if **a == *artifact {
                    *kept = Kept::TaskArtifact { index, last_chunk: *last_chunk, metadata: metadata.take() };
                }
            }
        }
    }

    /// The events with `seq > after`, as they were committed to the task with these `ids` (its id
    /// and context id), which is now `task` (whose own ids may be left out: only its artifacts are
    /// read).
    pub fn after(&self, after: u64, ids: (&str, &str), task: &Task) -> Vec<EventRecord> {
        let start = usize::try_from(after).unwrap_or(usize::MAX).min(self.kept.len());
        self.kept[start..]
            .iter()
            .zip(start as u64 + 1..)
            .map(|(kept, seq)| EventRecord { seq, event: kept.event(ids, task) })
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

    fn event(&self, (task_id, context_id): (&str, &str), task: &Task) -> StreamResponse {
        let (task_id, context_id) = (task_id.to_owned(), context_id.to_owned());
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
            Kept::TaskArtifact { index, last_chunk, metadata } => {
                let artifact = task.artifacts.as_ref().and_then(|a| a.get(*index as usize)).cloned();
                let artifact = artifact.unwrap_or_else(|| Artifact::new(Vec::new()));
                StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                    task_id,
                    context_id,
                    artifact,
                    append: false,
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
        assert_eq!(log.after(0, (&task.id, &task.context_id), &task), committed);
        assert_eq!(log.after(3, (&task.id, &task.context_id), &task), committed[3..]);
        assert!(log.after(9, (&task.id, &task.context_id), &task).is_empty());
        assert!(log.bytes() > 0);
        assert!(std::mem::size_of::<Kept>() <= 48, "{}", std::mem::size_of::<Kept>());
    }

    #[test]
    fn a_settled_log_gives_the_same_events_without_copies_of_the_final_artifacts() {
        let mut task = crate::ports::TaskRecord::for_test("t", TaskState::Completed).task;
        let update = |artifact: Artifact, append: bool| {
            StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                task_id: task.id.clone(),
                context_id: task.context_id.clone(),
                artifact,
                append,
                last_chunk: true,
                metadata: None,
            })
        };
        let named = |id: &str, text: &str| Artifact { artifact_id: id.into(), ..Artifact::new(vec![Part::text(text)]) };
        let events = vec![
            update(named("a", "first"), false),
            update(named("a", "final"), false),
            update(named("b", "whole"), false),
            update(named("c", "start"), false),
            update(named("c", "-more"), true),
        ];
        let committed: Vec<EventRecord> =
            events.into_iter().zip(1..).map(|(event, seq)| EventRecord { seq, event }).collect();
        let mut c = named("c", "start");
        c.parts.push(Part::text("-more"));
        task.artifacts = Some(vec![named("a", "final"), named("b", "whole"), c]);
        let mut log = EventLog::default();
        log.append(&committed, &task);
        log.settle(&task);
        assert_eq!(log.after(0, (&task.id, &task.context_id), &task), committed);
        let shared = log.kept.iter().filter(|k| matches!(k, Kept::TaskArtifact { .. })).count();
        // "a"'s last update and "b"'s: "a"'s first is not the final one, "c" ends with an append.
        assert_eq!(shared, 2);
    }
}
