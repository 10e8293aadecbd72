//! W3C trace context (`traceparent`, `tracestate`) as the host carries it: read from a request's
//! headers (or, on AWS, from the X-Ray trace header), kept with a queued job, written into every call
//! the host makes. The conversion to and from X-Ray's `Root=1-…;Parent=…;Sampled=…` lives here too,
//! so that AWS's own service map joins the same trace.
//!
//! Nothing here depends on OpenTelemetry: the pipeline (feature `otel`) installs a [`Propagation`]
//! that turns the current span into a context and back; without one every function here is a no-op
//! that costs one atomic load.

use std::sync::OnceLock;

use http::{HeaderMap, HeaderValue};

/// The W3C header that carries the trace and the caller's span.
pub const TRACEPARENT: &str = "traceparent";
/// The W3C header that carries vendor-specific trace state.
pub const TRACESTATE: &str = "tracestate";
/// X-Ray's trace header (API Gateway, Lambda, the AWS SDKs).
pub const XRAY_HEADER: &str = "x-amzn-trace-id";
/// The SQS system attribute that carries X-Ray's trace header.
pub const AWS_TRACE_HEADER: &str = "AWSTraceHeader";

/// Longest `tracestate` kept (W3C: 32 members of at most 256 characters; 512 is what most
/// implementations propagate).
const MAX_TRACESTATE: usize = 512;

/// A span to continue: who called, in which trace. Always well-formed (built by [`Self::parse`],
/// also when deserialized).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "Carried")]
pub struct TraceContext {
    traceparent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tracestate: Option<String>,
}

/// The serialized form, checked on the way in.
#[derive(serde::Deserialize)]
struct Carried {
    traceparent: String,
    #[serde(default)]
    tracestate: Option<String>,
}

impl TryFrom<Carried> for TraceContext {
    type Error = &'static str;

    fn try_from(c: Carried) -> Result<Self, Self::Error> {
        Self::parse(&c.traceparent, c.tracestate.as_deref()).ok_or("a malformed traceparent")
    }
}

impl TraceContext {
    /// A `traceparent` (version 00 layout; a later version's extra fields are ignored as the W3C
    /// says) with an optional `tracestate`; `None` unless well-formed. A malformed `tracestate` is
    /// dropped, the parent kept.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<Self> {
        let t = traceparent.trim();
        let fields: Vec<&str> = t.split('-').collect();
        let [version, trace_id, parent_id, flags, ..] = fields.as_slice() else {
            return None;
        };
        let hex =
            |s: &str, len: usize| s.len() == len && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        let zero = |s: &str| s.bytes().all(|b| b == b'0');
        if !hex(version, 2) || *version == "ff" || (*version == "00" && fields.len() != 4) {
            return None;
        }
        if !hex(trace_id, 32) || zero(trace_id) || !hex(parent_id, 16) || zero(parent_id) || !hex(flags, 2) {
            return None;
        }
        let tracestate = tracestate
            .map(str::trim)
            .filter(|s| !s.is_empty() && s.len() <= MAX_TRACESTATE && s.bytes().all(|b| (0x20..0x7f).contains(&b)))
            .map(str::to_string);
        Some(Self { traceparent: format!("00-{trace_id}-{parent_id}-{flags}"), tracestate })
    }

    /// A fresh trace whose caller is `self` (the CLI starting a trace without a tracer): random
    /// trace and span ids, sampled.
    pub fn new_root() -> Self {
        let span = random_u128() as u64 | 1;
        Self { traceparent: format!("00-{:032x}-{span:016x}-01", random_u128()), tracestate: None }
    }

    /// The same caller in the same trace, not sampled (flags 00).
    pub fn unsampled(&self) -> Self {
        Self { traceparent: format!("{}-00", &self.traceparent[..52]), tracestate: self.tracestate.clone() }
    }

    pub fn traceparent(&self) -> &str {
        &self.traceparent
    }

    pub fn tracestate(&self) -> Option<&str> {
        self.tracestate.as_deref()
    }

    /// The 32 hex digits of the trace id.
    pub fn trace_id(&self) -> &str {
        &self.traceparent[3..35]
    }

    /// The 16 hex digits of the caller's span id.
    pub fn parent_id(&self) -> &str {
        &self.traceparent[36..52]
    }

    pub fn sampled(&self) -> bool {
        u8::from_str_radix(&self.traceparent[53..55], 16).is_ok_and(|f| f & 1 == 1)
    }

    /// From X-Ray's header (`Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1`);
    /// `None` without a root and a parent.
    pub fn from_xray(header: &str) -> Option<Self> {
        let (mut root, mut parent, mut sampled) = (None, None, false);
        for field in header.split(';') {
            match field.trim().split_once('=') {
                Some(("Root", v)) => root = Some(v),
                Some(("Parent", v)) => parent = Some(v),
                Some(("Sampled", v)) => sampled = v == "1",
                _ => {}
            }
        }
        let root = root?.strip_prefix("1-")?;
        let (epoch, unique) = root.split_once('-')?;
        let flags = if sampled { "01" } else { "00" };
        Self::parse(
            &format!(
                "00-{}{}-{}-{flags}",
                epoch.to_ascii_lowercase(),
                unique.to_ascii_lowercase(),
                parent?.to_ascii_lowercase()
            ),
            None,
        )
    }

    /// X-Ray's form of this context (what `AWSTraceHeader` carries).
    pub fn to_xray(&self) -> String {
        let trace = self.trace_id();
        let sampled = if self.sampled() { 1 } else { 0 };
        format!("Root=1-{}-{};Parent={};Sampled={sampled}", &trace[..8], &trace[8..], self.parent_id())
    }

    /// From a request's headers: `traceparent` (with `tracestate`), else X-Ray's header.
    pub fn from_headers(headers: &HeaderMap) -> Option<Self> {
        let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        Self::from_carrier(text(TRACEPARENT), text(TRACESTATE), text(XRAY_HEADER))
    }

    /// From what a carrier holds (headers, a queue message's attributes): `traceparent` (with
    /// `tracestate`) when present, else X-Ray's form.
    pub fn from_carrier(traceparent: Option<&str>, tracestate: Option<&str>, xray: Option<&str>) -> Option<Self> {
        match traceparent {
            Some(parent) => Self::parse(parent, tracestate),
            None => xray.and_then(Self::from_xray),
        }
    }

    /// Writes `traceparent` and `tracestate` into `headers`, replacing what was there.
    pub fn write_headers(&self, headers: &mut HeaderMap) {
        if let Ok(v) = HeaderValue::from_str(&self.traceparent) {
            headers.insert(TRACEPARENT, v);
        }
        match self.tracestate.as_deref().map(HeaderValue::from_str) {
            Some(Ok(v)) => {
                headers.insert(TRACESTATE, v);
            }
            _ => {
                headers.remove(TRACESTATE);
            }
        }
    }
}

