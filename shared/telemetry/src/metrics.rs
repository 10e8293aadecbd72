//! The host's metrics, measured where they happen and sent to the sinks the process installed:
//! OpenTelemetry instruments exported as OTLP (feature `otel`), CloudWatch Embedded Metric Format
//! lines on Lambda (feature `emf`). The names, units and attributes are listed in
//! `docs/observability.md`.
//!
//! With no sink installed every function here is one atomic load; callers take a start time only
//! when [`is_on`] (so no clock is read on a host that does not measure, e.g. at the edge).

use std::sync::OnceLock;

use crate::spans::Queue;

/// How an operation ended, by who is to blame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    /// A 4xx-class refusal: the request or the caller.
    ClientError,
    /// A 5xx-class failure: the server or a backend.
    ServerError,
}

impl Outcome {
    /// The outcome of an answer with `http_status` (the error table's status for a protocol error).
    pub fn of_status(http_status: u16) -> Self {
        match http_status {
            500.. => Self::ServerError,
            400.. => Self::ClientError,
            _ => Self::Ok,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::ClientError => "client_error",
            Self::ServerError => "server_error",
        }
    }
}

/// One measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Measurement<'a> {
    /// An A2A operation answered (a stream: once it started), `error` its reason when it failed.
    Operation { operation: &'a str, outcome: Outcome, error: Option<&'a str>, seconds: f64 },
    /// A task reached a terminal state.
    TaskFinished { state: &'a str },
    /// One turn of the agent, with the state it left the task in.
    Turn { state: &'a str, seconds: f64 },
    /// From a job's enqueue to the start of its processing.
    QueueLag { queue: Queue, seconds: f64 },
    /// A webhook delivery attempt (`delivered`, `failed`, `refused`).
    PushDelivery { outcome: &'a str, attempt: u32 },
    /// One call to the task or push-config store.
    Store { operation: &'a str, seconds: f64 },
    /// A stream opened (+1) or ended (-1).
    Streams { operation: &'a str, delta: i64 },
}

/// Where measurements go.
pub trait Sink: Send + Sync + 'static {
    fn record(&self, measurement: &Measurement<'_>);
    /// Sends what is held (end of a Lambda invocation).
    fn flush(&self) {}
}

static SINKS: OnceLock<Vec<Box<dyn Sink>>> = OnceLock::new();

/// Installs the process's sinks, once; `false` if installed already.
pub fn install(sinks: Vec<Box<dyn Sink>>) -> bool {
    !sinks.is_empty() && SINKS.set(sinks).is_ok()
}

/// True once a sink is installed.
pub fn is_on() -> bool {
    SINKS.get().is_some()
}

pub fn record(measurement: Measurement<'_>) {
    if let Some(sinks) = SINKS.get() {
        for sink in sinks {
            sink.record(&measurement);
        }
    }
}

/// Flushes every sink.
pub fn flush() {
    if let Some(sinks) = SINKS.get() {
        for sink in sinks {
            sink.flush();
        }
    }
}

/// A start time, taken only when something measures.
pub fn start() -> Option<std::time::Instant> {
    is_on().then(std::time::Instant::now)
}

/// Seconds since `started` (0 without a start).
pub fn seconds_since(started: Option<std::time::Instant>) -> f64 {
    started.map_or(0.0, |s| s.elapsed().as_secs_f64())
}

/// The attempt as a low-cardinality label: `1`..`4`, then `5+`.
pub fn attempt_label(attempt: u32) -> &'static str {
    match attempt {
        0 | 1 => "1",
        2 => "2",
        3 => "3",
        4 => "4",
        _ => "5+",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_follow_the_status_class() {
        assert_eq!(Outcome::of_status(200), Outcome::Ok);
        assert_eq!(Outcome::of_status(404), Outcome::ClientError);
        assert_eq!(Outcome::of_status(503), Outcome::ServerError);
        assert_eq!(attempt_label(1), "1");
        assert_eq!(attempt_label(9), "5+");
    }

    #[test]
    fn without_a_sink_nothing_measures() {
        assert!(!is_on());
        assert_eq!(start(), None);
        record(Measurement::TaskFinished { state: "TASK_STATE_COMPLETED" });
    }
}
