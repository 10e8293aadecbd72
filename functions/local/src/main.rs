//! `a2a-local`: serves every A2A route on one base URL from the embedded engine.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use a2a::adapters::aws::sqs::PollSettings;
use a2a::adapters::aws::AwsSettings;
use a2a::adapters::edge_publisher::EdgeSettings;
use a2a::adapters::sqlite::Durability;
use a2a::admission::{self, StoreLimits};
use a2a::auth::{self, DEFAULT_API_KEY_HEADER};
use a2a::card::{parse_card_file, read_card_file};
use a2a::embedded::{start, AwsOptions, Backend, EmbeddedConfig, SqliteBackend};
use a2a::engine::EngineConfig;
use a2a::executor::AgentChoice;
use a2a::http::Limits;
use a2a::server::{Server, ServerLimits};
use a2a::ssrf::AllowList;
use a2a::telemetry::{self, LogTarget, OtelSettings, Settings, Telemetry};
use a2a::webhook::RetryPolicy;
use clap::{Parser, ValueEnum};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum StoreKind {
    /// One SQLite file in --data-dir: tasks, streams' event logs, push configs and both queues, kept
    /// across restarts and crashes.
    Sqlite,
    /// Process memory: gone when the process stops (tests, benchmarks, throwaway runs).
    Memory,
    /// DynamoDB + SQS (TABLE_NAME, TASK_QUEUE_URL, PUSH_QUEUE_URL and the AWS_* variables).
    Aws,
}

/// What a commit of the SQLite store waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DurabilityKind {
    /// Written to the operating system: a crash or kill of the process loses nothing acknowledged.
    Process,
    /// Also synced to the disk: a power cut loses nothing acknowledged either (slower commits).
    Power,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Switch {
    On,
    Off,
}

/// A host's container contract, met with one flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Preset {
    /// Amazon Bedrock AgentCore Runtime (docs/agentcore.md): listens on 0.0.0.0:9000, names the
    /// runtime's URL (AGENTCORE_RUNTIME_URL) in the card, answers the runtime's health check at /ping.
    Agentcore,
}

impl Preset {
    /// Where the host expects the server.
    fn addr(self) -> SocketAddr {
        match self {
            Self::Agentcore => SocketAddr::from(([0, 0, 0, 0], 9000)),
        }
    }

    /// The public URL the host's environment gives.
    fn public_url(self) -> Option<String> {
        match self {
            Self::Agentcore => std::env::var("AGENTCORE_RUNTIME_URL").ok().filter(|u| !u.trim().is_empty()),
        }
    }
}

/// Where a2a-local listens unless a preset or --addr says otherwise.
const DEFAULT_ADDR: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 8080);

#[derive(Debug, Clone, Copy, ValueEnum)]
enum LogFormat {
    Human,
    Json,
}

