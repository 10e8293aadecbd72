//! The process's `tracing` subscriber (feature `otel`): log lines (human or JSON) and, when tracing
//! is on, the OpenTelemetry layer. A log line written inside a request's or a turn's span carries
//! `trace_id`, `span_id`, `task_id` and `context_id`, so it leads to its trace.

use std::fmt::{self, Write as _};

use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::{FormatEvent, FormatFields, Writer};
use tracing_subscriber::fmt::FmtContext;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::{EnvFilter, Layer};

use crate::emf::{Emf, EmfSettings};
use crate::metrics::Sink;
use crate::otel::{self, OtelSettings};
use crate::otel_metrics::{self, OtelMetrics};
use crate::spans::attr;

/// How log lines look and where they go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// One line per event for people (colours on a terminal).
    Human,
    /// One JSON object per line (CloudWatch, log shippers).
    Json,
}

/// Where log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogTarget {
    Stdout,
    Stderr,
}

/// The subscriber's settings: logs, and the OpenTelemetry pipeline.
#[derive(Debug, Clone)]
pub struct Settings {
    pub format: LogFormat,
    pub target: LogTarget,
    /// Timestamps on log lines (off on Lambda, whose log service stamps every line).
    pub timestamps: bool,
    /// The service's name in traces when `OTEL_SERVICE_NAME` does not give one.
    pub service: String,
    pub otel: OtelSettings,
    /// CloudWatch EMF metrics on stdout, flushed with the spans (Lambda).
    pub emf: Option<EmfSettings>,
}

/// The installed subscriber; keeps the span provider so that it can be flushed.
#[derive(Debug)]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
    meters: Option<SdkMeterProvider>,
}

/// What the OpenTelemetry layer takes: the host's spans (info) and the AWS SDK's per-call spans
/// (`DynamoDB.GetItem`, `SQS.SendMessage`, ..., which the SDK opens at debug level); never the
/// exporter's own internals (which would trace their own exports) or transport chatter.
const TRACED: &str =
    "info,aws_sdk_dynamodb=debug,aws_sdk_sqs=debug,aws_sdk_kms=debug,opentelemetry=off,opentelemetry_sdk=off,opentelemetry_otlp=off,hyper=off,h2=off,reqwest=off,tonic=off,tower=off,lambda_runtime=off,lambda_runtime_api_client=off";

impl Telemetry {
    /// Installs the subscriber for the process (once; a second call fails). Log level from
    /// `RUST_LOG` (default `info`).
    pub fn init(settings: Settings) -> Result<Self, String> {
        let (telemetry, dispatch) = Self::build(settings)?;
        tracing::dispatcher::set_global_default(dispatch)
            .map_err(|e| format!("installing the tracing subscriber: {e}"))?;
        Ok(telemetry)
    }

    /// The subscriber as a [`tracing::Dispatch`] for the caller to install (a test sets it as the
    /// thread's default); the trace propagation and the metric sinks are installed for the process.
    pub fn build(settings: Settings) -> Result<(Self, tracing::Dispatch), String> {
        let provider =
            if settings.otel.enabled() { Some(otel::build_provider(&settings.otel, &settings.service)?) } else { None };
        let mut sinks: Vec<Box<dyn Sink>> = Vec::new();
        let meters = if settings.otel.enabled() && otel::metrics_enabled() {
            let resource = otel::resource(&settings.otel, &settings.service);
            let meters = otel_metrics::build_provider(&settings.otel, resource)?;
            sinks.push(Box::new(OtelMetrics::new(&meters)));
            Some(meters)
        } else {
            None
        };
        if let Some(emf) = settings.emf.clone() {
            sinks.push(Box::new(Emf::new(emf)));
        }
        let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
        let format = Correlated { json: settings.format == LogFormat::Json, timestamps: settings.timestamps };
        let writer = settings.target;
        let logs = tracing_subscriber::fmt::layer()
            .with_ansi(settings.format == LogFormat::Human && writer == LogTarget::Stderr && is_terminal())
            .event_format(format)
            .with_writer(move || -> Box<dyn std::io::Write> {
                match writer {
                    LogTarget::Stdout => Box::new(std::io::stdout()),
                    LogTarget::Stderr => Box::new(std::io::stderr()),
                }
            })
            .with_filter(filter);
        let traces = provider.as_ref().map(|p| {
            tracing_opentelemetry::layer()
                .with_tracer(otel::tracer(p))
                .with_tracked_inactivity(false)
                .with_filter(EnvFilter::new(TRACED))
        });
        // Both tracing layers only exist (and only enable callsites, under the same filter) while
        // tracing is on: an unfiltered layer would enable every debug callsite of every crate.
        let correlation = provider.as_ref().map(|_| Correlation.with_filter(EnvFilter::new(TRACED)));
        let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(logs).with(correlation).with(traces));
        if provider.is_some() {
            crate::sampling::install(settings.otel.sampling()?);
            crate::context::install(Box::new(otel::OtelPropagation));
        }
        crate::metrics::install(sinks);
        Ok((Self { provider, meters }, dispatch))
    }

    /// True when spans are exported.
    pub fn is_tracing(&self) -> bool {
        self.provider.is_some()
    }

    /// Sends every finished span and the metrics now (blocks until the collector answered or the
    /// export timed out; EMF lines are written).
    pub fn flush(&self) {
        if let Some(p) = &self.provider {
            if let Err(e) = p.force_flush() {
                tracing::warn!(target: "a2a::telemetry", error = %e, "flushing spans failed");
            }
        }
        if let Some(m) = &self.meters {
            if let Err(e) = m.force_flush() {
                tracing::warn!(target: "a2a::telemetry", error = %e, "flushing metrics failed");
            }
        }
        crate::metrics::flush();
    }

    /// Flushes and stops the exporters (at shutdown).
    pub fn shutdown(&self) {
        crate::metrics::flush();
        if let Some(p) = &self.provider {
            let _ = p.shutdown();
        }
        if let Some(m) = &self.meters {
            let _ = m.shutdown();
        }
    }
}

