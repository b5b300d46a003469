//! `doctor` for the file store: walks the whole home without following links and reports
//! every problem in one line with its fix; with `fix`, repairs what is safe.
//!
//! Safe means: no message content is changed and no message is deleted. Orphan temp files are
//! removed (they were never published), permissions are tightened, an edit's claim left by a
//! crash is put back, a copy found in two states keeps the later state and the other copy is
//! moved to `revisions/`, a project directory without `project.md` gets one (policy open).

use std::collections::HashMap;

use mailroom_core::{Finding, MessageId, Name, State};

use crate::codec::{LAYOUT_VERSION, message_from_bytes};
use crate::dir::{DIR_MODE, Dir, Durability, FILE_MODE, Limit};
use crate::error::FsError;
use crate::{FsStore, MESSAGE_FILE, id_of, is_message_name, spelt_id_of, state_dir_name};

/// A temp file older than this is an orphan even if its pid is alive (pids are reused).
const ORPHAN_AGE_SECS: i64 = 3600;

/// A project directory younger than this may be being created; its `project.md` comes next.
const PROJECT_GRACE_SECS: i64 = 60;

struct Doctor {
    fix: bool,
    now: i64,
    findings: Vec<Finding>,
}

impl Doctor {
    fn report(
        &mut self,
        location: String,
        problem: impl Into<String>,
        fix: impl Into<String>,
        fixed: bool,
    ) {
        self.findings.push(Finding {
            location,
            problem: problem.into(),
            fix: fix.into(),
            fixed,
        });
    }

    /// Every entry below `dir` (`at`: its path below the home): no symlinks or special files,
    /// nothing the layout does not name, 0700 directories, 0600 files. Whatever the walk
    /// reports here the other checks skip without a word, so each problem is one finding.
    fn walk(&mut self, dir: &Dir, at: &mut Vec<String>) -> Result<(), FsError> {
        let mut names = dir.list()?;
        names.sort();
        self.same_name_in_two_cases(dir, at, &names);
        for name in names {
            let Some(e) = dir.entry(&name)? else {
                continue;
            };
            let path = dir.child_path(&name).display().to_string();
            if !e.is_dir && !e.is_file {
                self.report(
                    path,
                    "is a symbolic link or special file; mailroom never follows it",
                    "remove it or move it out of the home",
                    false,
                );
                continue;
            }
            at.push(name);
            let parts: Vec<&str> = at.iter().map(String::as_str).collect();
            if !in_layout(&parts, e.is_dir) {
                self.report(
                    path,
                    format!(
                        "is a {} mailroom's layout does not have (docs/FORMAT.md); mailroom ignores it",
                        if e.is_dir { "directory" } else { "file" }
                    ),
                    "move it out of the home",
                    false,
                );
                at.pop();
                continue;
            }
            let name = at.last().map(String::as_str).unwrap_or_default();
            let want = if e.is_dir { DIR_MODE } else { FILE_MODE };
            if e.mode & 0o077 != 0 {
                let fixed = self.fix && dir.chmod(name, want).is_ok();
                self.report(
                    path.clone(),
                    format!("has permissions {:o}; others can read it", e.mode),
                    format!("chmod {want:o}"),
                    fixed,
                );
            }
            if e.is_dir {
                match dir.open(name) {
                    Ok(Some(sub)) => self.walk(&sub, at)?,
                    Ok(None) => {}
                    Err(err) => self.report(
                        path,
                        format!("cannot be opened: {}", reason(&err)),
                        "make it a directory mailroom's user owns, mode 700",
                        false,
                    ),
                }
            }
            at.pop();
        }
        Ok(())
    }

    /// Names compare case-insensitively, so `Api` and `api` side by side (left by an older
    /// mailroom, or written by hand) are one name in two places: every spelling reaches the
    /// first in byte order, and what is in the others is never read.
    fn same_name_in_two_cases(&mut self, dir: &Dir, at: &[String], names: &[String]) {
        let holds_names = matches!(
            at.last().map(String::as_str),
            Some("projects" | "boxes" | "roster" | "channels" | "seen")
        );
        if !holds_names {
            return;
        }
        for (i, name) in names.iter().enumerate() {
            let Some(first) = names[..i].iter().find(|n| n.eq_ignore_ascii_case(name)) else {
                continue;
            };
            self.report(
                dir.child_path(name).display().to_string(),
                format!(
                    "is the same name as '{first}' in another case; names compare case-insensitively, so every spelling reaches '{first}' and this one is never read"
                ),
                format!("merge its contents into '{first}' by hand, then remove it"),
                false,
            );
        }
    }