/// Run an A2A agent locally: JSON-RPC and HTTP+JSON on one base URL, SSE streams, the agent card.
#[derive(Debug, Parser)]
#[command(version, about, group(clap::ArgGroup::new("signing_keys").multiple(true)))]
struct Args {
    /// Address to listen on [default: 127.0.0.1:8080; 0.0.0.0:9000 with --preset agentcore].
    #[arg(long, env = "A2A_ADDR")]
    addr: Option<SocketAddr>,
    /// Meet a host's container contract: `agentcore` (Amazon Bedrock AgentCore Runtime).
    #[arg(long, env = "A2A_PRESET", value_enum)]
    preset: Option<Preset>,
    /// Where tasks and queued work live: one SQLite file in --data-dir (kept across restarts), process
    /// memory, or DynamoDB with SQS queues. `--backend` is the same flag.
    #[arg(long, alias = "backend", env = "A2A_STORE", value_enum, default_value = "sqlite")]
    store: StoreKind,
    /// With --store sqlite: the directory of the data file (created if missing; one process at a time).
    #[arg(long, env = "A2A_DATA_DIR", default_value = "a2a-data")]
    data_dir: PathBuf,
    /// With --store sqlite: what a commit waits for before a request is answered.
    #[arg(long, env = "A2A_DURABILITY", value_enum, default_value = "process")]
    durability: DurabilityKind,
    /// With --store sqlite: seconds a finished task is kept (by its status time); 0 keeps it until
    /// the limits make it give way.
    #[arg(long, env = "A2A_TASK_RETENTION", default_value_t = 0)]
    task_retention: u64,
    /// With --store sqlite: the most bytes the data file may grow to; past it changes are refused
    /// (503) as on a full disk. 0: the disk is the limit.
    #[arg(long, env = "A2A_MAX_FILE_BYTES", default_value_t = 0)]
    max_file_bytes: u64,
    /// With --store aws: create the table, its indexes and the queues (with DLQs) if missing.
    #[arg(long, env = "A2A_CREATE_RESOURCES")]
    create_resources: bool,
    /// With --store aws: create the resources, print their environment (TABLE_NAME=...,
    /// TASK_QUEUE_URL=..., PUSH_QUEUE_URL=...) and exit without serving.
    #[arg(long)]
    create_resources_only: bool,
    /// The agent to run: `agent` (the `agent` crate's; the default), `echo`, `conformance`, or
    /// `http` (an agent in any language, at --agent-url; implied by --agent-url).
    #[arg(long, env = "A2A_AGENT")]
    agent: Option<String>,
    /// URL of an agent in any language (docs/agent-http.md); AGENT_TOKEN, AGENT_AUTH and
    /// AGENT_IDLE_TIMEOUT configure the calls.
    #[arg(long, env = "AGENT_URL")]
    agent_url: Option<String>,
    /// An existing A2A agent to run every turn on (the gateway; docs/writing-an-agent.md); AGENT_A2A_API_KEY,
    /// AGENT_A2A_TOKEN or AGENT_A2A_CLIENT_ID/SECRET authenticate to it.
    #[arg(long, env = "AGENT_A2A_URL")]
    agent_a2a: Option<String>,
    /// Agent card file (JSON, any subset of an AgentCard; the rest has defaults). Default: the
    /// `agent` crate's card.json.
    #[arg(long, env = "A2A_CARD")]
    card: Option<PathBuf>,
    /// Extended agent card file, served to authenticated clients by GetExtendedAgentCard.
    #[arg(long, env = "A2A_EXTENDED_CARD")]
    extended_card: Option<PathBuf>,
    /// Also serve the gRPC binding (lf.a2a.v1.A2AService, health, reflection) here; the card then
    /// declares it.
    #[arg(long, env = "A2A_GRPC_ADDR")]
    grpc_addr: Option<SocketAddr>,
    /// The gRPC address the card declares, `host:port` (default: the bound --grpc-addr), e.g. a
    /// load balancer's in front of a container.
    #[arg(long, env = "A2A_GRPC_PUBLIC_ADDR", requires = "grpc_addr", value_parser = host_port)]
    grpc_public_addr: Option<String>,
    /// Sign the served card (and the extended card) with this private key: `[KID=]PATH` to a PEM
    /// file (P-256 → ES256, RSA → RS256, Ed25519 → EdDSA; kid default: the key's JWK thumbprint).
    /// Repeat (or separate with commas) to sign with several keys while rotating; all are published
    /// at /.well-known/jwks.json.
    #[arg(long, env = "A2A_CARD_SIGNING_KEYS", value_delimiter = ',', group = "signing_keys")]
    card_signing_key: Vec<String>,
    /// Sign with a key held in AWS KMS: `[KID=]KEY_ID` (key id, ARN or alias/NAME; ECC_NIST_P256 →
    /// ES256, RSA → RS256). The private key stays in KMS (kms:Sign, kms:GetPublicKey). Repeatable;
    /// used after the --card-signing-key keys.
    #[arg(long, env = "A2A_CARD_SIGNING_KMS", value_delimiter = ',', group = "signing_keys")]
    card_signing_kms: Vec<String>,
    /// The `jku` the signatures name (default: <public URL>/.well-known/jwks.json).
    #[arg(long, env = "A2A_CARD_JKU", requires = "signing_keys")]
    card_jku: Option<String>,
    /// Public base URL clients use (default: the preset's, else http://<addr>).
    #[arg(long, env = "A2A_PUBLIC_URL")]
    public_url: Option<String>,
    #[command(flatten)]
    auth: AuthArgs,
    /// Longest wait of a blocking SendMessage, in seconds.
    #[arg(long, env = "A2A_BLOCKING_TIMEOUT", default_value_t = 60)]
    blocking_timeout: u64,
    /// Largest request body, in bytes.
    #[arg(long, env = "A2A_MAX_BODY", default_value_t = 10 * 1024 * 1024)]
    max_body: usize,
    /// Most tasks the store keeps (sqlite, memory); past it the oldest finished tasks are evicted.
    #[arg(long, env = "A2A_MAX_TASKS", default_value_t = admission::DEFAULT_MAX_TASKS)]
    max_tasks: usize,
    /// Most bytes the store holds (sqlite, memory: tasks, events, configs); past it the oldest
    /// finished tasks are evicted, and work that still does not fit is refused (503).
    #[arg(long, env = "A2A_MAX_BYTES", default_value_t = admission::DEFAULT_MAX_BYTES)]
    max_bytes: usize,
    /// Seconds an interrupted task (INPUT_REQUIRED / AUTH_REQUIRED) may sit idle before it expires.
    #[arg(long, env = "A2A_IDLE_TASK_TTL", default_value_t = admission::DEFAULT_IDLE_TTL.as_secs())]
    idle_task_ttl: u64,
    /// Percent of --max-tasks and of --max-bytes one principal's unfinished tasks may hold; past it
    /// its own oldest interrupted task expires, or its new task is refused.
    #[arg(long, env = "A2A_PRINCIPAL_SHARE", default_value_t = admission::DEFAULT_PRINCIPAL_SHARE,
          value_parser = clap::value_parser!(u8).range(1..=100))]
    principal_share: u8,
    /// Percent of a principal's task share its interrupted tasks may hold; past it its oldest
    /// interrupted task expires.
    #[arg(long, env = "A2A_WAITING_SHARE", default_value_t = admission::DEFAULT_WAITING_SHARE,
          value_parser = clap::value_parser!(u8).range(1..=100))]
    waiting_share: u8,
    /// Private networks webhooks may reach anyway, and host names accepted at registration without
    /// resolving them, as `cidr,name,...` (e.g. 127.0.0.1/32 for local receivers).
    #[arg(long, env = "A2A_WEBHOOK_ALLOW", default_value = "")]
    webhook_allow: String,
    /// The playground at /playground: a page to talk to this agent or any A2A agent, with a relay
    /// (public and loopback addresses only) and webhook catchers (docs/playground.md). Turn it off
    /// on a host the public reaches without authentication.
    #[arg(long, env = "A2A_PLAYGROUND", value_enum, default_value = "on")]
    playground: Switch,
    /// Delivery attempts per notification before it is dead-lettered.
    #[arg(long, env = "A2A_PUSH_MAX_ATTEMPTS", default_value_t = 6)]
    push_max_attempts: u32,
    /// Webhook request timeout, in seconds.
    #[arg(long, env = "A2A_PUSH_TIMEOUT", default_value_t = 10)]
    push_timeout: u64,
    /// Most webhook deliveries held at once (queued, waiting to retry or in flight); past it the
    /// newest are dead-lettered, so receivers slower than the events cost bounded memory.
    #[arg(long, env = "A2A_PUSH_BACKLOG", default_value_t = a2a::push::DEFAULT_PUSH_BACKLOG)]
    push_backlog: usize,
    /// Edge worker base URL: every task event is also published there (signed with
    /// --edge-publish-secret), so the worker's Durable Objects can serve the streams.
    #[arg(long, env = "A2A_EDGE_URL", requires = "edge_publish_secret")]
    edge_url: Option<String>,
    /// Shared secret of the edge publish endpoint (the worker's PUBLISH_SECRET).
    #[arg(long, env = "A2A_EDGE_PUBLISH_SECRET", hide_env_values = true)]
    edge_publish_secret: Option<String>,
    /// Concurrent connections; past it new ones get a 503 and are closed.
    #[arg(long, env = "A2A_MAX_CONNECTIONS", default_value_t = 1024)]
    max_connections: usize,
    /// Seconds to receive a request's headers (also the idle time of a keep-alive connection).
    #[arg(long, env = "A2A_HEADER_TIMEOUT", default_value_t = 10)]
    header_timeout: u64,
    /// Seconds to receive a whole request body.
    #[arg(long, env = "A2A_BODY_TIMEOUT", default_value_t = 30)]
    body_timeout: u64,
    /// Seconds a write to a client may wait before the client (not reading) is dropped.
    #[arg(long, env = "A2A_WRITE_TIMEOUT", default_value_t = 30)]
    write_timeout: u64,
    /// Bytes of request bodies buffered at once, both listeners together; past it a request waits
    /// up to 10 s for room, then gets a 503.
    #[arg(long, env = "A2A_MAX_REQUEST_BYTES", default_value_t = Limits::default().request_bytes)]
    max_request_bytes: usize,
    /// Bytes of encoded answers (results and stream events of 64 KiB or more) held at once until
    /// written; past it an answer waits up to 10 s for room, then gets a 503.
    #[arg(long, env = "A2A_MAX_ANSWER_BYTES", default_value_t = Limits::default().answer_bytes)]
    max_answer_bytes: usize,
    /// Bytes after which a ListTasks page stops (with a next page token).
    #[arg(long, env = "A2A_LIST_PAGE_BYTES", default_value_t = a2a::engine::DEFAULT_LIST_PAGE_BYTES)]
    list_page_bytes: usize,
    /// Concurrent streams one gRPC (HTTP/2) connection may open.
    #[arg(long, env = "A2A_GRPC_MAX_STREAMS", default_value_t = a2a::server::DEFAULT_MAX_STREAMS)]
    grpc_max_streams: u32,
    #[arg(long, env = "A2A_LOG_FORMAT", value_enum, default_value = "human")]
    log_format: LogFormat,
    #[command(flatten)]
    otel: OtelArgs,
}

