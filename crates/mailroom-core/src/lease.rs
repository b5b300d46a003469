//! File reservations: advisory leases on repository paths, the store role that keeps them, and
//! the one rule that says when two leases conflict.
//!
//! A lease's pattern is a repository-relative glob (`globset`'s syntax, `*` and `?` never
//! crossing a `/`, `**` a whole component) anchored at the repository's top level, and it
//! covers every path it matches *and everything below such a path*: `src/api` covers
//! `src/api/users.rs`, as `src/api/**` does. Brace alternatives (`{a,b}`) are refused: write two
//! patterns.

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use jiff::Timestamp;

use crate::address::Address;
use crate::error::{Error, Result};
use crate::message::MessageId;
use crate::name::Name;

/// One lease: `holder` reserves the paths `pattern` covers until `until`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    pub id: MessageId,
    pub holder: Address,
    /// The pattern as the holder wrote it, normalized by [`normalize_pattern`].
    pub pattern: String,
    /// Exclusive (the default) or shared: two shared leases never conflict.
    pub exclusive: bool,
    pub reason: Option<String>,
    pub since: Timestamp,
    pub until: Timestamp,
}

impl Lease {
    /// An expired lease never blocks anyone; stores may drop it at any change.
    pub fn active_at(&self, now: Timestamp) -> bool {
        self.until > now
    }
}

/// A change to a project's leases, decided by the core under the store's lock.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaseChange {
    /// Leases to drop, by id (ids not held are ignored).
    pub remove: Vec<MessageId>,
    /// Leases to add, after the removals (an id held already is replaced).
    pub add: Vec<Lease>,
}

/// The store role keeping leases, one set per project.
pub trait Reservations {
    /// The project's leases, expired ones included, in any order.
    fn leases(&self, project: &Name) -> Result<Vec<Lease>>;

    /// The project's leases whose pattern `want` accepts, expired ones included, in any order.
    /// A store may answer without decoding the others; by default, [`Reservations::leases`]
    /// filtered.
    fn leases_where(&self, project: &Name, want: &dyn Fn(&str) -> bool) -> Result<Vec<Lease>> {
        let mut all = self.leases(project)?;
        all.retain(|l| want(&l.pattern));
        Ok(all)
    }

    /// Reads the project's leases and applies the change `decide` returns from them, as one
    /// step against every other `change_leases` of the same project (a lock or a transaction):
    /// two callers never both decide from the same leases. An error from `decide` changes
    /// nothing and is returned. `decide` may be called more than once (a retried transaction).
    fn change_leases(
        &self,
        project: &Name,
        decide: &mut dyn FnMut(&[Lease]) -> Result<LeaseChange>,
    ) -> Result<()>;
}

/// The longest pattern taken, in bytes.
pub const MAX_PATTERN_BYTES: usize = 1024;

/// A pattern as leases keep it: surrounding blanks, a leading `./` or `/` and a trailing `/`
/// dropped; refused (one sentence) when empty, too long, holding `..`, a brace, a control
/// character, or not a glob `globset` reads.
pub fn normalize_pattern(raw: &str) -> Result<String> {
    let bad = |why: &str| Err(Error::Invalid(format!("the pattern '{raw}' {why}")));
    let mut p = raw.trim();
    while let Some(rest) = p.strip_prefix("./") {
        p = rest;
    }
    let p = p.trim_start_matches('/').trim_end_matches('/');
    if p.is_empty() {
        return bad(
            "names nothing; write a path or glob relative to the repository, e.g. src/api/**",
        );
    }
    if p.len() > MAX_PATTERN_BYTES {
        return bad("is longer than 1024 bytes");
    }
    if p.chars().any(char::is_control) {
        return bad("holds a control character");
    }
    if p.contains('{') || p.contains('}') {
        return bad("holds a brace; write each alternative as a pattern of its own");
    }
    if p.split('/').any(|s| s == ".." || s == "." || s.is_empty()) {
        return bad("must stay inside the repository: no '.', '..' or empty components");
    }
    if let Err(e) = glob(p) {
        return bad(&format!("is not a glob: {}", e.kind()));
    }
    Ok(p.to_owned())
}

fn glob(pattern: &str) -> std::result::Result<Glob, globset::Error> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
}

/// Whether `pattern` (normalized) covers the repository-relative `path`: the glob matches the
/// path or one of its parent directories.
pub fn covers(pattern: &str, path: &str) -> bool {
    match glob(pattern) {
        Ok(g) => covered_by(&g.compile_matcher(), path),
        Err(_) => false,
    }
}

