//! The agents that ship with the host, as [`a2a_engine::executor::AgentExecutor`]s: [`EchoAgent`]
//! and [`ConformanceAgent`] (built in), [`http`] (feature `http`: an agent in any language behind
//! the HTTP agent contract, `docs/agent-http.md`), [`gateway`] (feature `gateway`: an existing A2A
//! agent, called with `a2a-client`), and the [`AgentChoice`] among them. The engine does not know
//! which kind it runs.

mod choice;
mod conformance;
mod echo;
#[cfg(feature = "gateway")]
pub mod gateway;
#[cfg(feature = "http")]
pub mod http;

pub use choice::AgentChoice;
pub use conformance::ConformanceAgent;
pub use echo::EchoAgent;