/// Traces (docs/observability.md): off unless a collector is named. The standard `OTEL_*`
/// variables also apply (`OTEL_TRACES_SAMPLER`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_SDK_DISABLED`, ...).
#[derive(Debug, clap::Args)]
struct OtelArgs {
    /// OTLP collector base URL; traces are exported when set (`/v1/traces` is appended over HTTP).
    #[arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    otlp_endpoint: Option<String>,
    /// OTLP protocol: `http/protobuf` (the default) or `grpc`.
    #[arg(long, env = "OTEL_EXPORTER_OTLP_PROTOCOL")]
    otlp_protocol: Option<String>,
    /// The service name spans are exported under (default `a2a-local`).
    #[arg(long, env = "OTEL_SERVICE_NAME")]
    service_name: Option<String>,
    /// Share of new traces kept, 0 to 1 (a caller's sampled flag is followed); default: every trace,
    /// or what `OTEL_TRACES_SAMPLER` says.
    #[arg(long)]
    trace_sample_ratio: Option<f64>,
}

impl OtelArgs {
    fn settings(&self) -> OtelSettings {
        // An empty flag or variable counts as unset (OTel's rule).
        let given = |v: &Option<String>| v.clone().filter(|v| !v.trim().is_empty());
        let mut otel = OtelSettings::from_env();
        otel.endpoint = given(&self.otlp_endpoint);
        otel.protocol = given(&self.otlp_protocol).or(otel.protocol);
        otel.service_name = given(&self.service_name).or(otel.service_name);
        otel.sample_ratio = self.trace_sample_ratio;
        otel
    }
}

