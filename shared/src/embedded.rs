//! The embedded deployment (feature `runtime`): memory store and push-config store, in-process work
//! queue consumed by the runner, broadcast hub, system clock. What `a2a-local` runs, and what the
//! router tests build.

use std::sync::Arc;

use crate::adapters::memory::*;
use crate::auth::Authenticator;
use crate::card::{CardService, ServerAbilities};
use crate::engine::{Engine, EngineConfig, EnginePorts, Runner};
use crate::executor::AgentExecutor;
use crate::http::{Limits, Service};
use crate::ports::Clock;
use crate::push::{Deliverer, DnsPolicy, PushWorker};
use crate::types::AgentCard;
use crate::webhook::{AllowList, RetryPolicy};

pub struct EmbeddedConfig {
    /// Where clients reach the server; the card's interface URLs are built from it.
    pub public_url: String,
    pub card: AgentCard,
    pub extended_card: Option<AgentCard>,
    pub executor: Arc<dyn AgentExecutor>,
    pub auth: Arc<dyn Authenticator>,
    pub engine: EngineConfig,
    pub limits: Limits,
    /// Cap on tasks kept in memory (the oldest finished ones are evicted past it).
    pub max_tasks: usize,
    /// Private networks webhooks may reach anyway (e.g. 127.0.0.1 in development).
    pub webhook_allow: AllowList,
    pub push_retry: RetryPolicy,
    pub push_timeout: std::time::Duration,
}

/// A running embedded agent.
pub struct Embedded {
    pub service: Arc<Service>,
    pub engine: Arc<Engine>,
    pub runner: Arc<Runner>,
    /// `None` when the push worker could not be built (then the card says pushNotifications false).
    pub push: Option<Arc<PushWorker>>,
}

/// Builds the engine and starts the runner; call inside a tokio runtime.
pub fn start(config: EmbeddedConfig) -> Embedded {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let (queue, jobs) = MemoryWorkQueue::new();
    let (push_queue, push_jobs) = MemoryPushQueue::new();
    let push = match Deliverer::new(config.webhook_allow.clone(), config.push_timeout) {
        Ok(d) => Some(PushWorker::new(Arc::new(d), config.push_retry)),
        Err(e) => {
            tracing::error!(error = %e, "webhook client unavailable: push notifications disabled");
            None
        }
    };
    let abilities = ServerAbilities { streaming: true, push_notifications: push.is_some() };
    let card = CardService::new(
        config.card,
        config.extended_card,
        &config.public_url,
        abilities,
        config.auth.as_ref(),
        clock.now(),
    );
    let ports = EnginePorts {
        store: Arc::new(MemoryTaskStore::with_max_tasks(config.max_tasks)),
        push_configs: Arc::new(MemoryPushConfigStore::default()),
        queue: Arc::new(queue),
        push_queue: push.as_ref().map(|_| Arc::new(push_queue) as Arc<dyn crate::ports::PushQueue>),
        hub: Arc::new(MemoryHub::default()),
        clock,
        auth: config.auth,
        webhooks: Arc::new(DnsPolicy { allow: config.webhook_allow }),
    };
    let engine = Arc::new(Engine::new(ports, card, config.engine));
    let runner = Arc::new(Runner::new(engine.clone(), config.executor));
    runner.clone().spawn(jobs);
    if let Some(worker) = &push {
        worker.clone().spawn(push_jobs);
    }
    let service = Arc::new(Service::new(engine.clone(), config.limits));
    Embedded { service, engine, runner, push }
}
