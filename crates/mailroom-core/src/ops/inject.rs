//! What a harness hook injects, written once for every harness: everything pending at session
//! start, only what is new mid-session, a reminder at stop, always within a size budget.
//!
//! The rule for "new": each injection saves a mark (the store's change token and the pending
//! messages it left out). A mid-session injection shows only mail that is unread and was not
//! pending-and-left-out at the last injection; what an earlier injection left out is counted on
//! one line with the command to list it, never shown again as new. So a `UserPromptSubmit`
//! right after `SessionStart` (both reach the same first model request) adds nothing unless
//! mail arrived in between, and the budget holds per model turn, not per hook.

use std::collections::HashSet;

use crate::address::Address;
use crate::error::Result;
use crate::message::{MessageId, State, Stored};
use crate::ops::Mailroom;
use crate::render::{self, Budget, Frame, Vocabulary};

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

/// Room kept for the header, the unreadable files (at most [`render::MAX_DAMAGED_SHOWN`], each
/// line cut) and the closing lines when fitting messages into a budget.
const FRAME_RESERVE: usize = 1_600;

/// What the last injection left: the change token taken before it listed, and the pending
/// messages it did not show. Kept by the store as one opaque string: the token, a newline, the
/// ids separated by spaces.
struct Mark {
    token: String,
    left_out: HashSet<MessageId>,
}

impl Mark {
    fn parse(saved: &str) -> Mark {
        let (token, ids) = saved.split_once('\n').unwrap_or((saved, ""));
        Mark {
            token: token.trim().to_owned(),
            // An unreadable id only makes its message count as new once more.
            left_out: ids
                .split_ascii_whitespace()
                .filter_map(MessageId::parse)
                .collect(),
        }
    }

    fn save(token: &str, left_out: &[MessageId]) -> String {
        let mut saved = String::with_capacity(token.len() + 1 + left_out.len() * 27);
        saved.push_str(token);
        saved.push('\n');
        for (i, id) in left_out.iter().enumerate() {
            if i > 0 {
                saved.push(' ');
            }
            saved.push_str(&id.to_string());
        }
        saved
    }
}

/// The mark `saved` (by one store) spelled for another store whose change token is `target`:
/// the same left-out messages after the other token. `None` unless `saved` says the injection
/// saw everything up to `source`, the first store's token now: only then does "nothing new
/// since" carry over (see `export`).
pub(crate) fn translate_mark(saved: &str, source: &str, target: &str) -> Option<String> {
    let (token, left_out) = saved.split_once('\n').unwrap_or((saved, ""));
    (token.trim() == source).then(|| format!("{target}\n{left_out}"))
}

