//! File reservations: taking, renewing, releasing, listing and checking leases. The conflict
//! rule is [`crate::lease::conflicts`]; the store only makes each change one step.

use std::time::Duration;

use super::Mailroom;
use crate::address::Address;
use crate::error::{Error, Result};
use crate::lease::{Lease, LeaseChange, PatternSet, conflicts, normalize_pattern};
use crate::message::MessageId;
use crate::name::Name;
use crate::text::clean_line;

/// The shortest lease: one minute.
pub const MIN_TTL: Duration = Duration::from_secs(60);
/// The longest lease: a day; renew by reserving again.
pub const MAX_TTL: Duration = Duration::from_secs(24 * 3600);
/// A lease's length when none is given: two hours.
pub const DEFAULT_TTL: Duration = Duration::from_secs(2 * 3600);
/// The longest reason, in characters.
pub const MAX_REASON_CHARS: usize = 200;
/// The most patterns one reservation takes.
pub const MAX_PATTERNS: usize = 100;

/// What to take.
#[derive(Clone, Debug)]
pub struct Reserve {
    pub patterns: Vec<String>,
    pub exclusive: bool,
    pub ttl: Duration,
    pub reason: Option<String>,
}

/// What to release.
#[derive(Clone, Debug)]
pub enum Release {
    /// One lease by its id.
    Id(String),
    /// The caller's leases on these patterns (for `HUMAN`, anyone's).
    Patterns(Vec<String>),
    /// All the caller's leases.
    All,
}

/// A path that another's exclusive lease covers.
#[derive(Clone, Debug)]
pub struct Blocked {
    pub path: String,
    pub lease: Lease,
}

/// One sentence naming a lease: who, what, until when, why.
pub fn describe_lease(l: &Lease) -> String {
    let mut s = format!(
        "{} holds '{}' ({}) until {}",
        l.holder,
        l.pattern,
        if l.exclusive { "exclusive" } else { "shared" },
        l.until
    );
    if let Some(r) = &l.reason {
        s.push_str(&format!(" for \"{r}\""));
    }
    s.push_str(&format!(" [lease {}]", l.id));
    s
}

/// The refusal when `blocked` is not empty: every blocking lease named.
pub fn blocked_error(blocked: &[Blocked]) -> Error {
    let parts: Vec<String> = blocked
        .iter()
        .map(|b| format!("'{}' is reserved: {}", b.path, describe_lease(&b.lease)))
        .collect();
    Error::Refused(format!(
        "{}; write to the holder to agree on it",
        parts.join("; ")
    ))
}

