//! Who is calling, and what they may do. Every task belongs to the principal that created it.
//!
//! - [`api_key`]: static API keys, each belonging to one principal.
//! - [`bearer`] (feature `oidc`): OAuth 2.0 bearer tokens (JWTs verified by [`crate::oidc`], or
//!   claims an API gateway's JWT authorizer verified before the request reached the function).
//! - [`Schemes`]: the configured schemes together. It picks the scheme by the credential a request
//!   presents, answers a request that presents none with a challenge for every scheme, checks the
//!   per-operation scopes, and declares the schemes in the card (`securitySchemes`,
//!   `securityRequirements`, per-skill requirements).
//!
//! With no scheme configured every caller is the same anonymous principal ([`Anonymous`]).

pub mod api_key;
#[cfg(feature = "oidc")]
pub mod bearer;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use async_trait::async_trait;
use http::request::Parts;

use a2a_protocol::error::{A2aError, Result};
use a2a_protocol::operation::Operation;
use a2a_protocol::types::{SecurityRequirement, SecurityScheme, StringList};

pub use api_key::{ApiKeyAuth, DEFAULT_API_KEY_HEADER};

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal {
    pub id: String,
    /// False for the anonymous principal.
    pub authenticated: bool,
    /// What the caller's credential allows.
    pub grants: Grants,
}

/// What a credential allows: everything (API keys, the anonymous principal, work the runner does for
/// a task's owner), or the scopes its token carries.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum Grants {
    #[default]
    All,
    Scopes(Arc<BTreeSet<String>>),
}

impl Grants {
    pub fn allows(&self, scope: &str) -> bool {
        match self {
            Self::All => true,
            Self::Scopes(granted) => granted.contains(scope),
        }
    }
}

impl Principal {
    pub fn anonymous() -> Self {
        Self { id: "anonymous".into(), authenticated: false, grants: Grants::All }
    }

    pub fn user(id: impl Into<String>) -> Self {
        Self { id: id.into(), authenticated: true, grants: Grants::All }
    }

    /// The owner of a stored task, as the task runner acts for it.
    pub fn owner(id: &str) -> Self {
        if id == "anonymous" {
            Self::anonymous()
        } else {
            Self::user(id)
        }
    }
}

/// What the card declares about authentication.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CardSecurity {
    pub schemes: BTreeMap<String, SecurityScheme>,
    /// Alternatives: a request satisfying any one is authenticated.
    pub requirements: Vec<SecurityRequirement>,
    /// Per skill id, the requirements that skill declares.
    pub skills: BTreeMap<String, Vec<SecurityRequirement>>,
}

/// Decides who a request comes from, and what it may do.
#[async_trait]
pub trait Authenticator: Send + Sync {
    /// Who sent the request (its headers, query and the extensions a platform attached).
    async fn authenticate(&self, req: &Parts) -> Result<Principal>;

    /// Whether `principal` may call `operation` (its per-operation scopes).
    fn authorize(&self, _principal: &Principal, _operation: Operation) -> Result<()> {
        Ok(())
    }

    /// True when the deployment asks for no credentials at all: every caller is the same
    /// anonymous principal, and what "authenticated" callers may see (the extended card) is open.
    fn is_open(&self) -> bool {
        false
    }

    /// What the card declares.
    fn card_security(&self) -> CardSecurity {
        CardSecurity::default()
    }
}

/// Everyone is the same anonymous principal.
#[derive(Debug, Default, Clone, Copy)]
pub struct Anonymous;

#[async_trait]
impl Authenticator for Anonymous {
    async fn authenticate(&self, _: &Parts) -> Result<Principal> {
        Ok(Principal::anonymous())
    }

    fn is_open(&self) -> bool {
        true
    }
}

/// Claims an API gateway verified before invoking the function (API Gateway's JWT authorizer);
/// the Lambda glue attaches them to the request's extensions, where no client can put anything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GatewayClaims {
    pub claims: HashMap<String, String>,
    pub scopes: Vec<String>,
}

/// How a deployment authenticates: every field is optional; with none set, callers are anonymous.
#[derive(Debug, Clone, Default)]
pub struct AuthSettings {
    /// `principal:key,principal:key` (`--api-keys` / `A2A_API_KEYS`).
    pub api_keys: Option<String>,
    /// The header API keys travel in (default `X-API-Key`).
    pub api_key_header: Option<String>,
    /// Bearer tokens from an OpenID provider.
    pub oidc: Option<OidcSettings>,
    /// `OP=scope scope,OP=scope`: scopes a bearer token needs for some operations, by 1.0 method
    /// name or group (`push`: the four push-config operations).
    pub operation_scopes: Option<String>,
    /// `skill=scope scope,...`: the scopes the card declares per skill.
    pub skill_scopes: Option<String>,
}

