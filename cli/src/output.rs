//! What the command line prints: protocol objects as JSON lines (`--json`), or for people: states in
//! colour and elapsed time on a terminal, a spinner while waiting, artifacts printed as they stream
//! and files saved to the working directory. Errors go to stderr.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use a2a::client::{Binding, Event};
use a2a::types::*;
use serde::Serialize;

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

pub struct Out {
    json: bool,
    /// stdout and stderr are terminals: colour, spinner.
    tty: bool,
}

impl Out {
    pub fn new(json: bool) -> Self {
        let tty = std::io::stdout().is_terminal()
            && std::io::stderr().is_terminal()
            && std::env::var_os("NO_COLOR").is_none();
        Self { json, tty }
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

    pub fn error(&self, why: &str) {
        eprintln!("{} {why}", self.paint("1;31", "a2a: error:"));
    }

    pub fn note(&self, text: &str) {
        if self.json {
            eprintln!("{text}");
        } else {
            println!("{text}");
        }
    }

    pub fn card(&self, card: &AgentCard, binding: Binding) {
        if self.json {
            return self.json_line(card);
        }
        println!("{} {}", self.paint("1", &card.name), self.paint("2", &format!("v{}", card.version)));
        if !card.description.is_empty() {
            println!("{}", card.description);
        }
        println!("interfaces (using {}):", binding.name());
        for i in &card.supported_interfaces {
            println!("  {} {} {}", i.protocol_binding, i.protocol_version, i.url);
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
            println!("security: {}", card.security_schemes.keys().cloned().collect::<Vec<_>>().join(", "));
        }
        for skill in &card.skills {
            println!("  skill {}: {}", self.paint("1", &skill.name), skill.description);
        }
    }

    pub fn task(&self, task: &Task) {
        if self.json {
            return self.json_line(task);
        }
        println!("task {}  {}  context {}", task.id, self.state(task.status.state), task.context_id);
        if let Some(message) = &task.status.message {
            self.parts(&message.parts, "");
        }
        for artifact in task.artifacts.iter().flatten() {
            let name = if artifact.name.is_empty() { &artifact.artifact_id } else { &artifact.name };
            println!("{}", self.paint("2", &format!("── artifact {name}")));
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
            println!("{}  {:<16}  {}  {}", task.id, self.state(task.status.state), updated, task.context_id);
        }
        println!("{}", self.paint("2", &format!("{} of {} tasks", list.tasks.len(), list.total_size)));
        if !list.next_page_token.is_empty() {
            println!("next page: --page-token {}", list.next_page_token);
        }
    }

    pub fn push_config(&self, config: &TaskPushNotificationConfig) {
        if self.json {
            return self.json_line(config);
        }
        println!("{}  task {}  -> {}", config.id, config.task_id, config.url);
    }

    /// Text printed, files saved (named after the part, else `owner-N`), links shown.
    fn parts(&self, parts: &[Part], owner: &str) {
        // Text parts run on (an artifact streamed in chunks reads as one text).
        let mut text = String::new();
        for (n, part) in parts.iter().enumerate() {
            if let PartContent::Text(t) = &part.content {
                text.push_str(t);
                continue;
            }
            let run = std::mem::take(&mut text);
            if !run.is_empty() {
                println!("{run}");
            }
            match &part.content {
                PartContent::Text(_) => {}
                PartContent::Data(value) => println!("{value}"),
                PartContent::Url(url) => println!("{url}"),
                PartContent::Raw(bytes) => match save(part, owner, n, bytes) {
                    Ok(path) => println!("{}", self.paint("2", &format!("saved {} ({} bytes)", path, bytes.len()))),
                    Err(e) => self.error(&format!("cannot save a file part: {e}")),
                },
            }
        }
        if !text.is_empty() {
            println!("{text}");
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

/// Saves a file part in the working directory without overwriting anything.
fn save(part: &Part, owner: &str, n: usize, bytes: &[u8]) -> std::io::Result<String> {
    let name = std::path::Path::new(&part.filename).file_name().map(|f| f.to_string_lossy().into_owned());
    let base = name.filter(|n| !n.is_empty()).unwrap_or_else(|| format!("{owner}-{n}.bin"));
    let mut path = base.clone();
    for i in 1..1000 {
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(mut f) => {
                f.write_all(bytes)?;
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => path = format!("{i}-{base}"),
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("too many files of that name"))
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
                println!("{elapsed} task {} {} (context {})", task.id, out.state(task.status.state), task.context_id);
                self.state = Some(task.status.state);
            }
            StreamResponse::StatusUpdate(update) => {
                self.end_text();
                let text = update.status.message.as_deref().map(Message::text).unwrap_or_default();
                println!("{elapsed} {} {text}", out.state(update.status.state));
                self.state = Some(update.status.state);
            }
            StreamResponse::ArtifactUpdate(update) => {
                for (n, part) in update.artifact.parts.iter().enumerate() {
                    match &part.content {
                        PartContent::Text(text) => {
                            self.spinner.pause(true);
                            print!("{text}");
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
