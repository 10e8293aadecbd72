//! The edge worker: thin glue between the Workers runtime and the pure logic of [`a2a::edge`].
//!
//! - `GET /.well-known/agent-card.json` (and the 0.3 path): the card from `AGENT_CARD`, with
//!   `Cache-Control`, `ETag` and 304 (proxied to the origin when `AGENT_CARD` is unset);
//! - streaming calls (REST `message:stream`, `tasks/{id}:subscribe`, JSON-RPC
//!   `SendStreamingMessage`, `SubscribeToTask`, `message/stream`, `tasks/resubscribe`): one origin
//!   call, then the task's Durable Object ([`hub::TaskHub`]) streams;
//! - `POST /_edge/publish`: signed events from the task runner, to the task's Durable Object;
//! - everything else: proxied to `ORIGIN_URL` unchanged.
//!
//! Configuration (wrangler.toml `[vars]` and secrets): `ORIGIN_URL`, `ORIGIN_STREAM_URL` (where
//! streams the hub cannot serve go; default `ORIGIN_URL`), `PUBLISH_SECRET` (secret),
//! `AGENT_CARD` (card file JSON), `PUBLIC_URL`, `KEEP_ALIVE_SECS` (15), `EVENT_TTL_SECS` (3600),
//! `IDLE_TTL_SECS` (604800); the Durable Object binding `TASK_HUB`.

mod glue;
pub mod hub;

use std::cell::RefCell;
use std::rc::Rc;

use a2a::auth::Anonymous;
use a2a::card::{parse_card_file, CardService, ServerAbilities};
use a2a::edge::route::{classify, error_response, plan, EdgeRoute, OriginReply, Plan, StreamCall};
use a2a::edge::{signature, PublishBatch};
use a2a::http::{card_response, rest_error};
use a2a::sse::TASK_SEQ_HEADER;
use a2a::A2aError;
use glue::{forward_headers, into_worker, js_body, sse};
use worker::{event, Context, Env, Fetch, Method, Request, RequestInit, Response, Result};

/// The Durable Object namespace binding.
pub const HUB_BINDING: &str = "TASK_HUB";

#[event(fetch)]
async fn fetch(mut req: Request, env: Env, _ctx: Context) -> Result<Response> {
    let url = req.url()?;
    let method = http::Method::from_bytes(req.method().as_ref().as_bytes()).unwrap_or(http::Method::GET);
    let body = if matches!(req.method(), Method::Get | Method::Head) { Vec::new() } else { req.bytes().await? };
    match classify(&method, url.path(), url.query(), &body) {
        EdgeRoute::Card => card(&req, &env, &url).await,
        EdgeRoute::Publish => publish(&req, &env, &method, &body).await,
        EdgeRoute::Stream(call) => stream(&req, &env, call, &url, &body).await,
        EdgeRoute::Proxy => proxy(&req, &env, &url, &body).await,
    }
}

fn var(env: &Env, name: &str) -> Option<String> {
    env.var(name).ok().map(|v| v.to_string()).filter(|v| !v.trim().is_empty())
}

fn origin(env: &Env) -> Result<String> {
    var(env, "ORIGIN_URL")
        .map(|o| o.trim_end_matches('/').to_string())
        .ok_or_else(|| worker::Error::RustError("ORIGIN_URL is not configured".into()))
}

thread_local! {
    /// The card, rendered once per isolate.
    static CARDS: RefCell<Option<Rc<CardService>>> = const { RefCell::new(None) };
}

fn cards(env: &Env, url: &worker::Url) -> std::result::Result<Option<Rc<CardService>>, A2aError> {
    if let Some(cards) = CARDS.with(|c| c.borrow().clone()) {
        return Ok(Some(cards));
    }
    let Some(json) = var(env, "AGENT_CARD") else { return Ok(None) };
    let card = parse_card_file(&json)?;
    let public_url = var(env, "PUBLIC_URL").unwrap_or_else(|| url.origin().ascii_serialization());
    let abilities = ServerAbilities { streaming: true, push_notifications: true, grpc_address: None };
    let cards = Rc::new(CardService::new(card, None, &public_url, abilities, &Anonymous, chrono::Utc::now()));
    CARDS.with(|c| *c.borrow_mut() = Some(cards.clone()));
    Ok(Some(cards))
}

async fn card(req: &Request, env: &Env, url: &worker::Url) -> Result<Response> {
    match cards(env, url) {
        Ok(Some(cards)) => into_worker(card_response(&cards, &glue::parts(req)?)),
        Ok(None) => proxy(req, env, url, &[]).await,
        Err(e) => into_worker(rest_error(&A2aError::internal(format!("AGENT_CARD: {}", e.message)))),
    }
}

