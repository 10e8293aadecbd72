//! The 0.3 agent card (`url`, `preferredTransport`, `additionalInterfaces`,
//! `supportsAuthenticatedExtendedCard`, OpenAPI-style security schemes) and its conversion to and
//! from the 1.0 card.

use serde_json::Value;

use crate::error::{A2aError, Result};
use crate::types as v1;

/// The 0.3 form of a card, with the 1.0 `supportedInterfaces` kept alongside so that a 1.0 client
/// that did not send `A2A-Version` still finds the 1.0 endpoints.
pub fn card_to_wire(card: &v1::AgentCard) -> Value {
    use serde_json::json;
    // The main interface is the first one that speaks 0.3 (else the first one at all).
    let main = card
        .supported_interfaces
        .iter()
        .find(|i| i.protocol_version.starts_with("0."))
        .or_else(|| card.supported_interfaces.first());
    let (main_url, main_transport) =
        main.map_or((String::new(), "JSONRPC".to_string()), |i| (i.url.clone(), i.protocol_binding.clone()));
    let additional: Vec<Value> = card
        .supported_interfaces
        .iter()
        .filter(|i| i.protocol_version.starts_with("0."))
        .map(|i| json!({"url": i.url, "transport": i.protocol_binding}))
        .collect();
    let schemes: serde_json::Map<String, Value> =
        card.security_schemes.iter().map(|(name, s)| (name.clone(), security_scheme_to_wire(s))).collect();
    let security: Vec<Value> = card
        .security_requirements
        .iter()
        .map(|r| Value::Object(r.schemes.iter().map(|(k, v)| (k.clone(), json!(v.list))).collect()))
        .collect();
    // 0.3 cards carry a full semantic version ("0.3.0"); 1.0 cards say Major.Minor ("0.3").
    let protocol_version = main.map(|i| i.protocol_version.as_str()).filter(|v| v.starts_with("0.")).map_or_else(
        || "0.3.0".to_string(),
        |v| if v.matches('.').count() == 1 { format!("{v}.0") } else { v.to_string() },
    );
    let mut out = json!({
        "protocolVersion": protocol_version,
        "name": card.name,
        "description": card.description,
        "url": main_url,
        "preferredTransport": main_transport,
        "additionalInterfaces": additional,
        "version": card.version,
        "capabilities": {
            "streaming": card.capabilities.streaming.unwrap_or(false),
            "pushNotifications": card.capabilities.push_notifications.unwrap_or(false),
            // 1.0's name, for 1.0 readers of the card served without a version (0.3 readers ignore it).
            "extendedAgentCard": card.capabilities.extended_agent_card.unwrap_or(false),
        },
        "defaultInputModes": card.default_input_modes,
        "defaultOutputModes": card.default_output_modes,
        "skills": card.skills.iter().map(|s| {
            let mut skill = json!({"id": s.id, "name": s.name, "description": s.description, "tags": s.tags});
            if !s.examples.is_empty() { skill["examples"] = json!(s.examples); }
            if !s.input_modes.is_empty() { skill["inputModes"] = json!(s.input_modes); }
            if !s.output_modes.is_empty() { skill["outputModes"] = json!(s.output_modes); }
            skill
        }).collect::<Vec<_>>(),
        "supportsAuthenticatedExtendedCard": card.capabilities.extended_agent_card.unwrap_or(false),
        "supportedInterfaces": card.supported_interfaces,
    });
    if !card.capabilities.extensions.is_empty() {
        out["capabilities"]["extensions"] = json!(card.capabilities.extensions);
    }
    if !schemes.is_empty() {
        out["securitySchemes"] = Value::Object(schemes);
        out["security"] = json!(security);
    }
    if let Some(p) = &card.provider {
        out["provider"] = json!(p);
    }
    if let Some(u) = &card.documentation_url {
        out["documentationUrl"] = json!(u);
    }
    if let Some(u) = &card.icon_url {
        out["iconUrl"] = json!(u);
    }
    if !card.signatures.is_empty() {
        out["signatures"] = json!(card.signatures);
    }
    out
}

