//! Head sampling: whether a trace is recorded is decided once, where it enters the host (a request's
//! SERVER span, a job's CONSUMER span), and everything under it follows. An unsampled trace opens no
//! further spans: its entry is a bare span that only carries the trace, so that the calls made under
//! it still pass `traceparent` on (sampled flag 0, as the W3C asks), and the agent, the webhook and
//! the next hop agree not to record it either.
//!
//! The policy is the standard one (`OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`, or a ratio set
//! by a flag); the pipeline's sampler records what the entry decided and lets other spans follow
//! their parent (see `otel::HostSampler`).

use std::sync::OnceLock;

use crate::context::TraceContext;

/// Which traces are recorded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampling {
    /// A caller's decision (the sampled flag of its `traceparent`) is followed.
    pub parent_based: bool,
    /// Share of the traces that start here (or whose caller is not followed) that are recorded,
    /// 0 to 1.
    pub ratio: f64,
}

impl Default for Sampling {
    /// `parentbased_always_on`: the OpenTelemetry default.
    fn default() -> Self {
        Self { parent_based: true, ratio: 1.0 }
    }
}

impl Sampling {
    /// Parent-based with a share of new traces (the `--trace-sample-ratio` flag).
    pub fn ratio(ratio: f64) -> Result<Self, String> {
        if !(0.0..=1.0).contains(&ratio) {
            return Err(format!("the trace sample ratio must be between 0 and 1, not {ratio}"));
        }
        Ok(Self { parent_based: true, ratio })
    }

    /// From `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG` (the OpenTelemetry names; `None` for
    /// the default). Samplers this host cannot run (`jaeger_remote`, `xray`) are refused by name.
    pub fn parse(sampler: Option<&str>, arg: Option<&str>) -> Result<Self, String> {
        let ratio = || -> Result<f64, String> {
            match arg {
                None => Ok(1.0),
                Some(a) => a
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|r| (0.0..=1.0).contains(r))
                    .ok_or_else(|| format!("OTEL_TRACES_SAMPLER_ARG must be a ratio between 0 and 1, not {a:?}")),
            }
        };
        let (parent_based, ratio) = match sampler.map(str::trim).unwrap_or("parentbased_always_on") {
            "always_on" => (false, 1.0),
            "always_off" => (false, 0.0),
            "traceidratio" => (false, ratio()?),
            "parentbased_always_on" => (true, 1.0),
            "parentbased_always_off" => (true, 0.0),
            "parentbased_traceidratio" => (true, ratio()?),
            other => {
                return Err(format!(
                    "OTEL_TRACES_SAMPLER {other:?} is not supported here (always_on, always_off, traceidratio, \
                     parentbased_always_on, parentbased_always_off, parentbased_traceidratio)"
                ))
            }
        };
        Ok(Self { parent_based, ratio })
    }

    /// The decision for a trace entering here from `parent` (none: a new trace).
    pub fn head(&self, parent: Option<&TraceContext>) -> Head {
        match parent {
            Some(p) if self.parent_based => {
                if p.sampled() {
                    Head::Sampled
                } else {
                    Head::Unsampled(p.clone())
                }
            }
            _ if self.ratio >= 1.0 => Head::Sampled,
            _ => {
                // A new trace id (the caller's, if it is not followed), judged as OpenTelemetry's
                // `TraceIdRatioBased` judges one: its low 63 bits against the ratio.
                let fresh = TraceContext::new_root();
                let trace = parent.map_or(fresh.trace_id(), |p| p.trace_id());
                let low = u64::from_str_radix(&trace[16..], 16).unwrap_or(u64::MAX) >> 1;
                if (low as f64) < self.ratio * (1u64 << 63) as f64 {
                    Head::Sampled
                } else {
                    Head::Unsampled(parent.map_or_else(|| fresh.unsampled(), TraceContext::unsampled))
                }
            }
        }
    }
}

/// Whether a trace entering here is recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Head {
    Sampled,
    /// Not recorded; the context to carry on (sampled flag 0).
    Unsampled(TraceContext),
}

static SAMPLING: OnceLock<Sampling> = OnceLock::new();

/// Installs the process's policy (with the pipeline, once).
#[cfg(feature = "otel")]
pub(crate) fn install(sampling: Sampling) {
    let _ = SAMPLING.set(sampling);
}

/// The decision for a trace entering here, under the installed policy (every trace without one).
pub fn head(parent: Option<&TraceContext>) -> Head {
    SAMPLING.get().copied().unwrap_or_default().head(parent)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLED: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const UNSAMPLED: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";

    fn ctx(p: &str) -> TraceContext {
        TraceContext::parse(p, None).expect("valid")
    }

    #[test]
    fn reads_the_standard_variables() {
        assert_eq!(Sampling::parse(None, None), Ok(Sampling::default()));
        assert_eq!(
            Sampling::parse(Some("parentbased_traceidratio"), Some("0.25")),
            Ok(Sampling { parent_based: true, ratio: 0.25 })
        );
        assert_eq!(Sampling::parse(Some("always_off"), None), Ok(Sampling { parent_based: false, ratio: 0.0 }));
        assert_eq!(Sampling::parse(Some("traceidratio"), None), Ok(Sampling { parent_based: false, ratio: 1.0 }));
        let refused = Sampling::parse(Some("traceidratio"), Some("2")).expect_err("out of range");
        assert!(refused.contains("OTEL_TRACES_SAMPLER_ARG"), "{refused}");
        let refused = Sampling::parse(Some("xray"), None).expect_err("not supported");
        assert!(refused.contains("\"xray\""), "{refused}");
        assert!(Sampling::ratio(1.5).is_err());
    }

    #[test]
    fn a_caller_is_followed_when_parent_based() {
        let policy = Sampling { parent_based: true, ratio: 0.0 };
        assert_eq!(policy.head(Some(&ctx(SAMPLED))), Head::Sampled);
        assert_eq!(policy.head(Some(&ctx(UNSAMPLED))), Head::Unsampled(ctx(UNSAMPLED)));
        let always = Sampling { parent_based: false, ratio: 1.0 };
        assert_eq!(always.head(Some(&ctx(UNSAMPLED))), Head::Sampled);
    }

    #[test]
    fn new_traces_are_kept_in_proportion_and_carried_when_not() {
        let policy = Sampling { parent_based: true, ratio: 0.1 };
        let mut kept = 0;
        for _ in 0..10_000 {
            match policy.head(None) {
                Head::Sampled => kept += 1,
                Head::Unsampled(carried) => assert!(!carried.sampled()),
            }
        }
        assert!((700..=1300).contains(&kept), "{kept} of 10000 kept at 10%");
        assert!(matches!(Sampling { parent_based: true, ratio: 0.0 }.head(None), Head::Unsampled(_)));
        // A caller that is not followed keeps its trace id, unsampled.
        let off = Sampling { parent_based: false, ratio: 0.0 };
        assert_eq!(off.head(Some(&ctx(SAMPLED))), Head::Unsampled(ctx(UNSAMPLED)));
    }
}
