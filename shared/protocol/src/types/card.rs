//! The Agent Card and its parts (spec §4.4, §4.5).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::serde_helpers::is_false;
use super::Struct;

/// Self-describing manifest of an agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default, alias = "supported_interfaces")]
    pub supported_interfaces: Vec<AgentInterface>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    #[serde(default)]
    pub version: String,
    #[serde(default, alias = "documentation_url", skip_serializing_if = "Option::is_none")]
    pub documentation_url: Option<String>,
    #[serde(default)]
    pub capabilities: AgentCapabilities,
    #[serde(default, alias = "security_schemes", skip_serializing_if = "BTreeMap::is_empty")]
    pub security_schemes: BTreeMap<String, SecurityScheme>,
    #[serde(default, alias = "security_requirements", skip_serializing_if = "Vec::is_empty")]
    pub security_requirements: Vec<SecurityRequirement>,
    #[serde(default, alias = "default_input_modes")]
    pub default_input_modes: Vec<String>,
    #[serde(default, alias = "default_output_modes")]
    pub default_output_modes: Vec<String>,
    #[serde(default)]
    pub skills: Vec<AgentSkill>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signatures: Vec<AgentCardSignature>,
    #[serde(default, alias = "icon_url", skip_serializing_if = "Option::is_none")]
    pub icon_url: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    #[serde(default)]
    pub url: String,
    #[serde(default, alias = "protocol_binding")]
    pub protocol_binding: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    #[serde(default, alias = "protocol_version")]
    pub protocol_version: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentProvider {
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub organization: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    #[serde(default, alias = "push_notifications", skip_serializing_if = "Option::is_none")]
    pub push_notifications: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<AgentExtension>,
    #[serde(default, alias = "extended_agent_card", skip_serializing_if = "Option::is_none")]
    pub extended_agent_card: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AgentExtension {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uri: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default, skip_serializing_if = "is_false")]
    pub required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Struct>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    #[serde(default, alias = "input_modes", skip_serializing_if = "Vec::is_empty")]
    pub input_modes: Vec<String>,
    #[serde(default, alias = "output_modes", skip_serializing_if = "Vec::is_empty")]
    pub output_modes: Vec<String>,
    #[serde(default, alias = "security_requirements", skip_serializing_if = "Vec::is_empty")]
    pub security_requirements: Vec<SecurityRequirement>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentCardSignature {
    #[serde(default)]
    pub protected: String,
    #[serde(default)]
    pub signature: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<Struct>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StringList {
    #[serde(default)]
    pub list: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SecurityRequirement {
    #[serde(default)]
    pub schemes: BTreeMap<String, StringList>,
}

/// One-of of the OpenAPI-style security schemes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SecurityScheme {
    #[serde(alias = "api_key_security_scheme")]
    ApiKeySecurityScheme(ApiKeySecurityScheme),
    #[serde(alias = "http_auth_security_scheme")]
    HttpAuthSecurityScheme(HttpAuthSecurityScheme),
    #[serde(rename = "oauth2SecurityScheme", alias = "oauth2_security_scheme")]
    Oauth2SecurityScheme(OAuth2SecurityScheme),
    #[serde(alias = "open_id_connect_security_scheme")]
    OpenIdConnectSecurityScheme(OpenIdConnectSecurityScheme),
    #[serde(rename = "mtlsSecurityScheme", alias = "mtls_security_scheme")]
    MtlsSecurityScheme(MutualTlsSecurityScheme),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiKeySecurityScheme {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// `header`, `query` or `cookie`.
    #[serde(default)]
    pub location: String,
    #[serde(default)]
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpAuthSecurityScheme {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default)]
    pub scheme: String,
    #[serde(default, alias = "bearer_format", skip_serializing_if = "String::is_empty")]
    pub bearer_format: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OAuth2SecurityScheme {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    pub flows: OAuthFlows,
    #[serde(default, alias = "oauth2_metadata_url", skip_serializing_if = "String::is_empty")]
    pub oauth2_metadata_url: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenIdConnectSecurityScheme {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default, alias = "open_id_connect_url")]
    pub open_id_connect_url: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MutualTlsSecurityScheme {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
}

/// One-of of the OAuth flows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum OAuthFlows {
    #[serde(alias = "authorization_code")]
    AuthorizationCode(AuthorizationCodeOAuthFlow),
    #[serde(alias = "client_credentials")]
    ClientCredentials(ClientCredentialsOAuthFlow),
    /// Deprecated in the proto; still readable.
    Implicit(ImplicitOAuthFlow),
    /// Deprecated in the proto; still readable.
    Password(PasswordOAuthFlow),
    #[serde(alias = "device_code")]
    DeviceCode(DeviceCodeOAuthFlow),
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthorizationCodeOAuthFlow {
    #[serde(default, alias = "authorization_url")]
    pub authorization_url: String,
    #[serde(default, alias = "token_url")]
    pub token_url: String,
    #[serde(default, alias = "refresh_url", skip_serializing_if = "String::is_empty")]
    pub refresh_url: String,
    #[serde(default)]
    pub scopes: BTreeMap<String, String>,
    #[serde(default, alias = "pkce_required", skip_serializing_if = "is_false")]
    pub pkce_required: bool,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientCredentialsOAuthFlow {
    #[serde(default, alias = "token_url")]
    pub token_url: String,
    #[serde(default, alias = "refresh_url", skip_serializing_if = "String::is_empty")]
    pub refresh_url: String,
    #[serde(default)]
    pub scopes: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImplicitOAuthFlow {
    #[serde(default, alias = "authorization_url", skip_serializing_if = "String::is_empty")]
    pub authorization_url: String,
    #[serde(default, alias = "refresh_url", skip_serializing_if = "String::is_empty")]
    pub refresh_url: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scopes: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PasswordOAuthFlow {
    #[serde(default, alias = "token_url", skip_serializing_if = "String::is_empty")]
    pub token_url: String,
    #[serde(default, alias = "refresh_url", skip_serializing_if = "String::is_empty")]
    pub refresh_url: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scopes: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceCodeOAuthFlow {
    #[serde(default, alias = "device_authorization_url")]
    pub device_authorization_url: String,
    #[serde(default, alias = "token_url")]
    pub token_url: String,
    #[serde(default, alias = "refresh_url", skip_serializing_if = "String::is_empty")]
    pub refresh_url: String,
    #[serde(default)]
    pub scopes: BTreeMap<String, String>,
}
