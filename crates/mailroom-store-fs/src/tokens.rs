//! The `Tokens` role: one file per token under `tokens/` in the home, named by the token's id
//! and holding its hash (never the secret), mode 0600 like every file of the home.
//!
//! Invariants: a token file is created exclusively (written under `tmp/`, then linked in), so
//! two issues never share an id; names are checked and the file linked under the `tokens/`
//! directory's lock, so two tokens never share a name; a revocation removes the file, so the
//! next lookup no longer finds it. Tokens are few (one per agent): a lookup reads them all.

use jiff::Timestamp;
use mailroom_core::token::Token;
use mailroom_core::{Address, Result};

use crate::dir::{Dir, Limit};
use crate::error::FsError;
use crate::{FsStore, TMP, TOKENS, create_exclusive};

/// Whether `name` is a token file's name: the 12 lower-case hex digits of an id.
pub(crate) fn is_token_name(name: &str) -> bool {
    name.len() == 12
        && name
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn to_text(t: &Token) -> String {
    let mut s = format!("id: {}\n", t.id);
    if let Some(n) = &t.name {
        s.push_str(&format!("name: {n}\n"));
    }
    s.push_str(&format!(
        "address: {}\nhash: {}\ncreated: {}\n",
        t.address, t.hash, t.created
    ));
    if let Some(e) = t.expires {
        s.push_str(&format!("expires: {e}\n"));
    }
    s
}

/// A token file read back; `None` when it does not read as one (`doctor` names the file).
fn from_text(text: &str) -> Option<Token> {
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(": "))
            .map(str::trim)
    };
    let id = field("id")?;
    if !is_token_name(id) {
        return None;
    }
    let hash = field("hash")?;
    if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some(Token {
        id: id.to_owned(),
        name: field("name").map(str::to_owned),
        address: Address::parse_canonical(field("address")?).ok()?,
        hash: hash.to_ascii_lowercase(),
        created: field("created")?.parse::<Timestamp>().ok()?,
        expires: match field("expires") {
            Some(e) => Some(e.parse::<Timestamp>().ok()?),
            None => None,
        },
    })
}

fn read_all(dir: &Dir) -> Result<Vec<Token>, FsError> {
    let mut out = Vec::new();
    for name in dir.list()? {
        if !is_token_name(&name) {
            continue;
        }
        // A file removed between the listing and its read was revoked meanwhile.
        if let Some(bytes) = dir.read(&name, Limit::small("a token file"))?
            && let Some(t) = from_text(&String::from_utf8_lossy(&bytes))
        {
            out.push(t);
        }
    }
    out.sort_by(|a, b| (a.created, &a.id).cmp(&(b.created, &b.id)));
    Ok(out)
}

fn open_tokens(fs: &FsStore) -> Result<Option<Dir>, FsError> {
    match fs.root()? {
        Some(root) => root.open(TOKENS),
        None => Ok(None),
    }
}

pub(crate) fn add(fs: &FsStore, token: &Token) -> Result<bool> {
    let root = fs.create_root()?;
    let dir = root.open_or_create(TOKENS)?;
    let _lock = dir.lock()?;
    if let Some(name) = &token.name
        && read_all(&dir)?.iter().any(|t| {
            t.name
                .as_deref()
                .is_some_and(|n| n.eq_ignore_ascii_case(name))
        })
    {
        return Ok(false);
    }
    let tmp = root.open_or_create(TMP)?;
    Ok(create_exclusive(&tmp, &dir, &token.id, &to_text(token))?)
}

pub(crate) fn list(fs: &FsStore) -> Result<Vec<Token>> {
    Ok(match open_tokens(fs)? {
        Some(dir) => read_all(&dir)?,
        None => Vec::new(),
    })
}

pub(crate) fn by_hash(fs: &FsStore, hash: &str) -> Result<Option<Token>> {
    Ok(list(fs)?
        .into_iter()
        .find(|t| t.hash.eq_ignore_ascii_case(hash)))
}

pub(crate) fn remove(fs: &FsStore, id: &str) -> Result<bool> {
    if !is_token_name(id) {
        return Ok(false);
    }
    let Some(dir) = open_tokens(fs)? else {
        return Ok(false);
    };
    let removed = dir.remove_present(id)?;
    if removed {
        dir.sync()?;
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_file_reads_back_as_written() {
        let t = Token {
            id: "0123456789ab".into(),
            name: Some("ci".into()),
            address: Address::parse_canonical("bob@web").unwrap(),
            hash: "ab".repeat(32),
            created: "2026-01-02T03:04:05Z".parse().unwrap(),
            expires: Some("2026-02-02T03:04:05Z".parse().unwrap()),
        };
        assert_eq!(from_text(&to_text(&t)), Some(t.clone()));
        let bare = Token {
            name: None,
            expires: None,
            ..t
        };
        assert_eq!(from_text(&to_text(&bare)), Some(bare));
        assert_eq!(from_text("id: nope\n"), None);
    }
}