fn covered_by(m: &globset::GlobMatcher, path: &str) -> bool {
    prefixes(path).any(|p| m.is_match(p))
}

/// `a`, `a/b`, `a/b/c` for `a/b/c`.
fn prefixes(path: &str) -> impl Iterator<Item = &str> {
    path.match_indices('/')
        .map(move |(i, _)| &path[..i])
        .chain(std::iter::once(path))
}

/// Many patterns compiled once: which of them cover a path.
#[derive(Debug)]
pub struct PatternSet {
    set: GlobSet,
}

impl PatternSet {
    /// Compiles `patterns` (normalized); a pattern that does not compile matches nothing.
    pub fn new<'a>(patterns: impl IntoIterator<Item = &'a str>) -> PatternSet {
        let mut b = GlobSetBuilder::new();
        let never = glob("\\/").ok();
        for p in patterns {
            match glob(p).ok().or_else(|| never.clone()) {
                Some(g) => b.add(g),
                // Not reached: the escaped slash is a valid glob.
                None => continue,
            };
        }
        PatternSet {
            set: b.build().unwrap_or_else(|_| GlobSet::empty()),
        }
    }

    /// The indexes of the patterns covering `path`, ascending, each once.
    pub fn covering(&self, path: &str) -> Vec<usize> {
        let mut hits: Vec<usize> = prefixes(path).flat_map(|p| self.set.matches(p)).collect();
        hits.sort_unstable();
        hits.dedup();
        hits
    }
}

/// Whether `pattern` (normalized) could cover `path` judged by its leading literal components
/// alone: `false` only when it certainly cannot. Every path a pattern matches starts with the
/// pattern's leading components that hold no glob character (`*`, `?`, `[`, or `\\`, which
/// escapes one), each matched by itself only; so does every path below such a match. A path
/// shorter than that literal part, or differing in one of its components, is covered by
/// neither. This lets a check against many leases compile only the few globs that may matter.
pub fn may_cover(pattern: &str, path: &str) -> bool {
    let Some(literal) = literal_part(pattern) else {
        return true;
    };
    let path = path.as_bytes();
    path.starts_with(literal) && matches!(path.get(literal.len()), None | Some(b'/'))
}

/// A pattern's leading components that hold no glob character, as bytes (all of it when it
/// has none); `None` when the first component already holds one. Bytes, not chars: every glob
/// character is ASCII.
fn literal_part(pattern: &str) -> Option<&[u8]> {
    let b = pattern.as_bytes();
    match b
        .iter()
        .position(|c| matches!(c, b'*' | b'?' | b'[' | b'\\'))
    {
        None => Some(b),
        Some(i) => b[..i]
            .iter()
            .rposition(|&c| c == b'/')
            .map(|slash| &b[..slash]),
    }
}

/// Two leases conflict when different holders hold them, at least one is exclusive, and their
/// patterns [`overlap`].
pub fn conflicts(a: &Lease, b: &Lease) -> bool {
    a.holder != b.holder && (a.exclusive || b.exclusive) && overlap(&a.pattern, &b.pattern)
}

