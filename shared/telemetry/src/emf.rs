//! CloudWatch Embedded Metric Format (feature `emf`): on Lambda, metrics without a collector. The
//! measurements of an invocation are held and written at its end as EMF documents on stdout (one
//! per metric and dimension values; durations as value arrays of at most 100, counts summed), which
//! CloudWatch Logs turns into metrics. Namespace, dimensions and names: `docs/observability.md`.

use std::collections::BTreeMap;
use std::io::Write as _;

use parking_lot::Mutex;
use serde_json::{json, Map, Value};

use crate::metrics::{attempt_label, Measurement, Outcome, Sink};

/// EMF's limit of values per metric in one document.
const MAX_VALUES: usize = 100;

/// Where EMF metrics go: `A2A_METRICS=emf` (the Lambda functions' default), `A2A_METRICS_NAMESPACE`
/// (`A2A`), `A2A_METRICS_SERVICE` (the `Service` dimension; the SAM template sets the stack name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmfSettings {
    pub namespace: String,
    pub service: String,
}

impl EmfSettings {
    /// `None` when `A2A_METRICS` is `off`; `default_service` when `A2A_METRICS_SERVICE` is unset.
    pub fn from_env(default_service: &str) -> Option<Self> {
        let var = |k: &str| std::env::var(k).ok().map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        if var("A2A_METRICS").is_some_and(|v| v.eq_ignore_ascii_case("off")) {
            return None;
        }
        Some(Self {
            namespace: var("A2A_METRICS_NAMESPACE").unwrap_or_else(|| "A2A".into()),
            service: var("A2A_METRICS_SERVICE").unwrap_or_else(|| default_service.to_string()),
        })
    }
}

