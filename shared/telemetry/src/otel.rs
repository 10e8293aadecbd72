//! The OpenTelemetry pipeline (feature `otel`): `tracing` spans exported as OTLP by
//! `tracing-opentelemetry`, configured by the standard `OTEL_*` variables (or the flags that set
//! them), and the [`Propagation`] the rest of the host uses to carry trace context.
//!
//! Export runs off the request path: the SDK's batch processor hands batches to its own thread,
//! which sends them on a one-thread runtime of its own ([`ExportClient`]). So a flush may block the
//! calling thread (Lambda flushes before an invocation ends) without starving the runtime that
//! has to drive the export.

use std::sync::OnceLock;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use opentelemetry::trace::SpanKind;
use opentelemetry::trace::{
    SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState, TracerProvider as _,
};
use opentelemetry_http::{HttpClient, HttpError, Request, Response};
use opentelemetry_sdk::trace::{Sampler, SamplingDecision, SamplingResult, SdkTracerProvider, ShouldSample};
use opentelemetry_sdk::Resource;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::context::{EventValue, Propagation, TraceContext};
use crate::sampling::Sampling;

/// Largest answer read from a collector (its body is an export response: a few bytes).
const MAX_COLLECTOR_ANSWER: usize = 64 * 1024;
/// The longest one export may take (the SDK's default for `OTEL_EXPORTER_OTLP_TIMEOUT`).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where traces go and how they are sampled. [`OtelSettings::from_env`] reads the standard variables;
/// a host's flags may override each.
#[derive(Debug, Clone, Default)]
pub struct OtelSettings {
    /// The collector's base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`; `/v1/traces` is appended for
    /// HTTP). `None` leaves it to `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or the default
    /// (`http://localhost:4318`), and then tracing is on only if `OTEL_TRACES_EXPORTER=otlp` or that
    /// variable is set.
    pub endpoint: Option<String>,
    /// `http/protobuf` (the default) or `grpc` (`OTEL_EXPORTER_OTLP_PROTOCOL`).
    pub protocol: Option<String>,
    /// `OTEL_SERVICE_NAME`; the host's name when unset.
    pub service_name: Option<String>,
    /// Share of new traces kept, parent-based (a caller's sampling decision is followed). `None`
    /// leaves it to `OTEL_TRACES_SAMPLER` / `OTEL_TRACES_SAMPLER_ARG` (default: every trace).
    pub sample_ratio: Option<f64>,
    /// `OTEL_SDK_DISABLED=true` (or `OTEL_TRACES_EXPORTER=none`): no pipeline at all.
    pub disabled: bool,
    /// `OTEL_TRACES_EXPORTER=otlp` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` set: on with the
    /// default or the signal's endpoint.
    pub requested: bool,
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().map(|v| v.trim().to_string()).filter(|v| !v.is_empty())
}

impl OtelSettings {
    pub fn from_env() -> Self {
        let exporter = var("OTEL_TRACES_EXPORTER");
        Self {
            endpoint: var("OTEL_EXPORTER_OTLP_ENDPOINT"),
            protocol: var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL").or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL")),
            service_name: var("OTEL_SERVICE_NAME"),
            sample_ratio: None,
            disabled: var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
                || exporter.as_deref() == Some("none"),
            requested: exporter.as_deref() == Some("otlp") || var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some(),
        }
    }

    /// The sampling policy: the ratio if one was set, else `OTEL_TRACES_SAMPLER` / `_ARG`.
    pub fn sampling(&self) -> Result<Sampling, String> {
        match self.sample_ratio {
            Some(ratio) => Sampling::ratio(ratio),
            None => Sampling::parse(var("OTEL_TRACES_SAMPLER").as_deref(), var("OTEL_TRACES_SAMPLER_ARG").as_deref()),
        }
    }

    /// True when traces are to be exported.
    pub fn enabled(&self) -> bool {
        !self.disabled && (self.endpoint.is_some() || self.requested)
    }
}