/// 128 random bits (never all zero in practice): two v4 UUIDs (122 random bits each; the version
/// and variant bits are fixed), the second turned half-way round so that it covers the first's fixed
/// bits. A trace id's low bits decide ratio sampling, so none of them may be fixed.
fn random_u128() -> u128 {
    uuid::Uuid::new_v4().as_u128() ^ uuid::Uuid::new_v4().as_u128().rotate_left(64)
}

/// What the tracing pipeline provides: the current span as a context to send, and a received
/// context made the parent of a new span.
pub trait Propagation: Send + Sync + 'static {
    /// The context of the current span (`None` when it is not traced).
    fn current(&self) -> Option<TraceContext>;
    /// Whether the current span's trace is recorded (`None` outside any trace).
    fn current_sampled(&self) -> Option<bool>;
    /// Makes `parent` the parent of `span`, a span just created and not yet entered.
    fn set_parent(&self, span: &tracing::Span, parent: &TraceContext);
    /// Renames `span`, also once started (a server span learns its operation after it began).
    fn rename(&self, span: &tracing::Span, name: &'static str);
    /// Adds an event (a point in time with attributes) to `span`.
    fn event(&self, span: &tracing::Span, name: &'static str, attributes: Vec<(&'static str, EventValue)>);
}

/// An attribute value of a span event.
#[derive(Debug, Clone, PartialEq)]
pub enum EventValue {
    Str(String),
    Int(i64),
    Bool(bool),
}

static PROPAGATION: OnceLock<Box<dyn Propagation>> = OnceLock::new();

/// Installs the pipeline's propagation, once per process; `false` if one was installed already.
pub fn install(propagation: Box<dyn Propagation>) -> bool {
    PROPAGATION.set(propagation).is_ok()
}

/// True once a tracing pipeline is installed: spans are only opened then.
pub fn is_on() -> bool {
    PROPAGATION.get().is_some()
}

/// The context of the current span, to send with a call; `None` while tracing is off.
pub fn current() -> Option<TraceContext> {
    PROPAGATION.get()?.current()
}

/// True inside a trace that is not recorded (see [`crate::sampling`]): no span is opened there.
pub fn in_unsampled_trace() -> bool {
    PROPAGATION.get().and_then(|p| p.current_sampled()) == Some(false)
}

/// Writes the current span's context into an outgoing call's headers (nothing while tracing is off).
pub fn inject(headers: &mut HeaderMap) {
    if let Some(context) = current() {
        context.write_headers(headers);
    }
}

