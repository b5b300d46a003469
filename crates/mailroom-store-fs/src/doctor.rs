//! `doctor` for the file store: walks the whole home without following links and reports
//! every problem in one line with its fix; with `fix`, repairs what is safe.
//!
//! Safe means: no message content is changed and no message is deleted. Orphan temp files are
//! removed (they were never published), permissions are tightened, an edit's claim left by a
//! crash is put back, a copy found in two states keeps the later state and the other copy is
//! moved to `revisions/`.

use std::collections::HashMap;

use mailroom_core::{Finding, MessageId, State};

use crate::codec::{LAYOUT_VERSION, message_from_bytes};
use crate::dir::{DIR_MODE, Dir, Durability, FILE_MODE};
use crate::error::FsError;
use crate::{FsStore, id_of, is_message_name, state_dir_name};

/// A temp file older than this is an orphan even if its pid is alive (pids are reused).
const ORPHAN_AGE_SECS: i64 = 3600;

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

    /// Every entry below `dir`: no symlinks, 0700 directories, 0600 files.
    fn walk(&mut self, dir: &Dir) -> Result<(), FsError> {
        let mut names = dir.list()?;
        names.sort();
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
            let want = if e.is_dir { DIR_MODE } else { FILE_MODE };
            if e.mode & 0o077 != 0 {
                let fixed = self.fix && dir.chmod(&name, want).is_ok();
                self.report(
                    path,
                    format!("has permissions {:o}; others can read it", e.mode),
                    format!("chmod {want:o}"),
                    fixed,
                );
            }
            if e.is_dir {
                if let Some(sub) = dir.open(&name)? {
                    self.walk(&sub)?;
                }
            }
        }
        Ok(())
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
        let Some(bytes) = tmp.read(name)? else {
            return Ok(None);
        };
        let owner = mailroom_core::Address::human();
        let Ok(old) = message_from_bytes(&bytes, None, &owner) else {
            return Ok(None);
        };
        for state in State::ALL {
            let Some(dir) = bx.open(state_dir_name(state))? else {
                continue;
            };
            let Some(current) = dir.read(&format!("{}.md", old.message.id))? else {
                continue;
            };
            if let Ok(cur) = message_from_bytes(&current, Some(old.message.id), &owner) {
                if cur.message.revision > old.message.revision {
                    return Ok(Some(format!(
                        "{}.r{}.md",
                        old.message.id, old.message.revision
                    )));
                }
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
        let unread = bx.open_or_create(state_dir_name(State::Unread))?;
        let target = format!("{id}.md");
        if unread.exists(&target)? {
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
            let fixed = self.fix && tmp.publish_new(name, &unread, &target).unwrap_or(false);
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
        if let Some(tmp) = bx.open("tmp")? {
            self.tmp_dir(&tmp, Some(bx))?;
        }
        if self.fix {
            // The listing cache is rebuilt on the next read; dropping it picks up files that
            // were edited in place by hand.
            bx.remove(crate::cache::CACHE_FILE)?;
        }
        let mut seen: HashMap<MessageId, State> = HashMap::new();
        for state in State::ALL {
            let Some(dir) = bx.open(state_dir_name(state))? else {
                continue;
            };
            let mut names = dir.list()?;
            names.sort();
            for name in names {
                let path = dir.child_path(&name).display().to_string();
                if !is_message_name(&name) {
                    continue;
                }
                let Some(bytes) = dir.read(&name)? else {
                    continue;
                };
                let decoded = message_from_bytes(&bytes, id_of(&name), owner);
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
        Ok(())
    }

    /// Every channel: temp files, and seen marks that name no entry (a broken seen set).
    fn channels(&mut self, channels: &Dir) -> Result<(), FsError> {
        let mut names = channels.list()?;
        names.sort();
        for name in names {
            let Some(ch) = channels.open(&name)? else {
                continue;
            };
            if let Some(tmp) = ch.open("tmp")? {
                self.tmp_dir(&tmp, None)?;
            }
            let mut ids = std::collections::HashSet::new();
            for sub in ["entries", "retracted"] {
                if let Some(d) = ch.open(sub)? {
                    ids.extend(d.list()?.iter().filter_map(|n| id_of(n)));
                }
            }
            let Some(seen) = ch.open("seen")? else {
                continue;
            };
            for reader in seen.list()? {
                let Some(marks) = seen.open(&reader)? else {
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

    fn move_duplicate(&self, bx: &Dir, id: MessageId, state: State) -> Result<bool, FsError> {
        let Some(dir) = bx.open(state_dir_name(state))? else {
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

pub fn run(store: &FsStore, fix: bool) -> Result<Vec<Finding>, FsError> {
    let mut doc = Doctor {
        fix,
        now: jiff::Timestamp::now().as_second(),
        findings: Vec::new(),
    };
    let Some(root) = store.root()? else {
        return Ok(doc.findings);
    };
    match root.read(crate::LAYOUT_FILE)? {
        Some(v) if String::from_utf8_lossy(&v).trim() == LAYOUT_VERSION => {}
        Some(v) => doc.report(
            root.child_path(crate::LAYOUT_FILE).display().to_string(),
            format!(
                "says layout version '{}'; this mailroom understands {LAYOUT_VERSION}",
                String::from_utf8_lossy(&v).trim()
            ),
            "use the mailroom version that wrote this home",
            false,
        ),
        None => {
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
    doc.walk(&root)?;
    if let Some(tmp) = root.open(crate::TMP)? {
        doc.tmp_dir(&tmp, None)?;
    }
    let mut scopes: Vec<(mailroom_core::Scope, Dir)> = Vec::new();
    if let Some(g) = root.open(crate::GLOBAL)? {
        scopes.push((mailroom_core::Scope::Global, g));
    }
    if let Some(projects) = root.open(crate::PROJECTS)? {
        let mut names = projects.list()?;
        names.sort();
        for name in names {
            match mailroom_core::Name::parse(&name) {
                Ok(n) => {
                    if let Some(d) = projects.open(&name)? {
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
        if let Some(tmp) = dir.open(crate::TMP)? {
            doc.tmp_dir(&tmp, None)?;
        }
        if let Some(channels) = dir.open(crate::CHANNELS)? {
            doc.channels(&channels)?;
        }
        let Some(boxes) = dir.open(crate::BOXES)? else {
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
            if let Some(bx) = boxes.open(&name)? {
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