/// Authentication: API keys and/or OAuth 2.0 bearer tokens (docs/authentication.md).
#[derive(Debug, clap::Args)]
struct AuthArgs {
    /// API keys as `principal:key,...`; enables API-key authentication.
    #[arg(long, env = "A2A_API_KEYS", hide_env_values = true)]
    api_keys: Option<String>,
    /// Header that carries the API key.
    #[arg(long, env = "A2A_API_KEY_HEADER", default_value = DEFAULT_API_KEY_HEADER)]
    api_key_header: String,
    /// OpenID provider whose bearer tokens (JWT access tokens) are accepted: the `iss` they carry;
    /// keys by OpenID discovery unless --oidc-jwks-url is given.
    #[arg(long, env = "OIDC_ISSUER")]
    oidc_issuer: Option<String>,
    /// The issuer's JWKS URL (skips discovery).
    #[arg(long, env = "OIDC_JWKS_URL", requires = "oidc_issuer")]
    oidc_jwks_url: Option<String>,
    /// Audiences a token must name one of (`aud`), comma-separated.
    #[arg(long, env = "OIDC_AUDIENCES", requires = "oidc_issuer")]
    oidc_audiences: Option<String>,
    /// Clients allowed (`azp` / `client_id`), comma-separated; with no audience, required.
    #[arg(long, env = "OIDC_CLIENT_IDS", requires = "oidc_issuer")]
    oidc_client_ids: Option<String>,
    /// Scopes every request's token needs, space- or comma-separated.
    #[arg(long, env = "OIDC_REQUIRED_SCOPES", requires = "oidc_issuer")]
    oidc_required_scopes: Option<String>,
    /// The claim that names the principal (default `sub`).
    #[arg(long, env = "OIDC_PRINCIPAL_CLAIM", requires = "oidc_issuer")]
    oidc_principal_claim: Option<String>,
    /// The provider's token endpoint, declared in the card's OAuth 2.0 client-credentials flow.
    #[arg(long, env = "OIDC_TOKEN_URL", requires = "oidc_issuer")]
    oidc_token_url: Option<String>,
    /// Clock skew tolerated on a token's `exp`, `nbf` and `iat`, in seconds.
    #[arg(long, env = "OIDC_LEEWAY_SECONDS", default_value_t = 60, requires = "oidc_issuer")]
    oidc_leeway_secs: u64,
    /// A proxy in front verified the bearer token and forwards it (AgentCore Runtime's JWT
    /// authorizer): take the principal from its claims without checking its signature again. Only
    /// where nothing else reaches the port [default: on with --preset agentcore, else off].
    #[arg(long, env = "OIDC_VERIFIED_BY_PROXY", value_enum, requires = "oidc_issuer")]
    oidc_verified_by_proxy: Option<Switch>,
    /// Scopes per operation: `OP=scope scope,OP=scope`, OP a 1.0 method name (SendMessage, ...),
    /// `push` (the four push-config operations) or `*`.
    #[arg(long, env = "A2A_OPERATION_SCOPES", requires = "oidc_issuer")]
    operation_scopes: Option<String>,
    /// Scopes the card declares per skill: `skill=scope scope,...`.
    #[arg(long, env = "A2A_SKILL_SCOPES", requires = "oidc_issuer")]
    skill_scopes: Option<String>,
}

