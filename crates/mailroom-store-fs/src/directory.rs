//! The directory of projects and their rosters: who exists, under which policy, and as which
//! member.
//!
//! Invariants: a project or member is created with an exclusive create, so two processes
//! adding the same one leave one file; a change replaces the file by rename; names are found
//! in any case (`names`) and read back as first spelled on disk.

use mailroom_core::{Member, Name, Policy, Project, Result};

use crate::dir::{Dir, Limit};
use crate::error::FsError;
use crate::{
    BOXES, FsStore, PROJECT_FILE, PROJECTS, ROSTER, TMP, codec, create_exclusive, names, replace,
    status_changed_at,
};

/// A member's roster file is its handle with this suffix.
const MEMBER_SUFFIX: &str = ".md";

pub(crate) fn projects(fs: &FsStore) -> Result<Vec<Project>> {
    let Some(root) = fs.root()? else {
        return Ok(vec![]);
    };
    let Some(projects) = root.open(PROJECTS)? else {
        return Ok(vec![]);
    };
    let mut out = Vec::new();
    for entry in projects.list()? {
        let Ok(name) = Name::parse(&entry) else {
            continue;
        };
        if let Some(p) = project(fs, &name)? {
            out.push(p);
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

pub(crate) fn project(fs: &FsStore, name: &Name) -> Result<Option<Project>> {
    let Some(dir) = fs.open_project(name)? else {
        return Ok(None);
    };
    // The name as first written, which is the directory's.
    let spelled = dir
        .file_name()
        .and_then(|n| Name::parse(n).ok())
        .unwrap_or_else(|| name.clone());
    Ok(fs.projects.read(
        &dir,
        PROJECT_FILE,
        Limit::small("a project file"),
        |bytes| {
            let fallback = || status_changed_at(&dir, PROJECT_FILE);
            codec::project_from_bytes(bytes, &spelled, fallback)
        },
    )?)
}

pub(crate) fn ensure_project(fs: &FsStore, project: &Project) -> Result<(Project, bool)> {
    let dir = fs.create_project(&project.name)?;
    let tmp = dir.open_or_create(TMP)?;
    dir.open_or_create(ROSTER)?;
    dir.open_or_create(BOXES)?;
    if create_exclusive(&tmp, &dir, PROJECT_FILE, &codec::project_to_text(project))? {
        return Ok((project.clone(), true));
    }
    let existing = self::project(fs, &project.name)?.unwrap_or_else(|| project.clone());
    Ok((existing, false))
}

pub(crate) fn set_policy(fs: &FsStore, name: &Name, policy: Policy) -> Result<bool> {
    let Some(mut project) = project(fs, name)? else {
        return Ok(false);
    };
    let Some(dir) = fs.open_project(name)? else {
        return Ok(false);
    };
    project.policy = policy;
    let tmp = dir.open_or_create(TMP)?;
    replace(&tmp, &dir, PROJECT_FILE, &codec::project_to_text(&project))?;
    Ok(true)
}

/// The roster directory of a project, `None` when either is missing.
fn open_roster(fs: &FsStore, project: &Name) -> Result<Option<Dir>, FsError> {
    match fs.open_project(project)? {
        Some(dir) => dir.open(ROSTER),
        None => Ok(None),
    }
}

pub(crate) fn roster(fs: &FsStore, project: &Name) -> Result<Vec<Member>> {
    let Some(roster) = open_roster(fs, project)? else {
        return Ok(vec![]);
    };
    // One listing, each entry read where it is listed (not looked up again by name): several
    // spellings of one handle count once, as the first in byte order, as `member` finds it.
    let mut entries: Vec<(Name, String)> = roster
        .list()?
        .into_iter()
        .filter_map(|entry| {
            let handle = Name::parse(entry.strip_suffix(MEMBER_SUFFIX)?).ok()?;
            Some((handle, entry))
        })
        .collect();
    entries.sort_by(|a, b| a.1.cmp(&b.1));
    let mut out: Vec<Member> = Vec::with_capacity(entries.len());
    for (handle, entry) in entries {
        if out
            .iter()
            .any(|m| m.handle.as_str().eq_ignore_ascii_case(handle.as_str()))
        {
            continue;
        }
        if let Some(member) =
            fs.members
                .read(&roster, &entry, Limit::small("a roster file"), |bytes| {
                    decode_member(&roster, &entry, &handle, bytes)
                })?
        {
            out.push(member);
        }
    }
    out.sort_by(|a, b| a.handle.cmp(&b.handle));
    Ok(out)
}

fn decode_member(roster: &Dir, on_disk: &str, handle: &Name, bytes: &[u8]) -> Member {
    let fallback = || status_changed_at(roster, on_disk);
    let spelled = on_disk
        .strip_suffix(MEMBER_SUFFIX)
        .and_then(|h| Name::parse(h).ok())
        .unwrap_or_else(|| handle.clone());
    codec::member_from_bytes(bytes, &spelled, fallback)
}

pub(crate) fn member(fs: &FsStore, project: &Name, handle: &Name) -> Result<Option<Member>> {
    let Some(roster) = open_roster(fs, project)? else {
        return Ok(None);
    };
    let found = names::find(&roster, handle.as_str(), MEMBER_SUFFIX, |on_disk| {
        fs.members
            .read(&roster, on_disk, Limit::small("a roster file"), |bytes| {
                decode_member(&roster, on_disk, handle, bytes)
            })
    })?;
    Ok(found.map(|(_, member)| member))
}

pub(crate) fn add_member(fs: &FsStore, project: &Name, member: &Member) -> Result<bool> {
    let dir = fs.create_project(project)?;
    let tmp = dir.open_or_create(TMP)?;
    let roster = dir.open_or_create(ROSTER)?;
    Ok(names::create_file(
        &roster,
        member.handle.as_str(),
        MEMBER_SUFFIX,
        |name| create_exclusive(&tmp, &roster, name, &codec::member_to_text(member)),
    )?)
}

pub(crate) fn update_member(fs: &FsStore, project: &Name, member: &Member) -> Result<bool> {
    let Some(dir) = fs.open_project(project)? else {
        return Ok(false);
    };
    let Some(roster) = dir.open(ROSTER)? else {
        return Ok(false);
    };
    let Some(name) = names::spelled(&roster, member.handle.as_str(), MEMBER_SUFFIX)? else {
        return Ok(false);
    };
    let tmp = dir.open_or_create(TMP)?;
    replace(&tmp, &roster, &name, &codec::member_to_text(member))?;
    Ok(true)
}
