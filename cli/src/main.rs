//! `a2a`: talk to any A2A agent from a terminal or a script. Human output by default (live status on
//! a terminal, artifacts as they stream, files saved to disk); `--json` prints the protocol objects
//! one per line. Exit codes tell failure kinds apart (see [`Exit`]).
// A command line's output is its interface: printing is what it is for (the workspace denies it
// elsewhere, where logs go through tracing).
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod chat;
mod files;
mod output;
mod terminal;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use a2a::client::verify::Trust;
use a2a::client::{request, Binding, Client, ClientError, ClientOptions, Credentials, EventStream};
use a2a::types::*;
use base64::Engine;
use clap::{Parser, Subcommand};
use futures::StreamExt;

use output::Out;

/// What the command line guarantees against an agent it cannot trust (shown by `--help`).
const GUARANTEES: &str = "\
What an agent cannot make a2a do:
  - write outside --output-dir: a file part is saved there under a sanitized base name (its last
    path segment, plain characters only, no leading dot), never over an existing file or link;
    each save is reported with its path
  - drive the terminal: control characters (C0 but newline and tab in multi-line text, DEL, C1,
    ESC, bidirectional overrides) in its text are shown escaped (\\x1b, \\u{9b}); --json keeps the
    exact text, JSON-escaped
  - exhaust memory or time: answers, the card, token answers and each stream event stop at
    --max-answer-size; every answer within --timeout; a stream within --max-time in all
  - collect credentials by redirecting: a redirect to another origin (scheme, host, port) is
    refused, so the API key, token and request never follow it
  - collect the OAuth client secret: it goes only to --token-url, or to the card's token URL on
    the card's own origin over HTTPS (plain HTTP only on loopback)
  - vouch for its own card: with --trusted-jwks only those keys count, no jku is fetched";

/// Talk to an A2A agent.
#[derive(Debug, Parser)]
#[command(name = "a2a", version, about, after_help = GUARANTEES)]
struct Cli {
    /// Print protocol objects as JSON, one per line (for scripts); the command's trace id goes to
    /// stderr as `{"traceId": ...}`.
    #[arg(long, global = true)]
    json: bool,
    /// A W3C traceparent every call of the command continues (the agent's spans join the caller's
    /// trace); default: a new trace per command.
    #[arg(long, global = true, env = "TRACEPARENT")]
    traceparent: Option<String>,
    /// The trace this command's calls carry (from --traceparent, or new).
    #[arg(skip)]
    trace: Option<a2a::telemetry::TraceContext>,
    /// API key (sent in the header the card's apiKey scheme names, default X-API-Key). Credentials
    /// never follow a redirect to another origin: such a redirect is refused.
    #[arg(long, global = true, env = "A2A_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// Bearer token.
    #[arg(long, global = true, env = "A2A_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// OAuth 2.0 client id (client-credentials flow; token URL from the card unless --token-url).
    #[arg(long, global = true, env = "A2A_CLIENT_ID")]
    client_id: Option<String>,
    /// OAuth 2.0 client secret: sent only to --token-url, or to the card's token URL when that is on
    /// the card's own origin over HTTPS (plain HTTP only on a loopback host); otherwise refused.
    #[arg(long, global = true, env = "A2A_CLIENT_SECRET", hide_env_values = true)]
    client_secret: Option<String>,
    /// Scopes to ask for, space-separated.
    #[arg(long, global = true, env = "A2A_SCOPES")]
    scopes: Option<String>,
    /// Token URL of the client-credentials flow, to use instead of the card's (the client secret
    /// goes there whatever its origin: it is your choice).
    #[arg(long, global = true, env = "A2A_TOKEN_URL")]
    token_url: Option<String>,
    /// JSONRPC, HTTP+JSON or GRPC (default: the card's first this client speaks).
    #[arg(long, global = true, env = "A2A_BINDING")]
    binding: Option<Binding>,
    /// Seconds to wait for an answer, body included; on a stream, the longest silence between two
    /// reads (then it reconnects).
    #[arg(long, global = true, default_value_t = 120, value_name = "SECS")]
    timeout: u64,
    /// Longest a stream may run in all (send --stream, subscribe, each chat turn), reconnections
    /// included; then it is closed with an error.
    #[arg(long, global = true, default_value_t = 3600, value_name = "SECS")]
    max_time: u64,
    /// Largest answer read: a response body, the card, a JWKS, a token answer, one stream event
    /// (bytes, or with a K, M or G suffix: 1024-based). A larger one is an error, never read whole.
    #[arg(long, global = true, default_value = "16M", value_name = "SIZE", value_parser = parse_size)]
    max_answer_size: usize,
    /// Folder where file parts the agent sends are saved (it must exist).
    #[arg(long, global = true, default_value = ".", value_name = "DIR")]
    output_dir: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show the agent card.
    Card {
        url: String,
        /// Verify the card's signatures (keys from their jku on the card's origin, or --trusted-jwks).
        #[arg(long)]
        verify: bool,
        /// A JWKS (or JWK) file whose keys are trusted as they are. When given, only these keys
        /// count: no jku is fetched (the card's host could otherwise vouch for a card it re-signed).
        #[arg(long, requires = "verify")]
        trusted_jwks: Vec<PathBuf>,
        /// An origin besides the card's own whose jku may be fetched (https://keys.example.com).
        #[arg(long, requires = "verify", conflicts_with = "trusted_jwks")]
        allow_jku: Vec<String>,
    },
    /// Send a message: a new task, or a follow-up with --task.
    Send {
        url: String,
        text: String,
        /// Stream the task's events as they happen.
        #[arg(long)]
        stream: bool,
        /// Continue this task.
        #[arg(long)]
        task: Option<String>,
        /// Within this context.
        #[arg(long)]
        context: Option<String>,
        /// Attach a file (sent inline).
        #[arg(long)]
        file: Vec<PathBuf>,
        /// Attach structured data (JSON).
        #[arg(long)]
        data: Option<String>,
        /// Return as soon as the task exists (returnImmediately).
        #[arg(long)]
        no_wait: bool,
    },
    /// Show a task.
    Get {
        url: String,
        task: String,
        #[arg(long)]
        history: Option<i32>,
    },
    /// Cancel a task.
    Cancel { url: String, task: String },
    /// Follow a task's events.
    Subscribe { url: String, task: String },
    /// List tasks.
    List {
        url: String,
        #[arg(long)]
        context: Option<String>,
        /// A state such as working, completed, input-required.
        #[arg(long)]
        status: Option<String>,
        #[arg(long)]
        page_size: Option<i32>,
        #[arg(long)]
        page_token: Option<String>,
    },
    /// Push notification configs of a task.
    #[command(subcommand)]
    Push(PushCommand),
    /// Talk with the agent: each line is a turn; INPUT_REQUIRED asks for the next; Ctrl-C cancels.
    Chat { url: String },
}

