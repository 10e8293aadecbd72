//! Traces for the A2A host. One task's trace: the caller's request (a SERVER span per request, on
//! every binding), the hop through the task queue (send, then process), the agent's turn
//! (`invoke_agent`), the calls the host makes (the HTTP agent, an upstream A2A agent, each webhook
//! attempt), each sending `traceparent` so the agent and the webhook receiver join the same trace.
//!
//! - [`context`]: W3C trace context (and X-Ray's header) read from requests, carried by queued jobs,
//!   written into outgoing calls; no OpenTelemetry dependency, so every crate may use it.
//! - [`sampling`]: head sampling: decided where a trace enters the host, followed under it.
//! - [`spans`]: the spans and their attribute names (OpenTelemetry semantic conventions and
//!   a2a-java's `gen_ai.agent.a2a.*`); free while tracing is off.
//! - [`metrics`]: the measurements (operations, turns, tasks, queue lag, webhooks, store calls,
//!   streams) and their sinks: OTLP (feature `otel`), CloudWatch EMF lines (feature `emf`).
//! - feature `otel`: [`Telemetry`], the process's subscriber: logs (human or JSON, with trace and
//!   task ids) and the OTLP export configured by the standard `OTEL_*` variables.
//!
//! The operator's guide is `docs/observability.md`.

pub mod context;
pub mod metrics;
pub mod sampling;
pub mod spans;

#[cfg(feature = "emf")]
pub mod emf;
#[cfg(feature = "otel")]
mod otel;
#[cfg(feature = "otel")]
mod otel_metrics;
#[cfg(feature = "otel")]
mod subscriber;

pub use context::TraceContext;
#[cfg(feature = "emf")]
pub use emf::EmfSettings;
#[cfg(feature = "otel")]
pub use otel::OtelSettings;
#[cfg(feature = "otel")]
pub use subscriber::{LogFormat, LogTarget, Settings, Telemetry};