impl Mailroom<'_> {
    /// Whether nothing was delivered for `me` since the last injection into its sessions: the
    /// mid-session hooks' fast path (one small read and two `stat`s in a home, no listing, no
    /// project file, no roster entry). It can only ever answer "say nothing", which is always
    /// safe: anything else goes through [`Mailroom::hook`] and every check there. An address
    /// spelled differently from the store's names finds no mark (or the same one), never
    /// another mailbox's news.
    pub fn nothing_new(&self, me: &Address) -> Result<bool> {
        let Some(saved) = self.store.last_injected(me)? else {
            return Ok(false);
        };
        // The mark is read before the token, as in `hook`: a delivery between the two
        // changes the token, so it is never mistaken for old news.
        let mark = Mark::parse(&saved);
        Ok(mark.token == self.store.change_token(me)?)
    }

    /// Answers one hook call for `me`. `budget` bounds the injected text, in characters.
    pub fn hook(
        &self,
        me: &Address,
        event: HookEvent,
        stop_hook_active: bool,
        budget: usize,
        words: &dyn Vocabulary,
    ) -> Result<HookAnswer> {
        match event {
            HookEvent::SessionStart => {
                let token = self.store.change_token(me)?;
                self.inject(me, &token, None, budget, words)
            }
            HookEvent::UserPromptSubmit | HookEvent::PostToolUse => {
                let mark = self.store.last_injected(me)?.map(|m| Mark::parse(&m));
                // The token is taken before the listing: anything delivered after it changes
                // the token, so the next call looks again.
                let token = self.store.change_token(me)?;
                // Nothing delivered since the last injection: answer without listing anything.
                if mark.as_ref().is_some_and(|m| m.token == token) {
                    return Ok(HookAnswer::default());
                }
                let left_out = mark.map(|m| m.left_out).unwrap_or_default();
                self.inject(me, &token, Some(&left_out), budget, words)
            }
            HookEvent::Stop => {
                if stop_hook_active {
                    return Ok(HookAnswer::default());
                }
                let mut pending: Vec<Stored> = self
                    .store
                    .pending(me)?
                    .messages
                    .into_iter()
                    .filter(|s| !s.message.is_channel_entry())
                    // A handover to oneself is for the next session: it stays pending on purpose.
                    .filter(|s| {
                        !(s.message.kind == crate::message::Kind::Handover && s.message.from == *me)
                    })
                    .collect();
                crate::message::sort_by_cheap_key(&mut pending, super::lifecycle::urgency_key);
                Ok(HookAnswer {
                    context: None,
                    block_stop: (!pending.is_empty())
                        .then(|| render::stop_reminder(me, &pending, budget, words)),
                })
            }
        }
    }

    /// What `SessionStart` would inject for `me` now, changing nothing: no message is marked
    /// read or seen and no injection mark is saved (`setup --check` shows it).
    pub fn preview_session_start(
        &self,
        me: &Address,
        budget: usize,
        words: &dyn Vocabulary,
    ) -> Result<Option<String>> {
        let crate::message::Listing { messages, damaged } = self.peek(me)?;
        let mut fitting = Budget::new(budget.saturating_sub(FRAME_RESERVE), words, true);
        let total = messages.len();
        let shown: Vec<Stored> = messages
            .into_iter()
            .take_while(|s| fitting.admit(s))
            .collect();
        let more = total - shown.len();
        if shown.is_empty() && more == 0 && damaged.is_empty() {
            return Ok(None);
        }
        let frame = Frame {
            recipient: me,
            noun: "pending message",
            place: "",
            more,
            more_command: &words.inbox(),
            hints: true,
            words,
        };
        Ok(Some(render::budgeted_injection(
            &frame, &shown, &damaged, &fitting, 0,
        )))
    }

    /// Shows pending mail within `budget`; mid-session (`earlier` is what the last injection
    /// left out), only unread mail not in `earlier`, with a count of the rest.
    fn inject(
        &self,
        me: &Address,
        token: &str,
        earlier: Option<&HashSet<MessageId>>,
        budget: usize,
        words: &dyn Vocabulary,
    ) -> Result<HookAnswer> {
        let mut older = Vec::new();
        let mut fitting = Budget::new(budget.saturating_sub(FRAME_RESERVE), words, true);
        let taken = self.take(
            me,
            |s: &Stored| match earlier {
                None => true,
                Some(_) if s.state != State::Unread => false,
                Some(earlier) if earlier.contains(&s.message.id) => {
                    older.push(s.message.id);
                    false
                }
                Some(_) => true,
            },
            |s: &Stored| fitting.admit(s),
        )?;
        older.extend_from_slice(&taken.left_out);
        self.store
            .set_last_injected(me, &Mark::save(token, &older))?;
        let older = older.len() - taken.left_out.len();
        let quiet = match earlier {
            None => taken.damaged.is_empty(),
            // Mid-session, only news speaks: unreadable files wait for the next start.
            Some(_) => true,
        };
        if taken.messages.is_empty() && taken.more == 0 && quiet {
            return Ok(HookAnswer::default());
        }
        let frame = Frame {
            recipient: me,
            noun: if earlier.is_some() {
                "new message"
            } else {
                "pending message"
            },
            place: "",
            more: taken.more,
            more_command: &words.inbox(),
            hints: true,
            words,
        };
        Ok(HookAnswer {
            context: Some(render::budgeted_injection(
                &frame,
                &taken.messages,
                &taken.damaged,
                &fitting,
                older,
            )),
            block_stop: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::translate_mark;

    #[test]
    fn a_mark_is_translated_only_while_it_holds_and_keeps_what_it_left_out() {
        let left_out = "01ARZ3NDEKTSV4RRFFQ69G5FAV 01BX5ZZKBKACTAV9WEVGEMMVRZ";
        let saved = format!("1700000000123:-\n{left_out}");
        assert_eq!(
            translate_mark(&saved, "1700000000123:-", "g7:3").as_deref(),
            Some(format!("g7:3\n{left_out}").as_str())
        );
        assert_eq!(translate_mark(&saved, "1700000000999:-", "g7:3"), None);
        // As the file store reads a mark that left nothing out: the token alone.
        assert_eq!(
            translate_mark("g7", "g7", "1700000000123").as_deref(),
            Some("1700000000123\n")
        );
    }
}