/// Adds an event to `span` (a no-op while tracing is off).
pub fn event(span: &tracing::Span, name: &'static str, attributes: Vec<(&'static str, EventValue)>) {
    if let Some(propagation) = PROPAGATION.get().filter(|_| !span.is_none()) {
        propagation.event(span, name, attributes);
    }
}

/// Renames `span` (a no-op while tracing is off).
pub fn rename(span: &tracing::Span, name: &'static str) {
    if let Some(propagation) = PROPAGATION.get() {
        propagation.rename(span, name);
    }
}

/// Makes `parent` (a request's or a queued job's context) the parent of `span`.
pub fn continue_trace(span: &tracing::Span, parent: Option<&TraceContext>) {
    if let (Some(propagation), Some(parent)) = (PROPAGATION.get(), parent) {
        propagation.set_parent(span, parent);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn parses_and_reads_a_traceparent() {
        let c = TraceContext::parse(PARENT, Some("congo=t61rcWkgMzE")).expect("valid");
        assert_eq!(c.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(c.parent_id(), "00f067aa0ba902b7");
        assert!(c.sampled());
        assert_eq!(c.tracestate(), Some("congo=t61rcWkgMzE"));
        let unsampled = TraceContext::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", None);
        assert!(!unsampled.expect("valid").sampled());
    }

    #[test]
    fn refuses_malformed_traceparents() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceContext::parse(bad, None), None, "{bad:?}");
        }
        // A later version may append fields; the known ones are kept.
        let later = TraceContext::parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what", None);
        assert_eq!(later.expect("valid").traceparent(), PARENT);
        // A tracestate that is not printable ASCII, or too long, is dropped; the parent is kept.
        let c = TraceContext::parse(PARENT, Some("a=b\u{7}")).expect("valid");
        assert_eq!(c.tracestate(), None);
        let c = TraceContext::parse(PARENT, Some(&"a=b,".repeat(200))).expect("valid");
        assert_eq!(c.tracestate(), None);
    }

    #[test]
    fn converts_to_and_from_xray() {
        let c = TraceContext::parse(PARENT, None).expect("valid");
        let xray = c.to_xray();
        assert_eq!(xray, "Root=1-4bf92f35-77b34da6a3ce929d0e0e4736;Parent=00f067aa0ba902b7;Sampled=1");
        assert_eq!(TraceContext::from_xray(&xray), Some(c));
        // Lambda's variant with a lineage field and no Sampled: unsampled.
        let lambda = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Lineage=a87bd80c:0";
        let c = TraceContext::from_xray(lambda).expect("valid");
        assert_eq!(c.traceparent(), "00-5759e988bd862e3fe1be46a994272793-53995c3f42cd8ad8-00");
        assert_eq!(TraceContext::from_xray("Root=1-5759e988-bd862e3fe1be46a994272793"), None);
        assert_eq!(TraceContext::from_xray("Self=1-5759e988-bd862e3fe1be46a994272793"), None);
    }

    #[test]
    fn headers_prefer_traceparent_over_xray() {
        let mut headers = HeaderMap::new();
        headers.insert(
            XRAY_HEADER,
            HeaderValue::from_static("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"),
        );
        assert_eq!(TraceContext::from_headers(&headers).expect("x-ray").trace_id(), "5759e988bd862e3fe1be46a994272793");
        headers.insert(TRACEPARENT, HeaderValue::from_static(PARENT));
        let c = TraceContext::from_headers(&headers).expect("w3c");
        assert_eq!(c.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        let mut out = HeaderMap::new();
        out.insert(TRACESTATE, HeaderValue::from_static("stale=1"));
        c.write_headers(&mut out);
        assert_eq!(out.get(TRACEPARENT).and_then(|v| v.to_str().ok()), Some(PARENT));
        assert!(out.get(TRACESTATE).is_none());
    }

    #[test]
    fn a_new_root_is_well_formed_and_fresh() {
        let (a, b) = (TraceContext::new_root(), TraceContext::new_root());
        assert_eq!(TraceContext::parse(a.traceparent(), None).as_ref(), Some(&a));
        assert!(a.sampled());
        assert_ne!(a.trace_id(), b.trace_id());
        let quiet = a.unsampled();
        assert!(!quiet.sampled());
        assert_eq!((quiet.trace_id(), quiet.parent_id()), (a.trace_id(), a.parent_id()));
    }

    #[test]
    fn without_a_pipeline_nothing_is_injected() {
        let mut headers = HeaderMap::new();
        inject(&mut headers);
        assert!(headers.is_empty());
        assert_eq!(current(), None);
    }
}