impl AuthArgs {
    fn settings(&self, preset: Option<Preset>) -> auth::AuthSettings {
        let by_proxy = self.oidc_verified_by_proxy.unwrap_or(match preset {
            Some(Preset::Agentcore) => Switch::On,
            None => Switch::Off,
        });
        auth::AuthSettings {
            api_keys: self.api_keys.clone(),
            api_key_header: Some(self.api_key_header.clone()),
            oidc: self.oidc_issuer.clone().map(|issuer| auth::OidcSettings {
                issuer,
                jwks_url: self.oidc_jwks_url.clone(),
                audiences: self.oidc_audiences.clone(),
                client_ids: self.oidc_client_ids.clone(),
                required_scopes: self.oidc_required_scopes.clone(),
                principal_claim: self.oidc_principal_claim.clone(),
                token_url: self.oidc_token_url.clone(),
                leeway_secs: Some(self.oidc_leeway_secs),
                verified_by: match by_proxy {
                    Switch::On => auth::VerifiedBy::Proxy,
                    Switch::Off => auth::VerifiedBy::Server,
                },
            }),
            operation_scopes: self.operation_scopes.clone(),
            skill_scopes: self.skill_scopes.clone(),
        }
    }
}

fn main() -> Result<(), String> {
    let args = Args::parse();
    let telemetry = Telemetry::init(Settings {
        format: match args.log_format {
            LogFormat::Human => telemetry::LogFormat::Human,
            LogFormat::Json => telemetry::LogFormat::Json,
        },
        target: LogTarget::Stderr,
        timestamps: true,
        service: "a2a-local".into(),
        otel: args.otel.settings(),
        emf: None,
    })?;
    let served = serve(args);
    // Spans still buffered leave before the process does.
    telemetry.shutdown();
    served
}