/// The exporter's HTTP client: reqwest on a one-thread runtime owned by the exporter, so that an
/// export never waits for (or blocks) a thread of the host's runtime.
#[derive(Debug)]
pub(crate) struct ExportClient {
    client: reqwest::Client,
    runtime: &'static tokio::runtime::Runtime,
}

/// The export runtime lives as long as the process (it is never dropped, so never from inside
/// another runtime).
static EXPORT_RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();

/// The exporters' runtime: one thread, `otlp-export`, started with the first exporter.
pub(crate) fn export_runtime() -> Result<&'static tokio::runtime::Runtime, String> {
    if let Some(rt) = EXPORT_RUNTIME.get() {
        return Ok(rt);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("otlp-export")
        .enable_all()
        .build()
        .map_err(|e| format!("the OTLP export runtime: {e}"))?;
    Ok(EXPORT_RUNTIME.get_or_init(|| rt))
}

/// `fut` polled with the export runtime's context (its reactor and timers), from whatever thread
/// polls it (the SDK's batch thread, a flushing caller).
#[cfg(feature = "otlp-grpc")]
fn in_export_context<'a, T>(
    handle: tokio::runtime::Handle,
    fut: impl std::future::Future<Output = T> + Send + 'a,
) -> impl std::future::Future<Output = T> + Send + 'a {
    let mut fut = Box::pin(fut);
    std::future::poll_fn(move |cx| {
        let _context = handle.enter();
        fut.as_mut().poll(cx)
    })
}

/// A gRPC (tonic) exporter run in the export runtime's context: tonic's channel needs a tokio
/// reactor, which the SDK's export thread does not have.
#[cfg(feature = "otlp-grpc")]
#[derive(Debug)]
pub(crate) struct OnExportRuntime<E> {
    inner: E,
    handle: tokio::runtime::Handle,
}

#[cfg(feature = "otlp-grpc")]
impl<E> OnExportRuntime<E> {
    /// Builds the exporter inside the export runtime (its channel's tasks live there).
    pub(crate) fn build<B>(build: impl FnOnce() -> Result<E, B>) -> Result<Result<Self, B>, String> {
        let runtime = export_runtime()?;
        let _context = runtime.enter();
        Ok(build().map(|inner| Self { inner, handle: runtime.handle().clone() }))
    }
}