#[derive(Debug, Subcommand)]
enum PushCommand {
    Create {
        url: String,
        task: String,
        webhook: String,
        #[arg(long)]
        id: Option<String>,
        /// Token the webhook receives in A2A-Notification-Token.
        #[arg(long)]
        notification_token: Option<String>,
    },
    Get {
        url: String,
        task: String,
        id: String,
    },
    List {
        url: String,
        task: String,
    },
    Delete {
        url: String,
        task: String,
        id: String,
    },
}

/// Exit codes: what went wrong, for scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Ok = 0,
    /// The agent could not be reached, or did not answer in time.
    Unreachable = 3,
    /// The agent refused the request with a protocol error.
    Refused = 4,
    /// The task ended FAILED, REJECTED or CANCELED.
    TaskFailed = 5,
    /// The task waits for input or authorization.
    NeedsInput = 6,
    /// Credentials or the card were unusable, or a local file could not be read.
    Setup = 7,
    /// The agent answered something the protocol does not allow.
    Invalid = 8,
    /// The card's signatures do not verify.
    Untrusted = 9,
}

impl Exit {
    pub fn of_error(e: &ClientError) -> Self {
        match e {
            ClientError::Protocol(_) | ClientError::Http { .. } => Self::Refused,
            ClientError::Transport(_) | ClientError::Timeout | ClientError::TooLong(_) => Self::Unreachable,
            ClientError::InvalidResponse(_) | ClientError::TooLarge(_) => Self::Invalid,
            ClientError::Card(_) | ClientError::Credentials(_) => Self::Setup,
            ClientError::Signature(_) => Self::Untrusted,
        }
    }

    pub fn of_state(state: TaskState) -> Self {
        match state {
            TaskState::Failed | TaskState::Rejected | TaskState::Canceled => Self::TaskFailed,
            TaskState::InputRequired | TaskState::AuthRequired => Self::NeedsInput,
            _ => Self::Ok,
        }
    }
}