/// Bearer-token settings (flags `--oidc-*`, variables `OIDC_*`).
#[derive(Debug, Clone, Default)]
pub struct OidcSettings {
    /// The issuer (`iss`); discovery at `{issuer}/.well-known/openid-configuration`.
    pub issuer: String,
    /// An explicit JWKS URL (no discovery).
    pub jwks_url: Option<String>,
    /// Allowed audiences, comma-separated.
    pub audiences: Option<String>,
    /// Allowed client ids (`azp` / `client_id`), comma-separated.
    pub client_ids: Option<String>,
    /// Scopes every request needs, space- or comma-separated.
    pub required_scopes: Option<String>,
    /// The claim naming the principal (default `sub`).
    pub principal_claim: Option<String>,
    /// The token endpoint, declared in the card's OAuth 2.0 client-credentials flow.
    pub token_url: Option<String>,
    /// Clock skew tolerated on `exp`, `nbf` and `iat`, in seconds (default 60).
    pub leeway_secs: Option<u64>,
    /// Who verifies the tokens (default: this server).
    pub verified_by: VerifiedBy,
}

/// Who verifies bearer tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum VerifiedBy {
    /// This server, with the issuer's keys.
    #[default]
    Server,
    /// API Gateway's JWT authorizer: the principal comes from the claims it passes on
    /// ([`GatewayClaims`]) instead of verifying again.
    Gateway,
    /// A proxy in front that verified the token and forwards it (Bedrock AgentCore Runtime's JWT
    /// authorizer with `Authorization` allowlisted): its claims are read without checking its
    /// signature again, so the port must be reachable through that proxy only.
    Proxy,
}

impl AuthSettings {
    /// Reads the settings through `var` (the environment variables a Lambda function is given):
    /// `A2A_API_KEYS`, `A2A_API_KEY_HEADER`, `OIDC_ISSUER`, `OIDC_JWKS_URL`, `OIDC_AUDIENCES`,
    /// `OIDC_CLIENT_IDS`, `OIDC_REQUIRED_SCOPES`, `OIDC_PRINCIPAL_CLAIM`, `OIDC_TOKEN_URL`, `OIDC_LEEWAY_SECONDS`,
    /// `OIDC_VERIFIED_BY_GATEWAY` (`true`), `A2A_OPERATION_SCOPES`, `A2A_SKILL_SCOPES`.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Self {
        Self {
            api_keys: var("A2A_API_KEYS"),
            api_key_header: var("A2A_API_KEY_HEADER"),
            oidc: var("OIDC_ISSUER").map(|issuer| OidcSettings {
                issuer,
                jwks_url: var("OIDC_JWKS_URL"),
                audiences: var("OIDC_AUDIENCES"),
                client_ids: var("OIDC_CLIENT_IDS"),
                required_scopes: var("OIDC_REQUIRED_SCOPES"),
                principal_claim: var("OIDC_PRINCIPAL_CLAIM"),
                token_url: var("OIDC_TOKEN_URL"),
                leeway_secs: var("OIDC_LEEWAY_SECONDS").and_then(|v| v.trim().parse().ok()),
                verified_by: match var("OIDC_VERIFIED_BY_GATEWAY") {
                    Some(v) if v.trim().eq_ignore_ascii_case("true") => VerifiedBy::Gateway,
                    _ => VerifiedBy::Server,
                },
            }),
            operation_scopes: var("A2A_OPERATION_SCOPES"),
            skill_scopes: var("A2A_SKILL_SCOPES"),
        }
    }
}

/// Splits a list given as `a,b` or `a b`.
pub(crate) fn list(spec: Option<&str>) -> Vec<String> {
    spec.unwrap_or("")
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// Parses `NAME=scope scope,NAME=scope` into (name, scopes).
fn scope_map(spec: &str, what: &str) -> Result<Vec<(String, Vec<String>)>> {
    spec.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|item| {
            let (name, scopes) = item
                .split_once('=')
                .ok_or_else(|| A2aError::invalid_params(format!("{what}: {item:?} is not NAME=scope")))?;
            let scopes = list(Some(scopes));
            if scopes.is_empty() {
                return Err(A2aError::invalid_params(format!("{what}: {name:?} names no scope")));
            }
            Ok((name.trim().to_string(), scopes))
        })
        .collect()
}

