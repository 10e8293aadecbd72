//! The playground of `a2a-local` (`/playground`): a page that talks to this agent or any A2A agent
//! by URL — its card checked against the 1.0 and 0.3 shapes with its signature verified, chat with
//! streaming, INPUT_REQUIRED answered in place, cancel and resubscribe, the task list, push
//! deliveries caught and their signatures verified, and a raw console of every call — with what the
//! page cannot do from a browser done here:
//!
//! - [`relay`]: forwards the page's calls to the agent (no CORS needed, credentials never stored or
//!   logged); it reaches loopback and public addresses only, the SSRF guard of webhooks;
//! - [`catcher`]: webhook URLs on this host that keep the last deliveries and stream them to the
//!   page, each signature checked against the sending agent's JWKS;
//! - [`inspect`]: the card report.
//!
//! The page is plain HTML, CSS and JavaScript modules built into the binary ([`assets`]): nothing is
//! fetched from elsewhere, nothing is built. See docs/playground.md.

mod assets;
pub mod catcher;
pub mod inspect;
pub mod relay;
pub mod schema;
pub mod token;

use std::sync::Arc;

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};

use a2a_engine::auth::Principal;
use a2a_engine::ssrf::AllowList;
use a2a_http::response::{rest_error, Body, HttpResponse};
use a2a_http::routes::Routes;
use a2a_protocol::error::{A2aError, ErrorKind, Result};

/// Where the playground lives.
pub const PREFIX: &str = "/playground";
/// Largest request body a playground route reads (a relayed call, a delivery).
pub const MAX_BODY: usize = 4 << 20;

/// What the playground is allowed.
#[derive(Debug, Clone)]
pub struct Settings {
    /// This host's public URL (the catchers' URLs are under it).
    pub public_url: String,
    /// What the relay may reach besides public addresses and loopback (the webhook allow-list).
    pub allow: AllowList,
    /// The token URLs of this host's card (its OAuth 2.0 client credentials flows), which the page
    /// may ask a token of before it has credentials for this host ([`token`]).
    pub token_urls: Vec<String>,
    /// Whether webhook catchers are served: they keep deliveries in this process's memory, so they
    /// need one long-lived process (a2a-local), not a fleet of Lambda environments.
    pub catchers: bool,
}

/// The playground's routes, for [`a2a_http::server::Server::with_routes`].
pub struct Playground {
    relay: relay::Relay,
    catchers: Arc<catcher::Catchers>,
    public_url: String,
    token_urls: Vec<String>,
    catchers_served: bool,
}

impl Playground {
    pub fn new(settings: Settings) -> Result<Self> {
        let allow = relay::reachable(&settings.allow);
        let relay = relay::Relay::new(allow.clone())?;
        let catchers = Arc::new(catcher::Catchers::new(relay.client().clone(), allow));
        let public_url = settings.public_url.trim_end_matches('/').to_string();
        Ok(Self { relay, catchers, public_url, token_urls: settings.token_urls, catchers_served: settings.catchers })
    }

    /// The page's URL.
    pub fn url(&self) -> String {
        format!("{}{PREFIX}/", self.public_url)
    }
}

#[async_trait::async_trait]
impl Routes for Playground {
    fn owns(&self, path: &str) -> bool {
        path == PREFIX || path.starts_with("/playground/")
    }

    fn max_body(&self) -> usize {
        MAX_BODY
    }

    fn is_public(&self, path: &str) -> bool {
        // The page and its files carry nothing; a catcher's id is its capability (the agent posts
        // there without this host's credentials); the token API reaches this card's token URLs
        // only. The APIs that act are authenticated.
        !path.starts_with("/playground/api/") || path == "/playground/api/token"
    }

    async fn handle(&self, req: Request<Bytes>, caller: Option<Principal>) -> HttpResponse {
        let (parts, body) = req.into_parts();
        let path = parts.uri.path();
        let rest = path.strip_prefix(PREFIX).unwrap_or_default().trim_start_matches('/');
        let segments: Vec<&str> = rest.split('/').collect();
        let method = &parts.method;
        if segments.first() == Some(&"api") && method == Method::POST {
            if let Err(e) = from_the_page(&parts, &self.public_url) {
                return rest_error(&e);
            }
        }
        match (method, segments.as_slice()) {
            // Relative, so that it stays under a path prefix the host does not see (a REST API's stage).
            (&Method::GET | &Method::HEAD, [""]) if path == PREFIX => redirect("playground/"),
            (&Method::GET | &Method::HEAD, [file]) => assets::serve(file, &parts.headers),
            (_, ["hooks", _] | ["api", "catchers", ..]) if !self.catchers_served => rest_error(&A2aError::new(
                ErrorKind::UnsupportedOperation,
                "webhook catchers keep deliveries in one process's memory: use the playground of a2a-local",
            )),
            (&Method::POST, ["hooks", id]) => self.catchers.receive(id, &parts.headers, body).await,
            (&Method::POST, ["api", "token"]) => token::forward(self.relay.client(), &self.token_urls, &body).await,
            (_, ["api", ..]) if caller.is_none() => rest_error(&A2aError::unauthenticated("authentication required")),
            (&Method::POST, ["api", "relay"]) => self.relay.forward(&body).await,
            (&Method::POST, ["api", "card"]) => inspect::card(&self.relay, &body).await,
            (&Method::POST, ["api", "catchers"]) => {
                self.catchers.create(&format!("{}{PREFIX}/hooks", self.public_url), &body)
            }
            (&Method::GET, ["api", "catchers", id, "deliveries"]) => self.catchers.watch(id),
            (
                _,
                [""]
                | [_]
                | ["hooks", _]
                | ["api", "relay" | "card" | "catchers" | "token"]
                | ["api", "catchers", _, "deliveries"],
            ) => rest_error(&A2aError::new(ErrorKind::MethodNotAllowed, format!("{method} is not served on {path}"))),
            _ => rest_error(&A2aError::new(ErrorKind::MethodNotFound, format!("no playground route {path}"))),
        }
    }
}

