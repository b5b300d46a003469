//! Sending: delivering copies into recipients' `unread/`, the sender's outbox trace, and the
//! idempotency keys that make a retried send finish instead of repeating.
//!
//! Invariants: a copy is written and synced under the mailbox's `tmp/` before it is linked into
//! `unread/` (never replacing a file there), so no reader sees a torn copy; `deliver_all` gives
//! every recipient the copy or none, except copies a reader took before an undo.

use mailroom_core::store::{Delivery, KeyClaim};
use mailroom_core::{Address, Message, MessageId, Result, State};

use crate::codec::message_to_text;
use crate::dir::{Dir, Durability, Limit};
use crate::error::FsError;
use crate::{FsStore, KEYS, OUTBOX, TMP, create_exclusive, file_name, state_dir_name};

/// A mailbox's directories for delivery (created when absent): the mailbox, its `tmp/` and
/// its `unread/`.
fn delivery_dirs(fs: &FsStore, recipient: &Address) -> Result<(Dir, Dir, Dir), FsError> {
    let bx = fs.create_box(recipient)?;
    let tmp = bx.open_or_create(TMP)?;
    let unread = bx.open_or_create(state_dir_name(State::Unread))?;
    Ok((bx, tmp, unread))
}

/// Moves the temp copy `t` into `unread` as `name`, never replacing (`Ok(false)`: `name` is
/// there already, and `t` stays). When `unread/` was replaced by compaction since it was
/// opened (a removed directory takes no entry: `ENOENT` while `t` is still there), it is
/// opened again by name, its link into the mailbox synced, and the move retried.
fn publish(bx: &Dir, tmp: &Dir, unread: &mut Dir, t: &str, name: &str) -> Result<bool, FsError> {
    let mut tries = 0;
    loop {
        match tmp.move_new(t, unread, name) {
            Err(FsError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound
                    && tries < 8
                    && tmp.exists(t)? =>
            {
                tries += 1;
                *unread = bx.open_or_create(state_dir_name(State::Unread))?;
                bx.sync()?;
            }
            other => return other,
        }
    }
}

pub(crate) fn deliver(fs: &FsStore, recipient: &Address, message: &Message) -> Result<bool> {
    let (bx, tmp, mut unread) = delivery_dirs(fs, recipient)?;
    let text = message_to_text(message);
    let t = tmp.write_temp(text.as_bytes(), Durability::Durable)?;
    let created = match publish(&bx, &tmp, &mut unread, &t, &file_name(message.id)) {
        Ok(created) => created,
        Err(e) => {
            let _ = tmp.remove(&t);
            return Err(e.into());
        }
    };
    if !created {
        tmp.remove(&t)?;
    }
    unread.sync()?;
    if let Ok(mut last) = fs.last_delivery.lock() {
        *last = Some((text, unread));
    }
    Ok(created)
}

/// Whether the mailbox `bx` holds the copy `name` in any state (`unread/` is open already, so
/// it is looked in first).
fn holds(bx: &Dir, unread: &Dir, name: &str) -> Result<bool, FsError> {
    if unread.exists(name)? {
        return Ok(true);
    }
    for state in State::ALL {
        if state != State::Unread
            && let Some(dir) = bx.open(state_dir_name(state))?
            && dir.exists(name)?
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Whether a mailbox may hold a copy of the message being delivered already.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Copies {
    /// A retry, an import, a key: look first.
    MayExist,
    /// The id was generated for this send (`Store::deliver_fresh`).
    NoneYet,
}

/// Three steps. Prepare: in each recipient's mailbox that does not hold the id yet, write the
/// copy under `tmp/` and `fdatasync` it (a failure removes the temp files written so far:
/// nothing was published). Trace: link the first prepared copy into the sender's `outbox/`
/// (best effort, not synced). Publish: move each copy into its `unread/` (a rename that
/// never replaces), then `fsync`
/// each `unread/`; a failure unlinks every copy this call published, and the trace, before
/// returning the error. A crash during publishing leaves the trace and the copies linked so
/// far (plus temp files, debris for `doctor --fix`); called again, this skips the mailboxes
/// that hold the id and finishes the rest.
///
/// With [`Copies::NoneYet`] (a fresh id) the look for a copy already held is skipped: one
/// `stat` and three directory opens less per recipient.
pub(crate) fn deliver_all(
    fs: &FsStore,
    recipients: &[Address],
    message: &Message,
    copies: Copies,
) -> Result<Delivery> {
    let name = file_name(message.id);
    let text = message_to_text(message);
    // Each recipient's `tmp/` and `unread/`, with its prepared copy unless it had the id.
    let mut prepared: Vec<(Dir, Dir, Dir, Option<String>)> = Vec::with_capacity(recipients.len());
    let discard = |prepared: &[(Dir, Dir, Dir, Option<String>)]| {
        for (_, tmp, _, temp) in prepared {
            if let Some(t) = temp {
                let _ = tmp.remove(t);
            }
        }
    };
    for recipient in recipients {
        let step = delivery_dirs(fs, recipient).and_then(|(bx, tmp, unread)| {
            let temp = if copies == Copies::MayExist && holds(&bx, &unread, &name)? {
                None
            } else {
                Some(tmp.write_temp(text.as_bytes(), Durability::Durable)?)
            };
            Ok((bx, tmp, unread, temp))
        });
        match step {
            Ok(p) => prepared.push(p),
            Err(e) => {
                discard(&prepared);
                return Err(e.into());
            }
        }
    }

    let source = prepared
        .iter()
        .find_map(|(_, tmp, _, temp)| temp.as_deref().map(|t| (tmp, t)));
    let (trace, trace_error) = match leave_trace(fs, message, &text, source) {
        Ok(outbox) => (outbox, None),
        Err(e) => (None, Some(e.to_string())),
    };

    let mut new = vec![false; prepared.len()];
    let mut failure = None;
    for (i, (bx, tmp, unread, temp)) in prepared.iter_mut().enumerate() {
        let Some(t) = temp.take() else { continue };
        // One rename that never replaces: the temp name is gone once the copy is published.
        match publish(bx, tmp, unread, &t, &name) {
            Ok(created) => new[i] = created,
            Err(e) => failure = Some(e),
        }
        if !new[i] {
            // Not moved (the id was there already, or an error): a temp name left by a
            // failed removal is debris `doctor --fix` clears.
            let _ = tmp.remove(&t);
        }
        if failure.is_some() {
            break;
        }
    }
    if failure.is_none() {
        failure = prepared
            .iter()
            .zip(&new)
            .filter(|(_, new)| **new)
            .find_map(|((_, _, unread, _), _)| unread.sync().err());
    }
    let Some(failure) = failure else {
        return Ok(Delivery { new, trace_error });
    };

    // Undo: every copy this call published, then the trace. A copy no longer in `unread/`
    // was taken by a reader in the meantime and stays (so does the trace, which shows the
    // sender where): the error says where.
    discard(&prepared);
    let mut kept = Vec::new();
    for ((_, _, unread, _), recipient) in prepared
        .iter()
        .zip(recipients)
        .zip(&new)
        .filter_map(|(p, new)| new.then_some(p))
    {
        match unread.remove_present(&name) {
            Ok(true) => {
                let _ = unread.sync();
            }
            Ok(false) | Err(_) => kept.push(recipient.to_string()),
        }
    }
    if kept.is_empty() {
        if let Some(outbox) = trace {
            let _ = outbox.remove(&name);
        }
        return Err(failure.into());
    }
    Err(mailroom_core::Error::store(
        format!(
            "message {} could not be sent, yet {} already had it (read at once, or it could not be withdrawn)",
            message.id,
            kept.join(", ")
        ),
        failure,
    ))
}

/// Leaves the sender's outbox trace of `message` unless there is one: a second name for
/// the prepared copy `source` when there is one (no second write), else a file of its own.
/// Returns the outbox when this call created the trace (so an undo can remove it).
fn leave_trace(
    fs: &FsStore,
    message: &Message,
    text: &str,
    source: Option<(&Dir, &str)>,
) -> Result<Option<Dir>, FsError> {
    let bx = fs.create_box(&message.from)?;
    let outbox = bx.open_or_create(OUTBOX)?;
    let name = file_name(message.id);
    let created = match source {
        // The link fails on a trace already there: no look first.
        Some((prepared, temp)) => prepared.link_to(temp, &outbox, &name)?,
        None if outbox.exists(&name)? => false,
        None => {
            let tmp = bx.open_or_create(TMP)?;
            let t = tmp.write_temp(text.as_bytes(), Durability::Lazy)?;
            tmp.publish_new(&t, &outbox, &name)?
        }
    };
    Ok(created.then_some(outbox))
}

pub(crate) fn record_sent(fs: &FsStore, message: &Message) -> Result<()> {
    let bx = fs.create_box(&message.from)?;
    let outbox = bx.open_or_create(OUTBOX)?;
    let text = message_to_text(message);
    let name = file_name(message.id);
    let last = fs.last_delivery.lock().ok().and_then(|mut l| l.take());
    if let Some((delivered, unread)) = last {
        // The copy just delivered has exactly this text: link the trace to it (the copy's
        // later moves are renames, which keep the link; an edit records a new trace).
        if delivered == text && unread.link_to(&name, &outbox, &name)? {
            return Ok(());
        }
    }
    let tmp = bx.open_or_create(TMP)?;
    let t = tmp.write_temp(text.as_bytes(), Durability::Lazy)?;
    tmp.rename(&t, &outbox, &name)?;
    Ok(())
}

pub(crate) fn claim_key(
    fs: &FsStore,
    sender: &Address,
    key: &str,
    id: MessageId,
) -> Result<KeyClaim> {
    let bx = fs.create_box(sender)?;
    let tmp = bx.open_or_create(TMP)?;
    let keys = bx.open_or_create(KEYS)?;
    // Hex keeps any key a safe file name; keys are at most 100 bytes, so 200 characters.
    let name: String = key.bytes().map(|b| format!("{b:02x}")).collect();
    if create_exclusive(&tmp, &keys, &name, &format!("{id}\n"))? {
        return Ok(KeyClaim::Claimed);
    }
    let existing = keys
        .read(&name, Limit::small("an idempotency key file"))?
        .and_then(|b| MessageId::parse(String::from_utf8_lossy(&b).trim()));
    Ok(match existing {
        Some(first) => KeyClaim::Existing(first),
        None => KeyClaim::Claimed,
    })
}

/// The keys `sender` claimed: the names of its `keys/` files, hex-decoded, with the id each
/// holds; a file whose name or content does not read is left out.
pub(crate) fn keys(fs: &FsStore, sender: &Address) -> Result<Vec<(String, MessageId)>> {
    let Some(bx) = fs.open_box(sender)? else {
        return Ok(vec![]);
    };
    let Some(keys) = bx.open(KEYS)? else {
        return Ok(vec![]);
    };
    let mut out = Vec::new();
    for name in keys.list()? {
        let bytes: Option<Vec<u8>> = (name.len() % 2 == 0)
            .then(|| {
                (0..name.len())
                    .step_by(2)
                    .map(|i| {
                        name.get(i..i + 2)
                            .and_then(|h| u8::from_str_radix(h, 16).ok())
                    })
                    .collect()
            })
            .flatten();
        let Some(key) = bytes.and_then(|b| String::from_utf8(b).ok()) else {
            continue;
        };
        let id = keys
            .read(&name, Limit::small("an idempotency key file"))?
            .and_then(|b| MessageId::parse(String::from_utf8_lossy(&b).trim()));
        if let Some(id) = id {
            out.push((key, id));
        }
    }
    out.sort();
    Ok(out)
}
