//! The embedded deployment: one process serving every route, on one of three backends: the embedded
//! SQL store (feature `sqlite`: tasks and both queues in one SQLite file, kept across restarts), the
//! memory backend (store and queues in process, gone with it), or the AWS backend (feature `aws`:
//! DynamoDB store, SQS queues consumed by in-process pollers). The stream hub is in process on all
//! three. What `a2a-local` runs and the tests build.

use std::sync::Arc;
use std::time::Duration;

use a2a_engine::admission::StoreLimits;
use a2a_engine::auth::Authenticator;
use a2a_engine::card::{CardService, ServerAbilities};
use a2a_engine::engine::{Engine, EngineConfig, EnginePorts};
use a2a_engine::executor::AgentExecutor;
use a2a_engine::memory::*;
use a2a_engine::ports::{Clock, PushConfigStore, PushQueue, TaskStore, WorkQueue};
use a2a_engine::push::{Deliverer, DnsPolicy, PushWorker};
use a2a_engine::runner::Runner;
use a2a_engine::ssrf::AllowList;
use a2a_engine::webhook::RetryPolicy;
use a2a_http::service::{Limits, Service};
use a2a_protocol::error::Result;
use a2a_protocol::types::AgentCard;

/// How often a stream or a blocking SendMessage on the AWS backend looks at the event log for
/// events another process recorded (one DynamoDB Query each time).
#[cfg(feature = "aws")]
const SHARED_STORE_LOOK: Duration = Duration::from_secs(1);

/// Where tasks live and how jobs travel.
#[derive(Debug, Clone, Default)]
pub enum Backend {
    /// Memory store, in-process queues.
    #[default]
    Memory,
    /// One SQLite file holding the tasks and both queues (feature `sqlite`); its limits are
    /// [`EmbeddedConfig::store_limits`].
    #[cfg(feature = "sqlite")]
    Sqlite(SqliteBackend),
    /// DynamoDB and SQS (feature `aws`), configured from the environment.
    #[cfg(feature = "aws")]
    Aws(AwsOptions),
}

/// Where the SQLite file lives and how it is kept.
#[cfg(feature = "sqlite")]
#[derive(Debug, Clone)]
pub struct SqliteBackend {
    pub data_dir: std::path::PathBuf,
    pub durability: a2a_sqlite::Durability,
    /// Finished tasks older than this are deleted (`None`: kept until the limits evict them).
    pub retention: Option<Duration>,
    /// The most the data file may grow to (`None`: the disk is the limit).
    pub max_file_bytes: Option<u64>,
}

#[cfg(feature = "aws")]
#[derive(Debug, Clone)]
pub struct AwsOptions {
    pub settings: a2a_aws::AwsSettings,
    /// Create the table and the queues (with their dead-letter queues) when missing.
    pub create_resources: bool,
    pub poll: a2a_aws::sqs::PollSettings,
}

pub struct EmbeddedConfig {
    /// Where clients reach the server; the card's interface URLs are built from it.
    pub public_url: String,
    pub card: AgentCard,
    pub extended_card: Option<AgentCard>,
    pub executor: Arc<dyn AgentExecutor>,
    pub auth: Arc<dyn Authenticator>,
    pub engine: EngineConfig,
    pub limits: Limits,
    pub backend: Backend,
    /// The embedded stores' caps (tasks, bytes, idle lifetime of interrupted tasks, shares): the
    /// memory store's and the SQL store's.
    pub store_limits: StoreLimits,
    /// Private networks webhooks may reach anyway (e.g. 127.0.0.1 in development).
    pub webhook_allow: AllowList,
    pub push_retry: RetryPolicy,
    pub push_timeout: Duration,
    /// Most webhook deliveries the in-process push worker holds at once (memory and embedded
    /// stores); past it the newest are dead-lettered.
    pub push_backlog: usize,
    /// Also publish every event to this edge worker (its Durable Object hub serves the streams).
    pub edge: Option<a2a_edge::publisher::EdgeSettings>,
    /// Where the gRPC binding listens (`host:port`), declared in the card; `None`: not served.
    pub grpc_address: Option<String>,
    /// Keys that sign the served cards (none: unsigned); `jku` defaults to the agent's JWKS.
    pub card_signing: a2a_signing::CardSigning,
}

impl EmbeddedConfig {
    /// An agent at `public_url` running `executor` on the memory backend with every other setting at
    /// its default: the default card, anonymous callers, the default limits, webhooks to public
    /// addresses with a 10 s timeout, no edge worker, no gRPC, unsigned cards. Change what differs
    /// with struct update syntax (`EmbeddedConfig { backend, ..EmbeddedConfig::new(url, executor) }`).
    pub fn new(public_url: impl Into<String>, executor: Arc<dyn AgentExecutor>) -> Self {
        Self {
            public_url: public_url.into(),
            card: a2a_engine::card::default_card(),
            extended_card: None,
            executor,
            auth: Arc::new(a2a_engine::auth::Anonymous),
            engine: EngineConfig::default(),
            limits: Limits::default(),
            backend: Backend::default(),
            store_limits: StoreLimits::default(),
            webhook_allow: AllowList::default(),
            push_retry: RetryPolicy::default(),
            push_timeout: Duration::from_secs(10),
            push_backlog: a2a_engine::push::DEFAULT_PUSH_BACKLOG,
            edge: None,
            grpc_address: None,
            card_signing: a2a_signing::CardSigning::default(),
        }
    }
}

