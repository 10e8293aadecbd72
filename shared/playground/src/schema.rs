//! Cards checked against the A2A JSON schemas (`schemas/`, copied verbatim from the specification
//! repository: the 1.0.1 bundle generated from the proto, and the 0.3.0 schema), with the subset of
//! JSON Schema they use: `type`, `enum`, `const`, `required`, `properties`, `patternProperties`,
//! `additionalProperties`, `items`, `anyOf`, `$ref`, `minimum`, `maximum` and `pattern`.
//!
//! The 1.0.1 bundle keys its definitions by title ("Agent Card") while its `$ref`s name per-message
//! files (`lf.a2a.v1.AgentCard.jsonschema.json`, upstream issue 2073): a ref is resolved to the
//! definition whose title, without spaces, is the message's name.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value;

/// Problems reported at most (a card that is wrong everywhere says so in a page, not a book).
const MAX_PROBLEMS: usize = 50;
/// Deepest nesting followed (the schemas are not recursive for cards; a bound all the same).
const MAX_DEPTH: usize = 32;

pub struct Schema {
    definitions: HashMap<String, Value>,
    /// Ref name (without spaces, lower case) → definition key.
    by_name: HashMap<String, String>,
}

impl Schema {
    fn parse(text: &str) -> Self {
        let root: Value = serde_json::from_str(text).unwrap_or_default();
        let definitions: HashMap<String, Value> = root["definitions"]
            .as_object()
            .map(|d| d.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        let by_name = definitions.keys().map(|k| (k.replace(' ', "").to_ascii_lowercase(), k.clone())).collect();
        Self { definitions, by_name }
    }

    fn resolve(&self, reference: &str) -> Option<&Value> {
        if let Some(name) = reference.strip_prefix("#/definitions/") {
            return self.definitions.get(name);
        }
        let name = reference.trim_end_matches(".jsonschema.json");
        let name = name.rsplit('.').next().unwrap_or(name).to_ascii_lowercase();
        self.by_name.get(&name).and_then(|k| self.definitions.get(k))
    }

    /// What is wrong with `value` as the definition `root`: one line per problem, with its path.
    pub fn check(&self, root: &str, value: &Value) -> Vec<String> {
        let mut problems = Vec::new();
        match self.definitions.get(root) {
            Some(schema) => self.walk(schema, value, "$", 0, &mut problems),
            None => problems.push(format!("the schema has no definition {root:?}")),
        }
        problems.truncate(MAX_PROBLEMS);
        problems
    }

    fn walk(&self, schema: &Value, value: &Value, path: &str, depth: usize, out: &mut Vec<String>) {
        if depth > MAX_DEPTH || out.len() >= MAX_PROBLEMS {
            return;
        }
        if let Some(reference) = schema["$ref"].as_str() {
            match self.resolve(reference) {
                Some(target) => self.walk(target, value, path, depth + 1, out),
                None => out.push(format!("{path}: the schema's $ref {reference} does not resolve")),
            }
            return;
        }
        if let Some(branches) = schema["anyOf"].as_array() {
            let fits = branches.iter().any(|b| {
                let mut trial = Vec::new();
                self.walk(b, value, path, depth + 1, &mut trial);
                trial.is_empty()
            });
            if !fits {
                out.push(format!("{path}: matches none of the {} allowed shapes", branches.len()));
            }
        }
        if let Some(wanted) = schema.get("type") {
            let types: Vec<&str> = match wanted {
                Value::String(t) => vec![t.as_str()],
                Value::Array(all) => all.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            if !types.is_empty() && !types.iter().any(|t| is_type(value, t)) {
                out.push(format!("{path}: is {}, not {}", type_of(value), types.join(" or ")));
                return;
            }
        }
        if let Some(allowed) = schema["enum"].as_array() {
            if !allowed.contains(value) {
                out.push(format!("{path}: {value} is not one of {}", Value::Array(allowed.clone())));
            }
        }
        if let Some(constant) = schema.get("const") {
            if constant != value {
                out.push(format!("{path}: must be {constant}"));
            }
        }
        if let Some(n) = value.as_f64() {
            if schema["minimum"].as_f64().is_some_and(|min| n < min) {
                out.push(format!("{path}: {n} is below the minimum {}", schema["minimum"]));
            }
            if schema["maximum"].as_f64().is_some_and(|max| n > max) {
                out.push(format!("{path}: {n} is above the maximum {}", schema["maximum"]));
            }
        }
        if let (Some(pattern), Some(text)) = (schema["pattern"].as_str(), value.as_str()) {
            if regex_lite::Regex::new(pattern).is_ok_and(|re| !re.is_match(text)) {
                out.push(format!("{path}: {text:?} does not match {pattern}"));
            }
        }
        if let Some(object) = value.as_object() {
            self.walk_object(schema, object, path, depth, out);
        }
        if let (Some(items), Some(array)) = (schema.get("items"), value.as_array()) {
            for (i, item) in array.iter().enumerate() {
                self.walk(items, item, &format!("{path}[{i}]"), depth + 1, out);
            }
        }
    }

    fn walk_object(
        &self,
        schema: &Value,
        object: &serde_json::Map<String, Value>,
        path: &str,
        depth: usize,
        out: &mut Vec<String>,
    ) {
        for name in schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str) {
            if !object.contains_key(name) {
                out.push(format!("{path}.{name}: is required"));
            }
        }
        let properties = schema["properties"].as_object();
        let patterns: Vec<(regex_lite::Regex, &Value)> = schema["patternProperties"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(p, s)| regex_lite::Regex::new(p).ok().map(|re| (re, s)))
            .collect();
        for (name, member) in object {
            let at = format!("{path}.{name}");
            let mut known = false;
            if let Some(sub) = properties.and_then(|p| p.get(name)) {
                known = true;
                self.walk(sub, member, &at, depth + 1, out);
            }
            for (re, sub) in &patterns {
                if re.is_match(name) {
                    known = true;
                    self.walk(sub, member, &at, depth + 1, out);
                }
            }
            if known {
                continue;
            }
            match schema.get("additionalProperties") {
                Some(Value::Bool(false)) => out.push(format!("{at}: is not a member the schema knows")),
                Some(sub @ Value::Object(_)) => self.walk(sub, member, &at, depth + 1, out),
                _ => {}
            }
        }
    }
}

fn is_type(value: &Value, wanted: &str) -> bool {
    match wanted {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        "integer" => value.as_f64().is_some_and(|n| n.fract() == 0.0),
        _ => true,
    }
}

fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The A2A 1.0.1 schema; cards are its "Agent Card".
pub fn v1() -> &'static Schema {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    SCHEMA.get_or_init(|| Schema::parse(include_str!("../schemas/a2a-v1.0.1.schema.json")))
}

