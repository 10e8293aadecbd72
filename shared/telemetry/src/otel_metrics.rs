//! The OpenTelemetry metrics sink (feature `otel`): one instrument per measurement, exported as OTLP
//! with the traces' settings (`/v1/metrics`) every `OTEL_METRIC_EXPORT_INTERVAL` (60 s by default)
//! and at every flush.

use opentelemetry::metrics::{Counter, Histogram, Meter, MeterProvider as _, UpDownCounter};
use opentelemetry::KeyValue;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::Resource;

use crate::metrics::{attempt_label, Measurement, Sink};
#[cfg(feature = "otlp-grpc")]
use crate::otel::OnExportRuntime;
use crate::otel::{protocol, ExportClient, OtelSettings, Protocol};
use crate::spans::attr;

/// Bucket bounds (seconds) for request, turn, lag and store durations: 1 ms to 5 min.
const SECONDS: [f64; 17] =
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

/// The meter provider exporting to the collector the traces go to.
pub(crate) fn build_provider(settings: &OtelSettings, resource: Resource) -> Result<SdkMeterProvider, String> {
    use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
    let failed = |e: opentelemetry_otlp::ExporterBuildError| format!("the OTLP metric exporter: {e}");
    let builder = SdkMeterProvider::builder();
    let builder = match protocol(settings)? {
        Protocol::Http => {
            let mut exporter = opentelemetry_otlp::MetricExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .with_http_client(ExportClient::new()?);
            if let Some(base) = &settings.endpoint {
                exporter = exporter.with_endpoint(format!("{}/v1/metrics", base.trim_end_matches('/')));
            }
            builder.with_periodic_exporter(exporter.build().map_err(failed)?)
        }
        #[cfg(feature = "otlp-grpc")]
        Protocol::Grpc => {
            let exporter = OnExportRuntime::build(|| {
                let mut exporter = opentelemetry_otlp::MetricExporter::builder().with_tonic();
                if let Some(base) = &settings.endpoint {
                    exporter = exporter.with_endpoint(base.clone());
                }
                exporter.build()
            })?;
            builder.with_periodic_exporter(exporter.map_err(failed)?)
        }
    };
    Ok(builder.with_resource(resource).build())
}

/// The instruments.
pub(crate) struct OtelMetrics {
    operation: Histogram<f64>,
    tasks: Counter<u64>,
    turn: Histogram<f64>,
    lag: Histogram<f64>,
    push: Counter<u64>,
    store: Histogram<f64>,
    streams: UpDownCounter<i64>,
}

impl OtelMetrics {
    pub(crate) fn new(provider: &SdkMeterProvider) -> Self {
        let meter: Meter = provider.meter("a2a-serverless");
        let seconds = |name: &'static str, description: &'static str| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(description)
                .with_boundaries(SECONDS.to_vec())
                .build()
        };
        Self {
            operation: seconds("a2a.server.operation.duration", "A2A operations answered, by operation and outcome"),
            tasks: meter
                .u64_counter("a2a.tasks.finished")
                .with_description("Tasks that reached a terminal state")
                .build(),
            turn: seconds("a2a.agent.turn.duration", "Turns of the agent, by the state they left the task in"),
            lag: seconds("a2a.queue.lag", "From a job's enqueue to the start of its processing"),
            push: meter.u64_counter("a2a.push.deliveries").with_description("Webhook delivery attempts").build(),
            store: seconds("a2a.store.operation.duration", "Calls to the task and push-config store"),
            streams: meter
                .i64_up_down_counter("a2a.server.active_streams")
                .with_description("Streams open (SendStreamingMessage, SubscribeToTask)")
                .build(),
        }
    }
}

fn kv(key: &'static str, value: &str) -> KeyValue {
    KeyValue::new(key, value.to_string())
}

impl Sink for OtelMetrics {
    fn record(&self, m: &Measurement<'_>) {
        match *m {
            Measurement::Operation { operation, outcome, error, seconds } => {
                let mut attrs = vec![kv(attr::OPERATION, operation), kv("a2a.outcome", outcome.as_str())];
                if let Some(reason) = error {
                    attrs.push(kv("error.type", reason));
                }
                self.operation.record(seconds, &attrs);
            }
            Measurement::TaskFinished { state } => self.tasks.add(1, &[kv(attr::STATUS, state)]),
            Measurement::Turn { state, seconds } => self.turn.record(seconds, &[kv(attr::STATUS, state)]),
            Measurement::QueueLag { queue, seconds } => {
                self.lag.record(seconds, &[kv("messaging.destination.name", queue.as_str())]);
            }
            Measurement::PushDelivery { outcome, attempt } => {
                self.push.add(1, &[kv("a2a.push.outcome", outcome), kv("a2a.push.attempt", attempt_label(attempt))])
            }
            Measurement::Store { operation, seconds } => {
                self.store.record(seconds, &[kv("a2a.store.operation", operation)]);
            }
            Measurement::Streams { operation, delta } => self.streams.add(delta, &[kv(attr::OPERATION, operation)]),
        }
    }
}
