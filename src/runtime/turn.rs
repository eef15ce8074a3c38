//! The turn loop: user input -> `user_prompt` hooks -> model -> check chain per tool call ->
//! run allowed calls -> commit results in tool-call order (a denied call's `permission_denied`
//! hooks are started then, detached) -> model again, until the model ends the turn, `max_steps`
//! is reached, a `user_prompt` hook refuses the prompt, or the turn is cancelled. Every tool
//! call gets exactly one result.
//!
//! Each call gets an id of its own when its response is read ([`calls`]). While a call runs,
//! the proxy's asks about its connections are settled here, and each connection it reports is
//! recorded as a `networkConnection` item before the call's result.

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use futures::stream::{FuturesOrdered, StreamExt};
use tokio_util::sync::CancellationToken;

use super::calls::{self, Call};
use super::checks::{self, Stop};
use super::deltas::Deltas;
use super::execs;
use super::{wire, Approver, EventSink, Pod, RunError};
use crate::hooks::After;
use crate::manifest::HookEvent;
use crate::model::{Message, ModelError, ModelRequest, ModelStop, ToolCall, ToolResult};
use crate::network::{NetworkAsk, Report};
use crate::permission::SubjectKind;
use crate::protocol::{
    CallResult, Decision, DeniedBy, Event, InputItem, Item, OpenCalls, PodState, RunResult,
    StopReason, ToolAnnotations, Usage,
};
use crate::skills::Skill;
use crate::tools::{ToolContext, ToolOutput};

/// Shell command lines are analyzed one at a time, off the protocol's thread: each analysis is
/// bounded (linear in the line, docs/permissions.md), and one at a time keeps a response full of
/// hostile calls from taking every core from the server.
static SHELL_ANALYSIS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);

/// What one turn shares between its calls.
pub(super) struct Turn<'a> {
    pub id: String,
    pub events: &'a dyn EventSink,
    pub cancel: CancellationToken,
    pub skill: Option<Skill>,
    /// Permission requests waiting for an answer; drives the `status` events.
    pub pending: AtomicUsize,
    /// Bumped on every `allow_session` grant, so that other asks of the turn still waiting can
    /// see whether the new grant answers them too.
    pub grants: tokio::sync::watch::Sender<u64>,
    /// The session's mode, reported with each status.
    pub mode: &'a std::sync::Mutex<crate::protocol::Mode>,
}

impl Turn<'_> {
    /// Sends an event; waits while the client is behind.
    pub async fn emit(&self, event: Event) {
        self.events.emit(event).await;
    }

    pub async fn status(&self, state: PodState) {
        let mode = *self.mode.lock().unwrap_or_else(|e| e.into_inner());
        self.emit(Event::Status {
            state,
            mode: Some(mode),
        })
        .await;
    }
}

/// The content of the synthetic result that closes a call whose turn panicked.
pub const TURN_FAILED_TEXT: &str = "internal error: the turn failed before this call finished";

/// Clears the pod's `turn_running` flag when the turn ends, normally or by panic. On a panic it
/// also closes the turn in history: every call of the turn without a result gets an error result,
/// then `turnEnded` (`error`), the log is synced, the model's view is rebuilt from history so
/// the next turn never sends a provider a tool call without its result, and the turn's pending
/// permission requests are marked resolved.
struct RunningGuard<'a>(&'a Pod, String);

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.close_after_panic();
        }
        self.0.state().turn_running = false;
    }
}

impl RunningGuard<'_> {
    fn close_after_panic(&self) {
        let turn_id = &self.1;
        let mut state = self.0.state();
        let mut closing: Vec<Item> = OpenCalls::of_items(&state.items)
            .closing(TURN_FAILED_TEXT)
            .into_iter()
            .filter(|result| result.turn_id == *turn_id)
            .map(Item::ToolResult)
            .collect();
        closing.push(Item::TurnEnded {
            turn_id: turn_id.clone(),
            stop_reason: StopReason::Error,
        });
        for item in closing {
            if let Err(e) = state.log.append(&item) {
                tracing::error!("session log: {e}");
            }
            state.items.push(item);
        }
        if let Err(e) = state.log.sync() {
            tracing::error!("session log: {e}");
        }
        state.messages = calls::messages_from_items(&state.items);
        drop(state);
        // One turn runs at a time, so every pending request is this turn's.
        if let Approver::Client(approvals) = &self.0.approver {
            approvals.finish_all();
        }
    }
}

