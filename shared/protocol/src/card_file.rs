//! The card file: any subset of an `AgentCard` in JSON, laid over the defaults (pure; reading the
//! file is the caller's).

use serde_json::Value;

use crate::error::{A2aError, Result};
use crate::types::{AgentCapabilities, AgentCard, AgentSkill, Validate};

/// The card as written in a card file: any subset of an `AgentCard`.
pub fn default_card() -> AgentCard {
    AgentCard {
        name: "a2a-serverless agent".into(),
        description: "An A2A agent hosted by a2a-serverless.".into(),
        supported_interfaces: Vec::new(),
        provider: None,
        version: env!("CARGO_PKG_VERSION").into(),
        documentation_url: None,
        capabilities: AgentCapabilities::default(),
        security_schemes: Default::default(),
        security_requirements: Vec::new(),
        default_input_modes: vec!["text/plain".into(), "application/json".into()],
        default_output_modes: vec!["text/plain".into(), "application/json".into()],
        skills: vec![AgentSkill {
            id: "echo".into(),
            name: "Echo".into(),
            description: "Answers with the text it was sent.".into(),
            tags: vec!["echo".into(), "test".into()],
            examples: vec!["hello".into()],
            input_modes: Vec::new(),
            output_modes: Vec::new(),
            security_requirements: Vec::new(),
        }],
        signatures: Vec::new(),
        icon_url: None,
    }
}

/// Parses a card file over the defaults: fields the file leaves out keep their default.
pub fn parse_card_file(json: &str) -> Result<AgentCard> {
    let overlay: Value =
        serde_json::from_str(json).map_err(|e| A2aError::invalid_params(format!("card file is not JSON: {e}")))?;
    if !overlay.is_object() {
        return Err(A2aError::invalid_params("card file must hold a JSON object"));
    }
    let mut base = serde_json::to_value(default_card()).map_err(|e| A2aError::internal(e.to_string()))?;
    merge(&mut base, overlay);
    let card: AgentCard = serde_path_to_error::deserialize(base)
        .map_err(|e| A2aError::invalid_field(&format!("card.{}", e.path()), e.inner()))?;
    card.validate("card")?;
    Ok(card)
}

fn merge(base: &mut Value, overlay: Value) {
    match (base, overlay) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(slot) if slot.is_object() && v.is_object() => merge(slot, v),
                    _ => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (b, o) => *b = o,
    }
}
