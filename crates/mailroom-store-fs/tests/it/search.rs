//! The search index: whatever the files are, and however they changed since the index was
//! written (or however the index itself was damaged), a search gives exactly what reading
//! every file and keeping the matches gives.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use jiff::Timestamp;
use mailroom_core::message::ChannelRef;
use mailroom_core::store::matches_query;
use mailroom_core::{
    Address, Channels, Kind, Listing, Mailboxes, Message, MessageId, Name, Priority, State,
};
use mailroom_store_fs::{FsStore, encode_message, state_dir_name};
use proptest::prelude::*;
use tempfile::TempDir;

/// Characters whose lower case is tricky (longer than the character, or depending on the
/// position), plus plain letters, digits and whitespace.
const ALPHABET: &[&str] = &[
    "a", "b", "c", "A", "B", "C", " ", "\n", "7", "é", "É", "İ", "ß", "ẞ", "Σ", "σ", "ς", "ǅ", "ﬃ",
    "K", "日", "本", "🙂", "-",
];

/// The number of state directories of a mailbox.
const STATES: usize = State::ALL.len();

fn addr(s: &str) -> Address {
    Address::parse_canonical(s).expect("a canonical address")
}

struct Home {
    _dir: TempDir,
    root: PathBuf,
    store: FsStore,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let root = dir.path().join("home");
        let store = FsStore::new(&root);
        Home {
            _dir: dir,
            root,
            store,
        }
    }

    fn bob(&self) -> PathBuf {
        self.root.join("projects/web/boxes/bob")
    }

    fn channel(&self) -> PathBuf {
        self.root.join("projects/web/channels/ops")
    }

    /// Where a file of kind `place` goes: a state directory, the outbox, or the channel.
    fn dir(&self, place: usize) -> PathBuf {
        match place {
            p if p < STATES => self.bob().join(state_dir_name(State::ALL[p])),
            p if p == STATES => self.bob().join("outbox"),
            _ => self.channel().join("entries"),
        }
    }

    fn put(&self, place: usize, name: &str, text: &[u8]) -> PathBuf {
        let dir = self.dir(place);
        std::fs::create_dir_all(&dir).expect("create dir");
        let path = dir.join(name);
        // A new file moved in, as docs/FORMAT.md asks of a hand edit.
        let tmp = self.root.join("new.tmp");
        std::fs::write(&tmp, text).expect("write");
        std::fs::rename(&tmp, &path).expect("move in");
        path
    }

    /// The answer of a full read of every file: what the index must agree with.
    fn scan(&self, q: &str) -> (Listing, Vec<Message>, Listing) {
        let bob = addr("bob@web");
        let mut mailbox = self.store.everything(&bob).expect("everything");
        mailbox.messages.retain(|s| matches_query(&s.message, q));
        let mut sent = self.store.outbox(&bob).expect("outbox");
        sent.retain(|m| matches_query(m, q));
        let web = Name::parse("web").expect("name");
        let mut entries = Listing::default();
        for name in self.store.channels(&web).expect("channels") {
            let ch = ChannelRef {
                project: web.clone(),
                name,
            };
            let l = self.store.entries(&ch, false).expect("entries");
            entries.messages.extend(
                l.messages
                    .into_iter()
                    .filter(|s| matches_query(&s.message, q)),
            );
            entries.damaged.extend(l.damaged);
        }
        (mailbox, sent, entries)
    }

    fn search(&self, q: &str) -> (Listing, Vec<Message>, Listing) {
        let bob = addr("bob@web");
        let web = Name::parse("web").expect("name");
        (
            self.store.search(&bob, q).expect("search"),
            self.store.search_sent(&bob, q).expect("search sent"),
            self.store.search_entries(&web, q).expect("search entries"),
        )
    }

    fn index_files(&self) -> Vec<PathBuf> {
        [
            self.bob().join("search.index"),
            self.bob().join("outbox.index"),
            self.channel().join("search.index"),
        ]
        .into_iter()
        .filter(|p| p.exists())
        .collect()
    }
}

fn message(id: MessageId, subject: &str, body: &str) -> Message {
    Message {
        id,
        from: addr("alice@web"),
        to: vec![addr("bob@web")],
        subject: subject.to_owned(),
        body: body.to_owned(),
        kind: Kind::Info,
        priority: Priority::Medium,
        date: Timestamp::from_second(1_800_000_000).expect("a time"),
        reply_to: None,
        thread: id,
        revision: 0,
        edited: None,
        channel: None,
    }
}

fn ino(p: &Path) -> u64 {
    std::fs::metadata(p).expect("stat").ino()
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(ALPHABET), 0..24).prop_map(|v| v.concat())
}