/// A call's outcome, committed in call order.
struct Outcome {
    output: ToolOutput,
    denied_by: Option<DeniedBy>,
    /// The permission layer's final word, recorded before the result (layer on only).
    decision: Option<Item>,
}

impl Pod {
    /// Runs one turn. Events stream to `events`; the result says why the turn ended.
    /// Cancelling `cancel` ends the turn with `stopReason: cancelled`.
    pub async fn run(
        &self,
        input: Vec<InputItem>,
        events: &dyn EventSink,
        cancel: CancellationToken,
    ) -> Result<RunResult, RunError> {
        if input.is_empty() {
            return Err(RunError::EmptyInput);
        }
        let mut skill = None;
        for item in &input {
            if let InputItem::Skill { name } = item {
                match self.skills.get(name) {
                    Some(s) => skill = Some(s.clone()),
                    None => {
                        return Err(RunError::UnknownSkill {
                            name: name.clone(),
                            known: self.skills.names().iter().map(|s| s.to_string()).collect(),
                        })
                    }
                }
            }
        }
        {
            let mut state = self.state();
            if state.turn_running {
                return Err(RunError::TurnInProgress);
            }
            state.turn_running = true;
        }
        let turn_id = format!("turn_{}", uuid::Uuid::new_v4().simple());
        // Clears `turn_running` even if the turn panics, so the pod can run the next turn.
        let _running = RunningGuard(self, turn_id.clone());
        let turn = Turn {
            id: turn_id,
            events,
            cancel,
            skill,
            pending: AtomicUsize::new(0),
            grants: tokio::sync::watch::Sender::new(0),
            mode: &self.mode,
        };
        turn.status(PodState::Running).await;
        turn.emit(Event::TurnStarted {
            turn_id: turn.id.clone(),
        })
        .await;
        let (stop_reason, error, usage) = self.turn_loop(&turn, input).await;
        self.record(Item::TurnEnded {
            turn_id: turn.id.clone(),
            stop_reason,
        });
        {
            let mut state = self.state();
            if let Err(e) = state.log.sync() {
                tracing::error!("session log: {e}");
            }
            // Cleared before `turnEnded` goes out, so a client may start the next turn as soon
            // as it sees it; the guard above only covers a panic.
            state.turn_running = false;
        }
        turn.emit(Event::TurnEnded {
            turn_id: turn.id.clone(),
            stop_reason,
            error: error.clone(),
            usage,
        })
        .await;
        turn.status(PodState::Idle).await;
        Ok(RunResult {
            turn_id: turn.id,
            stop_reason,
            error,
            usage,
        })
    }

    async fn turn_loop(
        &self,
        turn: &Turn<'_>,
        input: Vec<InputItem>,
    ) -> (StopReason, Option<String>, Usage) {
        let mut usage = Usage::default();
        let contexts = match self.prompted(turn, &input).await {
            Ok(contexts) => contexts,
            Err(stop) => return (stop.0, stop.1, usage),
        };
        for item in input {
            match item {
                InputItem::Text { text } => {
                    self.record(Item::UserMessage {
                        turn_id: turn.id.clone(),
                        text: text.clone(),
                    });
                    self.state().messages.push(Message::User { text });
                }
                InputItem::Skill { name } => {
                    self.record(Item::SkillActivated {
                        turn_id: turn.id.clone(),
                        name: name.clone(),
                    });
                    if let Some(skill) = &turn.skill {
                        let text = format!(
                            "Follow the instructions of the skill \"{}\" for this task:\n\n{}",
                            skill.name, skill.body
                        );
                        self.state().messages.push(Message::User { text });
                    }
                }
            }
        }
        for (hook, text) in contexts {
            self.record(Item::HookContext {
                turn_id: Some(turn.id.clone()),
                event: HookEvent::UserPrompt.key().into(),
                hook,
                text: text.clone(),
            });
            self.state().messages.push(Message::User { text });
        }
        for _ in 0..self.manifest.pod.max_steps {
            if turn.cancel.is_cancelled() {
                return (StopReason::Cancelled, None, usage);
            }
            if let Some(why) = self.over_budget() {
                return (StopReason::MaxContext, Some(why), usage);
            }
            let response = match self.ask_model(turn).await {
                Ok(r) => r,
                Err(ModelError::Cancelled) => return (StopReason::Cancelled, None, usage),
                Err(e) => return (StopReason::Error, Some(e.to_string()), usage),
            };
            usage.input_tokens = usage
                .input_tokens
                .saturating_add(response.usage.input_tokens);
            usage.output_tokens = usage
                .output_tokens
                .saturating_add(response.usage.output_tokens);
            if !response.text.is_empty() {
                self.record(Item::AssistantText {
                    turn_id: turn.id.clone(),
                    text: response.text.clone(),
                });
            }
            self.state().messages.push(Message::Assistant {
                text: response.text.clone(),
                tool_calls: response.tool_calls.clone(),
            });
            if response.tool_calls.is_empty() {
                // A reply cut off at the token limit did not end the turn by choice.
                let stop = if response.stop == ModelStop::MaxTokens {
                    StopReason::MaxTokens
                } else {
                    StopReason::EndTurn
                };
                return (stop, None, usage);
            }
            let calls = self.identify(response.tool_calls);
            let results = self.run_calls(turn, &calls).await;
            self.state().messages.push(Message::ToolResults { results });
            if turn.cancel.is_cancelled() {
                return (StopReason::Cancelled, None, usage);
            }
        }
        (StopReason::MaxSteps, None, usage)
    }