/// Reads a 0.3 card into the 1.0 model: `url` + `preferredTransport` + `additionalInterfaces` become
/// `supportedInterfaces` (unless the card already has them), `supportsAuthenticatedExtendedCard`
/// becomes `capabilities.extendedAgentCard`, and the OpenAPI-style security schemes and `security`
/// lists become their 1.0 one-of forms.
pub fn card_from_wire(mut card: Value) -> Result<v1::AgentCard> {
    use serde_json::json;
    let obj = card.as_object_mut().ok_or_else(|| A2aError::invalid_params("agent card must be a JSON object"))?;
    let version =
        obj.remove("protocolVersion").and_then(|v| v.as_str().map(str::to_string)).unwrap_or_else(|| "0.3.0".into());
    let url = obj.remove("url");
    let preferred = obj.remove("preferredTransport");
    let additional = obj.remove("additionalInterfaces");
    if !obj.contains_key("supportedInterfaces") {
        let mut ifaces = Vec::new();
        if let Some(url) = url {
            ifaces.push(json!({"url": url, "protocolBinding": preferred.unwrap_or_else(|| json!("JSONRPC")), "protocolVersion": version}));
        }
        for i in additional.as_ref().and_then(Value::as_array).into_iter().flatten() {
            let iface = json!({"url": i["url"], "protocolBinding": i["transport"], "protocolVersion": version});
            // 0.3 cards usually repeat the main interface among the additional ones.
            if !ifaces.contains(&iface) {
                ifaces.push(iface);
            }
        }
        obj.insert("supportedInterfaces".into(), Value::Array(ifaces));
    }
    if let Some(ext) =
        obj.remove("supportsAuthenticatedExtendedCard").or_else(|| obj.remove("supportsExtendedAgentCard"))
    {
        let caps = obj.entry("capabilities").or_insert_with(|| json!({}));
        if caps.get("extendedAgentCard").is_none() {
            caps["extendedAgentCard"] = ext;
        }
    }
    if let Some(caps) = obj.get_mut("capabilities").and_then(Value::as_object_mut) {
        caps.remove("stateTransitionHistory");
    }
    if let Some(Value::Object(schemes)) = obj.get_mut("securitySchemes") {
        for scheme in schemes.values_mut() {
            if let Some(converted) = security_scheme_from_wire(scheme) {
                *scheme = converted;
            }
        }
    }
    let security_to_requirements = |v: Value| -> Value {
        Value::Array(
            v.as_array()
                .into_iter()
                .flatten()
                .map(|req| {
                    let schemes: serde_json::Map<String, Value> = req
                        .as_object()
                        .into_iter()
                        .flatten()
                        .map(|(k, scopes)| (k.clone(), json!({"list": scopes})))
                        .collect();
                    json!({"schemes": schemes})
                })
                .collect(),
        )
    };
    if let Some(security) = obj.remove("security") {
        obj.entry("securityRequirements").or_insert_with(|| security_to_requirements(security));
    }
    if let Some(Value::Array(skills)) = obj.get_mut("skills") {
        for skill in skills.iter_mut().filter_map(Value::as_object_mut) {
            if let Some(security) = skill.remove("security") {
                skill.entry("securityRequirements").or_insert_with(|| security_to_requirements(security));
            }
        }
    }
    serde_path_to_error::deserialize(card)
        .map_err(|e| A2aError::invalid_field(&format!("card.{}", e.path()), e.inner()))
}

/// A 0.3 (OpenAPI-style, `type`-tagged) security scheme in the 1.0 one-of form; `None` if the
/// scheme is already in 1.0 form.
fn security_scheme_from_wire(s: &Value) -> Option<Value> {
    use serde_json::json;
    let description = s.get("description").cloned().unwrap_or(Value::Null);
    let with_description = |mut inner: Value| {
        if !description.is_null() {
            inner["description"] = description.clone();
        }
        inner
    };
    Some(match s.get("type")?.as_str()? {
        "apiKey" => json!({"apiKeySecurityScheme": with_description(json!({"location": s["in"], "name": s["name"]}))}),
        "http" => {
            let mut inner = json!({"scheme": s["scheme"]});
            if let Some(f) = s.get("bearerFormat") {
                inner["bearerFormat"] = f.clone();
            }
            json!({"httpAuthSecurityScheme": with_description(inner)})
        }
        "oauth2" => {
            let flows = s.get("flows")?.as_object()?;
            let (name, flow) = flows.iter().next()?;
            json!({"oauth2SecurityScheme": with_description(json!({"flows": {name.clone(): flow}}))})
        }
        "openIdConnect" => {
            json!({"openIdConnectSecurityScheme": with_description(json!({"openIdConnectUrl": s["openIdConnectUrl"]}))})
        }
        "mutualTLS" => json!({"mtlsSecurityScheme": with_description(json!({}))}),
        _ => return None,
    })
}

fn security_scheme_to_wire(s: &v1::SecurityScheme) -> Value {
    use serde_json::json;
    let with_description = |mut v: Value, d: &str| {
        if !d.is_empty() {
            v["description"] = json!(d);
        }
        v
    };
    match s {
        v1::SecurityScheme::ApiKeySecurityScheme(k) => {
            with_description(json!({"type": "apiKey", "in": k.location, "name": k.name}), &k.description)
        }
        v1::SecurityScheme::HttpAuthSecurityScheme(h) => {
            let mut v = json!({"type": "http", "scheme": h.scheme});
            if !h.bearer_format.is_empty() {
                v["bearerFormat"] = json!(h.bearer_format);
            }
            with_description(v, &h.description)
        }
        v1::SecurityScheme::Oauth2SecurityScheme(o) => {
            let (name, flow) = match &o.flows {
                v1::OAuthFlows::AuthorizationCode(f) => ("authorizationCode", serde_json::to_value(f)),
                v1::OAuthFlows::ClientCredentials(f) => ("clientCredentials", serde_json::to_value(f)),
                v1::OAuthFlows::Implicit(f) => ("implicit", serde_json::to_value(f)),
                v1::OAuthFlows::Password(f) => ("password", serde_json::to_value(f)),
                v1::OAuthFlows::DeviceCode(f) => ("deviceCode", serde_json::to_value(f)),
            };
            let flow = flow.unwrap_or(Value::Null);
            with_description(json!({"type": "oauth2", "flows": {name: flow}}), &o.description)
        }
        v1::SecurityScheme::OpenIdConnectSecurityScheme(o) => with_description(
            json!({"type": "openIdConnect", "openIdConnectUrl": o.open_id_connect_url}),
            &o.description,
        ),
        v1::SecurityScheme::MtlsSecurityScheme(m) => with_description(json!({"type": "mutualTLS"}), &m.description),
    }
}
