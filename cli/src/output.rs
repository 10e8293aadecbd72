//! What the command line prints: protocol objects as JSON lines (`--json`), or for people: states in
//! colour and elapsed time on a terminal, a spinner while waiting, artifacts printed as they stream
//! and files saved to the chosen folder (see [`crate::files`]). Errors go to stderr. Every piece of
//! server text printed for people goes through [`crate::terminal`] first.

use std::cell::Cell;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use a2a::client::{Binding, Event};
use a2a::types::*;
use serde::Serialize;

use crate::files;
use crate::terminal::{line, text};

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

pub struct Out {
    json: bool,
    /// stdout and stderr are terminals: colour, spinner.
    tty: bool,
    /// Where file parts are saved.
    output_dir: PathBuf,
    /// A file part could not be saved (the command then ends with a failure code).
    save_failed: Cell<bool>,
    /// File parts saved so far (at most [`files::MAX_FILES`]).
    saved: Cell<usize>,
}

impl Out {
    pub fn new(json: bool, output_dir: PathBuf) -> Self {
        let tty = std::io::stdout().is_terminal()
            && std::io::stderr().is_terminal()
            && std::env::var_os("NO_COLOR").is_none();
        Self { json, tty, output_dir, save_failed: Cell::new(false), saved: Cell::new(0) }
    }

    /// Whether a file part could not be saved.
    pub fn save_failed(&self) -> bool {
        self.save_failed.get()
    }