    /// The `user_prompt` hooks' word on the turn's prompt (its text items joined by blank
    /// lines), in manifest order: the context they add, with each hook's label, or why the turn
    /// ends before the model sees the prompt. A hook that refuses (or fails, which refuses)
    /// stops the chain; the refusal is recorded (`promptRefused`), the prompt is not.
    async fn prompted(
        &self,
        turn: &Turn<'_>,
        input: &[InputItem],
    ) -> Result<Vec<(String, String)>, (StopReason, Option<String>)> {
        let mut contexts = Vec::new();
        if self.prompt_hooks.is_empty() {
            return Ok(contexts);
        }
        let prompt = input
            .iter()
            .filter_map(|item| match item {
                InputItem::Text { text } => Some(text.as_str()),
                InputItem::Skill { .. } => None,
            })
            .collect::<Vec<_>>()
            .join("\n\n");
        let skill = turn.skill.as_ref().map(|s| s.name.as_str());
        for hook in &self.prompt_hooks {
            // Dropping the hook's future on cancel kills its process group.
            let said = tokio::select! {
                said = hook.user_prompt(&self.session_id, &turn.id, &prompt, skill) => said,
                () = turn.cancel.cancelled() => return Err((StopReason::Cancelled, None)),
            };
            match said {
                Ok(None) => {}
                Ok(Some(text)) => contexts.push((hook.label(), text)),
                Err(message) => {
                    tracing::warn!(session = %self.session_id, turn = %turn.id, "{message}");
                    self.record(Item::PromptRefused {
                        turn_id: turn.id.clone(),
                        message: message.clone(),
                    });
                    return Err((StopReason::Refused, Some(message)));
                }
            }
        }
        Ok(contexts)
    }

    /// Tells the `permission_denied` hooks that apply to `call` that it was denied, on a task
    /// of its own: the turn does not wait for them. Each runs under its timeout, at most
    /// `[tools] max_parallel` denials' hooks at once; their answers are ignored and a failure
    /// is logged on stderr. A hook still running when the pod exits is killed.
    fn notify_denied(&self, turn: &Turn<'_>, call: &Call, by: DeniedBy, reason: &str) {
        let hooks: Vec<_> = self
            .denied_hooks
            .iter()
            .filter(|h| h.applies_to(&call.name))
            .cloned()
            .collect();
        if hooks.is_empty() {
            return;
        }
        let payload = serde_json::json!({
            "event": "permission_denied",
            "sessionId": self.session_id,
            "turnId": turn.id,
            "callId": call.id,
            "tool": call.name,
            "input": call.input,
            "deniedBy": by,
            "reason": reason,
        });
        let session = self.session_id.clone();
        let slots = self.denied_slots.clone();
        let tell = async move {
            let Ok(_slot) = slots.acquire_owned().await else {
                return;
            };
            for hook in hooks {
                if let Err(why) = hook.denied(&payload).await {
                    tracing::warn!(session = %session, "permission_denied: {why}");
                }
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn(tell)),
            Err(_) => tracing::warn!(
                session = %self.session_id,
                "permission_denied hooks not run: no async runtime to run them on"
            ),
        }
    }