    /// Reads a file for a check; one that cannot be read reads as absent and is reported,
    /// unless it is a link or special file (the walk reported those).
    fn read(&mut self, dir: &Dir, name: &str, limit: Limit) -> Option<Vec<u8>> {
        match dir.read(name, limit) {
            Ok(bytes) => bytes,
            Err(err) => {
                if dir.entry(name).ok().flatten().is_some_and(|e| e.is_file) {
                    self.report(
                        dir.child_path(name).display().to_string(),
                        format!("cannot be read: {}", reason(&err)),
                        "move it out of the home",
                        false,
                    );
                }
                None
            }
        }
    }

    fn tmp_dir(&mut self, tmp: &Dir, bx: Option<&Dir>) -> Result<(), FsError> {
        for name in tmp.list()? {
            let path = tmp.child_path(&name).display().to_string();
            if let Some(id) = name.strip_suffix(".editing").and_then(MessageId::parse) {
                self.edit_claim(tmp, bx, &name, id, path)?;
                continue;
            }
            let Some(e) = tmp.entry(&name)? else {
                continue;
            };
            if !e.is_file {
                continue;
            }
            let pid_alive = name
                .split('.')
                .next()
                .and_then(|p| p.parse::<i32>().ok())
                .and_then(rustix::process::Pid::from_raw)
                .is_some_and(|pid| rustix::process::test_kill_process(pid).is_ok());
            if pid_alive && self.now - e.ctime < ORPHAN_AGE_SECS {
                continue;
            }
            if let Some(revision) = self.old_revision(tmp, bx, &name)? {
                // An in-place edit was interrupted after its exchange: this file is the
                // revision the edit replaced, which belongs in revisions/.
                let fixed = self.fix
                    && match bx {
                        Some(bx) => {
                            let revisions = bx.open_or_create("revisions")?;
                            tmp.rename(&name, &revisions, &revision)?
                        }
                        None => false,
                    };
                self.report(
                    path,
                    "is the previous revision of an edited message, left by an interrupted edit",
                    format!("move it to revisions/{revision}"),
                    fixed,
                );
                continue;
            }
            let fixed = self.fix && tmp.remove(&name).is_ok();
            self.report(
                path,
                "is a temporary file left by an interrupted write (never published)",
                "remove it",
                fixed,
            );
        }
        Ok(())
    }

    /// The revisions/ name for a temp file holding an older revision of a message whose newer
    /// revision is in the mailbox; `None` for anything else.
    fn old_revision(
        &self,
        tmp: &Dir,
        bx: Option<&Dir>,
        name: &str,
    ) -> Result<Option<String>, FsError> {
        let Some(bx) = bx else {
            return Ok(None);
        };
        let Ok(Some(bytes)) = tmp.read(name, MESSAGE_FILE) else {
            return Ok(None);
        };
        let owner = mailroom_core::Address::human();
        let Ok(old) = message_from_bytes(&bytes, None, &owner) else {
            return Ok(None);
        };
        for state in State::ALL {
            let Some(dir) = quiet_open(bx, state_dir_name(state)) else {
                continue;
            };
            let Ok(Some(current)) = dir.read(&format!("{}.md", old.message.id), MESSAGE_FILE)
            else {
                continue;
            };
            if let Ok(cur) = message_from_bytes(&current, Some(old.message.id), &owner)
                && cur.message.revision > old.message.revision
            {
                return Ok(Some(format!(
                    "{}.r{}.md",
                    old.message.id, old.message.revision
                )));
            }
        }
        Ok(None)
    }

