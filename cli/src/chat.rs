//! `a2a chat`: a conversation in one context. Each line typed is a turn (streamed when the agent
//! streams); when the agent asks for input the next line continues the same task; Ctrl-C during a
//! turn cancels its task; Ctrl-C or end of input at the prompt ends the chat.

use std::io::Write;

use a2a::client::{request, Client, ClientError, Event};
use a2a::types::*;
use futures::StreamExt;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::output::Out;
use crate::{Exit, Failure};

pub async fn run(client: &Client, out: &Out) -> Result<Exit, Failure> {
    let streaming = client.card().capabilities.streaming.unwrap_or(false);
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut context = String::new();
    let mut task: Option<String> = None;
    out.note(&format!("chatting with {} (Ctrl-C cancels a turn; Ctrl-D ends)", client.card().name));
    loop {
        print!("{}", if task.is_some() { "you (the agent asked)> " } else { "you> " });
        let _ = std::io::stdout().flush();
        let line = tokio::select! {
            line = lines.next_line() => line.map_err(|e| Failure::Local(format!("stdin: {e}")))?,
            _ = tokio::signal::ctrl_c() => None,
        };
        let Some(line) = line else {
            println!();
            return Ok(Exit::Ok);
        };
        if line.trim().is_empty() {
            continue;
        }
        let mut message = Message::user_text(line);
        message.context_id.clone_from(&context);
        message.task_id = task.clone().unwrap_or_default();
        let turn = Turn { client, out, streaming };
        let (task_id, context_id, state) = turn.run(request(message)).await?;
        if !context_id.is_empty() {
            context = context_id;
        }
        // Interrupted: the next line answers the same task; otherwise the next line starts a new one.
        task = state.filter(|s| s.is_interrupted()).and(task_id);
    }
}

struct Turn<'a> {
    client: &'a Client,
    out: &'a Out,
    streaming: bool,
}

impl Turn<'_> {
    /// One turn; its task, context and the state it ended in.
    async fn run(&self, req: SendMessageRequest) -> Result<(Option<String>, String, Option<TaskState>), Failure> {
        let mut seen = Seen::default();
        let outcome =
            if self.streaming { self.stream(req, &mut seen).await } else { self.blocking(req, &mut seen).await };
        match outcome {
            Ok(()) => Ok((seen.task, seen.context, seen.state)),
            Err(Failure::Client(e)) if !matches!(e, ClientError::Protocol(_)) => Err(Failure::Client(e)),
            Err(Failure::Client(e)) => {
                // A refusal ends the turn, not the chat.
                self.out.error(&e.to_string());
                Ok((None, seen.context, None))
            }
            Err(other) => Err(other),
        }
    }

    async fn stream(&self, req: SendMessageRequest, seen: &mut Seen) -> Result<(), Failure> {
        let mut events = self.client.send_streaming_message(req).await?;
        let mut live = self.out.live();
        loop {
            tokio::select! {
                event = events.next() => match event {
                    Some(event) => {
                        let event = event?;
                        seen.note(&event);
                        live.event(&event);
                    }
                    None => break,
                },
                _ = tokio::signal::ctrl_c() => {
                    live.finish();
                    return self.cancel(seen).await;
                }
            }
        }
        live.finish();
        Ok(())
    }

    async fn blocking(&self, req: SendMessageRequest, seen: &mut Seen) -> Result<(), Failure> {
        let spinner = self.out.spinner("the agent is working");
        let reply = tokio::select! {
            reply = self.client.send_message(req) => reply,
            _ = tokio::signal::ctrl_c() => {
                spinner.stop().await;
                self.out.note("(the turn was interrupted before the agent named its task)");
                return Ok(());
            }
        };
        spinner.stop().await;
        match reply? {
            SendMessageResponse::Task(task) => {
                seen.note(&Event { seq: None, event: StreamResponse::Task(task.clone()) });
                self.out.task(&task);
            }
            SendMessageResponse::Message(message) => self.out.message(&message),
        }
        Ok(())
    }

    async fn cancel(&self, seen: &mut Seen) -> Result<(), Failure> {
        let Some(id) = seen.task.clone() else {
            self.out.note("(interrupted before the agent named its task)");
            return Ok(());
        };
        let task = self.client.cancel_task(CancelTaskRequest { tenant: String::new(), id, metadata: None }).await?;
        self.out.task_state(&task);
        seen.state = Some(task.status.state);
        Ok(())
    }
}

/// What a turn has told about its task so far.
#[derive(Default)]
struct Seen {
    task: Option<String>,
    context: String,
    state: Option<TaskState>,
}

impl Seen {
    fn note(&mut self, event: &Event) {
        let ev = &event.event;
        if !ev.task_id().is_empty() {
            self.task = Some(ev.task_id().to_string());
        }
        let context = match ev {
            StreamResponse::Task(t) => &t.context_id,
            StreamResponse::Message(m) => &m.context_id,
            StreamResponse::StatusUpdate(u) => &u.context_id,
            StreamResponse::ArtifactUpdate(u) => &u.context_id,
        };
        if !context.is_empty() {
            self.context.clone_from(context);
        }
        if let Some(state) = ev.state() {
            self.state = Some(state);
        }
    }
}