#[cfg(feature = "otlp-grpc")]
impl<E: opentelemetry_sdk::trace::SpanExporter> opentelemetry_sdk::trace::SpanExporter for OnExportRuntime<E> {
    async fn export(&self, batch: Vec<opentelemetry_sdk::trace::SpanData>) -> opentelemetry_sdk::error::OTelSdkResult {
        in_export_context(self.handle.clone(), self.inner.export(batch)).await
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> opentelemetry_sdk::error::OTelSdkResult {
        let _context = self.handle.enter();
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> opentelemetry_sdk::error::OTelSdkResult {
        let _context = self.handle.enter();
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

#[cfg(feature = "otlp-grpc")]
impl<E: opentelemetry_sdk::metrics::exporter::PushMetricExporter>
    opentelemetry_sdk::metrics::exporter::PushMetricExporter for OnExportRuntime<E>
{
    async fn export(
        &self,
        metrics: &opentelemetry_sdk::metrics::data::ResourceMetrics,
    ) -> opentelemetry_sdk::error::OTelSdkResult {
        in_export_context(self.handle.clone(), self.inner.export(metrics)).await
    }

    fn force_flush(&self) -> opentelemetry_sdk::error::OTelSdkResult {
        let _context = self.handle.enter();
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> opentelemetry_sdk::error::OTelSdkResult {
        let _context = self.handle.enter();
        self.inner.shutdown_with_timeout(timeout)
    }

    fn temporality(&self) -> opentelemetry_sdk::metrics::Temporality {
        self.inner.temporality()
    }
}

impl ExportClient {
    pub(crate) fn new() -> Result<Self, String> {
        let runtime = export_runtime()?;
        let client = reqwest::Client::builder()
            .timeout(EXPORT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("the OTLP HTTP client: {e}"))?;
        Ok(Self { client, runtime })
    }
}

#[async_trait]
impl HttpClient for ExportClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let call = self.client.request(parts.method, parts.uri.to_string()).headers(parts.headers).body(body);
        let answer = self.runtime.spawn(async move {
            let mut response = call.send().await?;
            let status = response.status();
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await? {
                if body.len() + chunk.len() > MAX_COLLECTOR_ANSWER {
                    break;
                }
                body.extend_from_slice(&chunk);
            }
            Ok::<_, reqwest::Error>((status, Bytes::from(body)))
        });
        let (status, body) = answer.await??;
        let mut out = Response::new(body);
        *out.status_mut() = status;
        Ok(out)
    }
}

/// The provider of this process's spans: built by [`build_provider`], flushed by the host.
pub(crate) fn build_provider(settings: &OtelSettings, default_service: &str) -> Result<SdkTracerProvider, String> {
    use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};

    let failed = |e: opentelemetry_otlp::ExporterBuildError| format!("the OTLP span exporter: {e}");
    let builder = SdkTracerProvider::builder();
    let builder = match protocol(settings)? {
        Protocol::Http => {
            let mut exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .with_http_client(ExportClient::new()?);
            if let Some(base) = &settings.endpoint {
                exporter = exporter.with_endpoint(format!("{}/v1/traces", base.trim_end_matches('/')));
            }
            builder.with_batch_exporter(exporter.build().map_err(failed)?)
        }
        #[cfg(feature = "otlp-grpc")]
        Protocol::Grpc => {
            let exporter = OnExportRuntime::build(|| {
                let mut exporter = opentelemetry_otlp::SpanExporter::builder().with_tonic();
                if let Some(base) = &settings.endpoint {
                    exporter = exporter.with_endpoint(base.clone());
                }
                exporter.build()
            })?;
            builder.with_batch_exporter(exporter.map_err(failed)?)
        }
    };
    let sampler = HostSampler::new(settings.sampling()?);
    Ok(builder.with_resource(resource(settings, default_service)).with_sampler(sampler).build())
}

/// The SDK's sampler under head sampling ([`crate::sampling`]): a SERVER or CONSUMER span is only
/// opened once its trace was chosen where it entered the host, so it is recorded; every other span
/// follows its parent; a span without one (the CLI's, the AWS SDK's background calls) is a new
/// trace, kept at the policy's ratio.
#[derive(Debug, Clone)]
struct HostSampler {
    others: Sampler,
}

impl HostSampler {
    fn new(sampling: Sampling) -> Self {
        let root = match sampling.ratio {
            r if r >= 1.0 => Sampler::AlwaysOn,
            r if r <= 0.0 => Sampler::AlwaysOff,
            r => Sampler::TraceIdRatioBased(r),
        };
        Self { others: Sampler::ParentBased(Box::new(root)) }
    }
}

impl ShouldSample for HostSampler {
    fn should_sample(
        &self,
        parent_context: Option<&opentelemetry::Context>,
        trace_id: TraceId,
        name: &str,
        span_kind: &SpanKind,
        attributes: &[opentelemetry::KeyValue],
        links: &[opentelemetry::trace::Link],
    ) -> SamplingResult {
        match span_kind {
            SpanKind::Server | SpanKind::Consumer => SamplingResult {
                decision: SamplingDecision::RecordAndSample,
                attributes: Vec::new(),
                trace_state: parent_context
                    .filter(|cx| cx.has_active_span())
                    .map(|cx| cx.span().span_context().trace_state().clone())
                    .unwrap_or_default(),
            },
            _ => self.others.should_sample(parent_context, trace_id, name, span_kind, attributes, links),
        }
    }
}

/// How the exporters reach the collector.
pub(crate) enum Protocol {
    Http,
    #[cfg(feature = "otlp-grpc")]
    Grpc,
}

/// `OTEL_EXPORTER_OTLP_PROTOCOL` (or the flag): what this build can send.
pub(crate) fn protocol(settings: &OtelSettings) -> Result<Protocol, String> {
    match settings.protocol.as_deref().unwrap_or("http/protobuf") {
        "http/protobuf" => Ok(Protocol::Http),
        #[cfg(feature = "otlp-grpc")]
        "grpc" => Ok(Protocol::Grpc),
        other => Err(format!(
            "OTEL_EXPORTER_OTLP_PROTOCOL={other} is not supported by this build (use http/protobuf{})",
            if cfg!(feature = "otlp-grpc") { " or grpc" } else { "" }
        )),
    }
}

/// The resource spans and metrics are exported under: `OTEL_SERVICE_NAME` (or the flag, or the
/// host's name) and `OTEL_RESOURCE_ATTRIBUTES`.
pub(crate) fn resource(settings: &OtelSettings, default_service: &str) -> Resource {
    let mut resource = Resource::builder();
    if var("OTEL_SERVICE_NAME").is_none() {
        resource =
            resource.with_service_name(settings.service_name.clone().unwrap_or_else(|| default_service.to_string()));
    }
    resource.build()
}

/// True unless `OTEL_METRICS_EXPORTER=none`: metrics go where traces go.
pub(crate) fn metrics_enabled() -> bool {
    var("OTEL_METRICS_EXPORTER").is_none_or(|v| v != "none")
}

/// The tracer the `tracing` layer writes to.
pub(crate) fn tracer(provider: &SdkTracerProvider) -> opentelemetry_sdk::trace::Tracer {
    provider.tracer("a2a-serverless")
}

/// [`Propagation`] over `tracing-opentelemetry`'s span contexts.
pub(crate) struct OtelPropagation;

impl Propagation for OtelPropagation {
    fn current(&self) -> Option<TraceContext> {
        let cx = tracing::Span::current().context();
        let span = cx.span();
        let sc = span.span_context();
        if !sc.is_valid() {
            return None;
        }
        let parent = format!("00-{}-{}-{:02x}", sc.trace_id(), sc.span_id(), sc.trace_flags().to_u8());
        let state = sc.trace_state().header();
        TraceContext::parse(&parent, Some(state.as_str()))
    }

    fn current_sampled(&self) -> Option<bool> {
        let cx = tracing::Span::current().context();
        let span = cx.span();
        let sc = span.span_context();
        sc.is_valid().then(|| sc.is_sampled())
    }

    fn event(&self, span: &tracing::Span, name: &'static str, attributes: Vec<(&'static str, EventValue)>) {
        let attributes = attributes
            .into_iter()
            .map(|(k, v)| match v {
                EventValue::Str(s) => opentelemetry::KeyValue::new(k, s),
                EventValue::Int(i) => opentelemetry::KeyValue::new(k, i),
                EventValue::Bool(b) => opentelemetry::KeyValue::new(k, b),
            })
            .collect();
        span.add_event(name, attributes);
    }

    fn rename(&self, span: &tracing::Span, name: &'static str) {
        span.context().span().update_name(name);
    }

    fn set_parent(&self, span: &tracing::Span, parent: &TraceContext) {
        let (Ok(trace_id), Ok(span_id)) = (TraceId::from_hex(parent.trace_id()), SpanId::from_hex(parent.parent_id()))
        else {
            return;
        };
        let flags = if parent.sampled() { TraceFlags::SAMPLED } else { TraceFlags::default() };
        let state = parent.tracestate().and_then(|s| s.parse::<TraceState>().ok()).unwrap_or_default();
        let remote = SpanContext::new(trace_id, span_id, flags, true, state);
        let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(remote));
    }
}
