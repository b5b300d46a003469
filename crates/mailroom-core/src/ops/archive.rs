//! What is kept after it is done: recover, restore, handover notes, and search over the archive,
//! the channels and the outbox. Invariant: nothing is ever deleted; the archive is read only here
//! and by id lookups that miss the pending states.

use jiff::Timestamp;

use crate::address::Address;
use crate::error::{Error, Fix, Result};
use crate::message::{Damaged, Kind, Listing, Message, MessageId, Priority, State, Stored};
use crate::name::Name;
use crate::ops::Mailroom;
use crate::ops::send::{Draft, Sent};

/// Longest search query accepted, in characters.
pub const MAX_QUERY_CHARS: usize = 1_000;

impl Mailroom<'_> {
    /// Recently archived messages, most recent first, with when each was archived.
    pub fn recover(&self, me: &Address, limit: usize) -> Result<Vec<(Stored, Timestamp)>> {
        self.store.recently_archived(me, limit)
    }

    /// Puts an archived message back to pending (read), so listings show it again.
    pub fn restore(&self, me: &Address, prefix: &str) -> Result<Stored> {
        let found = self.find_one(me, prefix, Fix::Recover)?;
        if found.state != State::Done {
            return Err(Error::WrongState {
                id: found.message.id,
                state: found.state,
                expected: "done",
                hint: "only archived mail can be restored",
            });
        }
        self.store
            .transition(me, &[(found.message.id, State::Done)], State::Read)?;
        self.store
            .get(me, found.message.id)?
            .ok_or_else(|| Error::MessageNotFound {
                prefix: prefix.to_owned(),
                mailbox: me.clone(),
                list: Box::new(Fix::Recover),
            })
    }

    /// A note to one's own next session.
    pub fn handover(
        &self,
        me: &Address,
        body: String,
        subject: Option<String>,
        priority: Priority,
    ) -> Result<Sent> {
        let subject = subject.or_else(|| {
            let first = crate::text::default_subject(&body);
            Some(format!("Handover: {first}"))
        });
        self.send(
            me,
            Draft {
                to: vec![me.to_string()],
                subject,
                body,
                kind: Kind::Handover,
                priority,
                ..Draft::default()
            },
        )
    }

    /// Messages in the mailbox (every state), in the project's channels and in the outbox whose
    /// subject or body contains `query`, case-insensitively, oldest first.
    pub fn search(&self, me: &Address, query: &str) -> Result<Search> {
        let q = query.trim().to_lowercase();
        if q.is_empty() {
            return Err(Error::Invalid("the search query is empty".into()));
        }
        if q.chars().count() > MAX_QUERY_CHARS {
            return Err(Error::Invalid(format!(
                "the search query is {} characters; the limit is {MAX_QUERY_CHARS}: search for a phrase, not a document",
                q.chars().count()
            )));
        }
        let Listing { messages, damaged } = self.store.search(me, &q)?;
        let mut hits: Vec<SearchHit> = messages
            .into_iter()
            .map(|stored| SearchHit {
                stored,
                sent: false,
            })
            .collect();
        // A member searches its project's channels; the operator, who belongs to no project
        // and may read them all, every project's.
        let projects: Vec<Name> = match me.project() {
            Some(project) => vec![project.clone()],
            None if me.is_human() => self.store.projects()?.into_iter().map(|p| p.name).collect(),
            None => vec![],
        };
        for project in &projects {
            // Unreadable channel entries are not the reader's mailbox: `doctor` reports them.
            let entries = self.store.search_entries(project, &q)?.messages;
            hits.extend(entries.into_iter().map(|stored| SearchHit {
                stored,
                sent: false,
            }));
        }
        let sent: Vec<Message> = self
            .store
            .search_sent(me, &q)?
            .into_iter()
            .filter(|m| hits.iter().all(|h| h.stored.message.id != m.id))
            .collect();
        // The state of each one's first recipient's copy, as one question.
        let firsts: Vec<(&Address, MessageId)> = sent
            .iter()
            .filter_map(|m| m.to.first().map(|to| (to, m.id)))
            .collect();
        let mut states = self.store.states(&firsts)?.into_iter();
        for message in sent {
            let state = match message.to.first() {
                Some(_) => states.next().flatten(),
                None => None,
            };
            hits.push(SearchHit {
                stored: Stored {
                    state: state.unwrap_or(State::Done),
                    message,
                    warnings: vec![],
                },
                sent: true,
            });
        }
        hits.sort_by_key(|h| h.stored.message.id);
        Ok(Search { hits, damaged })
    }
}

/// One search result.
#[derive(Clone, Debug)]
pub struct SearchHit {
    /// For sent mail, the state is that of the first recipient's copy.
    pub stored: Stored,
    /// True when found in the outbox rather than the mailbox.
    pub sent: bool,
}

#[derive(Clone, Debug)]
pub struct Search {
    pub hits: Vec<SearchHit>,
    pub damaged: Vec<Damaged>,
}
