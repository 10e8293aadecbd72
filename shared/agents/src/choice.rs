//! Which agent a deployment runs: its own (the `agent` crate), a built-in one, one in any language
//! over HTTP, or an existing A2A agent through the gateway; chosen by name and URL (flags or the
//! environment).

#[cfg(feature = "runtime")]
use std::sync::Arc;

#[cfg(feature = "runtime")]
use a2a_engine::executor::AgentExecutor;

#[cfg(feature = "gateway")]
use crate::gateway;
#[cfg(feature = "http")]
use crate::http;
#[cfg(feature = "runtime")]
use crate::{ConformanceAgent, EchoAgent};

/// Which agent a deployment runs.
#[derive(Debug, Clone)]
pub enum AgentChoice {
    /// The deployment's own agent (the `agent` crate).
    Own,
    /// Built in: an artifact echoing the text.
    Echo,
    /// Built in: behaviour by messageId prefix, for conformance suites.
    Conformance,
    /// An agent in any language, over HTTP (`docs/agent-http.md`).
    #[cfg(feature = "http")]
    Http(http::HttpAgentConfig),
    /// An existing A2A agent behind this host (`--agent-a2a` / `AGENT_A2A_URL`).
    #[cfg(feature = "gateway")]
    Gateway(gateway::GatewayConfig),
}

impl AgentChoice {
    /// By name: `agent` (the deployment's own), `echo`, `conformance`; `http` needs `url`. A `url`
    /// with no name (or `http`) is the agent over HTTP.
    pub fn parse(name: Option<&str>, url: Option<&str>) -> a2a_protocol::Result<Self> {
        let bad = |why: String| a2a_protocol::A2aError::invalid_params(why);
        match (name.map(str::trim).filter(|n| !n.is_empty()), url.map(str::trim).filter(|u| !u.is_empty())) {
            #[cfg(feature = "http")]
            (None | Some("http"), Some(url)) => Ok(Self::Http(http::HttpAgentConfig::new(url).with_env())),
            (Some("http"), None) => Err(bad("the http agent needs its URL (--agent-url / AGENT_URL)".into())),
            (None | Some("agent"), None) => Ok(Self::Own),
            (Some("echo"), None) => Ok(Self::Echo),
            (Some("conformance"), None) => Ok(Self::Conformance),
            #[cfg(not(feature = "http"))]
            (None | Some("http"), Some(_)) => Err(bad("this build has no HTTP agent client (feature http)".into())),
            (Some(other), Some(_)) => {
                Err(bad(format!("agent {other:?} does not take a URL; drop --agent-url or use --agent http")))
            }
            (Some(other), None) => Err(bad(format!("unknown agent {other:?}: agent, echo, conformance or http"))),
        }
    }

    /// From `A2A_AGENT` and `AGENT_URL` (with the `AGENT_*` settings of the HTTP agent), or
    /// `AGENT_A2A_URL` (with the `AGENT_A2A_*` settings of the gateway).
    pub fn from_env() -> a2a_protocol::Result<Self> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        Self::with_upstream(var("A2A_AGENT").as_deref(), var("AGENT_URL").as_deref(), var("AGENT_A2A_URL").as_deref())
    }

    /// [`AgentChoice::parse`], or the gateway when `a2a_url` (an upstream A2A agent) is given.
    pub fn with_upstream(name: Option<&str>, url: Option<&str>, a2a_url: Option<&str>) -> a2a_protocol::Result<Self> {
        let Some(upstream) = a2a_url.map(str::trim).filter(|u| !u.is_empty()) else { return Self::parse(name, url) };
        if url.is_some_and(|u| !u.trim().is_empty()) || name.is_some_and(|n| !matches!(n.trim(), "" | "gateway")) {
            return Err(a2a_protocol::A2aError::invalid_params(
                "--agent-a2a runs an upstream A2A agent: it takes no --agent or --agent-url",
            ));
        }
        #[cfg(feature = "gateway")]
        return Ok(Self::Gateway(gateway::GatewayConfig::new(upstream).with_env()));
        #[cfg(not(feature = "gateway"))]
        return Err(a2a_protocol::A2aError::invalid_params(format!(
            "this build has no A2A client (feature gateway) to reach {upstream}"
        )));
    }

    /// The executor; `own` builds the deployment's own agent.
    #[cfg(feature = "runtime")]
    pub async fn build(
        self,
        own: impl FnOnce() -> Arc<dyn AgentExecutor>,
    ) -> a2a_protocol::Result<Arc<dyn AgentExecutor>> {
        Ok(match self {
            Self::Own => own(),
            Self::Echo => Arc::new(EchoAgent),
            Self::Conformance => Arc::new(ConformanceAgent::new(Arc::new(a2a_engine::memory::SystemClock))),
            #[cfg(feature = "http")]
            Self::Http(config) => Arc::new(http::HttpAgent::new(config).await?),
            #[cfg(feature = "gateway")]
            Self::Gateway(config) => gateway::executor(config),
        })
    }
}