fn main() -> ExitCode {
    let mut cli = Cli::parse();
    let trace = match cli.traceparent.as_deref() {
        None => a2a::telemetry::TraceContext::new_root(),
        Some(given) => match a2a::telemetry::TraceContext::parse(given, None) {
            Some(trace) => trace,
            None => {
                eprintln!("a2a: --traceparent is not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)");
                return ExitCode::from(2);
            }
        },
    };
    if cli.json {
        eprintln!("{}", serde_json::json!({ "traceId": trace.trace_id() }));
    }
    cli.trace = Some(trace);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("a2a: {e}");
            return ExitCode::from(1);
        }
    };
    let out = Out::new(cli.json, cli.output_dir.clone());
    let code = runtime.block_on(run(cli, &out));
    ExitCode::from(code as u8)
}

impl Cli {
    fn options(&self) -> ClientOptions {
        let credentials = match (&self.api_key, &self.token, &self.client_id, &self.client_secret) {
            (_, Some(token), _, _) => Credentials::Bearer(token.clone()),
            (_, None, Some(id), Some(secret)) => Credentials::ClientCredentials {
                client_id: id.clone(),
                client_secret: secret.clone(),
                scopes: self.scopes.as_deref().unwrap_or("").split_whitespace().map(String::from).collect(),
                token_url: self.token_url.clone(),
            },
            (Some(key), None, _, _) => Credentials::ApiKey(key.clone()),
            _ => Credentials::None,
        };
        ClientOptions {
            credentials,
            prefer: self.binding,
            timeout: Duration::from_secs(self.timeout.max(1)),
            max_answer_bytes: self.max_answer_size,
            stream_time: Duration::from_secs(self.max_time.max(1)),
            trace: self.trace.clone(),
            ..ClientOptions::default()
        }
    }
}

async fn run(cli: Cli, out: &Out) -> Exit {
    match execute(&cli, out).await {
        // A file part that could not be saved is lost: the command did not do all it should (a
        // task's own failure code, if any, says more and is kept).
        Ok(Exit::Ok) if out.save_failed() => Exit::Setup,
        Ok(exit) => exit,
        Err(Failure::Client(e)) => {
            let hint = match e {
                ClientError::TooLarge(_) => " (raise it with --max-answer-size)",
                ClientError::TooLong(_) => " (raise it with --max-time)",
                _ => "",
            };
            out.error(&format!("{e}{hint}"));
            Exit::of_error(&e)
        }
        Err(Failure::Local(why)) => {
            out.error(&why);
            Exit::Setup
        }
    }
}

pub enum Failure {
    Client(ClientError),
    Local(String),
}

impl From<ClientError> for Failure {
    fn from(e: ClientError) -> Self {
        Self::Client(e)
    }
}

async fn connect(cli: &Cli, url: &str) -> Result<Client, Failure> {
    Ok(Client::connect(url, cli.options()).await?)
}