    /// Why the next step cannot be taken within the session's budgets: the log passed `[pod]
    /// max_session_bytes`, or the conversation does not fit `[model] max_context_bytes` even
    /// with older tool results elided (which this does, in the model's view only).
    fn over_budget(&self) -> Option<String> {
        let mut state = self.state();
        let logged = state.log.bytes();
        let limit = self.manifest.pod.max_session_bytes;
        if logged > limit {
            return Some(format!(
                "the session's log is {logged} bytes, more than [pod] max_session_bytes \
                 ({limit}); start a new session (its history stays readable)"
            ));
        }
        let budget = self.manifest.model.max_context_bytes;
        super::context::fit(&mut state.messages, budget)
            .err()
            .map(|size| {
                format!(
                    "the conversation is {size} bytes, more than [model] max_context_bytes \
                     ({budget}) even with older tool results elided; start a new session, or \
                     ask for less at a time"
                )
            })
    }

    /// One model request, forwarding text deltas as `textDelta` events while it streams: one
    /// event per piece while the client keeps up; while it is behind, the pieces that arrive
    /// meanwhile are joined into the next event, and past [`super::deltas::ROOM`] bytes waiting
    /// the model stream itself waits.
    async fn ask_model(&self, turn: &Turn<'_>) -> Result<crate::model::ModelResponse, ModelError> {
        let messages = self.state().messages.clone();
        let deltas = Deltas::default();
        let request = ModelRequest {
            system: self.system.as_deref(),
            messages: &messages,
            tools: &self.tool_infos,
            max_tokens: self.manifest.model.max_tokens,
        };
        let text_delta = |text: String| Event::TextDelta {
            turn_id: turn.id.clone(),
            text,
        };
        let forward = async {
            while let Some(pieces) = deltas.take().await {
                let mut pieces = pieces.into_iter();
                while let Some(piece) = pieces.next() {
                    if let Err(full) = turn.events.try_emit(text_delta(piece)) {
                        let Event::TextDelta { mut text, .. } = *full else {
                            break;
                        };
                        text.extend(pieces.by_ref());
                        turn.emit(text_delta(text)).await;
                    }
                }
            }
        };
        let respond = async {
            let result = self.model.respond(request, &deltas, &turn.cancel).await;
            deltas.close();
            result.and_then(crate::model::within_shape)
        };
        let (result, ()) = tokio::join!(respond, forward);
        result
    }

    /// Gives each call of a response its own id, unique in the session (see [`calls`]).
    fn identify(&self, calls: Vec<ToolCall>) -> Vec<Call> {
        calls::identify(&mut self.state().call_ids, calls)
    }

    /// Checks and runs the calls of one model response concurrently (at most
    /// `[tools] max_parallel` at a time), committing results (events and history) strictly in
    /// call order.
    async fn run_calls(&self, turn: &Turn<'_>, calls: &[Call]) -> Vec<ToolResult> {
        for call in calls {
            self.record(Item::ToolCall {
                turn_id: turn.id.clone(),
                call_id: call.id.clone(),
                provider_call_id: (call.provider_id != call.id).then(|| call.provider_id.clone()),
                tool: call.name.clone(),
                input: call.input.clone(),
            });
            turn.emit(Event::ToolCall {
                turn_id: turn.id.clone(),
                call_id: call.id.clone(),
                tool: call.name.clone(),
                input: call.input.clone(),
            })
            .await;
        }
        let mut ordered: FuturesOrdered<_> = calls
            .iter()
            .map(|call| self.process_call(turn, call))
            .collect();
        let mut results = Vec::with_capacity(calls.len());
        let mut index = 0;
        while let Some(outcome) = ordered.next().await {
            let call = &calls[index];
            index += 1;
            if let Some(decision) = outcome.decision {
                self.record(decision);
            }
            let result = CallResult {
                turn_id: turn.id.clone(),
                call_id: call.id.clone(),
                is_error: outcome.output.is_error,
                content: outcome.output.content.clone(),
                denied_by: outcome.denied_by,
            };
            if let Some(by) = outcome.denied_by {
                self.notify_denied(turn, call, by, &outcome.output.content);
            }
            self.record(Item::ToolResult(result.clone()));
            turn.emit(Event::ToolResult(result)).await;
            results.push(ToolResult {
                call_id: call.provider_id.clone(),
                content: outcome.output.content,
                is_error: outcome.output.is_error,
            });
        }
        results
    }

