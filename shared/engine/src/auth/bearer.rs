//! OAuth 2.0 bearer tokens (RFC 6750) as a scheme: the token from the `Authorization` header,
//! verified by [`crate::oidc::BearerVerifier`] (or, behind API Gateway's JWT authorizer, the claims
//! the gateway verified; behind a proxy that checked the signature, the same claim checks without
//! it), the principal and scopes it grants, the RFC 6750 challenges of its
//! refusals, and what the card declares for it (OpenID Connect discovery, the OAuth 2.0
//! client-credentials flow, or plain HTTP bearer). Nothing here logs a token or a claim.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use http::request::Parts;

use super::{list, requirement, CardSecurity, GatewayClaims, Grants, OidcSettings, Principal, VerifiedBy};
use crate::oidc::{BearerVerifier, OidcConfig, Refusal};
use a2a_protocol::error::{A2aError, Result};
use a2a_protocol::operation::Operation;
use a2a_protocol::types::{
    ClientCredentialsOAuthFlow, HttpAuthSecurityScheme, OAuth2SecurityScheme, OAuthFlows, OpenIdConnectSecurityScheme,
    SecurityScheme,
};

const REALM: &str = "a2a";
const OIDC: &str = "oidc";
const OAUTH2: &str = "oauth2";
const BEARER: &str = "bearer";

pub struct BearerAuth {
    /// `None`: the API gateway verified the token ([`GatewayClaims`]).
    verifier: Option<BearerVerifier>,
    issuer: String,
    /// Declared in the card: OpenID discovery (when no explicit JWKS URL was given).
    discovery: bool,
    token_url: Option<String>,
    required_scopes: Vec<String>,
    principal_claim: String,
}

impl BearerAuth {
    pub fn new(settings: &OidcSettings) -> Result<Self> {
        let bad = |why: String| A2aError::invalid_params(format!("oidc: {why}"));
        let issuer = settings.issuer.trim().to_string();
        if issuer.is_empty() {
            return Err(bad("the issuer (--oidc-issuer / OIDC_ISSUER) is required".into()));
        }
        let required_scopes = list(settings.required_scopes.as_deref());
        let principal_claim =
            settings.principal_claim.clone().filter(|c| !c.is_empty()).unwrap_or_else(|| "sub".into());
        let verifier = match settings.verified_by {
            VerifiedBy::Gateway => None,
            by => {
                let mut config = OidcConfig::new(issuer.clone(), list(settings.audiences.as_deref()));
                config.jwks_url.clone_from(&settings.jwks_url);
                config.client_ids = list(settings.client_ids.as_deref());
                config.required_scopes.clone_from(&required_scopes);
                config.principal_claim.clone_from(&principal_claim);
                if let Some(secs) = settings.leeway_secs {
                    config.leeway = std::time::Duration::from_secs(secs);
                }
                config.signature_checked_upstream = by == VerifiedBy::Proxy;
                if config.signature_checked_upstream {
                    tracing::warn!(
                        "bearer token signatures are not checked here: the proxy in front (AgentCore Runtime's JWT authorizer) must check them, and nothing else may reach this port"
                    );
                }
                Some(BearerVerifier::new(config).map_err(bad)?)
            }
        };
        Ok(Self {
            verifier,
            issuer,
            discovery: settings.jwks_url.is_none(),
            token_url: settings.token_url.clone().filter(|u| !u.is_empty()),
            required_scopes,
            principal_claim,
        })
    }

    /// The challenge to a request without a token (RFC 6750 §3: no error code).
    pub(crate) fn challenge(&self) -> String {
        if self.required_scopes.is_empty() {
            format!("Bearer realm=\"{REALM}\"")
        } else {
            format!("Bearer realm=\"{REALM}\", scope=\"{}\"", self.required_scopes.join(" "))
        }
    }

    /// The principal of the bearer token the request presents; `None` when it presents none.
    pub(crate) async fn authenticate(&self, req: &Parts) -> Option<Result<Principal>> {
        let token = bearer_token(req);
        let Some(verifier) = &self.verifier else {
            return match (req.extensions.get::<GatewayClaims>(), token) {
                (Some(claims), _) => Some(self.gateway_principal(claims)),
                (None, Some(_)) => Some(Err(invalid_token("the token did not pass the API gateway's authorizer"))),
                (None, None) => None,
            };
        };
        let token = token?;
        Some(match verifier.verify(token, &[]).await {
            Ok(identity) => {
                Ok(Principal { id: identity.principal, authenticated: true, grants: Grants::Scopes(identity.scopes) })
            }
            Err(Refusal::InvalidToken(why)) => Err(invalid_token(&why)),
            Err(Refusal::InsufficientScope(scope)) => Err(insufficient_scope(&scope)),
        })
    }

