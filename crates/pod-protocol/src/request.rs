//! The one list of methods a client calls: name -> params -> result.
//!
//! Everything else derives from the `methods!` table below: the `Method` types a typed client
//! calls with (`client::call::<method::Run>`), the [`Request`] the server dispatches on, the
//! method entries of `schema/methods.json` (through [`MethodVisitor`]), and from those the
//! TypeScript client's method table. Adding a method is one line here; the compiler then points
//! at every place that must answer it.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::{
    CancelResult, EmptyParams, EmptyResult, HistoryResult, InitializeParams, InitializeResult,
    PermissionReplyParams, RunParams, RunResult, SetModeParams, SetModeResult, TrustApplyParams,
};

/// One method: its wire name and the types of its params and result.
pub trait Method {
    const NAME: &'static str;
    type Params: Params;
    type Result: Serialize + DeserializeOwned + JsonSchema;
}

/// The params of a method: JSON-RPC's by-name form (an object). Absent params read as `{}`.
pub trait Params: Serialize + DeserializeOwned + JsonSchema {
    /// True for methods that ignore their params, which then may be any object or array.
    const IGNORED: bool = false;
}

impl Params for InitializeParams {}
impl Params for RunParams {}
impl Params for PermissionReplyParams {}
impl Params for TrustApplyParams {}
impl Params for SetModeParams {}
impl Params for EmptyParams {
    const IGNORED: bool = true;
}

/// Called once per method by [`visit_methods`], in the order of the table.
pub trait MethodVisitor {
    fn visit<M: Method>(&mut self);
}

/// Why a request's params were refused (answered `-32602` with this text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidParams(pub String);

macro_rules! methods {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal ($params:ty) -> $result:ty; )*) => {
        /// One type per method, for typed calls: `client::call::<method::Run>(…)`.
        pub mod method {
            use super::*;
            $(
                $(#[$doc])*
                #[derive(Debug)]
                pub enum $variant {}

                impl Method for $variant {
                    const NAME: &'static str = $name;
                    type Params = $params;
                    type Result = $result;
                }
            )*
        }

        /// A method's name, known to be one of the table's.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum MethodName {
            $( $variant, )*
        }

        impl MethodName {
            /// Every method, in the order of the table.
            pub const ALL: &'static [MethodName] = &[$(MethodName::$variant),*];

            /// The method called `name`; `None` for any other name (`-32601`).
            pub fn from_name(name: &str) -> Option<MethodName> {
                match name {
                    $( $name => Some(MethodName::$variant), )*
                    _ => None,
                }
            }

            pub fn as_str(self) -> &'static str {
                match self {
                    $( MethodName::$variant => $name, )*
                }
            }
        }

        /// A request with its params read into their type.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Request {
            $( $variant($params), )*
        }

        impl Request {
            /// Reads the params text of a call to `method` (`None`: the request had none).
            pub fn parse(method: MethodName, params: Option<&str>) -> Result<Request, InvalidParams> {
                match method {
                    $( MethodName::$variant => parse_params::<$params>(params).map(Request::$variant), )*
                }
            }
        }

        /// Calls `visitor.visit::<M>()` for every method, in the order of the table.
        pub fn visit_methods<V: MethodVisitor>(visitor: &mut V) {
            $( visitor.visit::<method::$variant>(); )*
        }
    };
}

methods! {
    /// Opens the session; the first request of every connection.
    Initialize = "initialize" (InitializeParams) -> InitializeResult;
    /// Runs one turn; answered when the turn ends, after its last event.
    Run = "run" (RunParams) -> RunResult;
    /// Cancels the running turn.
    Cancel = "cancel" (EmptyParams) -> CancelResult;
    /// Answers a `permissionRequest` event.
    PermissionReply = "permissionReply" (PermissionReplyParams) -> EmptyResult;
    /// The session's history items.
    History = "history" (EmptyParams) -> HistoryResult;
    /// Ends the connection: pending requests resolve, the turn is cancelled, the pod exits.
    Shutdown = "shutdown" (EmptyParams) -> EmptyResult;
    /// Applies the user's decision about the project's trust; a trusted project's
    /// configuration is reloaded into the session, and the result is the session as
    /// `initialize` now reports it.
    TrustApply = "trust/apply" (TrustApplyParams) -> InitializeResult;
    /// Sets the session's mode; calls already past their checks are not affected.
    SetMode = "setMode" (SetModeParams) -> SetModeResult;
}

/// Deserializes params into `P`; an error names the member at fault, as
/// ``"`input`[0].text: invalid type: integer `5`, expected a string"``.
fn parse_params<P: Params>(text: Option<&str>) -> Result<P, InvalidParams> {
    let text = text.unwrap_or("{}");
    if !P::IGNORED && !text.trim_start().starts_with('{') {
        return Err(InvalidParams("params must be an object".into()));
    }
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let mut path = String::new();
        for segment in e.path() {
            match segment {
                serde_path_to_error::Segment::Map { key } if path.is_empty() => {
                    path = format!("`{key}`");
                }
                serde_path_to_error::Segment::Map { key } => {
                    path.push('.');
                    path.push_str(key);
                }
                serde_path_to_error::Segment::Seq { index } => {
                    path.push_str(&format!("[{index}]"));
                }
                serde_path_to_error::Segment::Enum { .. }
                | serde_path_to_error::Segment::Unknown => {}
            }
        }
        let inner = e.into_inner();
        InvalidParams(if path.is_empty() {
            inner.to_string()
        } else {
            format!("{path}: {inner}")
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::InputItem;

    fn run(text: &str) -> Result<Request, InvalidParams> {
        Request::parse(MethodName::Run, Some(text))
    }

    #[test]
    fn names_round_trip() {
        for m in MethodName::ALL {
            assert_eq!(MethodName::from_name(m.as_str()), Some(*m));
        }
        assert_eq!(MethodName::from_name("Run"), None);
        assert_eq!(<method::PermissionReply as Method>::NAME, "permissionReply");
    }

    #[test]
    fn params_are_read_into_their_types() {
        let got = run(r#"{"input":[{"type":"text","text":"hi"}],"extra":1}"#);
        assert_eq!(
            got,
            Ok(Request::Run(RunParams {
                input: vec![InputItem::Text { text: "hi".into() }]
            }))
        );
        assert!(matches!(
            Request::parse(MethodName::Cancel, Some("[1,2]")),
            Ok(Request::Cancel(_))
        ));
        assert!(matches!(
            Request::parse(MethodName::History, None),
            Ok(Request::History(_))
        ));
    }

    #[test]
    fn errors_name_the_member_at_fault() {
        let missing = run("{}").unwrap_err().0;
        assert!(missing.contains("`input`"), "{missing}");
        let nested = run(r#"{"input":[{"type":"text","text":5}]}"#)
            .unwrap_err()
            .0;
        assert!(nested.starts_with("`input`[0]"), "{nested}");
        let init = Request::parse(
            MethodName::Initialize,
            Some(r#"{"protocolVersion":1,"clientInfo":{"name":1}}"#),
        )
        .unwrap_err()
        .0;
        assert!(init.starts_with("`clientInfo`.name: "), "{init}");
        // By-position params would fill fields in order: refused.
        let array = Request::parse(MethodName::Initialize, Some("[1]"))
            .unwrap_err()
            .0;
        assert_eq!(array, "params must be an object");
    }
}
