//! a2a-serverless: a complete A2A (Agent2Agent) protocol server, 1.0 and 0.3, built as a set of
//! ports so that the same engine runs embedded (memory store, in-process queue and hub), on AWS
//! (DynamoDB + SQS behind Lambda) and at the edge.
//!
//! This crate is the facade every deployable depends on: the crates under `shared/` are re-exported
//! here under the paths the functions use (`a2a::types`, `a2a::http::Service`, ...), and the
//! [`prelude`] holds what an agent needs. What each crate owns:
//!
//! | crate | owns |
//! |---|---|
//! | `a2a-protocol` | the wire model: 1.0 and 0.3 types, request bounds, errors and their one mapping table, versions, operation names, SSE, well-known paths (no I/O) |
//! | `a2a-signing` | JCS, JWS keys, signed cards and webhooks, the JWKS |
//! | `a2a-engine` | ports, the event fold, one file per operation, dispatch, the runner, the executor trait, the memory store, authentication, push delivery, the card service |
//! | `a2a-http` | the JSON-RPC and HTTP+JSON bindings, the `Service`, the budgets of bytes in flight, the hyper server |
//! | `a2a-grpc` | the gRPC binding and its listener |
//! | `a2a-client` | the client |
//! | `a2a-agents` | echo, conformance, agents over HTTP, the A2A gateway |
//! | `a2a-aws` | DynamoDB, SQS, KMS, SigV4, the Lambda glue |
//! | `a2a-edge` | the Cloudflare worker's logic and the origin's publisher |
//! | `a2a-sqlite` | the embedded SQL store: tasks, events, push configs, claims and both queues in one SQLite file |
//! | `a2a-embedded` | one process on the SQL, the memory or the AWS backend (a2a-local) |
//! | `a2a-playground` | the playground page a2a-local serves, its relay (SSRF-guarded) and webhook catchers |
//! | `a2a-telemetry` | trace context across bindings, queues and calls; the spans; the OpenTelemetry pipeline and correlated logs |
//!
//! ```
//! use a2a::prelude::*;
//!
//! /// Answers every message with its own text, in one artifact.
//! struct Echo;
//!
//! #[async_trait]
//! impl AgentExecutor for Echo {
//!     async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), AgentError> {
//!         let text = ctx.message.text();
//!         events.artifact(Artifact::new(vec![Part::text(text)]), Chunk::Whole).await?;
//!         events.complete(None).await?;
//!         Ok(())
//!     }
//! }
//! ```

pub use a2a_protocol::{error, lines, operation, rpc_id, sse, types, v03, version};
pub use a2a_protocol::{A2aError, ErrorKind, Result};

#[cfg(any(feature = "oidc", feature = "server", feature = "lambda"))]
pub use a2a_engine::oidc;
#[cfg(any(feature = "push", feature = "server", feature = "aws", feature = "lambda"))]
pub use a2a_engine::push;
pub use a2a_engine::{admission, auth, dispatch, engine, ops, page_token, ports, runner, ssrf, webhook};

#[cfg(feature = "server")]
pub use a2a_http::server;
pub use a2a_http::{agentcore, inflight, jsonrpc, response, rest, rest03, rest_input, router, routes, service};

pub use a2a_edge as edge;
pub use a2a_telemetry as telemetry;

#[cfg(feature = "lambda")]
pub use a2a_aws::lambda;
#[cfg(any(feature = "aws", feature = "lambda"))]
pub use a2a_aws::sigv4;
#[cfg(any(feature = "client", feature = "client-grpc"))]
pub use a2a_client as client;
#[cfg(any(feature = "push", feature = "server"))]
pub use a2a_embedded as embedded;
#[cfg(any(feature = "grpc-codec", feature = "grpc", feature = "client-grpc"))]
pub use a2a_grpc as grpc;
#[cfg(feature = "playground")]
pub use a2a_playground as playground;
#[cfg(any(
    feature = "signing",
    feature = "push",
    feature = "server",
    feature = "client",
    feature = "client-grpc",
    feature = "aws",
    feature = "lambda"
))]
pub use a2a_signing as signing;

pub mod card {
    //! The agent card: the served card (`a2a-engine`), the card file and the well-known paths
    //! (`a2a-protocol`).
    pub use a2a_engine::card::*;
    pub use a2a_protocol::paths::DEFAULT_API_KEY_HEADER;
}

pub mod http {
    //! The HTTP front (`a2a-http`): one base URL serving the card, JSON-RPC and HTTP+JSON.
    pub use a2a_http::response::{jsonrpc_error_response, rest_error, Body, HttpResponse};
    pub use a2a_http::router::*;
    pub use a2a_http::service::*;
}

pub mod executor {
    //! The one thing a user implements, [`AgentExecutor`] (`a2a-engine`), and the agents that ship
    //! with the host (`a2a-agents`).
    pub use a2a_agents::*;
    pub use a2a_engine::executor::*;
}

pub mod adapters {
    //! The ports' implementations: [`memory`] (always), `poll_hub` (feature `runtime`), `sqlite`
    //! (feature `sqlite`), `aws` (feature `aws`), `edge_publisher` (the embedded server).
    #[cfg(any(feature = "aws", feature = "lambda"))]
    pub use a2a_aws as aws;
    #[cfg(any(feature = "push", feature = "server"))]
    pub use a2a_edge::publisher as edge_publisher;
    pub use a2a_engine::memory;
    #[cfg(any(feature = "runtime", feature = "push", feature = "server"))]
    pub use a2a_engine::poll_hub;
    #[cfg(feature = "sqlite")]
    pub use a2a_sqlite as sqlite;
}

pub mod prelude {
    //! What an agent author touches: the executor trait and its context, the event sink and what
    //! an artifact chunk is, the types an agent sends, and `async_trait` to implement the trait.
    pub use a2a_engine::executor::{AgentError, AgentExecutor, Chunk, EventSink, RequestContext, SinkError};
    pub use a2a_protocol::types::{Artifact, Message, Part, PartContent, Role, Task, TaskState};
    pub use async_trait::async_trait;
}

// The Rust blocks of the README and of the pages that teach the API compile and run as doc tests,
// so the documentation cannot drift from the code.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;

#[cfg(doctest)]
#[doc = include_str!("../../docs/writing-an-agent.md")]
struct WritingAnAgentDoctests;

#[cfg(doctest)]
#[doc = include_str!("../../docs/cli.md")]
struct CliDoctests;