impl AuthSettings {
    /// The authenticator these settings ask for (anonymous when none is set).
    pub fn build(&self) -> Result<Arc<dyn Authenticator>> {
        let api_keys = match &self.api_keys {
            Some(spec) => Some(ApiKeyAuth::new(
                self.api_key_header.as_deref().unwrap_or(DEFAULT_API_KEY_HEADER),
                ApiKeyAuth::parse_pairs(spec),
            )?),
            None => None,
        };
        #[cfg(feature = "oidc")]
        let bearer = self.oidc.as_ref().map(bearer::BearerAuth::new).transpose()?;
        #[cfg(not(feature = "oidc"))]
        if self.oidc.is_some() {
            return Err(A2aError::invalid_params("bearer tokens need the oidc feature"));
        }
        let mut operation_scopes: BTreeMap<Operation, Vec<String>> = BTreeMap::new();
        for (name, scopes) in scope_map(self.operation_scopes.as_deref().unwrap_or(""), "operation scopes")? {
            let ops = Operation::named(&name).ok_or_else(|| {
                A2aError::invalid_params(format!(
                    "operation scopes: unknown operation {name:?} (a 1.0 method name such as SendMessage, or push, or *)"
                ))
            })?;
            for op in ops {
                operation_scopes.entry(op).or_default().extend(scopes.iter().cloned());
            }
        }
        let skill_scopes = scope_map(self.skill_scopes.as_deref().unwrap_or(""), "skill scopes")?;
        #[cfg(feature = "oidc")]
        let has_bearer = bearer.is_some();
        #[cfg(not(feature = "oidc"))]
        let has_bearer = false;
        if !has_bearer && (!operation_scopes.is_empty() || !skill_scopes.is_empty()) {
            return Err(A2aError::invalid_params("operation and skill scopes need bearer tokens (--oidc-issuer)"));
        }
        if api_keys.is_none() && !has_bearer {
            return Ok(Arc::new(Anonymous));
        }
        Ok(Arc::new(Schemes {
            api_keys,
            #[cfg(feature = "oidc")]
            bearer,
            operation_scopes,
            #[cfg(feature = "oidc")]
            skill_scopes: skill_scopes.into_iter().collect(),
        }))
    }
}

/// The configured schemes together (at least one).
pub struct Schemes {
    api_keys: Option<ApiKeyAuth>,
    #[cfg(feature = "oidc")]
    bearer: Option<bearer::BearerAuth>,
    operation_scopes: BTreeMap<Operation, Vec<String>>,
    #[cfg(feature = "oidc")]
    skill_scopes: BTreeMap<String, Vec<String>>,
}

impl Schemes {
    /// The challenge for a request that presented no usable credential: one per scheme.
    fn challenges(&self) -> Vec<String> {
        let mut out = Vec::new();
        #[cfg(feature = "oidc")]
        out.extend(self.bearer.as_ref().map(bearer::BearerAuth::challenge));
        out.extend(self.api_keys.as_ref().map(ApiKeyAuth::challenge));
        out
    }

    fn what_to_send(&self) -> String {
        let mut ways = Vec::new();
        #[cfg(feature = "oidc")]
        if self.bearer.is_some() {
            ways.push("a bearer token in the Authorization header".to_string());
        }
        if let Some(keys) = &self.api_keys {
            ways.push(format!("an API key in the {} header", keys.header_name()));
        }
        ways.join(" or ")
    }
}

#[async_trait]
impl Authenticator for Schemes {
    async fn authenticate(&self, req: &Parts) -> Result<Principal> {
        #[cfg(feature = "oidc")]
        if let Some(bearer) = &self.bearer {
            if let Some(result) = bearer.authenticate(req).await {
                return result;
            }
        }
        if let Some(keys) = &self.api_keys {
            if let Some(result) = keys.authenticate(&req.headers) {
                return result;
            }
        }
        Err(A2aError::unauthenticated(format!("authentication required: send {}", self.what_to_send()))
            .challenged(self.challenges()))
    }

    fn authorize(&self, principal: &Principal, operation: Operation) -> Result<()> {
        let Some(needed) = self.operation_scopes.get(&operation) else { return Ok(()) };
        match needed.iter().find(|scope| !principal.grants.allows(scope)) {
            None => Ok(()),
            #[cfg(feature = "oidc")]
            Some(scope) => Err(bearer::insufficient_scope(scope)),
            #[cfg(not(feature = "oidc"))]
            Some(scope) => Err(A2aError::insufficient_scope(scope)),
        }
    }