    /// An in-place edit on a filesystem without atomic exchange moved the unread copy aside
    /// and was interrupted: put it back, or keep it as a revision when the new one landed.
    fn edit_claim(
        &mut self,
        tmp: &Dir,
        bx: Option<&Dir>,
        name: &str,
        id: MessageId,
        path: String,
    ) -> Result<(), FsError> {
        let Some(bx) = bx else {
            return Ok(());
        };
        let unread = match quiet_open(bx, state_dir_name(State::Unread)) {
            Some(u) => Some(u),
            None if self.fix && bx.entry(state_dir_name(State::Unread))?.is_none() => {
                Some(bx.open_or_create(state_dir_name(State::Unread))?)
            }
            None => None,
        };
        let target = format!("{id}.md");
        if unread
            .as_ref()
            .is_some_and(|u| u.exists(&target).unwrap_or(false))
        {
            let revisions = bx.open_or_create("revisions")?;
            let fixed = self.fix
                && tmp
                    .rename(name, &revisions, &format!("{id}.interrupted.md"))
                    .is_ok();
            self.report(
                path,
                "is the old revision of an interrupted edit (the new one was delivered)",
                "move it to revisions/",
                fixed,
            );
        } else {
            let fixed = self.fix
                && unread
                    .as_ref()
                    .is_some_and(|u| tmp.publish_new(name, u, &target).unwrap_or(false));
            self.report(
                path,
                "is an unread message set aside by an interrupted edit",
                "put it back in unread/",
                fixed,
            );
        }
        Ok(())
    }

    fn mailbox(&mut self, bx: &Dir, owner: &mailroom_core::Address) -> Result<(), FsError> {
        if let Some(tmp) = quiet_open(bx, crate::TMP) {
            self.tmp_dir(&tmp, Some(bx))?;
        }
        if self.fix {
            // The listing cache and the search indexes are rebuilt on the next read; dropping
            // them picks up files that were edited in place by hand.
            bx.remove_rebuildable(crate::cache::CACHE_FILE)?;
            bx.remove_rebuildable(crate::index::MAILBOX_INDEX)?;
            bx.remove_rebuildable(crate::index::OUTBOX_INDEX)?;
        }
        for state in crate::compact::PENDING {
            self.oversized(bx, state)?;
        }
        let mut seen: HashMap<MessageId, State> = HashMap::new();
        for state in State::ALL {
            let Some(dir) = quiet_open(bx, state_dir_name(state)) else {
                continue;
            };
            let mut names = dir.list()?;
            names.sort();
            for name in names {
                let path = dir.child_path(&name).display().to_string();
                if !is_message_name(&name) {
                    continue;
                }
                let Some(bytes) = self.read(&dir, &name, MESSAGE_FILE) else {
                    continue;
                };
                let decoded =
                    message_from_bytes(&bytes, id_of(&name).or_else(|| spelt_id_of(&name)), owner);
                if let (Ok(d), Some(named)) = (&decoded, id_of(&name))
                    && let Some(header) = d.header_id.filter(|h| *h != named)
                {
                    self.report(
                            path.clone(),
                            format!("says id {header} in its header but is named {named}; mailroom goes by the name"),
                            format!("set its header's id to {named}, or rename the file if the header is right"),
                            false,
                        );
                }
                let id = match (&decoded, id_of(&name)) {
                    (_, Some(id)) => id,
                    (Ok(d), None) => {
                        let want = format!("{}.md", d.message.id);
                        let fixed =
                            self.fix && !dir.exists(&want)? && dir.rename(&name, &dir, &want)?;
                        self.report(
                            path.clone(),
                            "is not named <id>.md, so it cannot change state",
                            format!("rename it to {want}"),
                            fixed,
                        );
                        d.message.id
                    }
                    (Err(_), None) => {
                        self.report(
                            path.clone(),
                            "is not a message file (no id in its name or header)",
                            "move it out of the mailbox",
                            false,
                        );
                        continue;
                    }
                };
                if let Err(problem) = &decoded {
                    self.report(
                        path.clone(),
                        format!("cannot be read: {problem}"),
                        "edit the header by hand (docs/FORMAT.md) or move the file out",
                        false,
                    );
                }
                if let Some(prev) = seen.get(&id).copied() {
                    let (keep, drop) = if rank(state) >= rank(prev) {
                        (state, prev)
                    } else {
                        (prev, state)
                    };
                    let fixed = self.fix && self.move_duplicate(bx, id, drop)?;
                    self.report(
                        path,
                        format!("message {id} is both {prev} and {state}"),
                        format!("keep it {keep}; move the {drop} copy to revisions/"),
                        fixed,
                    );
                    seen.insert(id, keep);
                } else {
                    seen.insert(id, state);
                }
            }
        }
        self.revisions(bx, owner, &seen)
    }

