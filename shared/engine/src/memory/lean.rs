//! An ended task's record as the memory store holds it: without the copies of its ids.
//!
//! A finished task is held until evicted, and its record repeats the task's id and context id in
//! the task, in every message of its history and in its status message, and its owner: for an echo
//! task five strings, four of them 36-byte ids, that the entry's placement (the index's key) holds
//! once already; and the messageId of the request that started its last turn, which its history
//! holds too. Once the task has ended they are emptied, and put back on the way out. Only copies are taken: a message whose ids are not exactly its task's keeps them (a bit
//! per message says which were taken), and a task whose record changes again is whole while it
//! changes (see `Entry::apply` in the store).

use crate::admission::Placement;
use crate::ports::{TaskRecord, TurnKey};
use a2a_protocol::types::Message;

/// What [`Lean::strip`] took out of a record, beyond the task's own ids and owner.
#[derive(Debug)]
pub(super) struct Lean {
    /// Bit `i`: history message `i` had the task's ids (the first 64 messages; later ones keep
    /// theirs).
    history: u64,
    status_message: bool,
    /// The history message whose id the turn's key repeats (among the first 65,536).
    turn_message: Option<u16>,
}

impl Lean {
    /// Empties the copies in `record` of the ids `placement` holds.
    pub fn strip(record: &mut TaskRecord, placement: &Placement) -> Lean {
        let ids = Ids::of(placement);
        record.owner = String::new();
        record.task.id = String::new();
        record.task.context_id = String::new();
        let mut history = 0;
        for (i, message) in record.task.history.iter_mut().take(64).enumerate() {
            if ids.strip(message) {
                history |= 1 << i;
            }
        }
        let status_message = record.task.status.message.as_deref_mut().is_some_and(|m| ids.strip(m));
        let turn_message = record.turn.as_mut().and_then(|turn| {
            let at = record.task.history.iter().rposition(|m| m.message_id == turn.message_id)?;
            let at = u16::try_from(at).ok()?;
            turn.message_id = String::new();
            Some(at)
        });
        Lean { history, status_message, turn_message }
    }

    /// Puts back what [`Lean::strip`] took (from the same placement).
    pub fn restore(&self, record: &mut TaskRecord, placement: &Placement) {
        let ids = Ids::of(placement);
        record.owner = placement.owner.to_string();
        record.task.id = ids.task.to_owned();
        record.task.context_id = ids.context.to_owned();
        for (i, message) in record.task.history.iter_mut().take(64).enumerate() {
            if self.history & (1 << i) != 0 {
                ids.restore(message);
            }
        }
        if let Some(message) = record.task.status.message.as_deref_mut().filter(|_| self.status_message) {
            ids.restore(message);
        }
        if let Some(turn) = record.turn.as_mut() {
            self.turn(turn, &record.task.history);
        }
    }

    /// The turn's key as it was (a list entry holds it).
    pub fn turn(&self, turn: &mut TurnKey, history: &[Message]) {
        if let Some(message) = self.turn_message.and_then(|at| history.get(usize::from(at))) {
            turn.message_id.clone_from(&message.message_id);
        }
    }

    /// The status message as it was (a list entry holds the status and nothing else of the task).
    pub fn status_message(&self, message: &mut Message, placement: &Placement) {
        if self.status_message {
            Ids::of(placement).restore(message);
        }
    }
}

struct Ids<'a> {
    task: &'a str,
    context: &'a str,
}

impl<'a> Ids<'a> {
    fn of(placement: &'a Placement) -> Self {
        Ids { task: &placement.key.1, context: &placement.context }
    }

    /// Empties the message's ids if they are these. Whether it did.
    fn strip(&self, message: &mut Message) -> bool {
        let ours = message.task_id == self.task && message.context_id == self.context;
        if ours {
            message.task_id = String::new();
            message.context_id = String::new();
        }
        ours
    }

    fn restore(&self, message: &mut Message) {
        message.task_id = self.task.to_owned();
        message.context_id = self.context.to_owned();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_protocol::types::{Role, TaskState};
    use std::sync::Arc;

    #[test]
    fn a_stripped_record_comes_back_as_it_was() {
        let mut record = TaskRecord::for_test("t", TaskState::Completed);
        record.owner = "alice".into();
        let message = |task: &str, context: &str| Message {
            task_id: task.into(),
            context_id: context.into(),
            ..Message::user_text("hi")
        };
        let (id, context) = (record.task.id.clone(), record.task.context_id.clone());
        record.task.history = vec![
            message(&id, &context),
            // Not the task's ids (or not both): kept as they are.
            message(&id, "elsewhere"),
            message("", ""),
            Message { role: Role::Agent, ..message(&id, &context) },
        ];
        record.task.status.message = Some(Box::new(message(&id, &context)));
        record.turn = Some(TurnKey {
            message_id: record.task.history[3].message_id.clone(),
            fingerprint: Default::default(),
            claimed_by: None,
        });
        let placement = Placement {
            owner: Arc::from("alice"),
            context: Arc::from(context.as_str()),
            state: TaskState::Completed,
            key: (0, Arc::from(id.as_str())),
        };
        let whole = record.clone();
        let lean = Lean::strip(&mut record, &placement);
        assert!(record.owner.is_empty() && record.task.id.is_empty() && record.task.context_id.is_empty());
        let emptied = record.task.history.iter().filter(|m| m.task_id.is_empty()).count();
        assert_eq!(emptied, 3, "two of the task's own and the one that had none");
        assert_eq!(record.task.history[2].task_id, "", "…which stays without");
        assert_eq!(lean.history, 0b1001);
        assert_eq!((record.turn.as_ref().unwrap().message_id.as_str(), lean.turn_message), ("", Some(3)));
        let mut status = record.task.status.message.as_deref().cloned().unwrap();
        lean.status_message(&mut status, &placement);
        assert_eq!(Some(&status), whole.task.status.message.as_deref());
        lean.restore(&mut record, &placement);
        assert_eq!(record, whole);
    }
}
