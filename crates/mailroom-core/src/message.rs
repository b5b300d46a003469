//! Messages: immutable records with a sortable id, and the small enums that classify them.
//!
//! A `Message` is what a sender wrote; where a copy of it is (unread, read, done, …) is a
//! `State` kept by the store beside it, never inside it.

use std::fmt;
use std::str::FromStr;

use jiff::Timestamp;

use crate::address::Address;
use crate::name::Name;

/// A message id: a ULID, so ids sort by creation time and are unique across machines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MessageId(ulid::Ulid);

impl MessageId {
    /// A new id for a message made at `at`: its millisecond, then a 32-bit sequence number and 48
    /// random bits. Ids one process makes at the same millisecond are strictly increasing (the
    /// sequence orders them, whichever thread or clock made them), so ids sort in the order
    /// they were made as long as the clock does not go back; the random bits and the sequence's
    /// random start keep ids of different processes and machines apart.
    pub fn generate_at(at: Timestamp) -> MessageId {
        use std::sync::OnceLock;
        use std::sync::atomic::{AtomicU32, Ordering};
        static SEQUENCE: OnceLock<AtomicU32> = OnceLock::new();
        // A random start in the lower half: more than two billion ids before it could wrap.
        let sequence = SEQUENCE
            .get_or_init(|| AtomicU32::new((rand_bits() as u32) >> 1))
            .fetch_add(1, Ordering::Relaxed);
        let ms = u64::try_from(at.as_millisecond()).unwrap_or(0);
        let random = (u128::from(sequence) << 48) | (rand_bits() & ((1u128 << 48) - 1));
        MessageId(ulid::Ulid::from_parts(ms, random))
    }

    /// A new id at the system's current time. Operations use [`MessageId::generate_at`] with
    /// their clock instead, so a message's id and date agree.
    pub fn generate() -> MessageId {
        MessageId::generate_at(Timestamp::now())
    }

    /// An id derived from content, for imports: the same input gives the same id on every
    /// machine, so importing twice cannot deliver twice.
    pub fn derived(at: Timestamp, hash: u128) -> MessageId {
        let ms = u64::try_from(at.as_millisecond()).unwrap_or(0);
        MessageId(ulid::Ulid::from_parts(ms, hash & ((1u128 << 80) - 1)))
    }

    /// The length of an id's text.
    pub const LEN: usize = ulid::ULID_LEN;

    /// The id's text (as `Display` writes it) in `buf`, without allocating.
    pub fn encode<'b>(&self, buf: &'b mut [u8; MessageId::LEN]) -> &'b str {
        self.0.array_to_str(buf)
    }

    /// Parses a full 26-character id (case-insensitive).
    pub fn parse(s: &str) -> Option<MessageId> {
        ulid::Ulid::from_string(s).ok().map(MessageId)
    }

    /// The id's 128 bits, for a store's compact records; [`MessageId::from_bits`] reads them.
    pub fn to_bits(self) -> u128 {
        self.0.0
    }

    /// The id of 128 bits (every value is one).
    pub fn from_bits(bits: u128) -> MessageId {
        MessageId(ulid::Ulid(bits))
    }

    /// The instant encoded in the id.
    pub fn timestamp(&self) -> Timestamp {
        Timestamp::from_millisecond(self.0.timestamp_ms() as i64).unwrap_or(Timestamp::UNIX_EPOCH)
    }
}

/// 80 random bits, without a random-number crate: the standard library's hasher is
/// seeded randomly per process (so no pid is mixed in), and mixing in a counter and the clock
/// makes two calls in one process differ too.
fn rand_bits() -> u128 {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let state = RandomState::new();
    let word = |salt: u64| {
        let mut h = state.build_hasher();
        h.write_u64(salt);
        h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0),
        );
        h.finish()
    };
    ((u128::from(word(1)) << 64) | u128::from(word(2))) & ((1u128 << 80) - 1)
}

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.encode(&mut [0; MessageId::LEN]))
    }
}