fn serve(args: Args) -> Result<(), String> {
    let read = |p: &PathBuf| read_card_file(&p.to_string_lossy()).map_err(|e| e.message);
    let card = match &args.card {
        Some(path) => read(path)?,
        None => parse_card_file(agent::CARD).map_err(|e| format!("agent/card.json: {}", e.message))?,
    };
    let choice =
        AgentChoice::with_upstream(args.agent.as_deref(), args.agent_url.as_deref(), args.agent_a2a.as_deref())
            .map_err(|e| e.message)?;
    let extended_card = args.extended_card.as_ref().map(read).transpose()?;
    let auth = args.auth.settings(args.preset).build().map_err(|e| e.message)?;
    let webhook_allow = AllowList::parse(&args.webhook_allow).map_err(|e| e.message)?;
    let playground_allow = webhook_allow.clone();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string())?;
    if args.create_resources_only {
        return runtime.block_on(print_resources(args.push_max_attempts.max(1)));
    }
    runtime.block_on(async move {
        let addr = args.addr.or(args.preset.map(Preset::addr)).unwrap_or(DEFAULT_ADDR);
        let listener = a2a::server::bind(addr).await.map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        let bound = listener.local_addr().map_err(|e| e.to_string())?;
        let grpc = match args.grpc_addr {
            Some(addr) => {
                let listener =
                    tokio::net::TcpListener::bind(addr).await.map_err(|e| format!("cannot listen on {addr}: {e}"))?;
                let bound = listener.local_addr().map_err(|e| e.to_string())?;
                Some((listener, bound))
            }
            None => None,
        };
        let choice_name = format!("{choice:?}");
        let executor = agent::executor(choice).await.map_err(|e| e.message)?;
        let backend = match args.store {
            StoreKind::Sqlite => Backend::Sqlite(SqliteBackend {
                data_dir: args.data_dir.clone(),
                durability: match args.durability {
                    DurabilityKind::Process => Durability::Process,
                    DurabilityKind::Power => Durability::Power,
                },
                retention: (args.task_retention > 0).then(|| Duration::from_secs(args.task_retention)),
                max_file_bytes: (args.max_file_bytes > 0).then_some(args.max_file_bytes),
            }),
            StoreKind::Memory => Backend::Memory,
            StoreKind::Aws => Backend::Aws(AwsOptions {
                settings: AwsSettings { push_max_attempts: args.push_max_attempts.max(1), ..AwsSettings::from_env() },
                create_resources: args.create_resources,
                poll: PollSettings::from_env(),
            }),
        };
        let edge =
            args.edge_url.as_deref().zip(args.edge_publish_secret.as_deref()).map(|(u, s)| EdgeSettings::new(u, s));
        let public_url = args
            .public_url
            .clone()
            .or_else(|| args.preset.and_then(Preset::public_url))
            .unwrap_or_else(|| format!("http://{bound}"));
        let embedded = start(EmbeddedConfig {
            public_url: public_url.clone(),
            card,
            extended_card,
            executor,
            auth,
            engine: EngineConfig {
                blocking_timeout: Duration::from_secs(args.blocking_timeout),
                list_page_bytes: args.list_page_bytes.max(1),
                ..EngineConfig::default()
            },
            limits: Limits {
                max_body: args.max_body,
                answer_bytes: args.max_answer_bytes,
                request_bytes: args.max_request_bytes,
                ..Limits::default()
            },
            backend,
            store_limits: StoreLimits {
                max_tasks: args.max_tasks,
                max_bytes: args.max_bytes,
                idle_ttl: Duration::from_secs(args.idle_task_ttl),
                principal_share: args.principal_share,
                waiting_share: args.waiting_share,
            },
            webhook_allow,
            push_retry: RetryPolicy { max_attempts: args.push_max_attempts.max(1), ..RetryPolicy::default() },
            push_timeout: Duration::from_secs(args.push_timeout),
            push_backlog: args.push_backlog,
            edge,
            grpc_address: grpc
                .as_ref()
                .map(|(_, addr)| args.grpc_public_addr.clone().unwrap_or_else(|| addr.to_string())),
            card_signing: card_signing(&args.card_signing_key, &args.card_signing_kms, args.card_jku.clone()).await?,
        })
        .await
        .map_err(|e| e.message)?;
        tracing::info!(addr = %bound, agent = ?choice_name, "a2a-local listening");
        let limits = ServerLimits {
            max_connections: args.max_connections,
            header_timeout: Duration::from_secs(args.header_timeout.max(1)),
            body_timeout: Duration::from_secs(args.body_timeout.max(1)),
            write_timeout: Duration::from_secs(args.write_timeout.max(1)),
            grace: Duration::from_secs(5),
            max_streams: args.grpc_max_streams.max(1),
        };
        let mut routes: Vec<std::sync::Arc<dyn a2a::routes::Routes>> = Vec::new();
        if args.playground == Switch::On {
            let token_urls = a2a::playground::token::token_urls(&embedded.engine.card.card);
            let settings =
                a2a::playground::Settings { public_url, allow: playground_allow, token_urls, catchers: true };
            let playground = a2a::playground::Playground::new(settings).map_err(|e| e.message)?;
            tracing::info!(url = %playground.url(), "playground");
            routes.push(std::sync::Arc::new(playground));
        }
        if args.preset == Some(Preset::Agentcore) {
            tracing::info!(path = a2a::agentcore::PING_PATH, "AgentCore Runtime's health check");
            routes.push(std::sync::Arc::new(a2a::agentcore::Ping::new(embedded.runner.clone())));
        }
        let routes = (!routes.is_empty())
            .then(|| std::sync::Arc::new(a2a::routes::RouteSets(routes)) as std::sync::Arc<dyn a2a::routes::Routes>);
        // One server for both listeners: one connection cap, one budget of request bytes.
        let server = Server::with_routes(embedded.service, limits, routes);
        if let Some((listener, addr)) = grpc {
            tracing::info!(%addr, "gRPC listening");
            let server = server.clone();
            tokio::spawn(async move {
                if let Err(e) = a2a::grpc::listener::serve(server, listener, a2a::server::shutdown_signal()).await {
                    tracing::error!("{e}");
                }
            });
        }
        server.serve_http(listener, a2a::server::shutdown_signal()).await.map_err(|e| e.to_string())
    })
}