/// A running embedded agent.
pub struct Embedded {
    pub service: Arc<Service>,
    pub engine: Arc<Engine>,
    pub runner: Arc<Runner>,
    /// The in-process push worker (memory and SQL backends).
    pub push: Option<Arc<PushWorker>>,
    /// The SQL store (SQL backend only).
    #[cfg(feature = "sqlite")]
    pub sqlite: Option<Arc<a2a_sqlite::SqliteStore>>,
    /// The DynamoDB store (AWS backend only), for its usage meter.
    #[cfg(feature = "aws")]
    pub dynamo: Option<Arc<a2a_aws::DynamoStore>>,
}

/// Starts a backend's consumers once the runner exists; returns the in-process push worker, if any.
type StartConsumers = Box<dyn FnOnce(Arc<Runner>, Arc<Deliverer>) -> Option<Arc<PushWorker>> + Send>;

struct Wiring {
    store: Arc<dyn TaskStore>,
    push_configs: Arc<dyn PushConfigStore>,
    queue: Arc<dyn WorkQueue>,
    push_queue: Arc<dyn PushQueue>,
    consumers: StartConsumers,
    #[cfg(feature = "aws")]
    dynamo: Option<Arc<a2a_aws::DynamoStore>>,
    #[cfg(feature = "sqlite")]
    sqlite: Option<Arc<a2a_sqlite::SqliteStore>>,
}

/// The in-process consumers of both queues: the runner takes the turns, the push worker the
/// deliveries.
fn in_process_consumers(
    jobs: tokio::sync::mpsc::UnboundedReceiver<Queued>,
    deliveries: tokio::sync::mpsc::UnboundedReceiver<a2a_engine::push::Delivery>,
    push: PushSettings,
) -> StartConsumers {
    Box::new(move |runner, deliverer| {
        runner.spawn(jobs);
        let worker = PushWorker::new(deliverer, push.retry, push.backlog);
        worker.clone().spawn(deliveries);
        Some(worker)
    })
}

/// How the in-process push worker retries and how much it holds.
#[derive(Clone, Copy)]
struct PushSettings {
    retry: RetryPolicy,
    backlog: usize,
}

fn memory_wiring(limits: StoreLimits, push: PushSettings) -> Wiring {
    let (queue, jobs) = MemoryWorkQueue::new();
    let (push_queue, push_jobs) = MemoryPushQueue::new();
    let store = Arc::new(MemoryStore::new(limits));
    Wiring {
        store: store.clone(),
        push_configs: store,
        queue: Arc::new(queue),
        push_queue: Arc::new(push_queue),
        consumers: in_process_consumers(jobs, push_jobs, push),
        #[cfg(feature = "aws")]
        dynamo: None,
        #[cfg(feature = "sqlite")]
        sqlite: None,
    }
}

#[cfg(feature = "sqlite")]
async fn sqlite_wiring(backend: SqliteBackend, limits: StoreLimits, push: PushSettings) -> Result<Wiring> {
    let options = a2a_sqlite::SqliteOptions {
        data_dir: backend.data_dir,
        durability: backend.durability,
        retention: backend.retention,
        limits,
        max_file_bytes: backend.max_file_bytes,
    };
    let opened = a2a_sqlite::open(options).await?;
    Ok(Wiring {
        store: opened.store.clone(),
        push_configs: opened.store.clone(),
        queue: opened.work,
        push_queue: opened.push,
        consumers: in_process_consumers(opened.jobs, opened.deliveries, push),
        #[cfg(feature = "aws")]
        dynamo: None,
        sqlite: Some(opened.store),
    })
}

