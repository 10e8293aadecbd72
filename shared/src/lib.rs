//! a2a-serverless: a complete A2A (Agent2Agent) protocol server, 1.0 and 0.3, built as a set of
//! ports so that the same engine runs embedded (memory store, in-process queue and hub), on AWS
//! (DynamoDB + SQS behind Lambda) and at the edge.
//!
//! Layout: [`types`] and [`v03`] (wire model), [`error`] (one error type, one mapping), [`jsonrpc`],
//! [`rest`] and [`sse`] (bindings), [`ops`] (one file per operation), [`ports`] and [`adapters`],
//! [`engine`] (recorder, stream follower, runner), [`executor`] (the trait users implement).

pub mod adapters;
pub mod auth;
pub mod card;
#[cfg(feature = "client")]
pub mod client;
pub mod dispatch;
pub mod edge;
pub mod engine;
pub mod error;
pub mod executor;
#[cfg(feature = "grpc-codec")]
pub mod grpc;
pub mod http;
pub mod inflight;
pub mod jsonrpc;
pub mod lines;
#[cfg(feature = "oidc")]
pub mod oidc;
pub mod operation;
pub mod ops;
pub mod page_token;
pub mod ports;
pub mod response;
pub mod rest;
pub mod rest03;
pub mod rest_input;
pub mod rpc_id;
pub mod runner;
pub mod service;
#[cfg(feature = "signing")]
pub mod signing;
#[cfg(feature = "aws")]
pub mod sigv4;
pub mod sse;
pub mod ssrf;
pub mod types;
pub mod v03;
pub mod version;
pub mod webhook;

pub use error::{A2aError, ErrorKind, Result};

#[cfg(feature = "push")]
pub mod embedded;
#[cfg(feature = "lambda")]
pub mod lambda;
#[cfg(feature = "push")]
pub mod push;
#[cfg(feature = "server")]
pub mod server;