    /// `revisions/` as the store reads it (see `mailbox::revisions`): a file whose name is no
    /// revision's is not read, one whose header disagrees with its name is read as the name
    /// says, and one of a message the mailbox holds no copy of is not exported. The duplicates
    /// `--fix` moves there are its own doing and not reported again.
    fn revisions(
        &mut self,
        bx: &Dir,
        owner: &mailroom_core::Address,
        copies: &HashMap<MessageId, State>,
    ) -> Result<(), FsError> {
        use crate::mailbox::{RevisionName, not_a_revision, revision_name};
        let Some(dir) = quiet_open(bx, crate::REVISIONS) else {
            return Ok(());
        };
        let mut names = dir.list()?;
        names.sort();
        for name in names.into_iter().filter(|n| is_message_name(n)) {
            let path = dir.child_path(&name).display().to_string();
            let (id, number) = match revision_name(&name) {
                Some(RevisionName::Numbered(id, n)) => (id, Some(n)),
                Some(RevisionName::Interrupted(id)) => (id, None),
                None if name.contains(".duplicate-") => continue,
                None => {
                    self.report(
                        path,
                        not_a_revision(&name),
                        "rename it to <id>.r<N>.md if it is revision N of message <id>, or move it out of the mailbox",
                        false,
                    );
                    continue;
                }
            };
            if !copies.contains_key(&id) {
                self.report(
                    path.clone(),
                    format!("is a revision of message {id}, of which this mailbox holds no copy, so it is not exported"),
                    "move it to the mailbox that holds the message, or out of the mailbox",
                    false,
                );
            }
            let Some(bytes) = self.read(&dir, &name, MESSAGE_FILE) else {
                continue;
            };
            match message_from_bytes(&bytes, Some(id), owner) {
                Ok(d) => {
                    if let Some(header) = d.header_id.filter(|h| *h != id) {
                        self.report(
                            path.clone(),
                            format!("says id {header} in its header but is named {id}; mailroom goes by the name"),
                            format!("set its header's id to {id}, or rename the file if the header is right"),
                            false,
                        );
                    }
                    if let Some(n) = number
                        && d.message.revision != n
                    {
                        self.report(
                            path,
                            format!(
                                "says revision {} in its header but is named r{n}; mailroom goes by the name",
                                d.message.revision
                            ),
                            format!("set its header's revision to {n}, or rename the file if the header is right"),
                            false,
                        );
                    }
                }
                Err(problem) => self.report(
                    path,
                    format!("cannot be read: {problem}"),
                    "edit the header by hand (docs/FORMAT.md) or move the file out",
                    false,
                ),
            }
        }
        Ok(())
    }

    /// A pending directory that once held many more files than it does (see `compact`):
    /// replaced with `--fix` when empty; while it still holds files, reported only when it
    /// is mostly empty space, since a large mailbox needs a large directory.
    fn oversized(&mut self, bx: &Dir, state: State) -> Result<(), FsError> {
        let Some((dir, bytes)) = crate::compact::oversized(bx, state)? else {
            return Ok(());
        };
        let entries = dir.list_with_ino()?.len() as u64;
        let path = bx.child_path(state_dir_name(state)).display().to_string();
        drop(dir);
        let kib = bytes / 1024;
        if entries == 0 {
            let fixed = self.fix && crate::compact::replace(bx, state)?;
            self.report(
                path,
                format!(
                    "is empty but takes {kib} KiB: it once held many more files, and every listing still reads all of it"
                ),
                "replace it with a new, empty directory",
                fixed,
            );
        } else if bytes > 4 * (entries * 64 + 4096) {
            self.report(
                path,
                format!(
                    "holds {entries} files but takes {kib} KiB: it once held many more, and every listing still reads all of it"
                ),
                "it is replaced once it is empty: read the mail (`inbox`), archive it (`done`), then run `doctor --fix` again",
                false,
            );
        }
        Ok(())
    }