    fn gateway_principal(&self, gateway: &GatewayClaims) -> Result<Principal> {
        let id = gateway
            .claims
            .get(&self.principal_claim)
            .filter(|p| !p.is_empty())
            .ok_or_else(|| invalid_token(&format!("the token has no {} claim", self.principal_claim)))?;
        // HTTP APIs pass claims as strings; an array claim arrives as "[a b]".
        let mut scopes: BTreeSet<String> = gateway.scopes.iter().cloned().collect();
        for claim in ["scope", "scp"] {
            if let Some(value) = gateway.claims.get(claim) {
                scopes.extend(value.trim_matches(|c| c == '[' || c == ']').split_whitespace().map(String::from));
            }
        }
        if let Some(missing) = self.required_scopes.iter().find(|s| !scopes.contains(*s)) {
            return Err(insufficient_scope(missing));
        }
        Ok(Principal { id: id.clone(), authenticated: true, grants: Grants::Scopes(Arc::new(scopes)) })
    }

    /// Declares the scheme: OpenID Connect discovery and/or the OAuth 2.0 client-credentials flow
    /// (with every scope the deployment uses), or plain HTTP bearer when neither is known.
    pub(crate) fn declare(
        &self,
        card: &mut CardSecurity,
        operation_scopes: &BTreeMap<Operation, Vec<String>>,
        skill_scopes: &BTreeMap<String, Vec<String>>,
    ) {
        let mut names = Vec::new();
        if self.discovery {
            let url = format!("{}/.well-known/openid-configuration", self.issuer.trim_end_matches('/'));
            card.schemes.insert(
                OIDC.into(),
                SecurityScheme::OpenIdConnectSecurityScheme(OpenIdConnectSecurityScheme {
                    description: "OAuth 2.0 access token (JWT) from the agent's OpenID provider".into(),
                    open_id_connect_url: url,
                }),
            );
            names.push(OIDC);
        }
        if let Some(token_url) = &self.token_url {
            let flow = ClientCredentialsOAuthFlow {
                token_url: token_url.clone(),
                refresh_url: String::new(),
                scopes: scope_descriptions(&self.required_scopes, operation_scopes, skill_scopes),
            };
            card.schemes.insert(
                OAUTH2.into(),
                SecurityScheme::Oauth2SecurityScheme(OAuth2SecurityScheme {
                    description: "OAuth 2.0 client credentials".into(),
                    flows: OAuthFlows::ClientCredentials(flow),
                    oauth2_metadata_url: String::new(),
                }),
            );
            names.push(OAUTH2);
        }
        if names.is_empty() {
            card.schemes.insert(
                BEARER.into(),
                SecurityScheme::HttpAuthSecurityScheme(HttpAuthSecurityScheme {
                    description: format!("OAuth 2.0 access token (JWT) issued by {}", self.issuer),
                    scheme: "Bearer".into(),
                    bearer_format: "JWT".into(),
                }),
            );
            names.push(BEARER);
        }
        card.requirements.extend(names.iter().map(|name| requirement(name, &self.required_scopes)));
        for (skill, scopes) in skill_scopes {
            let mut all = self.required_scopes.clone();
            all.extend(scopes.iter().filter(|s| !self.required_scopes.contains(s)).cloned());
            card.skills.insert(skill.clone(), names.iter().map(|name| requirement(name, &all)).collect());
        }
    }
}

/// What each scope is for, for the card's OAuth 2.0 flow.
fn scope_descriptions(
    required: &[String],
    operation_scopes: &BTreeMap<Operation, Vec<String>>,
    skill_scopes: &BTreeMap<String, Vec<String>>,
) -> BTreeMap<String, String> {
    let mut uses: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for scope in required {
        uses.entry(scope.clone()).or_default().push("every request".into());
    }
    for (op, scopes) in operation_scopes {
        for scope in scopes {
            uses.entry(scope.clone()).or_default().push(op.name().into());
        }
    }
    for (skill, scopes) in skill_scopes {
        for scope in scopes {
            uses.entry(scope.clone()).or_default().push(format!("skill {skill}"));
        }
    }
    uses.into_iter().map(|(scope, used)| (scope, format!("Required for {}", used.join(", ")))).collect()
}

