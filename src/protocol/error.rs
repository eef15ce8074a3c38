//! JSON-RPC error codes: the standard ones and the pod's own block (-32001..-32006).

/// Invalid JSON was received.
pub const PARSE_ERROR: i32 = -32700;
/// The JSON sent is not a valid request object (also: a message over the size limit).
pub const INVALID_REQUEST: i32 = -32600;
pub const METHOD_NOT_FOUND: i32 = -32601;
pub const INVALID_PARAMS: i32 = -32602;
pub const INTERNAL_ERROR: i32 = -32603;

/// Any method other than `initialize` before `initialize` succeeded.
pub const NOT_INITIALIZED: i32 = -32001;
/// A second `initialize`.
pub const ALREADY_INITIALIZED: i32 = -32002;
/// `run` while a turn is running.
pub const TURN_IN_PROGRESS: i32 = -32003;
/// `permissionReply` for an id that does not exist or is already resolved.
pub const UNKNOWN_PERMISSION_REQUEST: i32 = -32004;
/// Any request after `shutdown`.
pub const SHUTTING_DOWN: i32 = -32005;
/// `initialize` with a protocol version the pod does not speak.
pub const UNSUPPORTED_PROTOCOL_VERSION: i32 = -32006;