/// What a file is: a message named `<id>.md`, a damaged file, or a message under another
/// name (its id then comes from its header).
const PLAIN: u8 = 0;
const DAMAGED: u8 = 1;
const MISNAMED: u8 = 2;

/// One file: where it goes (a state, the outbox, the channel), which id (a few ids,
/// so one id may have copies in several states), subject, body, and what it is.
fn file() -> impl Strategy<Value = (usize, usize, String, String, u8)> {
    (
        0..STATES + 2,
        0..12usize,
        text(),
        text(),
        prop_oneof![8 => Just(PLAIN), 1 => Just(DAMAGED), 1 => Just(MISNAMED)],
    )
}

/// A change made by hand after the index was written.
#[derive(Clone, Debug)]
enum Change {
    /// A new file, or a new version of one (a new inode moved over it).
    Put(usize, usize, String, String, u8),
    /// A file moved to another state directory.
    Move(usize, usize),
    Delete(usize),
    /// The index cut short, or overwritten with garbage, or from another version.
    TruncateIndex(usize),
    GarbageIndex(u8),
    OldIndex,
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        file().prop_map(|(p, i, s, b, d)| Change::Put(p, i, s, b, d)),
        (0..64usize, 0..STATES).prop_map(|(f, to)| Change::Move(f, to)),
        (0..64usize).prop_map(Change::Delete),
        (0..4096usize).prop_map(Change::TruncateIndex),
        any::<u8>().prop_map(Change::GarbageIndex),
        Just(Change::OldIndex),
    ]
}

fn query() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(ALPHABET), 1..6).prop_map(|v| v.concat())
}

struct Corpus {
    ids: Vec<MessageId>,
    /// Every message file written (it may have been moved or deleted since).
    files: Vec<PathBuf>,
}

impl Corpus {
    fn put(&mut self, home: &Home, f: &(usize, usize, String, String, u8)) {
        let (place, n, subject, body, what) = f;
        let id = self.ids[*n];
        let text = if *what == DAMAGED {
            format!("no header at all {body}").into_bytes()
        } else {
            encode_message(&message(id, subject, body)).into_bytes()
        };
        let name = if *what == MISNAMED {
            format!("hand-{n}.md")
        } else {
            format!("{id}.md")
        };
        self.files.push(home.put(*place, &name, &text));
    }
}

