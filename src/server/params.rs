//! Reading method params field by field, so every `-32602` names the field at fault.
//!
//! Unknown fields are ignored; absent params read as `{}`.

use jsonrpsee::types::Params;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::error::MethodError;

/// The members of a params object.
pub struct Fields(Map<String, Value>);

impl Fields {
    pub fn parse(params: &Params<'_>) -> Result<Fields, MethodError> {
        let Some(text) = params.as_str() else {
            return Ok(Fields(Map::new()));
        };
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => Ok(Fields(map)),
            Ok(_) => Err(MethodError::InvalidParams(
                "params must be an object".into(),
            )),
            Err(e) => Err(MethodError::InvalidParams(e.to_string())),
        }
    }

    /// A field that must be present and not null.
    pub fn required<T: DeserializeOwned>(&self, name: &str) -> Result<T, MethodError> {
        self.optional(name)?
            .ok_or_else(|| MethodError::InvalidParams(format!("missing field `{name}`")))
    }

    /// A field that may be absent or null.
    pub fn optional<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>, MethodError> {
        match self.0.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => T::deserialize(v)
                .map(Some)
                .map_err(|e| MethodError::InvalidParams(format!("`{name}`: {e}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_field() {
        let params = Params::new(Some(r#"{"a":"x","extra":1}"#));
        let fields = Fields::parse(&params).unwrap();
        assert_eq!(fields.required::<String>("a").unwrap(), "x");
        let missing = fields.required::<u32>("b").unwrap_err().to_string();
        assert!(missing.contains("`b`"), "{missing}");
        let wrong = fields.required::<u32>("a").unwrap_err().to_string();
        assert!(wrong.contains("`a`"), "{wrong}");
        assert!(Fields::parse(&Params::new(Some("[1]"))).is_err());
        assert!(Fields::parse(&Params::new(None)).is_ok());
    }
}
