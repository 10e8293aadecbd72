//! A2A over HTTP: the JSON-RPC binding ([`jsonrpc`]) and the HTTP+JSON bindings, 1.0 ([`rest`]) and
//! 0.3 ([`rest03`]), behind one [`service::Service`] (routed by [`router`]) that the embedded
//! server, the Lambda functions and the tests all call; how results and errors become responses ([`response`]); the budgets of
//! bytes in flight ([`inflight`]); the routes served beside A2A ([`routes`]), among them AgentCore
//! Runtime's health check ([`agentcore`]); and (feature `server`) the embedded hyper server with the limits
//! a public endpoint needs ([`server`]).

pub mod agentcore;
pub mod inflight;
pub mod jsonrpc;
pub mod response;
pub mod rest;
pub mod rest03;
pub mod rest_input;
pub mod router;
pub mod routes;
#[cfg(feature = "server")]
pub mod server;
pub mod service;

pub use service::{binding_of, Binding, Limits, Service};