impl Mailroom<'_> {
    /// Takes (or renews: the holder's own lease on the same pattern is replaced) a lease on each
    /// pattern, all or none: refused naming every conflicting lease of another holder.
    pub fn reserve(&self, holder: &Address, project: &Name, r: &Reserve) -> Result<Vec<Lease>> {
        if r.patterns.is_empty() {
            return Err(Error::Invalid(
                "name at least one pattern to reserve".to_owned(),
            ));
        }
        if r.patterns.len() > MAX_PATTERNS {
            return Err(Error::Invalid(format!(
                "at most {MAX_PATTERNS} patterns are reserved at once"
            )));
        }
        if r.ttl < MIN_TTL || r.ttl > MAX_TTL {
            return Err(Error::Invalid(
                "a lease lasts from 1 minute to 24 hours; reserve again to renew it".to_owned(),
            ));
        }
        let reason = match r.reason.as_deref().map(clean_line) {
            Some(s) if s.chars().count() > MAX_REASON_CHARS => {
                return Err(Error::Invalid(format!(
                    "a reason is at most {MAX_REASON_CHARS} characters"
                )));
            }
            Some(s) if s.is_empty() => None,
            other => other,
        };
        let mut patterns: Vec<String> = Vec::with_capacity(r.patterns.len());
        for p in &r.patterns {
            let p = normalize_pattern(p)?;
            if !patterns.contains(&p) {
                patterns.push(p);
            }
        }
        let now = self.now();
        let ttl = i64::try_from(r.ttl.as_secs()).unwrap_or(i64::MAX);
        let until = now
            .checked_add(jiff::SignedDuration::from_secs(ttl))
            .map_err(|_| Error::Invalid("the lease would end past the clock's range".to_owned()))?;
        // The holder must be allowed to write in the project, as for a send: an active member,
        // or joinable in an open (or new) project, which takes it in once the lease is taken,
        // so that the project and its leases show in `projects` and the console.
        let plan = {
            let reads = super::reads::Reads::default();
            self.plan_sender(&reads, holder)?
        };
        let (first_id, _) = self.stamp();
        let mut taken = Vec::new();
        self.store().change_leases(project, &mut |leases| {
            taken.clear();
            let mut change = LeaseChange::default();
            let mut refused: Vec<String> = Vec::new();
            for (n, pattern) in patterns.iter().enumerate() {
                let own = leases
                    .iter()
                    .find(|l| l.holder == *holder && l.pattern == *pattern && l.active_at(now));
                let lease = Lease {
                    id: own.map_or_else(|| nth_id(first_id, n), |l| l.id),
                    holder: holder.clone(),
                    pattern: pattern.clone(),
                    exclusive: r.exclusive,
                    reason: reason.clone(),
                    since: own.map_or(now, |l| l.since),
                    until,
                };
                for other in leases.iter().filter(|l| l.active_at(now)) {
                    if conflicts(&lease, other) {
                        refused.push(format!("'{pattern}' conflicts: {}", describe_lease(other)));
                    }
                }
                if let Some(o) = own {
                    change.remove.push(o.id);
                }
                taken.push(lease.clone());
                change.add.push(lease);
            }
            if !refused.is_empty() {
                return Err(Error::Refused(format!(
                    "{}; nothing was reserved; write to the holder to agree on it",
                    refused.join("; ")
                )));
            }
            change
                .remove
                .extend(leases.iter().filter(|l| !l.active_at(now)).map(|l| l.id));
            Ok(change)
        })?;
        // The join only makes the project and its leases listed: where the store refuses it
        // (a strict-mode role may not add members; the operator does), the lease stands.
        let _ = self.apply_plan(&plan, now, &mut Vec::new());
        Ok(taken)
    }

    /// Releases leases: the caller's own, or for `HUMAN` anyone's. Refused when the id names
    /// another's lease; not found when nothing matched.
    pub fn release(&self, by: &Address, project: &Name, what: &Release) -> Result<Vec<Lease>> {
        let patterns = match what {
            Release::Patterns(ps) => {
                if ps.is_empty() {
                    return Err(Error::Invalid(
                        "name a lease's id, its patterns, or all of yours".to_owned(),
                    ));
                }
                ps.iter()
                    .map(|p| normalize_pattern(p))
                    .collect::<Result<Vec<_>>>()?
            }
            // Every id starts with the empty string: it would name whichever lease is alone.
            Release::Id(id) if id.trim().is_empty() => {
                return Err(Error::Invalid(
                    "name a lease's id, its patterns, or all of yours".to_owned(),
                ));
            }
            _ => Vec::new(),
        };
        let now = self.now();
        let mut released = Vec::new();
        self.store().change_leases(project, &mut |leases| {
            released.clear();
            let mine = |l: &Lease| l.holder == *by || by.is_human();
            match what {
                Release::Id(id) => {
                    let want = id.trim().to_ascii_uppercase();
                    let found: Vec<&Lease> = leases
                        .iter()
                        .filter(|l| l.active_at(now) && l.id.to_string().starts_with(&want))
                        .collect();
                    match found.as_slice() {
                        [] => {
                            return Err(Error::NotFound(format!(
                                "no active lease in {project} has the id '{id}'"
                            )));
                        }
                        [l] if !mine(l) => {
                            return Err(Error::Refused(format!(
                                "{}: only its holder or HUMAN may release it",
                                describe_lease(l)
                            )));
                        }
                        [l] => released.push((*l).clone()),
                        _ => {
                            return Err(Error::Invalid(format!(
                                "the id '{id}' names several leases; give more of it"
                            )));
                        }
                    }
                }
                Release::Patterns(_) => {
                    released.extend(
                        leases
                            .iter()
                            .filter(|l| mine(l) && patterns.contains(&l.pattern))
                            .cloned(),
                    );
                    if released.iter().all(|l| !l.active_at(now)) {
                        return Err(Error::NotFound(format!(
                            "{by} holds no active lease in {project} on {}",
                            patterns.join(", ")
                        )));
                    }
                }
                Release::All => {
                    released.extend(leases.iter().filter(|l| l.holder == *by).cloned());
                }
            }
            let mut remove: Vec<MessageId> = released.iter().map(|l| l.id).collect();
            remove.extend(leases.iter().filter(|l| !l.active_at(now)).map(|l| l.id));
            Ok(LeaseChange {
                remove,
                add: Vec::new(),
            })
        })?;
        released.retain(|l| l.active_at(now));
        Ok(released)
    }

    /// The project's active leases, the soonest to end first.
    pub fn reservations(&self, project: &Name) -> Result<Vec<Lease>> {
        let now = self.now();
        let mut leases: Vec<Lease> = self
            .store()
            .leases(project)?
            .into_iter()
            .filter(|l| l.active_at(now))
            .collect();
        leases.sort_by_key(|l| (l.until, l.id));
        Ok(leases)
    }

    /// The paths (repository-relative) that another holder's active exclusive lease covers,
    /// each with the lease: empty when `who` may edit them all.
    pub fn check_paths(
        &self,
        who: &Address,
        project: &Name,
        paths: &[String],
    ) -> Result<Vec<Blocked>> {
        let now = self.now();
        // Only the leases whose pattern's literal part fits one of the paths are decoded and
        // compiled: with a thousand leases in a project, a check takes the one or two that
        // may matter.
        let may_matter = |pattern: &str| paths.iter().any(|p| crate::lease::may_cover(pattern, p));
        let leases: Vec<Lease> = self
            .store()
            .leases_where(project, &may_matter)?
            .into_iter()
            .filter(|l| l.active_at(now) && l.exclusive && l.holder != *who)
            .collect();
        if leases.is_empty() {
            return Ok(Vec::new());
        }
        let set = PatternSet::new(leases.iter().map(|l| l.pattern.as_str()));
        let mut blocked = Vec::new();
        for path in paths {
            for i in set.covering(path) {
                if let Some(l) = leases.get(i) {
                    blocked.push(Blocked {
                        path: path.clone(),
                        lease: l.clone(),
                    });
                }
            }
        }
        Ok(blocked)
    }
}

/// The `n`th id of one reservation: the stamp's id plus `n`, so they sort in order.
fn nth_id(first: MessageId, n: usize) -> MessageId {
    MessageId::from_bits(first.to_bits().wrapping_add(n as u128))
}
