//! The payload a card signature covers (spec §8.4.1): the card's JSON with the `signatures` field
//! left out and each field kept or dropped by the proto's presence rules (§5.7) — a REQUIRED field
//! always, an `optional` or message field when set (even to its default), any other field only when
//! it is not its default (`""`, `false`, `0`, `[]`, `{}`) — then RFC 8785. The rules come from the
//! `AgentCard` messages of the vendored proto, written out below. A member the proto does not know is
//! left out, as both official SDKs do (they read the card into the proto first): such a member is
//! not covered by the signature, so a verifier must not trust it.

use serde_json::{Map, Value};

use super::jcs;

#[derive(Clone, Copy)]
enum Rule {
    /// `[(google.api.field_behavior) = REQUIRED]`: always written.
    Required,
    /// `optional` or a message: written when set.
    Presence,
    /// Implicit presence: written unless it is the default.
    Implicit,
}

#[derive(Clone, Copy)]
enum Kind {
    Scalar,
    Message(&'static [Field]),
    /// `google.protobuf.Struct`: any JSON, kept as is.
    Struct,
    Repeated(&'static Kind),
    Map(&'static Kind),
}

struct Field(&'static str, Rule, Kind);

use Kind::{Map as MapOf, Message as Msg, Repeated, Scalar, Struct};
use Rule::{Implicit, Presence, Required};

const STRINGS: Kind = Repeated(&Scalar);
const INTERFACE: &[Field] = &[
    Field("url", Required, Scalar),
    Field("protocolBinding", Required, Scalar),
    Field("tenant", Implicit, Scalar),
    Field("protocolVersion", Required, Scalar),
];
const PROVIDER: &[Field] = &[Field("url", Required, Scalar), Field("organization", Required, Scalar)];
const EXTENSION: &[Field] = &[
    Field("uri", Implicit, Scalar),
    Field("description", Implicit, Scalar),
    Field("required", Implicit, Scalar),
    Field("params", Presence, Struct),
];
const CAPABILITIES: &[Field] = &[
    Field("streaming", Presence, Scalar),
    Field("pushNotifications", Presence, Scalar),
    Field("extensions", Implicit, Repeated(&Msg(EXTENSION))),
    Field("extendedAgentCard", Presence, Scalar),
];
const STRING_LIST: &[Field] = &[Field("list", Implicit, STRINGS)];
const REQUIREMENT: &[Field] = &[Field("schemes", Implicit, MapOf(&Msg(STRING_LIST)))];
const SKILL: &[Field] = &[
    Field("id", Required, Scalar),
    Field("name", Required, Scalar),
    Field("description", Required, Scalar),
    Field("tags", Required, STRINGS),
    Field("examples", Implicit, STRINGS),
    Field("inputModes", Implicit, STRINGS),
    Field("outputModes", Implicit, STRINGS),
    Field("securityRequirements", Implicit, Repeated(&Msg(REQUIREMENT))),
];
const SCOPES: Kind = MapOf(&Scalar);
const AUTHORIZATION_CODE: &[Field] = &[
    Field("authorizationUrl", Required, Scalar),
    Field("tokenUrl", Required, Scalar),
    Field("refreshUrl", Implicit, Scalar),
    Field("scopes", Required, SCOPES),
    Field("pkceRequired", Implicit, Scalar),
];
const CLIENT_CREDENTIALS: &[Field] =
    &[Field("tokenUrl", Required, Scalar), Field("refreshUrl", Implicit, Scalar), Field("scopes", Required, SCOPES)];
const IMPLICIT: &[Field] = &[
    Field("authorizationUrl", Implicit, Scalar),
    Field("refreshUrl", Implicit, Scalar),
    Field("scopes", Implicit, SCOPES),
];
const PASSWORD: &[Field] =
    &[Field("tokenUrl", Implicit, Scalar), Field("refreshUrl", Implicit, Scalar), Field("scopes", Implicit, SCOPES)];
const DEVICE_CODE: &[Field] = &[
    Field("deviceAuthorizationUrl", Required, Scalar),
    Field("tokenUrl", Required, Scalar),
    Field("refreshUrl", Implicit, Scalar),
    Field("scopes", Required, SCOPES),
];
const FLOWS: &[Field] = &[
    Field("authorizationCode", Presence, Msg(AUTHORIZATION_CODE)),
    Field("clientCredentials", Presence, Msg(CLIENT_CREDENTIALS)),
    Field("implicit", Presence, Msg(IMPLICIT)),
    Field("password", Presence, Msg(PASSWORD)),
    Field("deviceCode", Presence, Msg(DEVICE_CODE)),
];
const SCHEME: &[Field] = &[
    Field(
        "apiKeySecurityScheme",
        Presence,
        Msg(&[
            Field("description", Implicit, Scalar),
            Field("location", Required, Scalar),
            Field("name", Required, Scalar),
        ]),
    ),
    Field(
        "httpAuthSecurityScheme",
        Presence,
        Msg(&[
            Field("description", Implicit, Scalar),
            Field("scheme", Required, Scalar),
            Field("bearerFormat", Implicit, Scalar),
        ]),
    ),
    Field(
        "oauth2SecurityScheme",
        Presence,
        Msg(&[
            Field("description", Implicit, Scalar),
            Field("flows", Required, Msg(FLOWS)),
            Field("oauth2MetadataUrl", Implicit, Scalar),
        ]),
    ),
    Field(
        "openIdConnectSecurityScheme",
        Presence,
        Msg(&[Field("description", Implicit, Scalar), Field("openIdConnectUrl", Required, Scalar)]),
    ),
    Field("mtlsSecurityScheme", Presence, Msg(&[Field("description", Implicit, Scalar)])),
];
const CARD: &[Field] = &[
    Field("name", Required, Scalar),
    Field("description", Required, Scalar),
    Field("supportedInterfaces", Required, Repeated(&Msg(INTERFACE))),
    Field("provider", Presence, Msg(PROVIDER)),
    Field("version", Required, Scalar),
    Field("documentationUrl", Presence, Scalar),
    Field("capabilities", Required, Msg(CAPABILITIES)),
    Field("securitySchemes", Implicit, MapOf(&Msg(SCHEME))),
    Field("securityRequirements", Implicit, Repeated(&Msg(REQUIREMENT))),
    Field("defaultInputModes", Required, STRINGS),
    Field("defaultOutputModes", Required, STRINGS),
    Field("skills", Required, Repeated(&Msg(SKILL))),
    Field("iconUrl", Presence, Scalar),
];

/// The bytes a signature of `card` (its 1.0 JSON) covers.
pub fn payload(card: &Value) -> Result<Vec<u8>, String> {
    let Value::Object(members) = card else { return Err("the card is not a JSON object".into()) };
    let mut members = members.clone();
    members.remove("signatures");
    let pruned = message(CARD, &members);
    Ok(jcs::canonicalize(&Value::Object(pruned))?.into_bytes())
}

fn message(fields: &[Field], members: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for (name, value) in members {
        let Some(Field(_, rule, kind)) = fields.iter().find(|f| f.0 == name) else {
            continue; // not in the 1.0 proto: not signed
        };
        if value.is_null() {
            continue; // ProtoJSON: null is "not set"
        }
        let value = of_kind(*kind, value);
        let keep = match rule {
            Required | Presence => true,
            Implicit => !is_default(&value),
        };
        if keep {
            out.insert(name.clone(), value);
        }
    }
    out
}

fn of_kind(kind: Kind, value: &Value) -> Value {
    match (kind, value) {
        (Msg(fields), Value::Object(members)) => Value::Object(message(fields, members)),
        (Repeated(item), Value::Array(items)) => Value::Array(items.iter().map(|v| of_kind(*item, v)).collect()),
        (MapOf(item), Value::Object(entries)) => {
            Value::Object(entries.iter().map(|(k, v)| (k.clone(), of_kind(*item, v))).collect())
        }
        _ => value.clone(),
    }
}

fn is_default(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(members) => members.is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_specs_worked_example() {
        // §8.4.1: description and skills are REQUIRED (kept empty), streaming and pushNotifications
        // are optional and set (kept false), extensions is neither (dropped empty).
        let card = json!({"name": "Example Agent", "description": "",
            "capabilities": {"streaming": false, "pushNotifications": false, "extensions": []}, "skills": []});
        assert_eq!(
            String::from_utf8(payload(&card).unwrap()).unwrap(),
            r#"{"capabilities":{"pushNotifications":false,"streaming":false},"description":"","name":"Example Agent","skills":[]}"#
        );
    }

    #[test]
    fn signatures_are_left_out_and_nested_defaults_dropped() {
        let card = json!({"name": "A", "signatures": [{"protected": "x", "signature": "y"}],
            "supportedInterfaces": [{"url": "http://a", "protocolBinding": "JSONRPC", "tenant": "", "protocolVersion": "1.0"}],
            "skills": [{"id": "s", "name": "S", "description": "", "tags": [], "examples": []}],
            "securitySchemes": {"key": {"apiKeySecurityScheme": {"description": "", "location": "header", "name": "X-API-Key"}}},
            "capabilities": {"extensions": [{"uri": "urn:x", "required": false, "params": {}}]},
            "iconUrl": null, "futureField": {"not": "signed"}});
        assert_eq!(
            String::from_utf8(payload(&card).unwrap()).unwrap(),
            concat!(
                r#"{"capabilities":{"extensions":[{"params":{},"uri":"urn:x"}]},"name":"A","#,
                r#""securitySchemes":{"key":{"apiKeySecurityScheme":{"location":"header","name":"X-API-Key"}}},"#,
                r#""skills":[{"description":"","id":"s","name":"S","tags":[]}],"#,
                r#""supportedInterfaces":[{"protocolBinding":"JSONRPC","protocolVersion":"1.0","url":"http://a"}]}"#
            )
        );
    }
}
