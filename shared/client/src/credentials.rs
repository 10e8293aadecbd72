//! What a request carries to authenticate: an API key (in the header the card's `apiKey` scheme
//! names), a bearer token, or OAuth 2.0 client credentials exchanged at the token URL of the card's
//! client-credentials flow (or the one given), the token cached until shortly before it expires.
//! Credentials are never printed: `Debug` redacts them.
//!
//! The client secret goes only where the caller meant it to: to the token URL the caller gave, or
//! to the card's token URL when that is on the card's own origin over HTTPS (plain HTTP only on a
//! loopback host). A card may name any URL; without this rule whoever serves a card could collect
//! the secret by declaring a token URL of its choosing.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::Mutex;

use super::{ClientError, ClientOptions, ClientResult};
use a2a_protocol::paths::DEFAULT_API_KEY_HEADER;
use a2a_protocol::types::{AgentCard, OAuthFlows, SecurityScheme};

#[derive(Clone, Default)]
pub enum Credentials {
    #[default]
    None,
    ApiKey(String),
    Bearer(String),
    /// OAuth 2.0 client credentials; `token_url` overrides the card's.
    ClientCredentials {
        client_id: String,
        client_secret: String,
        scopes: Vec<String>,
        token_url: Option<String>,
    },
    /// AWS Signature V4 with the process's AWS credentials (an agent on Bedrock AgentCore:
    /// service `bedrock-agentcore`); needs the `aws` feature.
    SigV4 {
        region: String,
        service: String,
    },
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::None => "None",
            Self::ApiKey(_) => "ApiKey(..)",
            Self::Bearer(_) => "Bearer(..)",
            Self::ClientCredentials { .. } => "ClientCredentials(..)",
            Self::SigV4 { .. } => "SigV4",
        })
    }
}

/// Puts the credentials on requests.
#[derive(Clone)]
pub(crate) struct Authorizer {
    http: reqwest::Client,
    credentials: Credentials,
    api_key_header: String,
    /// Where the client secret may be sent, or why the card's token URL may not be used.
    token_url: Result<String, String>,
    max_answer_bytes: usize,
    /// The client-credentials token and when to stop using it.
    token: Arc<Mutex<Option<(String, Instant)>>>,
    /// The AWS credentials provider, looked up on first use.
    #[cfg(feature = "sigv4")]
    aws: Arc<tokio::sync::OnceCell<Option<aws_credential_types::provider::SharedCredentialsProvider>>>,
}

/// A token is renewed this long before it expires.
const RENEW_BEFORE: Duration = Duration::from_secs(30);
/// The longest a token request may take, answer included.
const TOKEN_TIMEOUT: Duration = Duration::from_secs(30);

/// Whether the client secret may go to `token_url`, declared by the card fetched from `card_url`:
/// only on the card's own origin (who serves the card is who the caller chose to trust), over
/// HTTPS unless the host is loopback (the secret would otherwise cross the network in clear).
fn card_token_url(token_url: &str, card_url: &str) -> Result<(), String> {
    let refuse = |why: &str| {
        Err(format!(
            "the card's token URL {token_url} {why}; the client secret is sent only to a token URL you give, \
             or to one on the card's own origin over HTTPS (plain HTTP only on loopback)"
        ))
    };
    let (Ok(token), Ok(card)) = (url::Url::parse(token_url), url::Url::parse(card_url)) else {
        return refuse("is not a URL");
    };
    if token.origin() != card.origin() {
        return refuse(&format!("is not on the card's origin ({})", card.origin().ascii_serialization()));
    }
    let loopback = match token.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    };
    match token.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        _ => refuse("is not HTTPS"),
    }
}

impl Authorizer {
    /// `card_url`: where the card was fetched from (`None`: the caller gave the card, and vouches
    /// for its token URL as for one it gave).
    pub(crate) fn new(
        http: reqwest::Client,
        card: &AgentCard,
        card_url: Option<&str>,
        options: &ClientOptions,
    ) -> Self {
        let credentials = options.credentials.clone();
        let api_key_header = card
            .security_schemes
            .values()
            .find_map(|s| match s {
                SecurityScheme::ApiKeySecurityScheme(k) if k.location.eq_ignore_ascii_case("header") => {
                    Some(k.name.clone())
                }
                _ => None,
            })
            .unwrap_or_else(|| DEFAULT_API_KEY_HEADER.to_string());
        let declared = card.security_schemes.values().find_map(|s| match s {
            SecurityScheme::Oauth2SecurityScheme(o) => match &o.flows {
                OAuthFlows::ClientCredentials(flow) if !flow.token_url.is_empty() => Some(flow.token_url.clone()),
                _ => None,
            },
            _ => None,
        });
        let token_url = match (&credentials, declared) {
            (Credentials::ClientCredentials { token_url: Some(url), .. }, _) => Ok(url.clone()),
            (_, Some(url)) => match card_url {
                Some(card_url) => card_token_url(&url, card_url).map(|()| url),
                None => Ok(url),
            },
            (_, None) => Err("the card declares no OAuth 2.0 client-credentials flow; give a token URL".to_string()),
        };
        if let (Credentials::ClientCredentials { .. }, Err(why)) = (&credentials, &token_url) {
            tracing::warn!(%why, "client credentials cannot be used");
        }
        Self {
            http,
            credentials,
            api_key_header,
            token_url,
            max_answer_bytes: options.max_answer_bytes,
            token: Arc::new(Mutex::new(None)),
            #[cfg(feature = "sigv4")]
            aws: Arc::default(),
        }
    }

    /// `req` with the credentials on it.
    pub(crate) async fn apply(&self, mut req: reqwest::RequestBuilder) -> ClientResult<reqwest::RequestBuilder> {
        for (name, value) in self.headers().await? {
            req = req.header(name, value);
        }
        Ok(req)
    }