    /// A slot to run something of a call in, or `None` once the turn is cancelled.
    async fn slot(&self, turn: &Turn<'_>) -> Option<tokio::sync::SemaphorePermit<'_>> {
        tokio::select! {
            biased;
            () = turn.cancel.cancelled() => None,
            permit = self.slots.acquire() => permit.ok(),
        }
    }

    /// The check chain, then the tool.
    async fn process_call(&self, turn: &Turn<'_>, call: &Call) -> Outcome {
        let cancelled = || Outcome {
            output: ToolOutput::error(checks::CANCELLED_TEXT),
            denied_by: None,
            decision: None,
        };
        if turn.cancel.is_cancelled() {
            return cancelled();
        }
        // A tool that does not exist (or is not enabled) fails before anything is asked: there
        // is nothing to approve.
        let Some(tool) = self.toolbox.get(&call.name) else {
            // A tool of an MCP server that did not start, exited or left it out: say which.
            let text = self.mcp.unavailable(&call.name).unwrap_or_else(|| {
                format!(
                    "unknown tool \"{}\" (enabled tools: {})",
                    call.name,
                    self.toolbox.names().join(", ")
                )
            });
            return Outcome {
                output: ToolOutput::error(text),
                denied_by: None,
                decision: None,
            };
        };
        let decision = self.decide(call, tool.annotations()).await;
        let checked = self.check(turn, call, &decision).await;
        let decision_item = checked.item;
        // What the user approved, edited, or the call as the model made it.
        let amended = checked.amended;
        let call = amended.as_ref().unwrap_or(call);
        let target = match checked.verdict {
            Ok(target) => target,
            Err(Stop::Denied(denial)) => {
                return Outcome {
                    output: ToolOutput::error(denial.text),
                    denied_by: Some(denial.by),
                    decision: decision_item,
                }
            }
            Err(Stop::Cancelled) => {
                return Outcome {
                    decision: decision_item,
                    ..cancelled()
                }
            }
        };

        // The proxy's asks about this call's connections, settled here while the tool runs.
        let (asks, mut asked) = tokio::sync::mpsc::channel::<NetworkAsk>(8);
        // And what it reached, recorded as each connection ends (at most `MAX_ENTRIES` and a
        // count per call, so the channel is bounded by the proxy).
        let (connections, mut connected) = tokio::sync::mpsc::unbounded_channel::<Report>();
        // The exec gate's judge for a shell call: the decision the call runs with.
        let judge = if self.sandbox.gate_on() && call.kind == SubjectKind::Shell {
            let ran = match &amended {
                Some(edited) => self.decide(edited, tool.annotations()).await,
                None => decision.clone(),
            };
            Some(Arc::new(execs::CallJudge::new(
                self.policy.clone(),
                &call.name,
                &ran,
                self.state().grants.clone(),
                self.exec_ids.clone(),
                crate::testing::analysis_off(),
            )))
        } else {
            None
        };
        let ctx = ToolContext {
            workspace: self.manifest.workspace.clone(),
            cancel: turn.cancel.child_token(),
            target,
            files: self.files.clone(),
            sandbox: self.sandbox.clone(),
            editor: self.editor.clone(),
            call_id: call.id.clone(),
            net: Some(self.net.clone()),
            proxy: self.proxy.clone(),
            asks: self.proxy.as_ref().map(|_| asks),
            connections: self.proxy.as_ref().map(|_| connections),
            exec_gate: judge
                .clone()
                .map(|j| j as Arc<dyn crate::sandbox::gate::ExecJudge>),
        };
        if crate::testing::panics_armed() {
            crate::testing::maybe_panic(&call.input.to_string(), crate::testing::TOOL_MARKER);
        }
        // A slot first, then (for a tool that runs alone) the exclusive lock: whoever holds
        // the lock already holds a slot, so waiting for one cannot deadlock.
        let Some(_slot) = self.slot(turn).await else {
            return Outcome {
                decision: decision_item,
                ..cancelled()
            };
        };
        let _exclusive = if tool.concurrent() {
            None
        } else {
            Some(self.exclusive.lock().await)
        };
        // The client may have narrowed the session since the chain began (an ask was pending,
        // or the call waited for a slot when ACP's mode became `read-only`): the restriction in
        // force now has the last word.
        if let Err(denial) = checks::restricted(self.mode(), &call.name) {
            return Outcome {
                output: ToolOutput::error(denial.text),
                denied_by: Some(denial.by),
                decision: decision_item,
            };
        }
        turn.events.call_started(&turn.id, &call.id).await;
        let run = tool.run(call.input.clone(), &ctx);
        tokio::pin!(run);
        let mut settling = futures::stream::FuturesUnordered::new();
        let output = loop {
            tokio::select! {
                output = &mut run => break output,
                Some(ask) = asked.recv() => settling.push(self.settle_network_ask(turn, call, ask)),
                Some(report) = connected.recv() => self.record(wire::connection_item(turn, call, report)),
                Some(()) = futures::StreamExt::next(&mut settling), if !settling.is_empty() => {}
            }
        };
        // The call is over: its admission reported every connection still open.
        while let Ok(report) = connected.try_recv() {
            self.record(wire::connection_item(turn, call, report));
        }
        for m in judge.iter().flat_map(|j| j.take_mismatches()) {
            self.record(Item::AnalysisMismatch {
                turn_id: turn.id.clone(),
                call_id: call.id.clone(),
                command: m.line,
                argv: m.argv,
            });
        }
        let output = self.after_call(call, output).await;
        Outcome {
            output,
            denied_by: None,
            decision: decision_item,
        }
    }

    /// The `post_tool_call` hooks' word on a result, in order: each may keep it, replace it
    /// (an error stays one), add a note or withhold it; a hook that fails withholds it.
    async fn after_call(&self, call: &Call, mut output: ToolOutput) -> ToolOutput {
        for hook in self.post_hooks.iter().filter(|h| h.applies_to(&call.name)) {
            let said = hook
                .after(
                    &call.id,
                    &call.name,
                    &call.input,
                    &output.content,
                    output.is_error,
                )
                .await;
            match said {
                After::Keep => {}
                After::Replace { content, is_error } => {
                    output = ToolOutput {
                        content,
                        is_error: output.is_error || is_error,
                    }
                }
                After::Note(note) => {
                    output.content.push_str("\n\n");
                    output.content.push_str(&note);
                }
                After::Withhold(why) => {
                    tracing::warn!(call = %call.id, "{why}");
                    return ToolOutput::error(why);
                }
            }
        }
        output
    }

    /// An ask of the proxy about a connection of `call`'s processes: the normal approval round
    /// trip (session grants, the mode, the approver), a `permissionRequest` of `call` whose
    /// subject is the `network` one. Not recorded as the call's decision (it has one already):
    /// the call's result records what it reached.
    async fn settle_network_ask(&self, turn: &Turn<'_>, call: &Call, ask: NetworkAsk) {
        let settled = Box::pin(self.permission_hook(turn, call, &ask.decision)).await;
        let answer = match settled {
            Some(s) => (Some(s.by), s.verdict),
            None => (None, Ok(())),
        };
        let _ = ask.answer.send(answer);
    }

    /// The permission layer's decision for a call. Shell commands are analyzed on a blocking
    /// thread, one at a time ([`SHELL_ANALYSIS`]), so the server's single thread never waits on
    /// them; any failure on the way is an unparsed command, which nothing allows.
    /// An MCP tool's `annotations` (as its server lists them) select its default.
    pub(super) async fn decide(
        &self,
        call: &Call,
        annotations: Option<&ToolAnnotations>,
    ) -> Decision {
        if call.kind != SubjectKind::Shell {
            return self
                .policy
                .decide_with(&call.name, &call.input, annotations);
        }
        if crate::testing::analysis_off() {
            // Test builds only: the exec gate alone decides what the call runs.
            return Decision {
                decision: crate::protocol::Action::Allow,
                subjects: Vec::new(),
            };
        }
        let failed = || {
            self.policy.unparsed(
                &call.name,
                &call.input,
                "the command line could not be analyzed",
            )
        };
        let Ok(_permit) = SHELL_ANALYSIS.acquire().await else {
            return failed();
        };
        let (policy, name, input) = (self.policy.clone(), call.name.clone(), call.input.clone());
        match tokio::task::spawn_blocking(move || policy.decide(&name, &input)).await {
            Ok(decision) => decision,
            Err(_) => failed(),
        }
    }
}