fn is_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal()
}

/// The task and context a span is about, kept by [`Correlation`] for the log lines inside it.
#[derive(Debug, Default, Clone)]
struct Ids {
    task_id: Option<String>,
    context_id: Option<String>,
}

impl Visit for Ids {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            attr::TASK_ID => self.task_id = Some(value.to_string()),
            attr::CONTEXT_ID => self.context_id = Some(value.to_string()),
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if matches!(field.name(), attr::TASK_ID | attr::CONTEXT_ID) {
            self.record_str(field, format!("{value:?}").trim_matches('"'));
        }
    }
}

/// Keeps each span's task and context ids (as they are recorded) for the log lines inside it.
struct Correlation;

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Correlation {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut ids = Ids::default();
        attrs.record(&mut ids);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(ids);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            let mut ext = span.extensions_mut();
            if let Some(ids) = ext.get_mut::<Ids>() {
                values.record(ids);
            }
        }
    }
}

/// The usual formats (tracing-subscriber's full and JSON ones), with the correlation ids added.
struct Correlated {
    json: bool,
    timestamps: bool,
}

impl<S, N> FormatEvent<S, N> for Correlated
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let ids = correlation(ctx);
        if ids.is_empty() {
            return self.base(ctx, writer.by_ref(), event);
        }
        // The ids go inside the line: it is formatted into a buffer first (without colours).
        let mut line = String::new();
        self.base(ctx, Writer::new(&mut line), event)?;
        let body = line.trim_end_matches('\n');
        if self.json {
            let Some(open) = body.strip_suffix('}') else {
                return writer.write_str(&line);
            };
            let mut extra = String::new();
            for (key, value) in &ids {
                write!(extra, ",\"{key}\":{}", json_string(value))?;
            }
            writeln!(writer, "{open}{extra}}}")
        } else {
            let extra: Vec<String> = ids.iter().map(|(k, v)| format!("{k}={v}")).collect();
            writeln!(writer, "{body} {}", extra.join(" "))
        }
    }
}

impl Correlated {
    /// The line as tracing-subscriber's full or JSON format writes it.
    fn base<S, N>(&self, ctx: &FmtContext<'_, S, N>, out: Writer<'_>, event: &Event<'_>) -> fmt::Result
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
        N: for<'a> FormatFields<'a> + 'static,
    {
        let full = tracing_subscriber::fmt::format();
        let json = full.clone().json().with_current_span(false).with_span_list(false);
        match (self.json, self.timestamps) {
            (true, true) => json.format_event(ctx, out, event),
            (true, false) => json.without_time().format_event(ctx, out, event),
            (false, true) => full.format_event(ctx, out, event),
            (false, false) => full.without_time().format_event(ctx, out, event),
        }
    }
}

/// `trace_id`, `span_id` (of the innermost traced span) and the nearest `task_id` and `context_id`
/// of the spans the event is in.
fn correlation<S, N>(ctx: &FmtContext<'_, S, N>) -> Vec<(&'static str, String)>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    let mut out = Vec::new();
    let Some(scope) = ctx.event_scope() else {
        return out;
    };
    let mut spans = Vec::new();
    let mut ids = Ids::default();
    for span in scope {
        spans.push(span.id());
        if let Some(found) = span.extensions().get::<Ids>() {
            if ids.task_id.is_none() {
                ids.task_id.clone_from(&found.task_id);
            }
            if ids.context_id.is_none() {
                ids.context_id.clone_from(&found.context_id);
            }
        }
    }
    // The innermost span the OpenTelemetry layer traces (transport spans it skips have no context).
    let traced = spans.iter().filter(|_| crate::context::is_on()).find_map(|id| {
        let cx = tracing::dispatcher::get_default(|d| tracing_opentelemetry::get_otel_context(id, d))?;
        let sc = cx.span().span_context().clone();
        sc.is_valid().then_some(sc)
    });
    if let Some(sc) = traced {
        out.push(("trace_id", sc.trace_id().to_string()));
        out.push(("span_id", sc.span_id().to_string()));
    }
    if let Some(task) = ids.task_id {
        out.push(("task_id", task));
    }
    if let Some(context) = ids.context_id {
        out.push(("context_id", context));
    }
    out
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}