    fn card_security(&self) -> CardSecurity {
        let mut card = CardSecurity::default();
        #[cfg(feature = "oidc")]
        if let Some(bearer) = &self.bearer {
            bearer.declare(&mut card, &self.operation_scopes, &self.skill_scopes);
        }
        if let Some(keys) = &self.api_keys {
            keys.declare(&mut card);
        }
        card
    }
}

/// A requirement naming one scheme with `scopes`.
pub(crate) fn requirement(scheme: &str, scopes: &[String]) -> SecurityRequirement {
    SecurityRequirement { schemes: BTreeMap::from([(scheme.to_string(), StringList { list: scopes.to_vec() })]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(headers: &[(&str, &str)]) -> Parts {
        let mut req = http::Request::builder().uri("/");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        req.body(()).unwrap().into_parts().0
    }

    #[tokio::test]
    async fn api_keys_map_to_principals_and_every_refusal_is_challenged() {
        let settings = AuthSettings { api_keys: Some("alice:k1, bob:k2".into()), ..Default::default() };
        let auth = settings.build().unwrap();
        let missing = auth.authenticate(&parts(&[])).await.unwrap_err();
        assert_eq!(missing.kind, a2a_protocol::error::ErrorKind::Unauthenticated);
        assert_eq!(missing.challenges, vec![r#"ApiKey header="X-API-Key""#.to_string()]);
        assert_eq!(auth.authenticate(&parts(&[("x-api-key", "k2")])).await.unwrap(), Principal::user("bob"));
        let wrong = auth.authenticate(&parts(&[("x-api-key", "nope")])).await.unwrap_err();
        assert_eq!(wrong.challenges.len(), 1);
        for twice in [
            &[("x-api-key", "k1"), ("x-api-key", "k2")][..],
            &[("x-api-key", "k2"), ("X-Api-Key", "k2")],
            &[("x-api-key", "k1,k2")],
        ] {
            let refused = auth.authenticate(&parts(twice)).await.unwrap_err();
            assert_eq!(refused.kind, a2a_protocol::error::ErrorKind::Unauthenticated);
            assert_eq!(refused.message, "the X-API-Key header must be sent once, with one API key", "{twice:?}");
            assert_eq!(refused.challenges.len(), 1);
        }
        assert!(ApiKeyAuth::new("X-API-Key", [("a".to_string(), "k,1".to_string())]).is_err());
    }

    #[test]
    #[cfg(feature = "oidc")] // bearer settings build only with the OpenID Connect verifier
    fn settings_from_the_environment() {
        let vars: HashMap<&str, &str> = [
            ("A2A_API_KEYS", "ops:k"),
            ("OIDC_ISSUER", "https://issuer.test"),
            ("OIDC_CLIENT_IDS", "c1,c2"),
            ("OIDC_LEEWAY_SECONDS", "5"),
            ("OIDC_VERIFIED_BY_GATEWAY", "TRUE"),
            ("A2A_OPERATION_SCOPES", "push=a2a.push"),
        ]
        .into();
        let settings = AuthSettings::from_vars(|name| vars.get(name).map(|v| v.to_string()));
        let oidc = settings.oidc.clone().unwrap();
        assert_eq!((oidc.issuer.as_str(), oidc.client_ids.as_deref()), ("https://issuer.test", Some("c1,c2")));
        assert_eq!((oidc.leeway_secs, oidc.verified_by), (Some(5), VerifiedBy::Gateway));
        assert!(settings.build().is_ok());
        assert!(AuthSettings::from_vars(|_| None).build().unwrap().is_open());
    }

    #[test]
    #[cfg(feature = "oidc")]
    fn scope_settings_are_checked_at_start() {
        let bad = AuthSettings {
            api_keys: Some("a:k".into()),
            operation_scopes: Some("push=x".into()),
            ..Default::default()
        };
        assert!(bad.build().is_err(), "scopes without bearer tokens");
        assert!(scope_map("push", "x").is_err());
        assert!(scope_map("push=", "x").is_err());
        assert_eq!(scope_map("push=a b, GetTask=c", "x").unwrap()[0].1, vec!["a", "b"]);
        let unknown = AuthSettings {
            oidc: Some(OidcSettings {
                issuer: "https://i.test".into(),
                audiences: Some("a".into()),
                ..Default::default()
            }),
            operation_scopes: Some("SendMesage=x".into()),
            ..Default::default()
        };
        assert!(unknown.build().err().unwrap().message.contains("unknown operation \"SendMesage\""));
    }
}