async fn execute(cli: &Cli, out: &Out) -> Result<Exit, Failure> {
    match &cli.command {
        Command::Card { url, verify, trusted_jwks, allow_jku } => {
            let client = connect(cli, url).await?;
            out.card(client.card(), client.binding());
            if *verify {
                let mut trust = Trust { jku_origins: allow_jku.clone(), ..Trust::default() };
                for path in trusted_jwks {
                    let text = std::fs::read_to_string(path)
                        .map_err(|e| Failure::Local(format!("{}: {e}", path.display())))?;
                    let jwks = serde_json::from_str(&text)
                        .map_err(|e| Failure::Local(format!("{}: not JSON: {e}", path.display())))?;
                    trust.add_jwks(&jwks);
                }
                let verified = client.verify_card(&trust).await?;
                out.note(&format!("signature verified: kid {} ({})", verified.kid, verified.alg));
            }
            Ok(Exit::Ok)
        }
        Command::Send { url, text, stream, task, context, file, data, no_wait } => {
            let client = connect(cli, url).await?;
            let mut message = Message::user_text(text.clone());
            message.task_id = task.clone().unwrap_or_default();
            message.context_id = context.clone().unwrap_or_default();
            for path in file {
                message.parts.push(file_part(path)?);
            }
            if let Some(json) = data {
                let value: serde_json::Value =
                    serde_json::from_str(json).map_err(|e| Failure::Local(format!("--data is not JSON: {e}")))?;
                message.parts.push(Part::new(PartContent::Data(std::sync::Arc::new(value))));
            }
            let mut req = request(message);
            if *no_wait {
                req.configuration = Some(SendMessageConfiguration { return_immediately: true, ..Default::default() });
            }
            if *stream {
                let events = client.send_streaming_message(req).await?;
                return follow(out, events).await;
            }
            let spinner = out.spinner("waiting for the agent");
            let reply = client.send_message(req).await;
            spinner.stop().await;
            Ok(match reply? {
                SendMessageResponse::Task(task) => {
                    out.task(&task);
                    Exit::of_state(task.status.state)
                }
                SendMessageResponse::Message(message) => {
                    out.message(&message);
                    Exit::Ok
                }
            })
        }
        Command::Get { url, task, history } => {
            let client = connect(cli, url).await?;
            let req = GetTaskRequest { tenant: String::new(), id: task.clone(), history_length: *history };
            let task = client.get_task(req).await?;
            out.task(&task);
            Ok(Exit::Ok)
        }
        Command::Cancel { url, task } => {
            let client = connect(cli, url).await?;
            let task = client
                .cancel_task(CancelTaskRequest { tenant: String::new(), id: task.clone(), metadata: None })
                .await?;
            out.task(&task);
            Ok(Exit::Ok)
        }
        Command::Subscribe { url, task } => {
            let client = connect(cli, url).await?;
            let events = client.subscribe_to_task(task).await?;
            follow(out, events).await
        }
        Command::List { url, context, status, page_size, page_token } => {
            let client = connect(cli, url).await?;
            let status = match status {
                Some(s) => parse_state(s).ok_or_else(|| Failure::Local(format!("unknown state {s:?}")))?,
                None => TaskState::Unspecified,
            };
            let req = ListTasksRequest {
                context_id: context.clone().unwrap_or_default(),
                status,
                page_size: *page_size,
                page_token: page_token.clone().unwrap_or_default(),
                ..Default::default()
            };
            out.tasks(&client.list_tasks(req).await?);
            Ok(Exit::Ok)
        }
        Command::Push(push) => push_command(cli, out, push).await,
        Command::Chat { url } => {
            let client = connect(cli, url).await?;
            chat::run(&client, out).await
        }
    }
}

async fn push_command(cli: &Cli, out: &Out, push: &PushCommand) -> Result<Exit, Failure> {
    match push {
        PushCommand::Create { url, task, webhook, id, notification_token } => {
            let client = connect(cli, url).await?;
            let config = TaskPushNotificationConfig {
                id: id.clone().unwrap_or_default(),
                task_id: task.clone(),
                url: webhook.clone(),
                token: notification_token.clone().unwrap_or_default(),
                ..Default::default()
            };
            out.push_config(&client.create_push_config(config).await?);
        }
        PushCommand::Get { url, task, id } => {
            let client = connect(cli, url).await?;
            let req =
                GetTaskPushNotificationConfigRequest { tenant: String::new(), task_id: task.clone(), id: id.clone() };
            out.push_config(&client.get_push_config(req).await?);
        }
        PushCommand::List { url, task } => {
            let client = connect(cli, url).await?;
            let req = ListTaskPushNotificationConfigsRequest { task_id: task.clone(), ..Default::default() };
            for config in client.list_push_configs(req).await?.configs {
                out.push_config(&config);
            }
        }
        PushCommand::Delete { url, task, id } => {
            let client = connect(cli, url).await?;
            let req =
                GetTaskPushNotificationConfigRequest { tenant: String::new(), task_id: task.clone(), id: id.clone() };
            client.delete_push_config(req).await?;
            out.note(&format!("deleted push config {id} of task {task}"));
        }
    }
    Ok(Exit::Ok)
}

/// Prints a stream's events as they arrive; the exit code follows the last state.
pub async fn follow(out: &Out, mut events: EventStream) -> Result<Exit, Failure> {
    let mut live = out.live();
    let mut exit = Exit::Ok;
    while let Some(event) = events.next().await {
        let event = event?;
        if let Some(state) = event.event.state() {
            exit = Exit::of_state(state);
        }
        live.event(&event);
    }
    live.finish();
    Ok(exit)
}

fn file_part(path: &PathBuf) -> Result<Part, Failure> {
    let bytes = std::fs::read(path).map_err(|e| Failure::Local(format!("{}: {e}", path.display())))?;
    let filename = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(Part::raw(bytes).with_filename(filename).with_media_type(media_type(path)))
}

fn media_type(path: &std::path::Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
        Some("txt" | "md") => "text/plain",
        Some("json") => "application/json",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("pdf") => "application/pdf",
        Some("csv") => "text/csv",
        _ => "application/octet-stream",
    }
}

