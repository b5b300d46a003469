//! The directory of projects and their rosters: who exists, under which policy, and as which
//! member.
//!
//! Invariants: a project or member is created with an exclusive create, so two processes
//! adding the same one leave one file; a change replaces the file by rename; names are found
//! in any case (`names`) and read back as first spelled on disk.

use mailroom_core::store::Found;
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
    match fs.open_project(name)? {
        Some(dir) => project_in(fs, &dir, name),
        None => Ok(None),
    }
}

/// The project whose directory is `dir` (opened for `name`).
fn project_in(fs: &FsStore, dir: &Dir, name: &Name) -> Result<Option<Project>> {
    // The name as first written, which is the directory's.
    let spelled = dir
        .file_name()
        .and_then(|n| Name::parse(n).ok())
        .unwrap_or_else(|| name.clone());
    Ok(fs
        .projects
        .read(dir, PROJECT_FILE, Limit::small("a project file"), |bytes| {
            let fallback = || status_changed_at(dir, PROJECT_FILE);
            codec::project_from_bytes(bytes, &spelled, fallback)
        })?)
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
    match open_roster(fs, project)? {
        Some(roster) => member_in(fs, &roster, handle),
        None => Ok(None),
    }
}

/// The entry of `handle` in the roster directory `roster`.
fn member_in(fs: &FsStore, roster: &Dir, handle: &Name) -> Result<Option<Member>> {
    let found = names::find(roster, handle.as_str(), MEMBER_SUFFIX, |on_disk| {
        fs.members
            .read(roster, on_disk, Limit::small("a roster file"), |bytes| {
                decode_member(roster, on_disk, handle, bytes)
            })
    })?;
    Ok(found.map(|(_, member)| member))
}

/// A project named in a lookup (in any case), its directory (`None`: not there) and, once a
/// member of it is asked for, its roster directory.
type Opened<'a> = (&'a Name, Option<Dir>, Option<Option<Dir>>);

/// Where `name` is in `opened`, opening its directory the first time it is named.
fn index_of<'a>(fs: &FsStore, opened: &mut Vec<Opened<'a>>, name: &'a Name) -> Result<usize> {
    if let Some(i) = opened
        .iter()
        .position(|(n, _, _)| n.as_str().eq_ignore_ascii_case(name.as_str()))
    {
        return Ok(i);
    }
    opened.push((name, fs.open_project(name)?, None));
    Ok(opened.len() - 1)
}

/// What `Directory::lookup` asks, each project's directory and roster opened once for all its
/// questions (a send asks for the project and two entries in it: one walk or held-handle check
/// instead of three). Answers are as current as `project` and `member` give.
pub(crate) fn lookup(fs: &FsStore, projects: &[Name], members: &[(Name, Name)]) -> Result<Found> {
    let mut opened: Vec<Opened<'_>> = Vec::new();
    let mut found = Found {
        projects: Vec::with_capacity(projects.len()),
        members: Vec::with_capacity(members.len()),
    };
    for name in projects {
        let i = index_of(fs, &mut opened, name)?;
        found.projects.push(match &opened[i].1 {
            Some(dir) => project_in(fs, dir, name)?,
            None => None,
        });
    }
    for (project, handle) in members {
        let i = index_of(fs, &mut opened, project)?;
        let (_, dir, roster) = &mut opened[i];
        if roster.is_none() {
            *roster = Some(match dir {
                Some(dir) => dir.open(ROSTER)?,
                None => None,
            });
        }
        found.members.push(match roster {
            Some(Some(roster)) => member_in(fs, roster, handle)?,
            _ => None,
        });
    }
    Ok(found)
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