/// The APIs that act are called by the page itself: JSON bodies (which another site cannot send
/// without a CORS preflight this host never grants) and, when the browser says where the call
/// comes from, this host's own origin (the `Host` it was asked by, or its public URL's behind a
/// proxy). So a page elsewhere cannot make a visitor's browser use the relay of the a2a-local on
/// their machine (cross-site request forgery).
fn from_the_page(parts: &http::request::Parts, public_url: &str) -> Result<()> {
    a2a_http::response::require_json(&parts.headers)?;
    let Some(origin) = parts.headers.get(header::ORIGIN) else { return Ok(()) };
    let host = parts.headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
    let origin = origin.to_str().ok().and_then(|o| url::Url::parse(o).ok()).filter(|o| o.host_str().is_some());
    let public = url::Url::parse(public_url).ok();
    let same = origin.is_some_and(|o| host_of(&o) == host || public.is_some_and(|p| p.origin() == o.origin()));
    if same {
        Ok(())
    } else {
        Err(A2aError::new(
            ErrorKind::PermissionDenied,
            "the playground's APIs take calls from its own page only (Origin)",
        ))
    }
}

/// `host[:port]` of `url` as a `Host` header names it (the port left out when it is the scheme's).
fn host_of(url: &url::Url) -> String {
    let host = match url.host() {
        Some(url::Host::Ipv6(ip)) => format!("[{ip}]"),
        Some(host) => host.to_string(),
        None => String::new(),
    };
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host,
    }
}

fn redirect(to: &str) -> HttpResponse {
    Response::builder()
        .status(StatusCode::MOVED_PERMANENTLY)
        .header(header::LOCATION, to)
        .body(Body::Full(Bytes::new()))
        .unwrap_or_else(|_| a2a_http::response::internal_response())
}

/// A JSON answer.
pub(crate) fn json(status: StatusCode, value: &serde_json::Value) -> HttpResponse {
    let mut response = a2a_http::response::json_response(status, value.to_string());
    response.headers_mut().insert(header::CACHE_CONTROL, http::HeaderValue::from_static("no-store"));
    response
}

/// Reads a JSON request body, naming what is wrong.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T> {
    serde_json::from_slice(body).map_err(|e| A2aError::invalid_request(format!("the request body: {e}")))
}

/// The SSRF guard's refusal of a URL, for a field of the playground's own (the guard speaks of
/// webhooks and names its own field).
pub(crate) fn unprefixed(e: &A2aError) -> String {
    e.message.trim_start_matches("url: ").replace("webhook address", "address")
}

/// Most bytes of a document the playground reads for itself (a card, a JWKS).
const MAX_DOCUMENT: usize = 1 << 20;

/// GETs the JSON document at `url` with `headers`, within 10 s and [`MAX_DOCUMENT`] bytes; the
/// error begins with the URL.
pub(crate) async fn fetch_json(
    client: &reqwest::Client,
    url: &str,
    headers: &[(&str, &str)],
) -> std::result::Result<serde_json::Value, String> {
    let request = headers.iter().fold(client.get(url), |r, (name, value)| r.header(*name, *value));
    let answer = request
        .timeout(std::time::Duration::from_secs(10))
        .send()
        .await
        .map_err(|e| format!("{url}: {}", e.without_url()))?;
    if !answer.status().is_success() {
        return Err(format!("{url} answered HTTP {}", answer.status().as_u16()));
    }
    let too_large = || format!("{url}: over {MAX_DOCUMENT} bytes");
    if answer.content_length().is_some_and(|n| n > MAX_DOCUMENT as u64) {
        return Err(too_large());
    }
    let bytes = answer.bytes().await.map_err(|e| format!("{url}: {}", e.without_url()))?;
    if bytes.len() > MAX_DOCUMENT {
        return Err(too_large());
    }
    serde_json::from_slice(&bytes).map_err(|e| format!("{url}: not JSON ({e})"))
}
