//! The Lambda path of one trace, at a real OTLP receiver (hyper + the official opentelemetry-proto
//! messages): the send-message handler continues the caller's `traceparent`, the job carries the
//! trace through SQS (message attribute and `AWSTraceHeader`), and the task runner's handler
//! continues it; without `traceparent`, X-Ray's header (API Gateway's, and SQS's `AWSTraceHeader`)
//! is the parent. On moto.

use crate::common;
use crate::lambda::{fixture, pump_with, world};

use std::sync::Arc;
use std::time::Duration;

use a2a::lambda::http::{handle, Endpoint};
use a2a::telemetry::{LogFormat, LogTarget, OtelSettings, Settings, Telemetry};
use bytes::Bytes;
use http_body_util::BodyExt;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use parking_lot::Mutex;
use prost::Message as _;

/// A span as the receiver got it.
#[derive(Debug, Clone)]
struct Received {
    trace_id: String,
    span_id: String,
    parent: String,
    name: String,
    kind: i32,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An OTLP/HTTP receiver on 127.0.0.1 (`POST /v1/traces` with protobuf bodies), on a thread of its
/// own: a flush blocks the test's thread until the receiver answered.
fn otlp_receiver() -> (String, Arc<Mutex<Vec<Received>>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let spans: Arc<Mutex<Vec<Received>>> = Arc::default();
    let got = spans.clone();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    std::thread::spawn(move || {
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((stream, _)) = listener.accept().await else { return };
                let got = got.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let got = got.clone();
                        async move {
                            let path = req.uri().path().to_string();
                            let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                            if path == "/v1/traces" {
                                let export = ExportTraceServiceRequest::decode(body).unwrap();
                                for rs in export.resource_spans {
                                    for ss in rs.scope_spans {
                                        for s in ss.spans {
                                            got.lock().push(Received {
                                                trace_id: hex(&s.trace_id),
                                                span_id: hex(&s.span_id),
                                                parent: hex(&s.parent_span_id),
                                                name: s.name,
                                                kind: s.kind,
                                            });
                                        }
                                    }
                                }
                            }
                            Ok::<_, std::convert::Infallible>(hyper::Response::new(http_body_util::Full::new(
                                Bytes::new(),
                            )))
                        }
                    });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
                });
            }
        })
    });
    (format!("http://{addr}"), spans)
}

/// The spans of `trace_id`, once `want` of them arrived (bounded wait).
async fn trace_of(spans: &Mutex<Vec<Received>>, telemetry: &Telemetry, trace_id: &str, want: usize) -> Vec<Received> {
    for _ in 0..100 {
        telemetry.flush();
        let found: Vec<Received> = spans.lock().iter().filter(|s| s.trace_id == trace_id).cloned().collect();
        if found.len() >= want {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("trace {trace_id}: {:?}", spans.lock().iter().map(|s| (&s.name, &s.trace_id)).collect::<Vec<_>>());
}

fn one<'a>(spans: &'a [Received], name: &str, kind: SpanKind) -> &'a Received {
    let found: Vec<&Received> = spans.iter().filter(|s| s.name == name && s.kind == kind as i32).collect();
    assert_eq!(found.len(), 1, "{name}: {spans:?}");
    found[0]
}

fn send_event(message_id: &str, header: (&'static str, &str)) -> lambda_http::Request {
    let text = fixture("apigw-v2_send-message_ok.json").replace("fixture-message-1", message_id);
    let mut event = lambda_http::request::from_str(&text).unwrap();
    event.headers_mut().remove("x-amzn-trace-id");
    event.headers_mut().insert(header.0, header.1.parse().unwrap());
    event
}

#[tokio::test]
async fn the_lambda_functions_join_one_trace_through_sqs() {
    if !common::aws_available() {
        return;
    }
    let (endpoint, spans) = otlp_receiver();
    let settings = Settings {
        format: LogFormat::Json,
        target: LogTarget::Stderr,
        timestamps: false,
        service: "lambda-test".into(),
        otel: OtelSettings { endpoint: Some(endpoint), ..OtelSettings::default() },
        emf: None,
    };
    let (telemetry, dispatch) = Telemetry::build(settings).unwrap();
    // This (current-thread) test's tasks all see the subscriber; the rest of the binary does not.
    let _default = tracing::dispatcher::set_default(&dispatch);
    let w = world("").await;

    // traceparent: the send-message function continues it; the runner continues the job's trace.
    let (trace_id, caller) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let parent = format!("00-{trace_id}-{caller}-01");
    let resp = handle(&w.http.service, Endpoint::All, send_event("traced-1", ("traceparent", &parent))).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(pump_with(&w, true).await, 1);
    let trace = trace_of(&spans, &telemetry, trace_id, 4).await;
    let server = one(&trace, "SendMessage", SpanKind::Server);
    assert_eq!(server.parent, caller);
    let send = one(&trace, "send tasks", SpanKind::Producer);
    assert_eq!(send.parent, server.span_id);
    let process = one(&trace, "process tasks", SpanKind::Consumer);
    assert_eq!(process.parent, send.span_id);
    let turn = trace.iter().find(|s| s.name.starts_with("invoke_agent")).unwrap();
    assert_eq!(turn.parent, process.span_id);

    // X-Ray only: API Gateway's header is the request's parent, and SQS's AWSTraceHeader (the
    // message attributes withheld) the run's.
    let xray = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";
    let resp = handle(&w.http.service, Endpoint::All, send_event("traced-2", ("x-amzn-trace-id", xray))).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(pump_with(&w, false).await, 1);
    let trace = trace_of(&spans, &telemetry, "5759e988bd862e3fe1be46a994272793", 4).await;
    let server = one(&trace, "SendMessage", SpanKind::Server);
    assert_eq!(server.parent, "53995c3f42cd8ad8");
    let send = one(&trace, "send tasks", SpanKind::Producer);
    let process = one(&trace, "process tasks", SpanKind::Consumer);
    assert_eq!(process.parent, send.span_id);
}