    /// The credentials as headers (gRPC: metadata); SigV4 adds its own once the request is built
    /// (see `sign`).
    pub(crate) async fn headers(&self) -> ClientResult<Vec<(String, String)>> {
        let bearer = |token: &str| vec![("authorization".to_string(), format!("Bearer {token}"))];
        Ok(match &self.credentials {
            Credentials::None | Credentials::SigV4 { .. } => Vec::new(),
            Credentials::ApiKey(key) => vec![(self.api_key_header.clone(), key.clone())],
            Credentials::Bearer(token) => bearer(token),
            Credentials::ClientCredentials { .. } => bearer(&self.client_token().await?),
        })
    }

    /// Signs a built request when the credentials are SigV4 (the signature covers the body).
    pub(crate) async fn sign(&self, request: &mut reqwest::Request) -> ClientResult<()> {
        let Credentials::SigV4 { region, service } = &self.credentials else { return Ok(()) };
        #[cfg(feature = "sigv4")]
        {
            let provider = self
                .aws
                .get_or_init(a2a_aws::sigv4::default_credentials)
                .await
                .as_ref()
                .ok_or_else(|| ClientError::Credentials("no AWS credentials to sign with".into()))?;
            let scope = a2a_aws::sigv4::Scope { region: region.clone(), service: service.clone() };
            let signed: Vec<(String, String)> = request
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(|v| vec![("content-type".to_string(), v.to_string())])
                .unwrap_or_default();
            let body = request.body().and_then(reqwest::Body::as_bytes).unwrap_or_default().to_vec();
            let method = request.method().to_string();
            let url = request.url().to_string();
            let headers = a2a_aws::sigv4::headers(provider, &scope, &method, &url, &signed, &body)
                .await
                .map_err(ClientError::Credentials)?;
            for (name, value) in headers {
                let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                    .map_err(|e| ClientError::Credentials(e.to_string()))?;
                let value = reqwest::header::HeaderValue::from_str(&value)
                    .map_err(|e| ClientError::Credentials(e.to_string()))?;
                request.headers_mut().insert(name, value);
            }
            Ok(())
        }
        #[cfg(not(feature = "sigv4"))]
        {
            let _ = request;
            Err(ClientError::Credentials(format!(
                "this build cannot sign with SigV4 for {service} in {region} (feature aws)"
            )))
        }
    }

    /// Forgets a token the agent refused (it may have been revoked or rotated).
    pub(crate) async fn refused(&self) {
        *self.token.lock().await = None;
    }

    async fn client_token(&self) -> ClientResult<String> {
        let Credentials::ClientCredentials { client_id, client_secret, scopes, .. } = &self.credentials else {
            return Err(ClientError::Credentials("no client credentials".into()));
        };
        let mut cached = self.token.lock().await;
        if let Some((token, until)) = cached.as_ref() {
            if Instant::now() < *until {
                return Ok(token.clone());
            }
        }
        let url = self.token_url.as_deref().map_err(|why| ClientError::Credentials(why.clone()))?;
        let mut form = vec![
            ("grant_type", "client_credentials".to_string()),
            ("client_id", client_id.clone()),
            ("client_secret", client_secret.clone()),
        ];
        if !scopes.is_empty() {
            form.push(("scope", scopes.join(" ")));
        }
        let resp = self
            .http
            .post(url)
            .form(&form)
            .timeout(TOKEN_TIMEOUT)
            .send()
            .await
            .map_err(|e| ClientError::Credentials(format!("token endpoint {url}: {}", super::root_cause(&e))))?;
        let status = resp.status().as_u16();
        let body = match super::body::read(resp, self.max_answer_bytes, TOKEN_TIMEOUT).await {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            Err(e) => return Err(ClientError::Credentials(format!("token endpoint {url}: {e}"))),
        };
        let token = body.get("access_token").and_then(Value::as_str).filter(|_| status == 200).ok_or_else(|| {
            let why = body.get("error_description").or_else(|| body.get("error")).and_then(Value::as_str);
            ClientError::Credentials(format!(
                "token endpoint {url} refused (HTTP {status}): {}",
                why.unwrap_or("no token")
            ))
        })?;
        let lifetime = Duration::from_secs(body.get("expires_in").and_then(Value::as_u64).unwrap_or(300));
        *cached = Some((token.to_string(), Instant::now() + lifetime.saturating_sub(RENEW_BEFORE)));
        Ok(token.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_secret_goes_only_to_the_cards_origin_over_https_or_to_loopback() {
        let ok = |token: &str, card: &str| card_token_url(token, card).is_ok();
        assert!(ok("https://agent.example/oauth/token", "https://agent.example/.well-known/agent-card.json"));
        assert!(ok("http://127.0.0.1:8080/token", "http://127.0.0.1:8080/.well-known/agent-card.json"));
        assert!(ok("http://localhost:8080/token", "http://localhost:8080/card.json"));
        assert!(ok("http://[::1]:8080/token", "http://[::1]:8080/card.json"));
        assert!(!ok("https://evil.example/token", "https://agent.example/card.json"), "another host");
        assert!(!ok("https://agent.example:8443/token", "https://agent.example/card.json"), "another port");
        assert!(!ok("http://127.0.0.1:9/token", "http://127.0.0.1:8080/card.json"), "another loopback port");
        assert!(!ok("http://agent.example/token", "http://agent.example/card.json"), "plain HTTP off loopback");
        assert!(!ok("not a url", "https://agent.example/card.json"));
        let why = card_token_url("http://127.0.0.1:9/token", "http://127.0.0.1:8080/c.json").unwrap_err();
        assert!(why.contains("not on the card's origin (http://127.0.0.1:8080)"), "{why}");
    }
}
