//! Webhook delivery (feature `push`): an HTTP client whose DNS resolver drops forbidden addresses,
//! so the address checked is the address connected to (no DNS rebinding), no redirects, a timeout;
//! and the embedded push worker that delivers each webhook's events in order, retrying with
//! backoff and keeping the jobs that exhaust their attempts in a dead-letter list.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tracing::Instrument;

use crate::ports::PushJob;
use crate::ssrf::{check_ip, check_literal, AllowList, WebhookHost};
use crate::webhook::{notification, RetryPolicy, WebhookPolicy};
use a2a_protocol::error::{A2aError, Result};
use a2a_signing::webhook::{Notification, WebhookSigner, SIGNATURE_HEADER};

/// How one attempt went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Delivered(u16),
    /// Worth retrying: a non-2xx answer, a timeout, a connection failure.
    Failed(String),
    /// Never deliverable: the URL is malformed or points where webhooks may not go.
    Refused(String),
}

struct GuardedResolver {
    allow: AllowList,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let allow = self.allow.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> = addrs.into_iter().filter(|a| check_ip(a.ip(), &allow).is_ok()).collect();
            if allowed.is_empty() {
                let err: Box<dyn std::error::Error + Send + Sync> =
                    format!("{host} resolves only to forbidden addresses").into();
                return Err(err);
            }
            Ok(Box::new(allowed.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// Sends notifications.
pub struct Deliverer {
    client: reqwest::Client,
    allow: AllowList,
    /// Signs each notification (`A2A-Notification-Signature`), when the agent has keys.
    signer: Option<WebhookSigner>,
}

/// An HTTP client that reaches only what `allow` and the SSRF guard let through: names resolved by
/// the guarded resolver (the address checked is the one connected to), no redirects. A caller still
/// judges an address host itself ([`check_literal`]): it never reaches the resolver.
pub fn guarded_client(allow: &AllowList) -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .dns_resolver(Arc::new(GuardedResolver { allow: allow.clone() }))
        .redirect(reqwest::redirect::Policy::none())
}

impl Deliverer {
    pub fn new(allow: AllowList, timeout: Duration) -> Result<Self> {
        let client = guarded_client(&allow)
            .timeout(timeout)
            .connect_timeout(timeout)
            .user_agent(concat!("a2a-serverless/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| A2aError::internal(format!("webhook client: {e}")))?;
        Ok(Self { client, allow, signer: None })
    }

    /// Signs every notification with `signer` (see [`a2a_signing::webhook`]).
    pub fn with_signer(mut self, signer: Option<WebhookSigner>) -> Self {
        self.signer = signer;
        self
    }

    /// One delivery attempt, in a CLIENT span that continues the trace the event was recorded in
    /// (the receiver gets `traceparent`).
    pub async fn deliver(&self, job: &PushJob) -> Outcome {
        use a2a_telemetry::spans::{self, Callee};
        let span = spans::client(Callee::Webhook, "POST", &job.config.url);
        a2a_telemetry::context::continue_trace(&span, job.trace.as_ref());
        spans::delivery(&span, &job.config.task_id, &job.config.id, job.attempt);
        let outcome = self.attempt(job).instrument(span.clone()).await;
        let label = match &outcome {
            Outcome::Delivered(status) => {
                spans::call_outcome(&span, Some(*status), None);
                "delivered"
            }
            Outcome::Refused(_) => {
                spans::call_outcome(&span, None, Some("refused"));
                "refused"
            }
            Outcome::Failed(_) => {
                spans::call_outcome(&span, None, Some("failed"));
                "failed"
            }
        };
        let measured = a2a_telemetry::metrics::Measurement::PushDelivery { outcome: label, attempt: job.attempt };
        a2a_telemetry::metrics::record(measured);
        outcome
    }

    async fn attempt(&self, job: &PushJob) -> Outcome {
        // The URL as the client will read it; an address host never reaches the resolver, so it is
        // judged here (a name is judged by the resolver, address by address).
        let target = match check_literal(&job.config.url, &self.allow) {
            Ok(t) => t,
            Err(e) => return Outcome::Refused(e.message),
        };
        let host = match &target.host {
            WebhookHost::Ip(ip) => ip.to_string(),
            WebhookHost::Name(name) => name.clone(),
        };
        let (body, headers) = notification(job);
        let signature = match &self.signer {
            Some(signer) => {
                let n = Notification {
                    url: &job.config.url,
                    task_id: &job.config.task_id,
                    config_id: &job.config.id,
                    seq: job.event.seq,
                    body: &body,
                };
                match signer.token(n, chrono::Utc::now().timestamp()).await {
                    Ok(token) => Some(token),
                    Err(e) => return Outcome::Failed(format!("signing the notification: {e}")),
                }
            }
            None => None,
        };
        let mut request = self.client.post(target.url).body(body);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        if let Some(token) = signature {
            request = request.header(SIGNATURE_HEADER, token);
        }
        let mut trace = http::HeaderMap::new();
        a2a_telemetry::context::inject(&mut trace);
        match request.headers(trace).send().await {
            Ok(resp) if resp.status().is_success() => Outcome::Delivered(resp.status().as_u16()),
            Ok(resp) => {
                a2a_telemetry::spans::call_outcome(&tracing::Span::current(), Some(resp.status().as_u16()), None);
                Outcome::Failed(format!("webhook answered {}", resp.status()))
            }
            Err(e) if format!("{e:?}").contains("forbidden addresses") => {
                Outcome::Refused(format!("webhook {host} resolves only to forbidden addresses"))
            }
            Err(e) if e.is_timeout() => Outcome::Failed("webhook timed out".into()),
            Err(e) => Outcome::Failed(format!("webhook unreachable: {e}")),
        }
    }
}

/// How long registration waits for a webhook host's name to resolve.
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(3);

/// The registration-time check with name resolution: every address the name resolves to must be
/// allowed, and a name that does not resolve (within [`RESOLVE_TIMEOUT`]) is refused, unless the
/// allow-list trusts the name. Delivery resolves and checks again, so a name that changes its answers
/// later, or a trusted one, gains nothing.
#[derive(Debug, Clone, Default)]
pub struct DnsPolicy {
    pub allow: AllowList,
}

#[async_trait]
impl WebhookPolicy for DnsPolicy {
    async fn check(&self, url: &str) -> Result<()> {
        let target = check_literal(url, &self.allow)?;
        let WebhookHost::Name(host) = &target.host else {
            return Ok(());
        };
        if self.allow.trusts_name(host) {
            return Ok(());
        }
        let refuse = |why: String| A2aError::invalid_field("url", format!("webhook host {host} {why}"));
        let lookup = tokio::net::lookup_host((host.as_str(), target.port));
        let addrs: Vec<SocketAddr> = match tokio::time::timeout(RESOLVE_TIMEOUT, lookup).await {
            Ok(Ok(addrs)) => addrs.collect(),
            Ok(Err(e)) => return Err(refuse(format!("does not resolve ({e})"))),
            Err(_) => return Err(refuse(format!("did not resolve within {} s", RESOLVE_TIMEOUT.as_secs()))),
        };
        if addrs.is_empty() {
            return Err(refuse("resolves to no address".into()));
        }
        for addr in addrs {
            check_ip(addr.ip(), &self.allow)?;
        }
        Ok(())
    }
}

/// A delivery handed to the embedded push worker.
pub struct Delivery {
    pub job: PushJob,
    /// Where a durable queue keeps the delivery's progress (`None`: the memory queue).
    pub receipt: Option<Receipt>,
}

/// A durable queue's hold on one delivery.
pub struct Receipt {
    /// The delivery's id in its queue.
    pub id: i64,
    /// Not before this (a retry's backoff kept across a restart).
    pub due: Option<chrono::DateTime<chrono::Utc>>,
    pub ledger: Arc<dyn PushLedger>,
}

/// How a delivery ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settled {
    Delivered,
    /// Never deliverable (the URL is malformed or points where webhooks may not go).
    Refused(String),
    /// The last attempt failed: dead-lettered, with the last failure.
    Dead(String),
}

/// Where a durable push queue records each delivery's progress (the embedded SQL store's).
#[async_trait]
pub trait PushLedger: Send + Sync {
    /// Delivery `id` failed; its attempt `attempt` is due at `due`. Recorded in the background: a
    /// record lost in a crash only repeats an attempt sooner.
    fn retrying(&self, id: i64, attempt: u32, due: chrono::DateTime<chrono::Utc>);
    /// Delivery `id` is over; returns once that is recorded, so that the lane's next delivery never
    /// overtakes one a crash would make again (a receiver sees each task's events in order).
    async fn settled(&self, id: i64, outcome: Settled);
}

/// The embedded push worker: one ordered lane per (task, webhook); a failing notification is
/// retried in its lane (so later events wait for it) until the policy gives up.
pub struct PushWorker {
    deliverer: Arc<Deliverer>,
    retry: RetryPolicy,
    lanes: Mutex<HashMap<String, mpsc::UnboundedSender<Delivery>>>,
    dead: Mutex<VecDeque<(PushJob, String)>>,
    /// Delivery attempts in flight, across lanes: a slow receiver makes lanes wait for a permit,
    /// not open a connection each (thousands of them, past the process's file limit).
    in_flight: Arc<tokio::sync::Semaphore>,
    /// Deliveries held (queued in a lane, waiting to retry or in flight), and the most allowed.
    held: AtomicUsize,
    backlog: usize,
    /// Deliveries refused for a full backlog since the last warning, and when that was.
    overflow: Mutex<(u64, Option<Instant>)>,
}

const DEAD_LETTERS_KEPT: usize = 1000;
/// Most webhook deliveries attempted at once (each holds one outbound connection).
pub const MAX_DELIVERIES_IN_FLIGHT: usize = 256;
/// Most deliveries held at once by default (`--push-backlog`): receivers slower than the events
/// then cost bounded memory (each held delivery is a few KiB), and the newest deliveries past it
/// are dead-lettered at once.
pub const DEFAULT_PUSH_BACKLOG: usize = 10_000;
const LANE_IDLE: Duration = Duration::from_secs(30);
/// At most one warning about a full backlog this often (with the count refused meanwhile).
const OVERFLOW_WARNING_EVERY: Duration = Duration::from_secs(10);

impl PushWorker {
    /// A worker holding at most `backlog` deliveries (at least one).
    pub fn new(deliverer: Arc<Deliverer>, retry: RetryPolicy, backlog: usize) -> Arc<Self> {
        Arc::new(Self {
            deliverer,
            retry,
            lanes: Mutex::new(HashMap::new()),
            dead: Mutex::new(VecDeque::new()),
            in_flight: Arc::new(tokio::sync::Semaphore::new(MAX_DELIVERIES_IN_FLIGHT)),
            held: AtomicUsize::new(0),
            backlog: backlog.max(1),
            overflow: Mutex::new((0, None)),
        })
    }

    /// Deliveries held now (queued, waiting to retry or in flight).
    pub fn held(&self) -> usize {
        self.held.load(Ordering::SeqCst)
    }

    /// Jobs that exhausted their attempts (most recent last), with the last failure.
    pub fn dead_letters(&self) -> Vec<(PushJob, String)> {
        self.dead.lock().iter().cloned().collect()
    }

    /// Consumes an in-process push queue (memory or durable).
    pub fn spawn(self: Arc<Self>, mut jobs: mpsc::UnboundedReceiver<Delivery>) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            while let Some(delivery) = jobs.recv().await {
                if let Some(refused) = self.dispatch(delivery) {
                    self.refuse_for_backlog(refused);
                }
            }
        })
    }