    fn json_line(&self, value: &impl Serialize) {
        let line = serde_json::to_string(value).unwrap_or_default();
        println!("{line}");
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.tty {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    pub fn state(&self, state: TaskState) -> String {
        let name = state.to_string();
        let name = name.trim_start_matches("TASK_STATE_");
        let code = match state {
            TaskState::Completed => "32",
            TaskState::Failed | TaskState::Rejected => "31",
            TaskState::Canceled => "33",
            TaskState::InputRequired | TaskState::AuthRequired => "35",
            _ => "36",
        };
        self.paint(&format!("1;{code}"), name)
    }

    /// An error (it may quote the agent: neutralised).
    pub fn error(&self, why: &str) {
        eprintln!("{} {}", self.paint("1;31", "a2a: error:"), line(why));
    }

    /// A line for people (it may quote the agent: neutralised); stderr with `--json`.
    pub fn note(&self, note: &str) {
        let note = line(note);
        if self.json {
            eprintln!("{note}");
        } else {
            println!("{note}");
        }
    }

    /// `task ID STATE`, as a note.
    pub fn task_state(&self, task: &Task) {
        if self.json {
            return eprintln!("task {} {}", line(&task.id), self.state(task.status.state));
        }
        println!("task {} {}", line(&task.id), self.state(task.status.state));
    }

    pub fn card(&self, card: &AgentCard, binding: Binding) {
        if self.json {
            return self.json_line(card);
        }
        println!("{} {}", self.paint("1", &line(&card.name)), self.paint("2", &format!("v{}", line(&card.version))));
        if !card.description.is_empty() {
            println!("{}", text(&card.description));
        }
        println!("interfaces (using {}):", binding.name());
        for i in &card.supported_interfaces {
            println!("  {} {} {}", line(&i.protocol_binding), line(&i.protocol_version), line(&i.url));
        }
        let caps = &card.capabilities;
        let on = |b: Option<bool>| if b.unwrap_or(false) { "yes" } else { "no" };
        println!(
            "streaming: {}  push notifications: {}  extended card: {}",
            on(caps.streaming),
            on(caps.push_notifications),
            on(caps.extended_agent_card)
        );
        if !card.security_schemes.is_empty() {
            let names: Vec<_> = card.security_schemes.keys().map(|k| line(k)).collect();
            println!("security: {}", names.join(", "));
        }
        for skill in &card.skills {
            println!("  skill {}: {}", self.paint("1", &line(&skill.name)), text(&skill.description));
        }
    }

    pub fn task(&self, task: &Task) {
        if self.json {
            return self.json_line(task);
        }
        println!("task {}  {}  context {}", line(&task.id), self.state(task.status.state), line(&task.context_id));
        if let Some(message) = &task.status.message {
            self.parts(&message.parts, &message.message_id);
        }
        for artifact in task.artifacts.iter().flatten() {
            let name = if artifact.name.is_empty() { &artifact.artifact_id } else { &artifact.name };
            println!("{}", self.paint("2", &format!("── artifact {}", line(name))));
            self.parts(&artifact.parts, &artifact.artifact_id);
        }
    }

    pub fn message(&self, message: &Message) {
        if self.json {
            return self.json_line(message);
        }
        self.parts(&message.parts, &message.message_id);
    }

    pub fn tasks(&self, list: &ListTasksResponse) {
        if self.json {
            return self.json_line(list);
        }
        for task in &list.tasks {
            let updated = task.status.timestamp.map(|t| t.to_rfc3339()).unwrap_or_default();
            let (id, context) = (line(&task.id), line(&task.context_id));
            println!("{id}  {:<16}  {updated}  {context}", self.state(task.status.state));
        }
        println!("{}", self.paint("2", &format!("{} of {} tasks", list.tasks.len(), list.total_size)));
        if !list.next_page_token.is_empty() {
            println!("next page: --page-token {}", line(&list.next_page_token));
        }
    }

    pub fn push_config(&self, config: &TaskPushNotificationConfig) {
        if self.json {
            return self.json_line(config);
        }
        println!("{}  task {}  -> {}", line(&config.id), line(&config.task_id), line(&config.url));
    }

    /// Text printed, files saved (named after the part, else `owner-N`), links shown.
    fn parts(&self, parts: &[Part], owner: &str) {
        // Text parts run on (an artifact streamed in chunks reads as one text).
        let mut run = String::new();
        for (n, part) in parts.iter().enumerate() {
            if let PartContent::Text(t) = &part.content {
                run.push_str(t);
                continue;
            }
            let run = std::mem::take(&mut run);
            if !run.is_empty() {
                println!("{}", text(&run));
            }
            match &part.content {
                PartContent::Text(_) => {}
                PartContent::Data(value) => println!("{}", text(&value.to_string())),
                PartContent::Url(url) => println!("{}", line(url)),
                PartContent::Raw(bytes) => self.save(part, &format!("{owner}-{n}.bin"), bytes),
            }
        }
        if !run.is_empty() {
            println!("{}", text(&run));
        }
    }

    /// Saves a file part in the chosen folder (its own name if it has one, else `fallback`), and
    /// says where it went.
    fn save(&self, part: &Part, fallback: &str, bytes: &[u8]) {
        if self.saved.get() >= files::MAX_FILES {
            if !self.save_failed.replace(true) {
                self.error(&format!(
                    "the agent sent more than {} file parts; the rest are not saved",
                    files::MAX_FILES
                ));
            }
            return;
        }
        match files::save(&self.output_dir, part.filename(), fallback, bytes) {
            Ok(path) => {
                self.saved.set(self.saved.get() + 1);
                let shown = path.strip_prefix(".").unwrap_or(&path).display().to_string();
                println!("{}", self.paint("2", &format!("saved {} ({} bytes)", line(&shown), bytes.len())));
            }
            Err(e) => {
                self.save_failed.set(true);
                self.error(&format!("cannot save a file part: {e}"));
            }
        }
    }

    /// A spinner on stderr until stopped (nothing when not on a terminal or in --json mode).
    pub fn spinner(&self, label: &str) -> Spinner {
        Spinner::start(self.tty && !self.json, label)
    }

    pub fn live(&self) -> Live<'_> {
        Live { out: self, started: Instant::now(), spinner: self.spinner("connecting"), state: None, in_text: false }
    }
}

/// A spinner line on stderr, redrawn every 100 ms with the elapsed time.
pub struct Spinner {
    shared: Option<(Arc<Mutex<SpinnerLine>>, tokio::task::JoinHandle<()>)>,
}

/// What the spinner shows; nothing while `paused` (text is being printed on its line).
#[derive(Default)]
struct SpinnerLine {
    label: String,
    paused: bool,
}

impl Spinner {
    fn start(on: bool, label: &str) -> Self {
        if !on {
            return Self { shared: None };
        }
        let line = Arc::new(Mutex::new(SpinnerLine { label: label.to_string(), paused: false }));
        let shown = line.clone();
        let started = Instant::now();
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(std::time::Duration::from_millis(100));
            for frame in SPINNER.iter().cycle() {
                tick.tick().await;
                let Ok(line) = shown.lock() else { return };
                if !line.paused {
                    eprint!("\r\x1b[2K{frame} {} {:.1}s", line.label, started.elapsed().as_secs_f64());
                    let _ = std::io::stderr().flush();
                }
            }
        });
        Self { shared: Some((line, task)) }
    }

    pub fn set(&self, label: &str) {
        self.update(|line| label.clone_into(&mut line.label));
    }

    /// Stops drawing (`true`) while text is printed on the spinner's line, or starts again.
    pub fn pause(&self, paused: bool) {
        self.update(|line| line.paused = paused);
    }

    fn update(&self, change: impl FnOnce(&mut SpinnerLine)) {
        if let Some((line, _)) = &self.shared {
            if let Ok(mut line) = line.lock() {
                change(&mut line);
            }
        }
    }

    /// Clears the line (before anything else is printed).
    pub fn clear(&self) {
        if self.shared.is_some() {
            eprint!("\r\x1b[2K");
            let _ = std::io::stderr().flush();
        }
    }

    pub async fn stop(self) {
        if let Some((_, task)) = self.shared {
            task.abort();
            let _ = task.await;
            eprint!("\r\x1b[2K");
            let _ = std::io::stderr().flush();
        }
    }
}