    /// Every channel: temp files, and seen marks that name no entry (a broken seen set).
    fn channels(&mut self, channels: &Dir) -> Result<(), FsError> {
        let mut names = channels.list()?;
        names.sort();
        for name in names {
            let Some(ch) = quiet_open(channels, &name) else {
                continue;
            };
            if let Some(tmp) = quiet_open(&ch, crate::TMP) {
                self.tmp_dir(&tmp, None)?;
            }
            if self.fix {
                // The search index is rebuilt by the next search; dropping it picks up
                // entries edited in place by hand.
                ch.remove_rebuildable(crate::index::CHANNEL_INDEX)?;
            }
            let mut ids = std::collections::HashSet::new();
            for sub in ["entries", "retracted"] {
                if let Some(d) = quiet_open(&ch, sub) {
                    ids.extend(d.list()?.iter().filter_map(|n| id_of(n)));
                }
            }
            let Some(seen) = quiet_open(&ch, "seen") else {
                continue;
            };
            for reader in seen.list()? {
                let Some(marks) = quiet_open(&seen, &reader) else {
                    continue;
                };
                for mark in marks.list()? {
                    if MessageId::parse(&mark).is_some_and(|id| ids.contains(&id)) {
                        continue;
                    }
                    let fixed = self.fix && marks.remove(&mark).is_ok();
                    self.report(
                        marks.child_path(&mark).display().to_string(),
                        "is a seen mark for no entry of the channel",
                        "remove it",
                        fixed,
                    );
                }
            }
        }
        Ok(())
    }

    /// A project directory without its `project.md` (left by an older `wait`, or an
    /// interrupted create) is no project: its mail and roster are never reached. The fix writes
    /// the file a project created by a first send would have (policy open), created when the
    /// directory last changed. One younger than a minute is skipped: a project being created
    /// writes its file a moment after its directory.
    fn project_file(&mut self, projects: &Dir, dir: &Dir, name: &Name) -> Result<(), FsError> {
        if dir.entry(crate::PROJECT_FILE)?.is_some() {
            return Ok(());
        }
        let Some(mtime) = projects.mtime(name.as_str())? else {
            return Ok(());
        };
        let created = i64::try_from(mtime / 1_000_000_000)
            .ok()
            .and_then(|s| jiff::Timestamp::from_second(s).ok())
            .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        if self.now - created.as_second() < PROJECT_GRACE_SECS {
            return Ok(());
        }
        let project = mailroom_core::Project {
            name: name.clone(),
            policy: mailroom_core::Policy::Open,
            created,
        };
        let fixed = self.fix && {
            let tmp = dir.open_or_create(crate::TMP)?;
            crate::create_exclusive(
                &tmp,
                dir,
                crate::PROJECT_FILE,
                &crate::codec::project_to_text(&project),
            )?
        };
        self.report(
            dir.child_path(crate::PROJECT_FILE).display().to_string(),
            "is missing, so mailroom sees no project here and never reads its mail or roster",
            format!("write it: policy open, created {created}"),
            fixed,
        );
        Ok(())
    }

    fn move_duplicate(&self, bx: &Dir, id: MessageId, state: State) -> Result<bool, FsError> {
        let Some(dir) = quiet_open(bx, state_dir_name(state)) else {
            return Ok(false);
        };
        let revisions = bx.open_or_create("revisions")?;
        dir.rename(
            &format!("{id}.md"),
            &revisions,
            &format!("{id}.duplicate-{state}.md"),
        )
    }
}

/// Later lifecycle states win when a copy is found in two.
fn rank(s: State) -> u8 {
    match s {
        State::Unread => 0,
        State::Read => 1,
        State::Cancelled | State::Retracted => 2,
        State::Done => 3,
    }
}

