//! What a harness hook injects, written once for every harness: everything pending at session
//! start, only what is new mid-session, a reminder at stop, always within a size budget.

use crate::address::Address;
use crate::error::Result;
use crate::message::Stored;
use crate::ops::Mailroom;
use crate::render::{self, Frame};

/// The moments a harness calls the hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookEvent {
    SessionStart,
    UserPromptSubmit,
    PostToolUse,
    Stop,
}

impl HookEvent {
    /// Claude Code's and Codex's event names, Gemini CLI's, in any case or with dashes.
    pub fn parse(s: &str) -> Option<HookEvent> {
        let k: String = s
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        Some(match k.as_str() {
            "sessionstart" => HookEvent::SessionStart,
            "userpromptsubmit" | "beforeagent" => HookEvent::UserPromptSubmit,
            "posttooluse" | "aftertool" => HookEvent::PostToolUse,
            "stop" | "afteragent" => HookEvent::Stop,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::Stop => "Stop",
        }
    }
}

/// What the hook answers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HookAnswer {
    /// Text to add to the model's context.
    pub context: Option<String>,
    /// At stop: why the session should not end yet.
    pub block_stop: Option<String>,
}

/// Room kept for the header and the closing lines when fitting messages into a budget.
const FRAME_RESERVE: usize = 900;

impl Mailroom<'_> {
    /// Answers one hook call for `me`. `budget` bounds the injected text, in characters.
    pub fn hook(
        &self,
        me: &Address,
        event: HookEvent,
        stop_hook_active: bool,
        budget: usize,
    ) -> Result<HookAnswer> {
        match event {
            HookEvent::SessionStart => self.inject(me, false, budget),
            HookEvent::UserPromptSubmit | HookEvent::PostToolUse => {
                // Nothing delivered since the last injection: answer without listing anything.
                if self.store.last_injected(me)? == Some(self.store.change_token(me)?) {
                    return Ok(HookAnswer::default());
                }
                self.inject(me, true, budget)
            }
            HookEvent::Stop => {
                if stop_hook_active {
                    return Ok(HookAnswer::default());
                }
                let pending = self
                    .store
                    .pending(me)?
                    .messages
                    .iter()
                    .filter(|s| !s.message.is_channel_entry())
                    // A handover to oneself is for the next session: it stays pending on purpose.
                    .filter(|s| {
                        !(s.message.kind == crate::message::Kind::Handover && s.message.from == *me)
                    })
                    .count();
                Ok(HookAnswer {
                    context: None,
                    block_stop: (pending > 0).then(|| {
                        format!(
                            "{pending} directed message{} still pending for {me}. Before you stop, handle each: reply (`mailroom reply ID --message ...`), mark it done (`mailroom done ID`), or tell the operator why it stays pending. `mailroom inbox` lists them.",
                            if pending == 1 { " is" } else { "s are" }
                        )
                    }),
                })
            }
        }
    }

    fn inject(&self, me: &Address, only_new: bool, budget: usize) -> Result<HookAnswer> {
        // The token is taken before the listing: anything delivered after it changes the token,
        // so the next call looks again.
        let token = self.store.change_token(me)?;
        let room = budget.saturating_sub(FRAME_RESERVE);
        let mut used = 0;
        let taken = self.take(me, only_new, |s: &Stored| {
            let mut block = String::new();
            let _ = render::message_block(&mut block, s, true);
            used += block.len() + 1;
            used <= room
        })?;
        self.store.set_last_injected(me, &token)?;
        if taken.messages.is_empty() && taken.damaged.is_empty() && taken.more == 0 {
            return Ok(HookAnswer::default());
        }
        let frame = Frame {
            recipient: me,
            noun: if only_new {
                "new message"
            } else {
                "pending message"
            },
            place: "",
            more: taken.more,
            more_command: "mailroom inbox",
            hints: true,
        };
        Ok(HookAnswer {
            context: Some(render::injection(&frame, &taken.messages, &taken.damaged)),
            block_stop: None,
        })
    }
}