/// Prints a stream as it happens.
pub struct Live<'a> {
    out: &'a Out,
    started: Instant,
    spinner: Spinner,
    state: Option<TaskState>,
    /// An artifact's text is being printed (chunks append).
    in_text: bool,
}

impl Live<'_> {
    pub fn event(&mut self, event: &Event) {
        let out = self.out;
        if out.json {
            return out.json_line(&event.event);
        }
        if !self.in_text {
            self.spinner.clear(); // (while text runs on, the spinner is paused and the line is the text's)
        }
        let elapsed = out.paint("2", &format!("[{:>5.1}s]", self.started.elapsed().as_secs_f64()));
        match &event.event {
            StreamResponse::Task(task) => {
                self.end_text();
                let (id, context) = (line(&task.id), line(&task.context_id));
                println!("{elapsed} task {id} {} (context {context})", out.state(task.status.state));
                self.state = Some(task.status.state);
            }
            StreamResponse::StatusUpdate(update) => {
                self.end_text();
                let said = update.status.message.as_deref().map(Message::text).unwrap_or_default();
                println!("{elapsed} {} {}", out.state(update.status.state), text(&said));
                self.state = Some(update.status.state);
            }
            StreamResponse::ArtifactUpdate(update) => {
                for (n, part) in update.artifact.parts.iter().enumerate() {
                    match &part.content {
                        PartContent::Text(chunk) => {
                            self.spinner.pause(true);
                            print!("{}", text(chunk));
                            self.in_text = true;
                        }
                        _ => {
                            self.end_text();
                            out.parts(std::slice::from_ref(part), &format!("{}-{n}", update.artifact.artifact_id));
                        }
                    }
                }
                if update.last_chunk {
                    self.end_text();
                }
                let _ = std::io::stdout().flush();
            }
            StreamResponse::Message(message) => {
                self.end_text();
                out.message(message);
            }
        }
        let label = self.state.map(|s| out.state(s)).unwrap_or_default();
        self.spinner.set(&label);
    }

    fn end_text(&mut self) {
        if std::mem::take(&mut self.in_text) {
            println!();
            self.spinner.pause(false);
        }
    }

    pub fn finish(mut self) {
        self.end_text();
        self.spinner.clear();
        if let Some((_, task)) = self.spinner.shared.take() {
            task.abort();
        }
        if !self.out.json {
            let state = self.state.map(|s| self.out.state(s)).unwrap_or_else(|| "ended".into());
            println!(
                "{}",
                self.out.paint("2", &format!("── {state} after {:.1}s", self.started.elapsed().as_secs_f64()))
            );
        }
    }
}