/// One metric with one set of dimension values.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    name: &'static str,
    unit: &'static str,
    dimensions: Vec<(&'static str, String)>,
    /// The dimension sets (each after `Service`) CloudWatch aggregates by.
    sets: &'static [&'static [&'static str]],
}

impl Key {
    /// Counts are summed; durations kept as values.
    fn summed(&self) -> bool {
        self.unit == "Count"
    }
}

pub(crate) struct Emf {
    settings: EmfSettings,
    held: Mutex<BTreeMap<Key, Vec<f64>>>,
}

impl Emf {
    pub(crate) fn new(settings: EmfSettings) -> Self {
        Self { settings, held: Mutex::default() }
    }

    fn add(&self, key: Key, value: f64) {
        let mut held = self.held.lock();
        let values = held.entry(key.clone()).or_default();
        match (key.summed(), values.first_mut()) {
            (true, Some(sum)) => *sum += value,
            _ => values.push(value),
        }
    }

    /// The EMF documents of everything held, emptying it.
    fn documents(&self, timestamp_ms: i64) -> Vec<Value> {
        let held = std::mem::take(&mut *self.held.lock());
        let mut out = Vec::new();
        for (key, values) in held {
            for chunk in values.chunks(MAX_VALUES) {
                let sets: Vec<Vec<&str>> = key
                    .sets
                    .iter()
                    .map(|set| std::iter::once("Service").chain(set.iter().copied()).collect())
                    .collect();
                let mut doc = Map::new();
                doc.insert(
                    "_aws".into(),
                    json!({
                        "Timestamp": timestamp_ms,
                        "CloudWatchMetrics": [{
                            "Namespace": self.settings.namespace,
                            "Dimensions": sets,
                            "Metrics": [{"Name": key.name, "Unit": key.unit}],
                        }],
                    }),
                );
                doc.insert("Service".into(), json!(self.settings.service));
                for (name, value) in &key.dimensions {
                    doc.insert((*name).into(), json!(value));
                }
                let value = if chunk.len() == 1 { json!(chunk[0]) } else { json!(chunk) };
                doc.insert(key.name.into(), value);
                out.push(Value::Object(doc));
            }
        }
        out
    }
}

fn ms(seconds: f64) -> f64 {
    (seconds * 1_000_000.0).round() / 1000.0
}

fn key(
    name: &'static str,
    unit: &'static str,
    dimensions: Vec<(&'static str, String)>,
    sets: &'static [&'static [&'static str]],
) -> Key {
    Key { name, unit, dimensions, sets }
}

impl Sink for Emf {
    fn record(&self, m: &Measurement<'_>) {
        match *m {
            Measurement::Operation { operation, outcome, seconds, .. } => {
                let dims = vec![("Operation", operation.to_string()), ("Outcome", outcome.as_str().to_string())];
                const SETS: &[&[&str]] = &[&["Operation"], &["Operation", "Outcome"], &["Outcome"]];
                self.add(key("OperationDuration", "Milliseconds", dims, SETS), ms(seconds));
                if outcome == Outcome::ServerError {
                    const ERRORS: &[&[&str]] = &[&["Operation"], &[]];
                    self.add(key("OperationErrors", "Count", vec![("Operation", operation.to_string())], ERRORS), 1.0);
                }
            }
            Measurement::TaskFinished { state } => {
                self.add(key("TasksFinished", "Count", vec![("State", state.to_string())], &[&["State"]]), 1.0);
            }
            Measurement::Turn { state, seconds } => {
                let dims = vec![("State", state.to_string())];
                self.add(key("TurnDuration", "Milliseconds", dims, &[&["State"]]), ms(seconds));
            }
            Measurement::QueueLag { queue, seconds } => {
                let dims = vec![("Queue", queue.as_str().to_string())];
                self.add(key("QueueLag", "Milliseconds", dims, &[&["Queue"]]), ms(seconds));
            }
            Measurement::PushDelivery { outcome, attempt } => {
                let dims = vec![("Outcome", outcome.to_string()), ("Attempt", attempt_label(attempt).to_string())];
                const SETS: &[&[&str]] = &[&["Outcome"], &["Outcome", "Attempt"]];
                self.add(key("PushDeliveries", "Count", dims, SETS), 1.0);
            }
            Measurement::Store { operation, seconds } => {
                let dims = vec![("Operation", operation.to_string())];
                self.add(key("StoreDuration", "Milliseconds", dims, &[&["Operation"]]), ms(seconds));
            }
            // A gauge of open streams means nothing per invocation: OTLP only.
            Measurement::Streams { .. } => {}
        }
    }

    fn flush(&self) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let docs = self.documents(now);
        if docs.is_empty() {
            return;
        }
        let mut out = std::io::stdout().lock();
        for doc in docs {
            let _ = writeln!(out, "{doc}");
        }
        let _ = out.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spans::Queue;

    fn emf() -> Emf {
        Emf::new(EmfSettings { namespace: "A2A".into(), service: "stack".into() })
    }

    #[test]
    fn an_invocation_becomes_emf_documents() {
        let e = emf();
        for seconds in [0.012, 0.030] {
            e.record(&Measurement::Operation { operation: "GetTask", outcome: Outcome::Ok, error: None, seconds });
        }
        e.record(&Measurement::Operation {
            operation: "SendMessage",
            outcome: Outcome::ServerError,
            error: Some("INTERNAL"),
            seconds: 0.5,
        });
        e.record(&Measurement::PushDelivery { outcome: "failed", attempt: 7 });
        e.record(&Measurement::PushDelivery { outcome: "failed", attempt: 6 });
        e.record(&Measurement::QueueLag { queue: Queue::Tasks, seconds: 1.5 });
        let docs = e.documents(1_700_000_000_000);
        let find = |name: &str, dim: (&str, &str)| {
            docs.iter()
                .find(|d| d.get(name).is_some() && d[dim.0] == dim.1)
                .cloned()
                .unwrap_or_else(|| panic!("{name}"))
        };
        let get = find("OperationDuration", ("Operation", "GetTask"));
        assert_eq!(get["OperationDuration"], json!([12.0, 30.0]));
        assert_eq!(get["Service"], "stack");
        assert_eq!(get["Outcome"], "ok");
        let meta = &get["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(meta["Namespace"], "A2A");
        assert_eq!(meta["Metrics"][0], json!({"Name": "OperationDuration", "Unit": "Milliseconds"}));
        assert_eq!(
            meta["Dimensions"],
            json!([["Service", "Operation"], ["Service", "Operation", "Outcome"], ["Service", "Outcome"]])
        );
        assert_eq!(get["_aws"]["Timestamp"], 1_700_000_000_000_i64);
        let errors = find("OperationErrors", ("Operation", "SendMessage"));
        assert_eq!(errors["OperationErrors"], json!(1.0));
        assert_eq!(
            errors["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
            json!([["Service", "Operation"], ["Service"]])
        );
        // Counts of one key are summed into one value.
        let pushes = find("PushDeliveries", ("Attempt", "5+"));
        assert_eq!(pushes["PushDeliveries"], json!(2.0));
        assert_eq!(find("QueueLag", ("Queue", "tasks"))["QueueLag"], json!(1500.0));
        // Flushed: nothing is held any more.
        assert!(e.documents(0).is_empty());
    }

    #[test]
    fn values_are_chunked_at_emfs_limit() {
        let e = emf();
        for _ in 0..250 {
            e.record(&Measurement::Store { operation: "load", seconds: 0.001 });
        }
        let docs = e.documents(0);
        let sizes: Vec<usize> = docs.iter().map(|d| d["StoreDuration"].as_array().map_or(1, Vec::len)).collect();
        assert_eq!(sizes, vec![100, 100, 50]);
    }
}