/// `16M`, `512K`, `1G` (1024-based; a trailing `B` or `iB` is allowed) or plain bytes.
fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim().to_ascii_uppercase();
    let t = t.strip_suffix("IB").or_else(|| t.strip_suffix('B')).unwrap_or(&t);
    let (digits, unit) = match t.char_indices().last() {
        Some((i, 'K')) => (&t[..i], 1usize << 10),
        Some((i, 'M')) => (&t[..i], 1 << 20),
        Some((i, 'G')) => (&t[..i], 1 << 30),
        _ => (t, 1),
    };
    let n: usize = digits.trim().parse().map_err(|_| format!("{s:?} is not a size such as 16M, 512K or 1000000"))?;
    n.checked_mul(unit).filter(|n| *n > 0).ok_or_else(|| format!("{s:?} is not a usable size"))
}

/// `working`, `input-required`, `TASK_STATE_COMPLETED`, ... as a state.
fn parse_state(s: &str) -> Option<TaskState> {
    let wire = s.trim().to_ascii_uppercase().replace('-', "_");
    let wire = if wire.starts_with("TASK_STATE_") { wire } else { format!("TASK_STATE_{wire}") };
    serde_json::from_value(serde_json::Value::String(wire)).ok()
}

/// Bytes of a file part, decoded (raw parts travel base64-encoded in JSON).
pub fn decode_base64(text: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// Per table (`global`, `a2a card`, ...), each flag's (environment variable, default).
    type Tables = BTreeMap<String, BTreeMap<String, (Option<String>, Option<String>)>>;

    /// docs/configuration.md has a table per command with every flag of the command line, its
    /// variable and default exactly as clap defines them (global flags under `global`).
    #[test]
    fn the_configuration_page_lists_every_flag_as_defined() {
        use clap::CommandFactory;
        let page = include_str!("../../docs/configuration.md");
        let section = page.split("\n## a2a (the command line)\n").nth(1).and_then(|s| s.split("\n## ").next()).unwrap();
        let mut documented = Tables::new();
        for table in section.split("\n### ").skip(1) {
            let (name, rows) = table.split_once('\n').unwrap();
            for row in rows.lines().filter(|l| l.starts_with("| `--")) {
                let cells: Vec<&str> = row.split(" | ").map(|c| c.trim_matches(|c| c == '|' || c == ' ')).collect();
                let value = |c: &str| (c != "—").then(|| c.trim_matches('`').to_string());
                let flags = documented.entry(name.trim().to_string()).or_default();
                flags.insert(cells[0].trim_matches('`').to_string(), (value(cells[1]), value(cells[2])));
            }
        }
        let mut defined = Tables::new();
        let mut command = Cli::command();
        command.build(); // switches get their `false` default here
        collect(&command, "a2a", &mut defined);
        assert_eq!(documented, defined, "docs/configuration.md (left) against the flags (right)");
    }

    fn collect(command: &clap::Command, path: &str, tables: &mut Tables) {
        for arg in command.get_arguments() {
            let Some(long) = arg.get_long().filter(|l| !matches!(*l, "help" | "version")) else { continue };
            // Global flags are listed once, under `global`, not under every command they reach.
            if arg.is_global_set() && path != "a2a" {
                continue;
            }
            let table = if arg.is_global_set() { "global".to_string() } else { path.to_string() };
            let env = arg.get_env().map(|e| e.to_string_lossy().into_owned());
            let defaults: Vec<String> =
                arg.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect();
            let default = Some(defaults.join(",")).filter(|d| !d.is_empty());
            tables.entry(table).or_default().insert(format!("--{long}"), (env, default));
        }
        for sub in command.get_subcommands() {
            collect(sub, &format!("{path} {}", sub.get_name()), tables);
        }
    }

    #[test]
    fn sizes_read_with_units() {
        assert_eq!(parse_size("16M"), Ok(16 << 20));
        assert_eq!(parse_size("16MiB"), Ok(16 << 20));
        assert_eq!(parse_size("512k"), Ok(512 << 10));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("1000"), Ok(1000));
        assert!(parse_size("0").is_err() && parse_size("lots").is_err() && parse_size("-1M").is_err());
    }

    #[test]
    fn the_help_names_the_bounds_and_their_defaults() {
        use clap::CommandFactory;
        let help = Cli::command().render_long_help().to_string();
        for text in ["--max-answer-size", "[default: 16M]", "--max-time", "[default: 3600]", "--output-dir"] {
            assert!(help.contains(text), "{text} in {help}");
        }
        assert!(help.contains("on the card's own origin over HTTPS"), "{help}");
    }
}
