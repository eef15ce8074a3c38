//! User `pre_tool_call` hooks: external programs that may deny a call the permission layer let
//! through. (Placeholder: running hooks lands with the hooks issue; until then a configured hook
//! denies every call it applies to, so nothing runs unchecked.)

use crate::manifest::HookConfig;
use crate::protocol::Decision;

#[derive(Debug, Clone)]
pub struct UserHook {
    pub config: HookConfig,
}

impl UserHook {
    pub fn new(config: HookConfig) -> UserHook {
        UserHook { config }
    }

    pub fn applies_to(&self, _tool: &str) -> bool {
        true
    }

    /// `Err(text)` denies the call.
    pub async fn check(
        &self,
        _call_id: &str,
        _tool: &str,
        _input: &serde_json::Value,
        _decision: &Decision,
    ) -> Result<(), String> {
        Err(format!(
            "denied by hook (line {}): user hooks are not supported by this build",
            self.config.line
        ))
    }
}