/// Whether some path could be covered by both patterns (normalized).
///
/// The rule: split each pattern into its `/` components and append an implicit `**` (a pattern
/// covers what is below what it matches). Two component lists overlap when they can be walked
/// together to their ends: a `**` may stand for no component or eat one component of the other
/// list; two ordinary components must have a common name. Two component globs (literal
/// characters, `?`, `*`, classes `[...]`) have a common name when their tokens can be walked
/// together the same way, a `*` standing for nothing or eating one character of the other, `?`
/// agreeing with any character, a literal with the same literal, and a class — conservatively
/// — with anything. So the answer is exact for patterns without classes and may only say
/// "overlap" too often with them: a conflict is never missed. Property-tested against brute
/// force over generated trees.
pub fn overlap(a: &str, b: &str) -> bool {
    // Every path either covers starts with its literal part (see `may_cover`): when neither
    // literal part is a whole-component prefix of the other, no path starts with both. This
    // answers most pairs of a busy project without walking them.
    if let (Some(la), Some(lb)) = (literal_part(a), literal_part(b)) {
        let (short, long) = if la.len() <= lb.len() {
            (la, lb)
        } else {
            (lb, la)
        };
        if !(long.starts_with(short) && matches!(long.get(short.len()), None | Some(b'/'))) {
            return false;
        }
    }
    let ca: Vec<Comp> = components(a);
    let cb: Vec<Comp> = components(b);
    let mut memo = vec![None; (ca.len() + 1) * (cb.len() + 1)];
    walk_components(&ca, &cb, 0, 0, &mut memo)
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Comp {
    Any,
    Name(Vec<Tok>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tok {
    Lit(char),
    One,
    Star,
    Class,
}

fn components(p: &str) -> Vec<Comp> {
    let mut out: Vec<Comp> = p
        .split('/')
        .map(|c| {
            if c == "**" {
                Comp::Any
            } else {
                Comp::Name(tokens(c))
            }
        })
        .collect();
    out.push(Comp::Any);
    out
}

fn tokens(c: &str) -> Vec<Tok> {
    let mut out = Vec::new();
    let mut chars = c.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '\\' => out.push(Tok::Lit(chars.next().unwrap_or('\\'))),
            '?' => out.push(Tok::One),
            '*' => {
                if out.last() != Some(&Tok::Star) {
                    out.push(Tok::Star);
                }
            }
            '[' => {
                // To the closing bracket; a `]` first in the class is a member.
                let mut first = true;
                for m in chars.by_ref() {
                    if m == ']' && !first {
                        break;
                    }
                    first = m == '!' && first;
                }
                out.push(Tok::Class);
            }
            other => out.push(Tok::Lit(other)),
        }
    }
    out
}

fn walk_components(
    a: &[Comp],
    b: &[Comp],
    i: usize,
    j: usize,
    memo: &mut Vec<Option<bool>>,
) -> bool {
    let k = i * (b.len() + 1) + j;
    if let Some(v) = memo[k] {
        return v;
    }
    let v = match (a.get(i), b.get(j)) {
        (None, None) => true,
        (Some(Comp::Any), _) | (_, Some(Comp::Any)) => {
            let mut v = false;
            if a.get(i) == Some(&Comp::Any) {
                v = walk_components(a, b, i + 1, j, memo)
                    || (j < b.len() && walk_components(a, b, i, j + 1, memo));
            }
            if !v && b.get(j) == Some(&Comp::Any) {
                v = walk_components(a, b, i, j + 1, memo)
                    || (i < a.len() && walk_components(a, b, i + 1, j, memo));
            }
            v
        }
        (Some(Comp::Name(x)), Some(Comp::Name(y))) => {
            names_meet(x, y) && walk_components(a, b, i + 1, j + 1, memo)
        }
        _ => false,
    };
    memo[k] = Some(v);
    v
}

/// Whether two component globs have a common non-empty name.
fn names_meet(x: &[Tok], y: &[Tok]) -> bool {
    let mut memo = vec![None; (x.len() + 1) * (y.len() + 1)];
    // Both matching only the empty name cannot happen: a component is never empty, and two
    // all-star components share any one-character name.
    walk_tokens(x, y, 0, 0, &mut memo)
}

fn walk_tokens(x: &[Tok], y: &[Tok], i: usize, j: usize, memo: &mut Vec<Option<bool>>) -> bool {
    let k = i * (y.len() + 1) + j;
    if let Some(v) = memo[k] {
        return v;
    }
    let v = match (x.get(i), y.get(j)) {
        (None, None) => true,
        (Some(Tok::Star), _) | (_, Some(Tok::Star)) => {
            let mut v = false;
            if x.get(i) == Some(&Tok::Star) {
                v = walk_tokens(x, y, i + 1, j, memo)
                    || (j < y.len() && walk_tokens(x, y, i, j + 1, memo));
            }
            if !v && y.get(j) == Some(&Tok::Star) {
                v = walk_tokens(x, y, i, j + 1, memo)
                    || (i < x.len() && walk_tokens(x, y, i + 1, j, memo));
            }
            v
        }
        (Some(&p), Some(&q)) => chars_meet(p, q) && walk_tokens(x, y, i + 1, j + 1, memo),
        _ => false,
    };
    memo[k] = Some(v);
    v
}

fn chars_meet(p: Tok, q: Tok) -> bool {
    match (p, q) {
        (Tok::Lit(a), Tok::Lit(b)) => a == b,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn overlaps_as_written_down() {
        for (a, b, want) in [
            ("src/api/**", "src/api/users.rs", true),
            ("src/api", "src/api/users.rs", true),
            ("src/api/*.rs", "src/**/users.rs", true),
            ("src/api/*.rs", "src/web/*.rs", false),
            ("*.md", "docs/*.md", false),
            ("**/*.md", "docs/x.md", true),
            ("a*", "*b", true),
            ("a?", "abc", false),
            ("src/[ab].rs", "src/c.rs", true),
            ("**", "anything/at/all", true),
            ("README.md", "readme.md", false),
        ] {
            assert_eq!(overlap(a, b), want, "{a} vs {b}");
            assert_eq!(overlap(b, a), want, "{b} vs {a}");
        }
    }

    #[test]
    fn patterns_are_normalized_or_refused() {
        assert_eq!(
            normalize_pattern("./src/api/").ok().as_deref(),
            Some("src/api")
        );
        assert_eq!(normalize_pattern("/x").ok().as_deref(), Some("x"));
        for bad in ["", "  ", "../x", "a/../b", "{a,b}", "a//b", "x\u{7}"] {
            assert!(normalize_pattern(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_pattern_covers_what_is_below_what_it_matches() {
        assert!(covers("src/api", "src/api/v1/users.rs"));
        assert!(covers("src/*", "src/api/v1/users.rs"));
        assert!(!covers("src/api", "src/apis/x"));
        let set = PatternSet::new(["docs/**", "src/*.rs", "src"]);
        assert_eq!(set.covering("src/main.rs"), vec![1, 2]);
        assert!(set.covering("README.md").is_empty());
    }

    fn component() -> impl Strategy<Value = String> {
        prop_oneof![
            1 => Just("**".to_owned()),
            6 => proptest::collection::vec(
                prop_oneof![Just('a'), Just('b'), Just('?'), Just('*'), Just('[')],
                1..=2
            )
            .prop_map(|cs| cs
                .into_iter()
                .map(|c| if c == '[' { "[a]".to_owned() } else { c.to_string() })
                .collect::<String>())
            .prop_filter("a lone star pair is a recursive component", |s| s != "**"),
        ]
    }

    fn pattern() -> impl Strategy<Value = String> {
        proptest::collection::vec(component(), 1..=2).prop_map(|c| c.join("/"))
    }

    /// Every path of up to four components named from `a`/`b`, one or two letters long.
    fn tree() -> Vec<String> {
        let names = ["a", "b", "aa", "ab", "ba", "bb"];
        let mut all: Vec<String> = Vec::new();
        let mut level: Vec<String> = names.iter().map(|s| (*s).to_owned()).collect();
        for _ in 0..4 {
            all.extend(level.iter().cloned());
            level = level
                .iter()
                .flat_map(|p| names.iter().map(move |n| format!("{p}/{n}")))
                .collect();
        }
        all
    }

    #[test]
    fn the_literal_part_rules_out_only_what_cannot_be_covered() {
        assert!(may_cover("src/api/**", "src/api/users.rs"));
        assert!(may_cover("src/api", "src/api"));
        assert!(!may_cover("src/api/**", "src/web/x.rs"));
        assert!(!may_cover("src/api/x.rs", "src/api"));
        assert!(!may_cover("src/api", "src/apis/x"));
        assert!(may_cover("src/*/x", "src/anything"));
        assert!(may_cover("a\\*b", "a*b"));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// `may_cover` never rules out a path the pattern covers, over literal as well as
        /// glob patterns and every path of the generated tree.
        #[test]
        fn may_cover_never_misses_a_covered_path(
            a in pattern(),
            lit in proptest::collection::vec(prop_oneof![Just("a"), Just("b"), Just("ab")], 1..=3),
        ) {
            for p in [a, lit.join("/")] {
                let Ok(g) = glob(&p) else { continue };
                let m = g.compile_matcher();
                for path in tree() {
                    if covered_by(&m, &path) {
                        prop_assert!(may_cover(&p, &path), "{} covers {} but may_cover says no", p, path);
                    }
                }
            }
        }

        /// Never misses an overlap a generated tree shows, and (without classes, which it
        /// over-approximates) never claims one the tree cannot show: two patterns of two
        /// components, each of two tokens, that meet at all meet within four components of
        /// one- or two-letter names.
        #[test]
        fn overlap_agrees_with_brute_force(a in pattern(), b in pattern()) {
            let (ga, gb) = (glob(&a), glob(&b));
            prop_assume!(ga.is_ok() && gb.is_ok());
            let (ma, mb) = match (ga, gb) {
                (Ok(x), Ok(y)) => (x.compile_matcher(), y.compile_matcher()),
                _ => return Ok(()),
            };
            let witness = tree().into_iter().find(|p| covered_by(&ma, p) && covered_by(&mb, p));
            let claimed = overlap(&a, &b);
            prop_assert_eq!(claimed, overlap(&b, &a));
            if let Some(w) = &witness {
                prop_assert!(claimed, "{} and {} both cover {} but overlap says no", a, b, w);
            } else if !a.contains('[') && !b.contains('[') {
                prop_assert!(!claimed, "{} and {} meet nowhere in the tree but overlap says yes", a, b);
            }
        }
    }
}