/// A directory the checks look into; one that cannot be opened (a link, a file, no
/// permission) is skipped, since the walk reports it.
fn quiet_open(dir: &Dir, name: &str) -> Option<Dir> {
    dir.open(name).ok().flatten()
}

/// Why an operation failed, without the path (a finding names it already).
fn reason(e: &FsError) -> String {
    match e {
        FsError::Io { source, .. } => source.to_string(),
        other => other.to_string(),
    }
}

/// Whether the layout (docs/FORMAT.md) has an entry at `path` below the home, of this kind.
/// Names that are not valid project or handle names are reported by their own checks.
fn in_layout(path: &[&str], is_dir: bool) -> bool {
    use crate::{CHANNELS, GLOBAL, LAYOUT_FILE, PROJECTS, TMP};
    let file = !is_dir;
    match path {
        [LAYOUT_FILE] => file,
        [TMP | GLOBAL | PROJECTS | crate::TOKENS] => is_dir,
        [TMP, _] => file,
        [crate::TOKENS, id] => file && crate::tokens::is_token_name(id),
        [GLOBAL, rest @ ..] => in_scope(rest, is_dir),
        [PROJECTS, _] => is_dir,
        [PROJECTS, _, crate::PROJECT_FILE] => file,
        [PROJECTS, _, crate::ROSTER | CHANNELS] => is_dir,
        [PROJECTS, _, crate::ROSTER, member] => {
            file && member
                .strip_suffix(".md")
                .is_some_and(|h| Name::parse(h).is_ok())
        }
        [PROJECTS, _, CHANNELS, channel] => is_dir && Name::parse(channel).is_ok(),
        [PROJECTS, _, CHANNELS, _, rest @ ..] => in_channel(rest, is_dir),
        [PROJECTS, _, rest @ ..] => in_scope(rest, is_dir),
        [crate::leases::LEASES] | [crate::leases::LEASES, _] => is_dir,
        [crate::leases::LEASES, _, lease] => {
            file && (lease.ends_with(crate::leases::LEASE_SUFFIX)
                || *lease == crate::leases::LEASE_CACHE)
        }
        _ => false,
    }
}

/// Below a scope (`global/` or `projects/<p>/`): its mailboxes and temp files.
fn in_scope(path: &[&str], is_dir: bool) -> bool {
    use crate::{BOXES, TMP};
    match path {
        [TMP | BOXES] => is_dir,
        [TMP, _] => !is_dir,
        [BOXES, _] => is_dir,
        [BOXES, _, rest @ ..] => in_mailbox(rest, is_dir),
        _ => false,
    }
}

/// Below `channels/<name>/`.
fn in_channel(path: &[&str], is_dir: bool) -> bool {
    use crate::{ENTRIES, RETRACTED, SEEN, TMP};
    match path {
        [ENTRIES | RETRACTED | SEEN | TMP] => is_dir,
        [crate::index::CHANNEL_INDEX] => !is_dir,
        [ENTRIES | RETRACTED, entry] => !is_dir && is_message_name(entry),
        [SEEN, _] => is_dir,
        [SEEN, _, _] | [TMP, _] => !is_dir,
        _ => false,
    }
}

/// Below `boxes/<handle>/`.
fn in_mailbox(path: &[&str], is_dir: bool) -> bool {
    use crate::{INJECTED, KEYS, ORIGIN, OUTBOX, REVISIONS, TMP};
    let state = |s: &str| State::ALL.iter().any(|st| state_dir_name(*st) == s);
    match path {
        [ORIGIN | INJECTED | crate::cache::CACHE_FILE] => !is_dir,
        [crate::index::MAILBOX_INDEX | crate::index::OUTBOX_INDEX] => !is_dir,
        [TMP | KEYS | OUTBOX | REVISIONS] => is_dir,
        [s] => is_dir && state(s),
        [TMP | KEYS, _] => !is_dir,
        [OUTBOX | REVISIONS, f] => !is_dir && is_message_name(f),
        [s, f] => !is_dir && state(s) && is_message_name(f),
        _ => false,
    }
}

