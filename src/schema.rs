//! Generated JSON Schemas: `schema/manifest.schema.json`, `schema/protocol.schema.json` and
//! `schema/methods.json`, all derived from the Rust types, so the files can never drift from
//! the code without `pod schema --check` failing.

use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{json, Value};

use crate::manifest::file::ManifestFile;
use crate::protocol::{self as p, EVENT_METHOD};

/// Every generated file: (file name, pretty JSON text with a final newline).
pub fn files() -> Vec<(&'static str, String)> {
    vec![
        ("manifest.schema.json", pretty(&manifest_schema())),
        ("protocol.schema.json", pretty(&protocol_schema())),
        ("methods.json", pretty(&methods())),
    ]
}

/// Pretty JSON with object keys sorted at every level: the files do not depend on whether
/// serde_json keeps insertion order (a dependency, the ACP schema crate, turns that on).
fn pretty(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(&sorted(value)).unwrap_or_default();
    text.push('\n');
    text
}

fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.clone(), sorted(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

fn manifest_schema() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(ManifestFile)).unwrap_or_default();
    if let Some(obj) = schema.as_object_mut() {
        obj.insert("title".into(), json!("pod manifest (pod.toml)"));
    }
    schema
}

/// Adds `T` to the generator's definitions and returns its name.
fn def<T: JsonSchema>(gen: &mut SchemaGenerator) -> String {
    gen.subschema_for::<T>();
    T::schema_name().into_owned()
}

/// A method of the protocol's list, with the names of its params and result definitions.
struct MethodEntry {
    name: &'static str,
    params: String,
    result: String,
}

/// Collects every method of [`p::visit_methods`] into the generator's definitions.
struct Collect<'a> {
    gen: &'a mut SchemaGenerator,
    methods: Vec<MethodEntry>,
}

impl p::MethodVisitor for Collect<'_> {
    fn visit<M: p::Method>(&mut self) {
        let params = def::<M::Params>(self.gen);
        let result = def::<M::Result>(self.gen);
        self.methods.push(MethodEntry {
            name: M::NAME,
            params,
            result,
        });
    }
}

fn collect(gen: &mut SchemaGenerator) -> (Vec<MethodEntry>, String, String) {
    let mut visitor = Collect {
        gen,
        methods: Vec::new(),
    };
    p::visit_methods(&mut visitor);
    let methods = visitor.methods;
    let event = def::<p::Event>(gen);
    let item = def::<p::Item>(gen);
    (methods, event, item)
}

/// The `type` of every variant of a tagged enum's schema, in declaration order: read from the
/// schema itself, so the list cannot drift from the enum.
fn tags(schema: &Value) -> Vec<String> {
    let variants = schema
        .get("oneOf")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    variants
        .iter()
        .filter_map(|v| {
            let tag = v.pointer("/properties/type")?;
            let name = tag
                .get("const")
                .or_else(|| tag.pointer("/enum/0"))?
                .as_str()?;
            Some(name.to_string())
        })
        .collect()
}

fn protocol_schema() -> Value {
    let mut gen = SchemaGenerator::default();
    let _ = collect(&mut gen);
    let defs: serde_json::Map<String, Value> = gen.take_definitions(true).into_iter().collect();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "pod protocol v1",
        "description": "Every params, result, event and history item of the pod protocol. See methods.json for which method uses which type.",
        "$defs": defs,
    })
}

fn methods() -> Value {
    let mut gen = SchemaGenerator::default();
    let (methods, event, item) = collect(&mut gen);
    let events = tags(&serde_json::to_value(gen.root_schema_for::<p::Event>()).unwrap_or_default());
    json!({
        "protocolVersion": p::PROTOCOL_VERSION,
        "schema": "protocol.schema.json",
        "methods": methods.iter().map(|m| json!({
            "name": m.name,
            "direction": "clientToPod",
            "params": format!("#/$defs/{}", m.params),
            "result": format!("#/$defs/{}", m.result),
        })).collect::<Vec<_>>(),
        "notifications": [{
            "name": EVENT_METHOD,
            "direction": "podToClient",
            "params": format!("#/$defs/{event}"),
            "eventTypes": events,
        }],
        "historyItem": format!("#/$defs/{item}"),
        "errors": p::ErrorCode::ALL.iter().map(|code| json!({
            "code": code.code(),
            "name": code.name(),
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_type_is_listed() {
        let listed = methods()["notifications"][0]["eventTypes"].clone();
        // One sample of every variant, serialized: its `type` must be in the list.
        let samples = [
            p::Event::TurnStarted {
                turn_id: "t".into(),
            },
            p::Event::Status {
                state: p::PodState::Idle,
                mode: Some(p::Mode::Default),
            },
        ];
        for event in samples {
            let tag = serde_json::to_value(&event).unwrap_or_default()["type"].clone();
            assert!(
                listed.as_array().is_some_and(|l| l.contains(&tag)),
                "{tag} missing from {listed}"
            );
        }
        assert_eq!(listed.as_array().map(Vec::len), Some(8), "{listed}");
    }

    #[test]
    fn every_method_of_the_list_is_described() {
        let described = methods()["methods"].clone();
        let names: Vec<&str> = described
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["name"].as_str())
            .collect();
        let list: Vec<&str> = p::MethodName::ALL.iter().map(|m| m.as_str()).collect();
        assert_eq!(names, list);
    }
}
