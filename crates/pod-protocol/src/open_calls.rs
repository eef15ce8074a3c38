//! Which tool calls have no result yet: the one bookkeeping behind every "close what is open"
//! (a resumed log's orphans, a turn that panicked, a turn task that died under the server), so
//! that every call gets exactly one result however its turn ended.

use std::collections::{HashMap, VecDeque};

use super::{CallResult, Item};

/// The calls seen so far without a result, in call order. Calls are matched per call, not per
/// id: a result answers the earliest open call with its id, so a log written before call ids
/// were unique in a session (where a model's repeated id was kept) still closes each call once.
#[derive(Debug, Default)]
pub struct OpenCalls {
    /// (turn id, call id) in call order; `None` once answered.
    calls: Vec<Option<(String, String)>>,
    /// Call id -> positions in `calls` still open, oldest first.
    by_id: HashMap<String, VecDeque<usize>>,
}

impl OpenCalls {
    /// The open calls of a history.
    pub fn of_items(items: &[Item]) -> OpenCalls {
        let mut open = OpenCalls::default();
        for item in items {
            match item {
                Item::ToolCall {
                    turn_id, call_id, ..
                } => open.call(turn_id, call_id),
                Item::ToolResult(result) => open.result(&result.call_id),
                _ => {}
            }
        }
        open
    }

    /// A call was made.
    pub fn call(&mut self, turn_id: &str, call_id: &str) {
        self.by_id
            .entry(call_id.to_string())
            .or_default()
            .push_back(self.calls.len());
        self.calls
            .push(Some((turn_id.to_string(), call_id.to_string())));
    }

    /// A result arrived for `call_id`: it answers the earliest open call with that id.
    pub fn result(&mut self, call_id: &str) {
        let Some(waiting) = self.by_id.get_mut(call_id) else {
            return;
        };
        if let Some(at) = waiting.pop_front() {
            self.calls[at] = None;
        }
        if waiting.is_empty() {
            self.by_id.remove(call_id);
        }
    }

    /// The open calls as (turn id, call id), in call order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.calls
            .iter()
            .flatten()
            .map(|(turn, call)| (turn.as_str(), call.as_str()))
    }

    /// An error result saying `text` for every open call, in call order.
    pub fn closing(&self, text: &str) -> Vec<CallResult> {
        self.iter()
            .map(|(turn_id, call_id)| CallResult {
                turn_id: turn_id.to_string(),
                call_id: call_id.to_string(),
                is_error: true,
                content: text.to_string(),
                denied_by: None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_id_closes_one_call_per_result() {
        let mut open = OpenCalls::default();
        open.call("t1", "x");
        open.call("t1", "y");
        open.result("x");
        open.call("t2", "x");
        open.result("z");
        let left: Vec<_> = open.iter().collect();
        assert_eq!(left, [("t1", "y"), ("t2", "x")]);
        let closing = open.closing("gone");
        assert_eq!(closing.len(), 2);
        assert!(closing.iter().all(|r| r.is_error && r.content == "gone"));
        open.result("x");
        open.result("y");
        assert_eq!(open.iter().count(), 0);
    }
}