pub fn run(store: &FsStore, fix: bool) -> Result<Vec<Finding>, FsError> {
    let mut doc = Doctor {
        fix,
        now: jiff::Timestamp::now().as_second(),
        findings: Vec::new(),
    };
    let Some(root) = store.root()? else {
        return Ok(doc.findings);
    };
    // An empty directory is a home not used yet (made with `mktemp -d`): the first write lays
    // it out, as it creates a missing one, so there is nothing to report.
    if root.list()?.is_empty() {
        return Ok(doc.findings);
    }
    let layout = match root.read(crate::LAYOUT_FILE, Limit::small("the layout file")) {
        Ok(v) => Ok(v),
        // A link or special file: the walk reports it.
        Err(_) if !root.entry(crate::LAYOUT_FILE)?.is_some_and(|e| e.is_file) => Ok(None),
        Err(e) => Err(e),
    };
    match layout {
        Ok(Some(v)) if String::from_utf8_lossy(&v).trim() == LAYOUT_VERSION => {}
        Err(e) => doc.report(
            root.child_path(crate::LAYOUT_FILE).display().to_string(),
            format!("cannot be read: {}", reason(&e)),
            "move it out of the home, then run `mailroom doctor --fix` to write a new one",
            false,
        ),
        Ok(Some(v)) => doc.report(
            root.child_path(crate::LAYOUT_FILE).display().to_string(),
            format!(
                "says layout version '{}'; this mailroom understands {LAYOUT_VERSION}",
                String::from_utf8_lossy(&v).trim()
            ),
            "use the mailroom version that wrote this home",
            false,
        ),
        Ok(None) if root.entry(crate::LAYOUT_FILE)?.is_some() => {}
        Ok(None) => {
            let fixed = fix && {
                let tmp = root.open_or_create(crate::TMP)?;
                let t = tmp.write_temp(
                    format!("{LAYOUT_VERSION}\n").as_bytes(),
                    Durability::Durable,
                )?;
                tmp.publish_new(&t, &root, crate::LAYOUT_FILE)?
            };
            doc.report(
                root.child_path(crate::LAYOUT_FILE).display().to_string(),
                "is missing",
                format!("write layout version {LAYOUT_VERSION}"),
                fixed,
            );
        }
    }
    doc.walk(&root, &mut Vec::new())?;
    if let Some(tmp) = quiet_open(&root, crate::TMP) {
        doc.tmp_dir(&tmp, None)?;
    }
    let mut scopes: Vec<(mailroom_core::Scope, Dir)> = Vec::new();
    if let Some(g) = quiet_open(&root, crate::GLOBAL) {
        scopes.push((mailroom_core::Scope::Global, g));
    }
    if let Some(projects) = quiet_open(&root, crate::PROJECTS) {
        let mut names = projects.list()?;
        names.sort();
        for name in names {
            match mailroom_core::Name::parse(&name) {
                Ok(n) => {
                    if let Some(d) = quiet_open(&projects, &name) {
                        doc.project_file(&projects, &d, &n)?;
                        scopes.push((mailroom_core::Scope::Project(n), d));
                    }
                }
                Err(e) => doc.report(
                    projects.child_path(&name).display().to_string(),
                    format!("is not a valid project name: it {e}"),
                    "rename or remove it",
                    false,
                ),
            }
        }
    }
    for (scope, dir) in &scopes {
        if let Some(tmp) = quiet_open(dir, crate::TMP) {
            doc.tmp_dir(&tmp, None)?;
        }
        if let Some(channels) = quiet_open(dir, crate::CHANNELS) {
            doc.channels(&channels)?;
        }
        let Some(boxes) = quiet_open(dir, crate::BOXES) else {
            continue;
        };
        let mut names = boxes.list()?;
        names.sort();
        for name in names {
            let Ok(handle) = mailroom_core::Name::parse(&name) else {
                doc.report(
                    boxes.child_path(&name).display().to_string(),
                    "is not a valid handle",
                    "rename or remove it",
                    false,
                );
                continue;
            };
            if let Some(bx) = quiet_open(&boxes, &name) {
                let owner = mailroom_core::Address {
                    handle,
                    scope: scope.clone(),
                };
                doc.mailbox(&bx, &owner)?;
            }
        }
    }
    Ok(doc.findings)
}