/// The A2A 0.3.0 schema; cards are its "AgentCard".
pub fn v03() -> &'static Schema {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    SCHEMA.get_or_init(|| Schema::parse(include_str!("../schemas/a2a-v0.3.0.schema.json")))
}

/// The definition of a card in each schema.
pub const V1_CARD: &str = "Agent Card";
pub const V03_CARD: &str = "AgentCard";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn card_v1() -> Value {
        json!({
            "name": "A", "description": "d", "version": "1",
            "supportedInterfaces": [{"url": "http://127.0.0.1:1", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {"streaming": true}, "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "s", "name": "S", "description": "d", "tags": ["t"]}]
        })
    }

    #[test]
    fn every_ref_of_both_schemas_resolves() {
        for schema in [v1(), v03()] {
            assert!(schema.definitions.len() > 40);
            for def in schema.definitions.values() {
                let text = def.to_string();
                for reference in text.split("\"$ref\":\"").skip(1).filter_map(|r| r.split('"').next()) {
                    assert!(schema.resolve(reference).is_some(), "{reference}");
                }
            }
        }
    }

    #[test]
    fn a_good_card_passes_and_a_bad_one_is_named_by_path() {
        assert_eq!(v1().check(V1_CARD, &card_v1()), Vec::<String>::new());
        let mut bad = card_v1();
        bad["capabilities"]["streaming"] = json!("yes");
        bad["supportedInterfaces"][0]["port"] = json!(1);
        bad["skills"] = json!({});
        let problems = v1().check(V1_CARD, &bad);
        assert!(problems.contains(&"$.capabilities.streaming: is a string, not boolean".to_string()), "{problems:?}");
        assert!(
            problems.contains(&"$.supportedInterfaces[0].port: is not a member the schema knows".to_string()),
            "{problems:?}"
        );
        assert!(problems.contains(&"$.skills: is an object, not array".to_string()), "{problems:?}");
    }

    #[test]
    fn the_03_schema_requires_its_members() {
        let problems = v03().check(V03_CARD, &json!({"name": "A"}));
        for member in ["description", "url", "version", "protocolVersion", "capabilities", "skills"] {
            assert!(problems.contains(&format!("$.{member}: is required")), "{member}: {problems:?}");
        }
    }
}