/// What a message is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Kind {
    #[default]
    Info,
    Question,
    HoldRequest,
    InterfaceChange,
    Handover,
    Correction,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::Info,
        Kind::Question,
        Kind::HoldRequest,
        Kind::InterfaceChange,
        Kind::Handover,
        Kind::Correction,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Info => "INFO",
            Kind::Question => "QUESTION",
            Kind::HoldRequest => "HOLD_REQUEST",
            Kind::InterfaceChange => "INTERFACE_CHANGE",
            Kind::Handover => "HANDOVER",
            Kind::Correction => "CORRECTION",
        }
    }
}

impl FromStr for Kind {
    type Err = String;
    fn from_str(s: &str) -> Result<Kind, String> {
        // The spelling every stored message uses, without the allocations below.
        if let Some(k) = Kind::ALL.into_iter().find(|k| k.as_str() == s) {
            return Ok(k);
        }
        let up = s.trim().to_ascii_uppercase().replace('-', "_");
        Kind::ALL
            .into_iter()
            .find(|k| k.as_str() == up)
            .ok_or_else(|| {
                format!(
                    "unknown kind '{s}'; use one of {}",
                    Kind::ALL.map(Kind::as_str).join(", ")
                )
            })
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How urgent a message is; sorts `High` first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Priority {
    High,
    #[default]
    Medium,
    Low,
}

impl Priority {
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::High => "H",
            Priority::Medium => "M",
            Priority::Low => "L",
        }
    }
}

impl FromStr for Priority {
    type Err = String;
    fn from_str(s: &str) -> Result<Priority, String> {
        // The spellings every stored message uses, without the allocation below.
        match s {
            "H" => return Ok(Priority::High),
            "M" => return Ok(Priority::Medium),
            "L" => return Ok(Priority::Low),
            _ => {}
        }
        match s.trim().to_ascii_uppercase().as_str() {
            "H" | "HIGH" => Ok(Priority::High),
            "M" | "MEDIUM" => Ok(Priority::Medium),
            "L" | "LOW" => Ok(Priority::Low),
            _ => Err(format!("unknown priority '{s}'; use H, M or L")),
        }
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where one recipient's copy of a directed message is in its lifecycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// Delivered, never shown to the recipient; the sender may still edit or cancel it.
    Unread,
    /// Shown to the recipient and still pending: delivered again at every session start.
    Read,
    /// Archived: replied to, marked done, or read-and-archived.
    Done,
    /// Withdrawn by its sender before it was read.
    Cancelled,
    /// A broadcast its sender un-sent: those who saw it keep it, nobody new gets it.
    Retracted,
}

impl State {
    /// The states of a directed copy (retraction belongs to channel entries).
    pub const ALL: [State; 4] = [State::Unread, State::Read, State::Done, State::Cancelled];

    pub fn as_str(self) -> &'static str {
        match self {
            State::Unread => "unread",
            State::Read => "read",
            State::Done => "done",
            State::Cancelled => "cancelled",
            State::Retracted => "retracted",
        }
    }

    /// Pending mail is delivered again until it is done.
    pub fn is_pending(self) -> bool {
        matches!(self, State::Unread | State::Read)
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A channel of a project: `all` (the broadcast channel) or a run channel like `run-42`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChannelRef {
    pub project: Name,
    pub name: Name,
}

/// The name of every project's broadcast channel.
pub const BROADCAST: &str = "all";

impl ChannelRef {
    pub fn is_broadcast(&self) -> bool {
        self.name.as_str() == BROADCAST
    }

    /// Parses the canonical `name@project`.
    pub fn parse_canonical(s: &str) -> Option<ChannelRef> {
        let (name, project) = s.trim().trim_start_matches('#').split_once('@')?;
        Some(ChannelRef {
            project: Name::parse(project).ok()?,
            name: Name::parse(name).ok()?,
        })
    }
}

impl fmt::Display for ChannelRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name.as_ref())?;
        f.write_str("@")?;
        f.write_str(self.project.as_ref())
    }
}

/// A message as its sender wrote it (and, after edits, as it reads now).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub id: MessageId,
    pub from: Address,
    /// Every recipient of this message; each has its own copy and lifecycle.
    pub to: Vec<Address>,
    /// One line, already sanitised (see [`crate::text::clean_line`]).
    pub subject: String,
    /// Markdown, stored verbatim.
    pub body: String,
    pub kind: Kind,
    pub priority: Priority,
    pub date: Timestamp,
    pub reply_to: Option<MessageId>,
    /// The id of the first message of the conversation; a message that starts one is its own.
    pub thread: MessageId,
    /// 1 for the message as sent; each in-place edit adds one.
    pub revision: u32,
    pub edited: Option<Timestamp>,
    /// The channel it was posted to; `None` for directed mail.
    pub channel: Option<ChannelRef>,
}