/// Creates the AWS resources a2a-local --store aws (and the Lambda functions) use and prints them.
async fn print_resources(push_attempts: u32) -> Result<(), String> {
    use a2a::adapters::aws::{resources, sdk_config};
    let settings = AwsSettings::from_env();
    let sdk = sdk_config().await;
    let err = |e: a2a::A2aError| e.message;
    resources::ensure_table(&aws_sdk_dynamodb::Client::new(&sdk), &settings.table_name, settings.ttl_seconds.is_some())
        .await
        .map_err(err)?;
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    let visibility = PollSettings::default().visibility;
    let (task, _) = resources::ensure_fifo_queue(&sqs, &format!("{}-work", settings.table_name), visibility, 5)
        .await
        .map_err(err)?;
    let (push, _) = resources::ensure_fifo_queue(
        &sqs,
        &format!("{}-push", settings.table_name),
        Duration::from_secs(30),
        push_attempts,
    )
    .await
    .map_err(err)?;
    let table = settings.table_name;
    #[allow(clippy::print_stdout)]
    {
        println!("TABLE_NAME={table}\nTASK_QUEUE_URL={task}\nPUSH_QUEUE_URL={push}");
    }
    Ok(())
}

/// `host:port` as the card declares a gRPC interface (no scheme, a numeric port).
fn host_port(value: &str) -> Result<String, String> {
    let valid = !value.contains("://")
        && value.rsplit_once(':').is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
    if valid {
        Ok(value.to_string())
    } else {
        Err(format!("{value:?} is not host:port (e.g. a2a.example.com:443)"))
    }
}

