//! Lambda glue (feature `lambda`): what every function's `main` calls. [`Deps::from_env`] builds the
//! engine on DynamoDB and SQS once per container; [`http`] serves API Gateway (HTTP API, v2) and
//! Function URL events, buffered or with response streaming; [`sqs`] handles the work and push
//! queue batches with partial batch failures.

pub mod http;
#[cfg(feature = "playground")]
pub mod playground;
pub mod sqs;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::sqs::{SqsPushQueue, SqsWorkQueue};
use crate::{sdk_config, AwsSettings, DynamoStore};
use a2a_engine::auth;
use a2a_engine::card::{read_card_file, CardService, ServerAbilities};
use a2a_engine::engine::{Engine, EngineConfig, EnginePorts};
use a2a_engine::executor::AgentExecutor;
use a2a_engine::memory::{MemoryHub, SystemClock};
use a2a_engine::page_token::PageTokens;
use a2a_engine::poll_hub::PollingHub;
use a2a_engine::ports::{Clock, Job, PushJob, PushQueue, StreamHub, WorkQueue};
use a2a_engine::push::{Deliverer, DnsPolicy};
use a2a_engine::runner::Runner;
use a2a_engine::ssrf::AllowList;
use a2a_engine::webhook::RetryPolicy;
use a2a_http::service::{Limits, Service};
use a2a_protocol::error::{A2aError, Result};

/// The function's subscriber, flushed at the end of every invocation.
static TELEMETRY: std::sync::OnceLock<a2a_telemetry::Telemetry> = std::sync::OnceLock::new();

