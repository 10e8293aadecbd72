//! The playground on the response-streaming function (`http-stream`), when `PLAYGROUND=on` (off by
//! default; the SAM parameter `Playground`): the page, its relay and the card report at
//! `<function URL>/playground/`, behind the function's own authentication. Webhook catchers are not
//! served: they keep deliveries in one process's memory, and a delivery may reach another
//! execution environment (docs/playground.md).

use std::sync::Arc;

use a2a_engine::ssrf::AllowList;
use a2a_http::routes::Routes;
use a2a_playground::{token::token_urls, Playground, Settings};
use a2a_protocol::error::Result;

use super::{env, Deps};

/// The playground's routes, when `PLAYGROUND` is `on`; `WEBHOOK_ALLOW` widens what its relay may
/// reach, as it does for webhooks.
pub fn from_env(deps: &Deps) -> Result<Option<Arc<dyn Routes>>> {
    if !env("PLAYGROUND").is_some_and(|v| v.eq_ignore_ascii_case("on")) {
        return Ok(None);
    }
    let settings = Settings {
        public_url: env("A2A_PUBLIC_URL").unwrap_or_else(|| "http://localhost".into()),
        allow: AllowList::parse(&env("WEBHOOK_ALLOW").unwrap_or_default())?,
        token_urls: token_urls(&deps.engine.card.card),
        catchers: false,
    };
    Ok(Some(Arc::new(Playground::new(settings)?)))
}