    /// Hands `job` to its lane; gives it back when the backlog is full.
    fn dispatch(self: &Arc<Self>, job: Delivery) -> Option<Delivery> {
        let backlog = self.backlog;
        if self.held.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < backlog).then_some(n + 1)).is_err() {
            return Some(job);
        }
        let key = format!("{}\u{0}{}", job.job.config.task_id, job.job.config.id);
        let mut lanes = self.lanes.lock();
        let job = match lanes.get(&key) {
            Some(tx) => match tx.send(job) {
                Ok(()) => return None,
                Err(mpsc::error::SendError(job)) => job,
            },
            None => job,
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let _ = tx.send(job);
        lanes.insert(key.clone(), tx);
        let worker = self.clone();
        tokio::spawn(async move { worker.lane(key, rx).await });
        None
    }

    async fn lane(self: Arc<Self>, key: String, mut rx: mpsc::UnboundedReceiver<Delivery>) {
        loop {
            let job = match tokio::time::timeout(LANE_IDLE, rx.recv()).await {
                Ok(Some(job)) => job,
                Ok(None) => return,
                Err(_) => {
                    // Idle: retire the lane, unless a job arrived while we looked (senders hold the lock).
                    let mut lanes = self.lanes.lock();
                    if rx.is_empty() {
                        lanes.remove(&key);
                        return;
                    }
                    continue;
                }
            };
            self.deliver_with_retries(job).await;
            self.held.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// The backlog is full: the delivery is dead-lettered without an attempt, settled first (so a
    /// durable queue does not hand it over again after a restart) in the background, so the next
    /// deliveries are not held up by the ledger's write.
    fn refuse_for_backlog(self: &Arc<Self>, Delivery { job, receipt }: Delivery) {
        let why = format!(
            "the push backlog is full ({} deliveries held): the webhook receivers are slower than the events",
            self.backlog
        );
        a2a_telemetry::metrics::record(a2a_telemetry::metrics::Measurement::PushDelivery {
            outcome: "dropped",
            attempt: job.attempt,
        });
        {
            let mut overflow = self.overflow.lock();
            overflow.0 += 1;
            if overflow.1.is_none_or(|at| at.elapsed() >= OVERFLOW_WARNING_EVERY) {
                tracing::warn!(
                    refused = overflow.0,
                    backlog = self.backlog,
                    "push backlog full: deliveries dead-lettered"
                );
                *overflow = (0, Some(Instant::now()));
            }
        }
        tracing::debug!(task_id = %job.config.task_id, config_id = %job.config.id, seq = job.event.seq, "push dead-lettered: backlog full");
        let worker = self.clone();
        tokio::spawn(async move {
            if let Some(r) = receipt {
                r.ledger.settled(r.id, Settled::Dead(why.clone())).await;
            }
            worker.bury(job, why);
        });
    }

    async fn deliver_with_retries(&self, Delivery { mut job, receipt }: Delivery) {
        if let Some(due) = receipt.as_ref().and_then(|r| r.due) {
            if let Ok(wait) = (due - chrono::Utc::now()).to_std() {
                tokio::time::sleep(wait).await;
            }
        }
        let settle = |outcome: Settled| async {
            if let Some(r) = &receipt {
                r.ledger.settled(r.id, outcome).await;
            }
        };
        loop {
            let outcome = {
                let _permit = self.in_flight.acquire().await;
                self.deliverer.deliver(&job).await
            };
            let task_id = job.config.task_id.as_str();
            let config_id = job.config.id.as_str();
            match outcome {
                Outcome::Delivered(status) => {
                    tracing::debug!(
                        task_id,
                        config_id,
                        seq = job.event.seq,
                        status,
                        attempt = job.attempt,
                        "push delivered"
                    );
                    settle(Settled::Delivered).await;
                    return;
                }
                Outcome::Refused(why) => {
                    tracing::warn!(task_id, config_id, seq = job.event.seq, %why, "push refused");
                    settle(Settled::Refused(why.clone())).await;
                    self.bury(job, why);
                    return;
                }
                Outcome::Failed(why) if self.retry.gives_up_after(job.attempt) => {
                    tracing::error!(task_id, config_id, seq = job.event.seq, attempts = job.attempt, %why, "push dead-lettered");
                    settle(Settled::Dead(why.clone())).await;
                    self.bury(job, why);
                    return;
                }
                Outcome::Failed(why) => {
                    let delay = self.retry.delay(job.attempt, rand::random::<f64>());
                    tracing::info!(task_id, config_id, seq = job.event.seq, attempt = job.attempt, ?delay, %why, "push failed; retrying");
                    if let Some(r) = &receipt {
                        let due = chrono::Utc::now() + chrono::Duration::from_std(delay).unwrap_or_default();
                        r.ledger.retrying(r.id, job.attempt + 1, due);
                    }
                    tokio::time::sleep(delay).await;
                    job.attempt += 1;
                }
            }
        }
    }

    fn bury(&self, job: PushJob, why: String) {
        let mut dead = self.dead.lock();
        if dead.len() == DEAD_LETTERS_KEPT {
            dead.pop_front();
        }
        dead.push_back((job, why));
    }
}