#[cfg(feature = "aws")]
async fn aws_wiring(options: AwsOptions, retry: RetryPolicy) -> Result<Wiring> {
    use a2a_aws::{resources, sdk_config, sqs, DynamoStore};
    use a2a_engine::page_token::PageTokens;
    use a2a_protocol::error::A2aError;

    let sdk = sdk_config().await;
    let dynamo_client = aws_sdk_dynamodb::Client::new(&sdk);
    let sqs_client = aws_sdk_sqs::Client::new(&sdk);
    let s = &options.settings;
    let (task_url, push_url) = if options.create_resources {
        resources::ensure_table(&dynamo_client, &s.table_name, s.ttl_seconds.is_some()).await?;
        // A task job is received at most 5 times: a run that keeps crashing ends in the DLQ.
        let (task_url, _) =
            resources::ensure_fifo_queue(&sqs_client, &format!("{}-work", s.table_name), options.poll.visibility, 5)
                .await?;
        let (push_url, _) = resources::ensure_fifo_queue(
            &sqs_client,
            &format!("{}-push", s.table_name),
            Duration::from_secs(30),
            s.push_max_attempts,
        )
        .await?;
        (s.task_queue_url.clone().unwrap_or(task_url), s.push_queue_url.clone().unwrap_or(push_url))
    } else {
        let need = |v: &Option<String>, name: &str| {
            v.clone().ok_or_else(|| A2aError::invalid_params(format!("{name} is not set (or pass --create-resources)")))
        };
        (need(&s.task_queue_url, "TASK_QUEUE_URL")?, need(&s.push_queue_url, "PUSH_QUEUE_URL")?)
    };
    let tokens = match &s.page_token_secret {
        Some(secret) => PageTokens::new(secret.as_bytes().to_vec()),
        None => PageTokens::random(),
    };
    let ttl = s.ttl_seconds.map(Duration::from_secs);
    let store = Arc::new(DynamoStore::new(dynamo_client, s.table_name.clone(), tokens, ttl));
    let poll = options.poll;
    let consumers_store = store.clone();
    let (work_client, push_client) = (sqs_client.clone(), sqs_client.clone());
    let (work_url, push_poll_url) = (task_url.clone(), push_url.clone());
    Ok(Wiring {
        store: store.clone(),
        push_configs: store.clone(),
        queue: Arc::new(sqs::SqsWorkQueue::new(sqs_client.clone(), task_url)),
        push_queue: Arc::new(sqs::SqsPushQueue::new(sqs_client, push_url)),
        consumers: Box::new(move |runner, deliverer| {
            let stop = tokio_util::sync::CancellationToken::new();
            let work = Arc::new(sqs::WorkPoller { client: work_client, url: work_url, runner, poll });
            tokio::spawn(work.run(stop.clone()));
            let push = Arc::new(sqs::PushPoller {
                client: push_client,
                url: push_poll_url,
                store: consumers_store.clone(),
                configs: consumers_store,
                deliverer,
                retry,
                poll,
                concurrency: 4,
            });
            tokio::spawn(push.run(stop));
            None
        }),
        dynamo: Some(store),
        #[cfg(feature = "sqlite")]
        sqlite: None,
    })
}

/// Builds the engine, starts the runner and the push consumer; call inside a tokio runtime.
pub async fn start(config: EmbeddedConfig) -> Result<Embedded> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let push = PushSettings { retry: config.push_retry, backlog: config.push_backlog };
    let wiring = match config.backend {
        Backend::Memory => memory_wiring(config.store_limits, push),
        #[cfg(feature = "sqlite")]
        Backend::Sqlite(backend) => sqlite_wiring(backend, config.store_limits, push).await?,
        #[cfg(feature = "aws")]
        Backend::Aws(options) => aws_wiring(options, config.push_retry).await?,
    };
    let signing = config.card_signing.for_agent(&config.public_url);
    let deliverer = Deliverer::new(config.webhook_allow.clone(), config.push_timeout)?;
    let deliverer = Arc::new(deliverer.with_signer(signing.webhook_signer(&config.public_url)));
    let abilities = ServerAbilities { streaming: true, push_notifications: true, grpc_address: config.grpc_address };
    let mut card = CardService::new(
        config.card,
        config.extended_card,
        &config.public_url,
        abilities,
        config.auth.as_ref(),
        clock.now(),
    );
    card.sign(&signing)
        .await
        .map_err(|e| a2a_protocol::error::A2aError::internal(format!("signing the agent card: {e}")))?;
    let hub: Arc<dyn a2a_engine::ports::StreamHub> = Arc::new(MemoryHub::default());
    // Other processes may run this store's turns (replicas on one table): look at it now and then.
    #[cfg(feature = "aws")]
    let hub: Arc<dyn a2a_engine::ports::StreamHub> = match wiring.dynamo.is_some() {
        true => Arc::new(a2a_engine::poll_hub::Backstopped { inner: hub, every: SHARED_STORE_LOOK }),
        false => hub,
    };
    let hub = a2a_edge::publisher::EdgePublisher::wrap(hub, config.edge)?;
    let ports = EnginePorts {
        store: wiring.store,
        push_configs: wiring.push_configs,
        queue: wiring.queue,
        push_queue: Some(wiring.push_queue),
        hub,
        clock,
        auth: config.auth,
        webhooks: Arc::new(DnsPolicy { allow: config.webhook_allow }),
    };
    let engine = Arc::new(Engine::new(ports, card, config.engine));
    let runner = Runner::new(engine.clone(), config.executor);
    // SQS may hand one job to two consumers at once: runners on it claim each turn first.
    #[cfg(feature = "aws")]
    let runner = if wiring.dynamo.is_some() { runner.claiming_turns() } else { runner };
    let runner = Arc::new(runner);
    let push = (wiring.consumers)(runner.clone(), deliverer);
    let service = Arc::new(Service::new(engine.clone(), config.limits));
    Ok(Embedded {
        service,
        engine,
        runner,
        push,
        #[cfg(feature = "aws")]
        dynamo: wiring.dynamo,
        #[cfg(feature = "sqlite")]
        sqlite: wiring.sqlite,
    })
}