/// The card's signing keys: PEM files from `[KID=]PATH` arguments, then KMS keys from
/// `[KID=]KEY_ID` arguments.
async fn card_signing(
    keys: &[String],
    kms: &[String],
    jku: Option<String>,
) -> Result<a2a::signing::CardSigning, String> {
    let mut signers: Vec<std::sync::Arc<dyn a2a::signing::Signer>> = Vec::new();
    for arg in keys.iter().map(|k| k.trim()).filter(|k| !k.is_empty()) {
        let (kid, path) = a2a::signing::kid_and_value(arg);
        let pem = std::fs::read_to_string(path).map_err(|e| format!("--card-signing-key {path}: {e}"))?;
        let key = a2a::signing::PemKey::from_pem(&pem, kid).map_err(|e| format!("--card-signing-key {path}: {e}"))?;
        tracing::info!(
            kid = a2a::signing::Signer::kid(&key),
            alg = a2a::signing::Signer::alg(&key),
            "card signing key"
        );
        signers.push(std::sync::Arc::new(key));
    }
    if !kms.is_empty() {
        let sdk = a2a::adapters::aws::sdk_config().await;
        let loaded = a2a::adapters::aws::kms::load_all(&sdk, kms).await;
        signers.extend(loaded.map_err(|e| format!("--card-signing-kms: {e}"))?);
    }
    Ok(a2a::signing::CardSigning { signers, jku })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use clap::CommandFactory;

    /// (environment variable, default) of each flag, `None` for none (`—` on the page).
    type Flags = BTreeMap<String, (Option<String>, Option<String>)>;

    /// docs/configuration.md lists every flag of a2a-local with its variable and default exactly
    /// as clap defines them: a flag added, renamed or changed without the page fails here.
    #[test]
    fn the_configuration_page_lists_every_flag_as_defined() {
        let page = include_str!("../../../docs/configuration.md");
        let section = page.split("\n## a2a-local\n").nth(1).and_then(|s| s.split("\n## ").next()).unwrap();
        let mut documented = Flags::new();
        for row in section.lines().filter(|l| l.starts_with("| `--")) {
            let cells: Vec<&str> = row.split(" | ").map(|c| c.trim_matches(|c| c == '|' || c == ' ')).collect();
            let value = |c: &str| (c != "—").then(|| c.trim_matches('`').to_string());
            let flag = cells[0].trim_matches('`').to_string();
            assert!(documented.insert(flag.clone(), (value(cells[1]), value(cells[2]))).is_none(), "{flag} twice");
        }
        let mut defined = Flags::new();
        let mut command = super::Args::command();
        command.build(); // switches get their `false` default here
        for arg in command.get_arguments() {
            let Some(long) = arg.get_long().filter(|l| !matches!(*l, "help" | "version")) else { continue };
            let env = arg.get_env().map(|e| e.to_string_lossy().into_owned());
            let defaults: Vec<String> =
                arg.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect();
            let default = Some(defaults.join(",")).filter(|d| !d.is_empty());
            defined.insert(format!("--{long}"), (env, default));
        }
        assert_eq!(documented, defined, "docs/configuration.md (left) against the flags (right)");
    }
}