async fn publish(req: &Request, env: &Env, method: &http::Method, body: &[u8]) -> Result<Response> {
    if method != http::Method::POST {
        return into_worker(rest_error(&A2aError::new(a2a::ErrorKind::MethodNotAllowed, "publish takes POST")));
    }
    let secret = env.secret("PUBLISH_SECRET").map(|s| s.to_string()).unwrap_or_default();
    let headers = req.headers();
    let (ts, sig) = (headers.get(signature::TIMESTAMP_HEADER)?, headers.get(signature::SIGNATURE_HEADER)?);
    let now = chrono::Utc::now().timestamp();
    if let Err(e) = signature::verify(secret.as_bytes(), ts.as_deref(), sig.as_deref(), body, now) {
        return into_worker(rest_error(&e));
    }
    let batch = match PublishBatch::parse(body) {
        Ok(b) => b,
        Err(e) => return into_worker(rest_error(&e)),
    };
    hub(env, &batch.task_id, "publish", body).await
}

/// A request to the Durable Object of `task_id` (`POST https://hub/<path>`).
async fn hub(env: &Env, task_id: &str, path: &str, body: &[u8]) -> Result<Response> {
    let stub = env.durable_object(HUB_BINDING)?.id_from_name(task_id)?.get_stub()?;
    let mut init = RequestInit::new();
    init.with_method(Method::Post).with_body(Some(js_body(body)));
    stub.fetch_with_request(Request::new_with_init(&format!("https://hub/{path}"), &init)?).await
}

async fn stream(req: &Request, env: &Env, call: StreamCall, url: &worker::Url, original: &[u8]) -> Result<Response> {
    let origin = origin(env)?;
    let headers = forward_headers(req.headers())?;
    let mut init = RequestInit::new();
    init.with_method(Method::from(call.origin_method.to_string()));
    if let Some(body) = &call.origin_body {
        headers.set("content-type", "application/json")?;
        init.with_body(Some(js_body(body)));
    }
    init.with_headers(headers);
    let mut resp =
        Fetch::Request(Request::new_with_init(&format!("{origin}{}", call.origin_path), &init)?).send().await?;
    let status = resp.status_code();
    let seq = resp.headers().get(TASK_SEQ_HEADER)?;
    let body = resp.bytes().await?;
    let last_event_id = req.headers().get("last-event-id")?.and_then(|v| v.trim().parse().ok());
    match plan(&call, OriginReply { status, task_seq: seq.as_deref(), body: &body }, last_event_id) {
        Plan::PassThrough => {
            let out = worker::Headers::new();
            for name in ["content-type", "www-authenticate", "allow", "retry-after"] {
                if let Some(v) = resp.headers().get(name)? {
                    out.set(name, &v)?;
                }
            }
            Ok(glue::bytes_response(body, status)?.with_headers(out))
        }
        Plan::Fail(err) => into_worker(error_response(&call.framing, &err)),
        Plan::Single(frame) => sse(futures::stream::iter([Ok(frame.to_vec())])),
        Plan::Attach { task_id, spec } => {
            let spec = serde_json::to_vec(&spec).map_err(|e| worker::Error::RustError(e.to_string()))?;
            let resp = hub(env, &task_id, "subscribe", &spec).await?;
            if resp.status_code() == hub::GAP_STATUS {
                // The hub misses part of this task's events: the origin streams it instead.
                return proxy_stream(req, env, url, original).await;
            }
            Ok(resp)
        }
        Plan::Fallback => proxy_stream(req, env, url, original).await,
    }
}

/// Forwards a streaming call the hub cannot serve to the origin's streaming endpoint
/// (`ORIGIN_STREAM_URL`, e.g. the Lambda stack's response-streaming Function URL; else `ORIGIN_URL`).
async fn proxy_stream(req: &Request, env: &Env, url: &worker::Url, body: &[u8]) -> Result<Response> {
    let base = match var(env, "ORIGIN_STREAM_URL") {
        Some(u) => u.trim_end_matches('/').to_string(),
        None => origin(env)?,
    };
    proxy_to(&base, req, url, body).await
}

/// Forwards a request to the origin: same method, path, query, headers (auth included) and body.
async fn proxy(req: &Request, env: &Env, url: &worker::Url, body: &[u8]) -> Result<Response> {
    proxy_to(&origin(env)?, req, url, body).await
}

async fn proxy_to(origin: &str, req: &Request, url: &worker::Url, body: &[u8]) -> Result<Response> {
    let target = match url.query() {
        Some(q) => format!("{origin}{}?{q}", url.path()),
        None => format!("{origin}{}", url.path()),
    };
    let mut init = RequestInit::new();
    init.with_method(req.method()).with_headers(forward_headers(req.headers())?);
    if !body.is_empty() {
        init.with_body(Some(js_body(body)));
    }
    Fetch::Request(Request::new_with_init(&target, &init)?).send().await
}
