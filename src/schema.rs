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

fn pretty(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
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

struct Method {
    name: &'static str,
    params: String,
    result: String,
}

fn collect(gen: &mut SchemaGenerator) -> (Vec<Method>, String, String) {
    let empty = def::<p::EmptyParams>(gen);
    let methods = vec![
        Method {
            name: "initialize",
            params: def::<p::InitializeParams>(gen),
            result: def::<p::InitializeResult>(gen),
        },
        Method {
            name: "run",
            params: def::<p::RunParams>(gen),
            result: def::<p::RunResult>(gen),
        },
        Method {
            name: "cancel",
            params: empty.clone(),
            result: def::<p::CancelResult>(gen),
        },
        Method {
            name: "permissionReply",
            params: def::<p::PermissionReplyParams>(gen),
            result: def::<p::EmptyResult>(gen),
        },
        Method {
            name: "history",
            params: empty.clone(),
            result: def::<p::HistoryResult>(gen),
        },
        Method {
            name: "shutdown",
            params: empty,
            result: def::<p::EmptyResult>(gen),
        },
    ];
    let event = def::<p::Event>(gen);
    let item = def::<p::Item>(gen);
    (methods, event, item)
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
    let events = [
        "turnStarted",
        "textDelta",
        "toolCall",
        "permissionRequest",
        "permissionResolved",
        "toolResult",
        "turnEnded",
        "status",
    ];
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
        "errors": [
            {"code": p::PARSE_ERROR, "name": "ParseError"},
            {"code": p::INVALID_REQUEST, "name": "InvalidRequest"},
            {"code": p::METHOD_NOT_FOUND, "name": "MethodNotFound"},
            {"code": p::INVALID_PARAMS, "name": "InvalidParams"},
            {"code": p::INTERNAL_ERROR, "name": "InternalError"},
            {"code": p::NOT_INITIALIZED, "name": "NotInitialized"},
            {"code": p::ALREADY_INITIALIZED, "name": "AlreadyInitialized"},
            {"code": p::TURN_IN_PROGRESS, "name": "TurnInProgress"},
            {"code": p::UNKNOWN_PERMISSION_REQUEST, "name": "UnknownPermissionRequest"},
            {"code": p::SHUTTING_DOWN, "name": "ShuttingDown"},
            {"code": p::UNSUPPORTED_PROTOCOL_VERSION, "name": "UnsupportedProtocolVersion"},
        ],
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_event_type_is_listed_in_the_schema() {
        let text = super::protocol_schema().to_string();
        for t in [
            "turnStarted",
            "permissionRequest",
            "permissionResolved",
            "status",
        ] {
            assert!(text.contains(&format!("\"{t}\"")), "{t} missing");
        }
    }
}