fn check(home: &Home, queries: &[String], texts: &[String]) -> Result<(), TestCaseError> {
    let mut all: Vec<String> = queries.to_vec();
    // Queries taken from the texts themselves, across word boundaries, so most hit.
    for t in texts {
        let t: Vec<char> = t.to_lowercase().chars().collect();
        if t.len() >= 4 {
            all.push(t[1..4].iter().collect());
            all.push(t[t.len() - 3..].iter().collect());
        }
    }
    for q in all {
        let q = q.trim().to_lowercase();
        if q.is_empty() {
            continue;
        }
        prop_assert_eq!(home.search(&q), home.scan(&q), "query {:?}", q);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn indexed_search_is_a_full_read(
        files in prop::collection::vec(file(), 0..40),
        queries in prop::collection::vec(query(), 1..8),
        changes in prop::collection::vec(change(), 0..6),
    ) {
        let home = Home::new();
        let mut corpus = Corpus { ids: (0..12).map(|_| MessageId::generate()).collect(), files: vec![] };
        for f in &files {
            corpus.put(&home, f);
        }
        let mut texts: Vec<String> = files.iter().flat_map(|f| [f.2.clone(), f.3.clone()]).collect();
        check(&home, &queries, &texts)?;
        // Nothing changed: the index written by the first search is used, not rewritten.
        let before: Vec<u64> = home.index_files().iter().map(|p| ino(p)).collect();
        check(&home, &queries, &texts)?;
        let after: Vec<u64> = home.index_files().iter().map(|p| ino(p)).collect();
        prop_assert_eq!(before, after, "an index of unchanged files is not rebuilt");
        for c in changes {
            match &c {
                Change::Put(p, i, s, b, d) => {
                    corpus.put(&home, &(*p, *i, s.clone(), b.clone(), *d));
                    texts.push(s.clone());
                    texts.push(b.clone());
                }
                Change::Move(f, to) => {
                    if let Some(from) = corpus.files.get(*f).cloned().filter(|p| p.exists()) {
                        let dir = home.dir(*to);
                        std::fs::create_dir_all(&dir).expect("create dir");
                        let dest = dir.join(from.file_name().expect("a name"));
                        std::fs::rename(&from, &dest).expect("move");
                        corpus.files[*f] = dest;
                    }
                }
                Change::Delete(f) => {
                    if let Some(p) = corpus.files.get(*f).filter(|p| p.exists()) {
                        std::fs::remove_file(p).expect("delete");
                    }
                }
                Change::TruncateIndex(n) => {
                    for p in home.index_files() {
                        let bytes = std::fs::read(&p).expect("read index");
                        std::fs::write(&p, &bytes[..(*n).min(bytes.len())]).expect("truncate");
                    }
                }
                Change::GarbageIndex(seed) => {
                    for p in home.index_files() {
                        let mut bytes = std::fs::read(&p).expect("read index");
                        let len = bytes.len();
                        for (k, b) in bytes.iter_mut().enumerate().skip(usize::from(*seed) % len.max(1)).step_by(7) {
                            *b ^= (k as u8).wrapping_add(*seed) | 1;
                        }
                        std::fs::write(&p, &bytes).expect("garble");
                    }
                }
                Change::OldIndex => {
                    for p in home.index_files() {
                        let mut bytes = std::fs::read(&p).expect("read index");
                        if bytes.len() > 7 {
                            bytes[7] = b'0';
                        }
                        std::fs::write(&p, &bytes).expect("downgrade");
                    }
                }
            }
            check(&home, &queries, &texts)?;
        }
    }
}

/// A large enough mailbox for the index to narrow: a needle in one archived message among
/// many, found after each kind of hand change, by the index and by a full read alike.
#[test]
fn hand_changes_after_indexing_are_seen() {
    let home = Home::new();
    let done = 2; // State::ALL[2]
    assert_eq!(State::ALL[done], State::Done);
    let mut corpus = Corpus {
        ids: (0..300).map(|_| MessageId::generate()).collect(),
        files: vec![],
    };
    for i in 0..300 {
        corpus.put(
            &home,
            &(
                done,
                i,
                format!("Archived {i}"),
                format!("Body number {i}."),
                PLAIN,
            ),
        );
    }
    let q = "number 123.";
    let found = |home: &Home| {
        let (l, _, _) = home.search(q);
        assert_eq!(home.search(q), home.scan(q));
        l.messages
            .iter()
            .map(|s| (s.message.id, s.state))
            .collect::<Vec<_>>()
    };
    assert_eq!(found(&home), vec![(corpus.ids[123], State::Done)]);
    assert!(
        home.bob().join("search.index").exists(),
        "the index is written"
    );

    // Added by hand.
    corpus.put(
        &home,
        &(done, 7, "x".into(), "now number 123. too".into(), PLAIN),
    );
    assert_eq!(
        found(&home),
        vec![(corpus.ids[7], State::Done), (corpus.ids[123], State::Done)]
    );
    // Edited by hand (a new file moved over the old): no longer a hit.
    corpus.put(&home, &(done, 123, "y".into(), "changed".into(), PLAIN));
    assert_eq!(found(&home), vec![(corpus.ids[7], State::Done)]);
    // Moved back to unread by hand.
    let from = home.dir(done).join(format!("{}.md", corpus.ids[7]));
    std::fs::create_dir_all(home.dir(0)).expect("unread");
    std::fs::rename(&from, home.dir(0).join(format!("{}.md", corpus.ids[7]))).expect("move");
    assert_eq!(found(&home), vec![(corpus.ids[7], State::Unread)]);
    // Deleted by hand.
    std::fs::remove_file(home.dir(0).join(format!("{}.md", corpus.ids[7]))).expect("delete");
    assert_eq!(found(&home), vec![]);
    // Damaged by hand: reported as a full read reports it, whatever the query.
    home.put(done, &format!("{}.md", corpus.ids[5]), b"garbage");
    let (l, _, _) = home.search(q);
    assert_eq!(l.damaged.len(), 1);
    let (l, _, _) = home.search("zzz");
    assert_eq!(
        l.damaged.len(),
        1,
        "a damaged file is reported by every search"
    );
    // The index deleted, emptied, or replaced by a directory: searches still answer.
    for damage in 0..3 {
        let ix = home.bob().join("search.index");
        let _ = std::fs::remove_file(&ix);
        match damage {
            0 => {}
            1 => std::fs::write(&ix, b"").expect("empty"),
            _ => std::fs::create_dir(&ix).expect("a directory"),
        }
        assert_eq!(found(&home), vec![]);
        assert_eq!(home.search("number 12"), home.scan("number 12"));
        if damage == 2 {
            std::fs::remove_dir(&ix).expect("remove the directory");
        }
    }
}
