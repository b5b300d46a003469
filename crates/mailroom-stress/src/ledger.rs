//! What the harness asked for and what each command acknowledged: the expectations the
//! checker holds the disk to.
//!
//! Invariant: a send is planned (its recipients recorded) before its process starts, and an
//! edit or cancel before its process starts, so a reader racing the writer can always tell an
//! allowed copy from a wrong one; only an exit 0 with an id makes a send acknowledged.

use std::collections::HashMap;
use std::time::Instant;

use crate::bodies::Marker;

/// What an edit did at one recipient, as `edit --json` reported it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EditOutcome {
    Edited,
    Correction(String),
    Cancelled,
}

/// The edit of a message: not tried, tried without a report (killed), or reported.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Edit {
    #[default]
    None,
    Unreported,
    Reported(Vec<(String, EditOutcome)>),
}

/// The cancel of a message: not tried, tried without a report, refused, or reported per
/// recipient (the state each copy is in now).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Cancel {
    #[default]
    None,
    Unreported,
    Refused,
    Reported(Vec<(String, String)>),
}

/// One send, from plan to outcome.
#[derive(Clone, Debug)]
pub struct Send {
    pub marker: Marker,
    pub to: Vec<String>,
    /// The id `send` printed with exit 0: the send is acknowledged.
    pub id: Option<String>,
    /// When the harness saw the acknowledgement (delivery was complete before it).
    pub acked_at: Option<Instant>,
    pub reply_to: Option<String>,
    pub edit: Edit,
    pub cancel: Cancel,
}

/// Every send of a run and what happened to it.
#[derive(Debug, Default)]
pub struct Ledger {
    sends: HashMap<Marker, Send>,
    by_id: HashMap<String, Marker>,
    /// Acknowledged ids in order, for picking targets.
    acked: Vec<String>,
    /// CORRECTION ids reported by edits: id → (recipient, corrected id).
    corrections: HashMap<String, (String, String)>,
    /// Copies a reply reported it closed: (mailbox, id) must be done.
    closed: Vec<(String, String)>,
    /// (mailbox, id) → when a `done` or `read --archive` that archived it had exited.
    done: HashMap<(String, String), Instant>,
    /// `done --all` runs that exited 0: (mailbox, started, exited). Every copy acknowledged
    /// before one started was out of the pending states when it exited.
    sweeps: Vec<(String, Instant, Instant)>,
}

impl Ledger {
    pub fn plan_send(&mut self, marker: Marker, to: Vec<String>, reply_to: Option<String>) {
        self.sends.insert(
            marker.clone(),
            Send {
                marker,
                to,
                id: None,
                acked_at: None,
                reply_to,
                edit: Edit::None,
                cancel: Cancel::None,
            },
        );
    }

    /// Records an acknowledgement; a second, different id for the same send is an error (the
    /// send was delivered twice).
    pub fn ack_send(&mut self, marker: &Marker, id: &str) -> Result<(), String> {
        let Some(send) = self.sends.get_mut(marker) else {
            return Err(format!("send {marker} was acknowledged but never planned"));
        };
        match &send.id {
            Some(first) if first != id => {
                return Err(format!(
                    "send {marker} was acknowledged twice, as {first} and as {id}"
                ));
            }
            Some(_) => {}
            None => {
                send.id = Some(id.to_owned());
                send.acked_at = Some(Instant::now());
                self.by_id.insert(id.to_owned(), marker.clone());
                self.acked.push(id.to_owned());
            }
        }
        Ok(())
    }

    pub fn send(&self, marker: &Marker) -> Option<&Send> {
        self.sends.get(marker)
    }

    pub fn by_id(&self, id: &str) -> Option<&Send> {
        self.by_id.get(id).and_then(|m| self.sends.get(m))
    }

    fn by_id_mut(&mut self, id: &str) -> Option<&mut Send> {
        let m = self.by_id.get(id)?;
        self.sends.get_mut(m)
    }

    pub fn sends(&self) -> impl Iterator<Item = &Send> {
        self.sends.values()
    }

    pub fn acked_ids(&self) -> &[String] {
        &self.acked
    }

    pub fn acked_count(&self) -> usize {
        self.acked.len()
    }

    /// Claims `id` for an edit (true) unless it was edited or cancelled already.
    pub fn plan_edit(&mut self, id: &str) -> bool {
        match self.by_id_mut(id) {
            Some(s) if s.edit == Edit::None && s.cancel == Cancel::None => {
                s.edit = Edit::Unreported;
                true
            }
            _ => false,
        }
    }

    pub fn report_edit(&mut self, id: &str, outcomes: Vec<(String, EditOutcome)>) {
        for (to, o) in &outcomes {
            if let EditOutcome::Correction(c) = o {
                self.corrections
                    .insert(c.clone(), (to.clone(), id.to_owned()));
            }
        }
        if let Some(s) = self.by_id_mut(id) {
            s.edit = Edit::Reported(outcomes);
        }
    }

    /// Claims `id` for a cancel (true) unless it was edited or cancelled already.
    pub fn plan_cancel(&mut self, id: &str) -> bool {
        match self.by_id_mut(id) {
            Some(s) if s.edit == Edit::None && s.cancel == Cancel::None => {
                s.cancel = Cancel::Unreported;
                true
            }
            _ => false,
        }
    }

    pub fn report_cancel(&mut self, id: &str, cancel: Cancel) {
        if let Some(s) = self.by_id_mut(id) {
            s.cancel = cancel;
        }
    }

    pub fn corrections(&self) -> &HashMap<String, (String, String)> {
        &self.corrections
    }

    pub fn closed(&mut self, mailbox: &str, id: &str) {
        self.closed.push((mailbox.to_owned(), id.to_owned()));
    }

    pub fn closed_copies(&self) -> &[(String, String)] {
        &self.closed
    }

    /// Records that `id` in `mailbox` was archived by a command that exited at `at`.
    pub fn archived(&mut self, mailbox: &str, id: &str, at: Instant) {
        self.done
            .entry((mailbox.to_owned(), id.to_owned()))
            .and_modify(|t| *t = (*t).min(at))
            .or_insert(at);
    }

    /// Records a `done --all` of `mailbox` that ran from `started` to `exited`.
    pub fn swept(&mut self, mailbox: &str, started: Instant, exited: Instant) {
        self.sweeps.push((mailbox.to_owned(), started, exited));
    }

    /// Whether the copy of `id` in `mailbox` was known to be out of the pending states
    /// (archived by a `done`, or swept by a `done --all`) before `at`.
    pub fn done_before(&self, mailbox: &str, id: &str, at: Instant) -> bool {
        if self
            .done
            .get(&(mailbox.to_owned(), id.to_owned()))
            .is_some_and(|t| *t < at)
        {
            return true;
        }
        let Some(acked) = self.by_id(id).and_then(|s| s.acked_at) else {
            return false;
        };
        self.sweeps
            .iter()
            .any(|(m, started, exited)| m == mailbox && acked < *started && *exited < at)
    }
}