/// The token of an `Authorization: Bearer` header (the scheme name is case-insensitive).
fn bearer_token(req: &Parts) -> Option<&str> {
    let value = req.headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim()).filter(|t| !t.is_empty())
}

/// Text fit for a quoted-string in a challenge.
fn quoted(text: &str) -> String {
    text.chars().filter(|c| *c != '"' && *c != '\\' && !c.is_control()).collect()
}

/// 401 `invalid_token` (RFC 6750 §3.1).
fn invalid_token(why: &str) -> A2aError {
    A2aError::unauthenticated(format!("invalid bearer token: {why}")).with("error", "invalid_token").challenged(vec![
        format!("Bearer realm=\"{REALM}\", error=\"invalid_token\", error_description=\"{}\"", quoted(why)),
    ])
}

/// 403 `insufficient_scope`, naming the scope (RFC 6750 §3.1).
pub(crate) fn insufficient_scope(scope: &str) -> A2aError {
    A2aError::insufficient_scope(scope).with("error", "insufficient_scope").challenged(vec![format!(
        "Bearer realm=\"{REALM}\", error=\"insufficient_scope\", scope=\"{}\"",
        quoted(scope)
    )])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::AuthSettings;

    fn settings(verified_by: VerifiedBy) -> OidcSettings {
        OidcSettings {
            issuer: "https://issuer.test".into(),
            audiences: Some("https://agent.test".into()),
            required_scopes: Some("a2a.call".into()),
            token_url: Some("https://issuer.test/token".into()),
            verified_by,
            ..Default::default()
        }
    }

    #[test]
    fn the_card_declares_discovery_the_client_credentials_flow_and_per_skill_scopes() {
        let auth = AuthSettings {
            oidc: Some(settings(VerifiedBy::Server)),
            operation_scopes: Some("push=a2a.push".into()),
            skill_scopes: Some("summarize=a2a.summarize".into()),
            ..Default::default()
        }
        .build()
        .unwrap();
        let card = auth.card_security();
        let json = serde_json::to_value(&card.schemes).unwrap();
        assert_eq!(
            json["oidc"]["openIdConnectSecurityScheme"]["openIdConnectUrl"],
            "https://issuer.test/.well-known/openid-configuration"
        );
        let flow = &json["oauth2"]["oauth2SecurityScheme"]["flows"]["clientCredentials"];
        assert_eq!(flow["tokenUrl"], "https://issuer.test/token");
        assert_eq!(flow["scopes"]["a2a.call"], "Required for every request");
        assert!(flow["scopes"]["a2a.push"].as_str().unwrap().contains("DeleteTaskPushNotificationConfig"));
        assert_eq!(flow["scopes"]["a2a.summarize"], "Required for skill summarize");
        assert_eq!(
            card.requirements,
            vec![requirement(OIDC, &["a2a.call".into()]), requirement(OAUTH2, &["a2a.call".into()])]
        );
        let skill = &card.skills["summarize"];
        assert_eq!(skill[0], requirement(OIDC, &["a2a.call".into(), "a2a.summarize".into()]));
        // An explicit JWKS and no token URL: plain HTTP bearer.
        let plain = BearerAuth::new(&OidcSettings {
            jwks_url: Some("https://issuer.test/keys".into()),
            token_url: None,
            ..settings(VerifiedBy::Server)
        })
        .unwrap();
        let mut card = CardSecurity::default();
        plain.declare(&mut card, &BTreeMap::new(), &BTreeMap::new());
        assert!(
            matches!(&card.schemes[BEARER], SecurityScheme::HttpAuthSecurityScheme(h) if h.scheme == "Bearer" && h.bearer_format == "JWT")
        );
    }

    #[tokio::test]
    async fn gateway_claims_name_the_principal_and_its_scopes() {
        let auth = BearerAuth::new(&settings(VerifiedBy::Gateway)).unwrap();
        let mut req = http::Request::builder().uri("/").body(()).unwrap().into_parts().0;
        assert!(auth.authenticate(&req).await.is_none(), "no token, no claims: not this scheme");
        let claims = |scope: &str| GatewayClaims {
            claims: [("sub".to_string(), "alice".to_string()), ("scp".to_string(), format!("[{scope}]"))].into(),
            scopes: Vec::new(),
        };
        req.extensions.insert(claims("a2a.call a2a.push"));
        let principal = auth.authenticate(&req).await.unwrap().unwrap();
        assert_eq!(principal.id, "alice");
        assert!(principal.grants.allows("a2a.push") && !principal.grants.allows("a2a.admin"));
        req.extensions.insert(claims("a2a.other"));
        let refused = auth.authenticate(&req).await.unwrap().unwrap_err();
        assert_eq!(refused.kind, a2a_protocol::ErrorKind::PermissionDenied);
        assert_eq!(refused.challenges, [r#"Bearer realm="a2a", error="insufficient_scope", scope="a2a.call""#]);
    }

    #[tokio::test]
    async fn behind_a_verifying_proxy_the_forwarded_tokens_claims_name_the_principal() {
        use base64::Engine as _;
        let auth = BearerAuth::new(&settings(VerifiedBy::Proxy)).unwrap();
        let jwt = |claims: serde_json::Value| {
            let b64 = |v: &serde_json::Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
            format!("{}.{}.c2lnbmVk", b64(&serde_json::json!({"alg": "RS256"})), b64(&claims))
        };
        let with = |token: &str| {
            http::Request::builder().header("authorization", format!("Bearer {token}")).body(()).unwrap().into_parts().0
        };
        let none = http::Request::builder().body(()).unwrap().into_parts().0;
        assert!(auth.authenticate(&none).await.is_none(), "no token: not this scheme");
        let token = jwt(
            serde_json::json!({"iss": "https://issuer.test/", "sub": "alice", "aud": "https://agent.test", "scope": "a2a.call a2a.push"}),
        );
        let principal = auth.authenticate(&with(&token)).await.unwrap().unwrap();
        assert_eq!(principal.id, "alice");
        assert!(principal.grants.allows("a2a.push") && !principal.grants.allows("a2a.admin"));
        let token = jwt(
            serde_json::json!({"iss": "https://issuer.test", "sub": "bob", "aud": ["https://agent.test"], "scp": ["a2a.other"]}),
        );
        let refused = auth.authenticate(&with(&token)).await.unwrap().unwrap_err();
        assert_eq!(refused.kind, a2a_protocol::ErrorKind::PermissionDenied, "{refused:?}");
        for (token, why) in [
            (
                jwt(serde_json::json!({"iss": "https://other.test", "sub": "eve", "scope": "a2a.call"})),
                "another issuer",
            ),
            (
                jwt(
                    serde_json::json!({"iss": "https://issuer.test", "aud": "https://agent.test", "scope": "a2a.call"}),
                ),
                "no sub claim",
            ),
            ("opaque".to_string(), "not a JWT"),
            (
                jwt(
                    serde_json::json!({"iss": "https://issuer.test", "sub": "eve", "aud": "https://agent.test", "exp": 1_000_000}),
                ),
                "expired",
            ),
            (jwt(serde_json::json!({"iss": "https://issuer.test", "sub": "eve", "aud": "https://other.test"})), "aud"),
            ("a.!!!.c".to_string(), "not base64url"),
        ] {
            let refused = auth.authenticate(&with(&token)).await.unwrap().unwrap_err();
            assert_eq!(refused.kind, a2a_protocol::ErrorKind::Unauthenticated, "{why}");
            assert!(refused.message.contains(why), "{why}: {}", refused.message);
        }
    }

    #[test]
    fn challenges_quote_safely() {
        let err = invalid_token("a \"quoted\" \\ reason\n");
        assert_eq!(
            err.challenges,
            [r#"Bearer realm="a2a", error="invalid_token", error_description="a quoted  reason""#]
        );
        assert_eq!(
            bearer_token(
                &http::Request::builder().header("authorization", "bearer  t0k ").body(()).unwrap().into_parts().0
            ),
            Some("t0k")
        );
        assert_eq!(
            bearer_token(&http::Request::builder().header("authorization", "Basic x").body(()).unwrap().into_parts().0),
            None
        );
    }
}
