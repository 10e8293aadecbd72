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
use crate::types::AgentCard;

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
}

/// A running embedded agent.
pub struct Embedded {
    pub service: Arc<Service>,
    pub engine: Arc<Engine>,
    pub runner: Arc<Runner>,
}

/// Builds the engine and starts the runner; call inside a tokio runtime.
pub fn start(config: EmbeddedConfig) -> Embedded {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let (queue, jobs) = MemoryWorkQueue::new();
    let abilities = ServerAbilities { streaming: true, push_notifications: true };
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
        push_queue: None,
        hub: Arc::new(MemoryHub::default()),
        clock,
        auth: config.auth,
    };
    let engine = Arc::new(Engine::new(ports, card, config.engine));
    let runner = Arc::new(Runner::new(engine.clone(), config.executor));
    runner.clone().spawn(jobs);
    let service = Arc::new(Service::new(engine.clone(), config.limits));
    Embedded { service, engine, runner }
}
