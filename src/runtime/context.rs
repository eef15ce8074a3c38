//! The conversation's budget: what the model is sent at each step (docs/manifest.md,
//! "Limits", `[model] max_context_bytes`).
//!
//! Owns: the size of the model's view of the conversation, and fitting it under the budget by
//! eliding the content of older tool results (oldest first; the results of the latest step are
//! never elided, since the model has not seen them yet), each replaced by a note saying so.
//! What the session records (history, the log) keeps every result whole: only the model's view
//! is cut. Must not touch: history items, the log, the wire.

use crate::model::Message;

/// The bytes the model is sent for `messages`: text, tool-call names and inputs, results.
pub(super) fn size(messages: &[Message]) -> usize {
    messages.iter().map(message_size).sum()
}

fn message_size(message: &Message) -> usize {
    match message {
        Message::User { text } => text.len(),
        Message::Assistant { text, tool_calls } => {
            text.len()
                + tool_calls
                    .iter()
                    .map(|c| c.id.len() + c.name.len() + c.input.to_string().len())
                    .sum::<usize>()
        }
        Message::ToolResults { results } => results
            .iter()
            .map(|r| r.call_id.len() + r.content.len())
            .sum(),
    }
}

/// What an elided result's content becomes.
fn note(bytes: usize, budget: usize) -> String {
    format!(
        "[this tool result ({bytes} bytes) was elided by pod: the conversation passed its \
         budget of {budget} bytes ([model] max_context_bytes); run the call again if you need \
         it]"
    )
}

/// Elides older tool results until `messages` fit in `budget` bytes; `Err(size)` when even
/// then they do not (the conversation's text, or the latest step's results, are too large).
pub(super) fn fit(messages: &mut [Message], budget: usize) -> Result<(), usize> {
    let mut total = size(messages);
    if total <= budget {
        return Ok(());
    }
    let latest = messages
        .iter()
        .rposition(|m| matches!(m, Message::ToolResults { .. }));
    for (i, message) in messages.iter_mut().enumerate() {
        if Some(i) == latest {
            break;
        }
        let Message::ToolResults { results } = message else {
            continue;
        };
        for result in results.iter_mut() {
            let replacement = note(result.content.len(), budget);
            if result.content.len() <= replacement.len() {
                continue;
            }
            total -= result.content.len() - replacement.len();
            result.content = replacement;
            if total <= budget {
                return Ok(());
            }
        }
    }
    Err(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolResult;

    fn results(n: usize, bytes: usize) -> Message {
        Message::ToolResults {
            results: (0..n)
                .map(|i| ToolResult {
                    call_id: format!("c{i}"),
                    content: "x".repeat(bytes),
                    is_error: false,
                })
                .collect(),
        }
    }

    #[test]
    fn older_results_go_first_and_the_latest_step_stays_whole() {
        let mut messages = vec![
            Message::User { text: "go".into() },
            results(4, 10_000),
            results(4, 10_000),
        ];
        assert!(fit(&mut messages, 100_000).is_ok());
        assert_eq!(size(&messages), 80_000 + 2 + 16);
        // 50 KB: the first step's results are elided, oldest first, until it fits.
        assert!(fit(&mut messages, 50_000).is_ok());
        assert!(size(&messages) <= 50_000);
        let Message::ToolResults { results: first } = &messages[1] else {
            panic!()
        };
        assert!(first[0].content.contains("elided by pod"));
        let Message::ToolResults { results: last } = &messages[2] else {
            panic!()
        };
        assert!(last.iter().all(|r| r.content.len() == 10_000));
        // The latest step alone is over the budget: nothing fits.
        assert_eq!(
            fit(&mut messages, 30_000).map_err(|n| n > 30_000),
            Err(true)
        );
    }
}