/// JSON logs to stdout (CloudWatch), level from `RUST_LOG` (default info), no ANSI colours; traces
/// exported when the `OTEL_*` variables name a collector (docs/observability.md), under the
/// function's name unless `OTEL_SERVICE_NAME` gives one.
pub fn init_tracing() {
    use a2a_telemetry::{EmfSettings, LogFormat, LogTarget, OtelSettings, Settings, Telemetry};
    let service = env("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_else(|| "a2a-lambda".into());
    let settings = Settings {
        format: LogFormat::Json,
        target: LogTarget::Stdout,
        timestamps: false,
        emf: EmfSettings::from_env(&service),
        service,
        otel: OtelSettings::from_env(),
    };
    match Telemetry::init(settings) {
        Ok(telemetry) => {
            let _ = TELEMETRY.set(telemetry);
        }
        // Start-up: a function that cannot log or trace as configured says so and stops.
        Err(e) => panic!("{e}"),
    }
}

/// Sends the invocation's spans and metrics before it ends (a frozen container exports nothing):
/// EMF lines are written, OTLP exports run on the exporter's own thread, waited for off the
/// runtime's threads.
pub async fn flush_telemetry() {
    match TELEMETRY.get() {
        Some(t) if t.is_tracing() => {
            let _ = tokio::task::spawn_blocking(|| TELEMETRY.get().map(a2a_telemetry::Telemetry::flush)).await;
        }
        Some(t) => t.flush(),
        None => {}
    }
}

/// Everything a function needs, built once per container.
pub struct Deps {
    pub engine: Arc<Engine>,
    pub service: Arc<Service>,
    pub store: Arc<DynamoStore>,
    /// Present in the task runner (the function that runs the agent).
    pub runner: Option<Arc<Runner>>,
    pub sqs: aws_sdk_sqs::Client,
    pub task_queue_url: Option<String>,
    pub push_queue_url: Option<String>,
    pub deliverer: Arc<Deliverer>,
    pub retry: RetryPolicy,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Stands in for a queue a function was not given: using it is a configuration error.
struct Unconfigured(&'static str);

#[async_trait]
impl WorkQueue for Unconfigured {
    async fn enqueue(&self, _: Job) -> Result<()> {
        Err(A2aError::internal(format!("{} is not configured for this function", self.0)))
    }
}

#[async_trait]
impl PushQueue for Unconfigured {
    async fn enqueue(&self, _: PushJob, _: Duration) -> Result<()> {
        Err(A2aError::internal(format!("{} is not configured for this function", self.0)))
    }
}

/// A function's configuration; [`LambdaSettings::from_env`] reads it from the environment.
#[derive(Debug, Clone)]
pub struct LambdaSettings {
    pub aws: AwsSettings,
    /// The agent's public base URL (the card's interfaces).
    pub public_url: String,
    pub card: a2a_protocol::types::AgentCard,
    pub extended_card: Option<a2a_protocol::types::AgentCard>,
    /// API keys and/or bearer tokens; anonymous when none is set.
    pub auth: auth::AuthSettings,
    pub webhook_allow: AllowList,
    /// Longest wait of a blocking SendMessage (under API Gateway's 29 s).
    pub blocking_timeout: Duration,
    pub push_timeout: Duration,
    /// Publish every event to this edge worker too (`EDGE_URL` + `EDGE_PUBLISH_SECRET`).
    pub edge: Option<a2a_edge::publisher::EdgeSettings>,
    /// Keys that sign the cards and the push notifications (`CARD_SIGNING_KEYS_PEM`, `CARD_JKU`).
    pub card_signing: a2a_signing::CardSigning,
    /// Signing keys held in KMS, `[KID=]KEY_ID` (`CARD_SIGNING_KMS_KEY_IDS`, comma-separated),
    /// loaded by [`Deps::new`] after the PEM keys.
    pub card_signing_kms: Vec<String>,
}

impl LambdaSettings {
    /// `default_card`: the card file used when neither `A2A_CARD_JSON` nor `A2A_CARD` is set. Reads
    /// `TABLE_NAME`, `TASK_QUEUE_URL`, `PUSH_QUEUE_URL`, `PAGE_TOKEN_SECRET`,
    /// `PUSH_MAX_ATTEMPTS`, `TASK_TTL_SECONDS` (see [`AwsSettings`]); `A2A_PUBLIC_URL`, `A2A_CARD`
    /// (a file) or `A2A_CARD_JSON`, `A2A_EXTENDED_CARD` or `A2A_EXTENDED_CARD_JSON`, the
    /// authentication variables of [`auth::AuthSettings::from_vars`], `WEBHOOK_ALLOW`, `BLOCKING_TIMEOUT_SECS` (25), `PUSH_TIMEOUT_SECS` (10),
    /// `EDGE_URL` with `EDGE_PUBLISH_SECRET`, `CARD_SIGNING_KEYS_PEM` (PEM private keys),
    /// `CARD_SIGNING_KMS_KEY_IDS`, `CARD_JKU`.
    pub fn from_env(default_card: &str) -> Result<Self> {
        let card_from = |json: &str, path: &str| -> Result<Option<a2a_protocol::types::AgentCard>> {
            match (env(json), env(path)) {
                (Some(j), _) => a2a_engine::card::parse_card_file(&j).map(Some),
                (None, Some(p)) => read_card_file(&p).map(Some),
                (None, None) => Ok(None),
            }
        };
        let secs =
            |name: &str, default: u64| Duration::from_secs(env(name).and_then(|v| v.parse().ok()).unwrap_or(default));
        Ok(Self {
            aws: AwsSettings::from_env(),
            public_url: env("A2A_PUBLIC_URL").unwrap_or_else(|| "http://localhost".into()),
            card: match card_from("A2A_CARD_JSON", "A2A_CARD")? {
                Some(card) => card,
                None => a2a_engine::card::parse_card_file(default_card)?,
            },
            extended_card: card_from("A2A_EXTENDED_CARD_JSON", "A2A_EXTENDED_CARD")?,
            auth: auth::AuthSettings::from_vars(env),
            card_signing: match env("CARD_SIGNING_KEYS_PEM") {
                Some(pem) => a2a_signing::CardSigning::from_pem_blocks(&pem, env("CARD_JKU"))
                    .map_err(|e| A2aError::invalid_params(format!("CARD_SIGNING_KEYS_PEM: {e}")))?,
                None => a2a_signing::CardSigning { signers: Vec::new(), jku: env("CARD_JKU") },
            },
            card_signing_kms: env("CARD_SIGNING_KMS_KEY_IDS")
                .map(|ids| ids.split(',').map(str::to_string).collect())
                .unwrap_or_default(),
            webhook_allow: AllowList::parse(&env("WEBHOOK_ALLOW").unwrap_or_default())?,
            blocking_timeout: secs("BLOCKING_TIMEOUT_SECS", 25),
            push_timeout: secs("PUSH_TIMEOUT_SECS", 10),
            edge: match (env("EDGE_URL"), env("EDGE_PUBLISH_SECRET")) {
                (Some(url), Some(secret)) => Some(a2a_edge::publisher::EdgeSettings::new(&url, &secret)),
                (Some(_), None) => {
                    return Err(A2aError::invalid_params("EDGE_URL is set but EDGE_PUBLISH_SECRET is not"))
                }
                _ => None,
            },
        })
    }
}

impl Deps {
    /// [`LambdaSettings::from_env`], then [`Deps::new`]. `card` is the deployment's card file (the
    /// `agent` crate's `CARD`), used unless `A2A_CARD_JSON` / `A2A_CARD` name another.
    pub async fn from_env(card: &str, executor: Option<Arc<dyn AgentExecutor>>) -> Result<Self> {
        Self::new(LambdaSettings::from_env(card)?, executor).await
    }

    /// Builds the engine on DynamoDB and SQS. `executor` is given to the task runner only.
    pub async fn new(settings: LambdaSettings, executor: Option<Arc<dyn AgentExecutor>>) -> Result<Self> {
        let aws = settings.aws;
        let sdk = sdk_config().await;
        let sqs = aws_sdk_sqs::Client::new(&sdk);
        let tokens = match &aws.page_token_secret {
            Some(secret) => PageTokens::new(secret.as_bytes().to_vec()),
            None => {
                tracing::warn!("PAGE_TOKEN_SECRET is not set: page tokens will not survive a cold start");
                PageTokens::random()
            }
        };
        let store = Arc::new(DynamoStore::new(
            aws_sdk_dynamodb::Client::new(&sdk),
            aws.table_name.clone(),
            tokens,
            aws.ttl_seconds.map(Duration::from_secs),
        ));
        let queue: Arc<dyn WorkQueue> = match &aws.task_queue_url {
            Some(url) => Arc::new(SqsWorkQueue::new(sqs.clone(), url.clone())),
            None => Arc::new(Unconfigured("TASK_QUEUE_URL")),
        };
        let push_queue: Arc<dyn PushQueue> = match &aws.push_queue_url {
            Some(url) => Arc::new(SqsPushQueue::new(sqs.clone(), url.clone())),
            None => Arc::new(Unconfigured("PUSH_QUEUE_URL")),
        };
        let mut signing = settings.card_signing.for_agent(&settings.public_url);
        if !settings.card_signing_kms.is_empty() {
            let kms = crate::kms::load_all(&sdk, &settings.card_signing_kms).await;
            signing.signers.extend(kms.map_err(|e| A2aError::internal(format!("CARD_SIGNING_KMS_KEY_IDS: {e}")))?);
        }
        let deliverer = Deliverer::new(settings.webhook_allow.clone(), settings.push_timeout)?;
        let deliverer = Arc::new(deliverer.with_signer(signing.webhook_signer(&settings.public_url)));
        // Built once per container: a bearer verifier's keys stay cached across invocations.
        let authenticator = settings.auth.build()?;
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let abilities = ServerAbilities { streaming: true, push_notifications: true, grpc_address: None };
        let mut card = CardService::new(
            settings.card,
            settings.extended_card,
            &settings.public_url,
            abilities,
            authenticator.as_ref(),
            clock.now(),
        );
        card.sign(&signing).await.map_err(|e| A2aError::internal(format!("signing the agent card: {e}")))?;
        // The runner publishes to an in-process hub nobody else reads; every other function follows
        // the event log by polling the table. With an edge worker, every event also goes there.
        let local: Arc<dyn StreamHub> =
            if executor.is_some() { Arc::new(MemoryHub::default()) } else { Arc::new(PollingHub::default()) };
        let hub = a2a_edge::publisher::EdgePublisher::wrap(local, settings.edge)?;
        let ports = EnginePorts {
            store: store.clone(),
            push_configs: store.clone(),
            queue,
            push_queue: Some(push_queue),
            hub,
            clock,
            auth: authenticator,
            webhooks: Arc::new(DnsPolicy { allow: settings.webhook_allow }),
        };
        let config = EngineConfig { blocking_timeout: settings.blocking_timeout, ..EngineConfig::default() };
        let engine = Arc::new(Engine::new(ports, card, config));
        // SQS may hand one job to two invocations at once: the runner claims each turn first.
        let runner = executor.map(|e| Arc::new(Runner::new(engine.clone(), e).claiming_turns()));
        let service = Arc::new(Service::new(engine.clone(), Limits::default()));
        let retry = RetryPolicy { max_attempts: aws.push_max_attempts, ..RetryPolicy::default() };
        Ok(Self {
            engine,
            service,
            store,
            runner,
            sqs,
            task_queue_url: aws.task_queue_url,
            push_queue_url: aws.push_queue_url,
            deliverer,
            retry,
        })
    }
}