impl Message {
    /// True for an entry read from a channel (a broadcast or a run channel's entry), which has
    /// no recipients and no done step; false for directed mail, including a channel entry's
    /// copy forwarded to someone's mailbox.
    pub fn is_channel_entry(&self) -> bool {
        self.channel.is_some() && self.to.is_empty()
    }
}

/// One recipient's copy of a message as read from a store, with its state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stored {
    pub message: Message,
    pub state: State,
    /// Problems found while reading a hand-edited or damaged copy; the fields were filled in
    /// with defaults where the problem says so.
    pub warnings: Vec<String>,
}

/// A file or row that could not be read as a message at all: reported, never dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damaged {
    /// Where it is, in the store's own terms (a path for the file store).
    pub location: String,
    pub state: Option<State>,
    pub problem: String,
}

/// What a listing found: the messages, and what could not be read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listing {
    pub messages: Vec<Stored>,
    pub damaged: Vec<Damaged>,
}

/// Sorts by a small key, moving each (large) element once instead of O(n log n) times: a
/// listing of a thousand messages otherwise spends more time moving them than reading them.
pub fn sort_by_cheap_key<T, K: Ord>(items: &mut Vec<T>, key: impl Fn(&T) -> K) {
    let mut order: Vec<(K, usize)> = items.iter().enumerate().map(|(i, t)| (key(t), i)).collect();
    if order.windows(2).all(|w| w[0] <= w[1]) {
        return;
    }
    order.sort();
    let mut slots: Vec<Option<T>> = std::mem::take(items).into_iter().map(Some).collect();
    items.extend(order.into_iter().filter_map(|(_, i)| slots[i].take()));
}

impl Listing {
    pub fn extend(&mut self, other: Listing) {
        self.messages.extend(other.messages);
        self.damaged.extend(other.damaged);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_sort_by_time_and_differ() {
        let ids: Vec<MessageId> = (0..1000).map(|_| MessageId::generate()).collect();
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "ids are strictly increasing"
        );
        let a = ids[0];
        let age = Timestamp::now().as_millisecond() - a.timestamp().as_millisecond();
        assert!(
            (0..60_000).contains(&age),
            "the id carries the current time"
        );
        assert_eq!(MessageId::parse(&a.to_string().to_lowercase()), Some(a));
    }

    #[test]
    fn ids_made_at_one_instant_carry_it_and_still_increase() {
        let at: Timestamp = "2026-03-13T14:22:00.250Z".parse().unwrap();
        let ids: Vec<MessageId> = (0..1000).map(|_| MessageId::generate_at(at)).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "strictly increasing");
        assert!(
            ids.iter().all(|id| id.timestamp() == at),
            "each carries `at`"
        );
        assert_eq!(ids[0].to_string().len(), 26, "a ULID");
    }

    #[test]
    fn ids_of_a_pinned_clock_stay_ordered_among_ids_of_a_later_one() {
        // Threads pinned to different clocks share one process: each one's ids still increase.
        let pinned: Timestamp = "2026-03-13T14:22:00Z".parse().unwrap();
        let mut mine = Vec::new();
        for _ in 0..100 {
            mine.push(MessageId::generate_at(pinned));
            MessageId::generate();
        }
        assert!(mine.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn kinds_and_priorities_parse_loosely_and_print_canonically() {
        assert_eq!("hold-request".parse::<Kind>(), Ok(Kind::HoldRequest));
        assert_eq!(
            "INFO".parse::<Kind>().map(|k| k.to_string()),
            Ok("INFO".into())
        );
        assert!(
            "BLOCK"
                .parse::<Kind>()
                .unwrap_err()
                .contains("HOLD_REQUEST")
        );
        assert_eq!("high".parse::<Priority>(), Ok(Priority::High));
        assert_eq!("l".parse::<Priority>(), Ok(Priority::Low));
        assert!("X".parse::<Priority>().is_err());
    }
}
