//! Which existing name a new one is most likely a mistyping of: the rule behind every "did you
//! mean" that refuses a close new name.

use crate::name::Name;

/// The existing name `new` is most likely a typo of, if any: two neighbours swapped (`wbe`
/// for `web`), or one edit away in names of five characters or more (two edits from nine).
/// Short names are left alone (`r2` beside `s2`, `bob` beside `rob` are different agents),
/// and so are names that differ only in their numbers (`agent-2` beside `agent-12`: a series).
pub(crate) fn closest<'a>(new: &Name, existing: &'a [Name]) -> Option<&'a Name> {
    let want = new.as_str().to_ascii_lowercase();
    let series = |s: &str| {
        let mut out = String::new();
        for c in s.chars() {
            if !c.is_ascii_digit() {
                out.push(c);
            } else if !out.ends_with('#') {
                out.push('#');
            }
        }
        out
    };
    existing
        .iter()
        .filter(|e| *e != new)
        .filter_map(|e| {
            // At most two edits apart, so at most two characters longer or shorter: most
            // names are ruled out before anything is computed.
            if e.as_str().len().abs_diff(want.len()) > 2 {
                return None;
            }
            let have = e.as_str().to_ascii_lowercase();
            if series(&want) == series(&have) {
                return None;
            }
            let shorter = want.len().min(have.len());
            let limit = match shorter {
                0..5 => 0,
                5..9 => 1,
                _ => 2,
            };
            let d = edit_distance(&want, &have);
            let typo = d <= limit || (shorter >= 3 && is_swap(&want, &have));
            typo.then_some((d, e))
        })
        .min_by_key(|(d, e)| (*d, e.as_str().to_ascii_lowercase()))
        .map(|(_, e)| e)
}

/// True when `a` is `b` with two neighbouring characters swapped.
fn is_swap(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.len() != b.len() {
        return false;
    }
    let diff: Vec<usize> = (0..a.len()).filter(|&i| a[i] != b[i]).collect();
    matches!(diff.as_slice(), [i, j] if *j == i + 1 && a[*i] == b[*j] && a[*j] == b[*i])
}

/// Edit distance where an insertion, a deletion, a substitution or a swap of two neighbours
/// is one edit (optimal string alignment); small inputs only (names are at most 64 bytes).
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_edits() {
        assert_eq!(edit_distance("bob", "bob"), 0);
        assert_eq!(edit_distance("bbo", "bob"), 1);
        assert_eq!(edit_distance("wbe", "web"), 1);
        assert_eq!(edit_distance("backend", "backnd"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn a_close_new_name_is_a_typo_but_a_numbered_series_is_not() {
        let names =
            |v: &[&str]| -> Vec<Name> { v.iter().map(|s| Name::parse(s).unwrap()).collect() };
        let have = names(&["web", "backend", "agent-1", "api"]);
        let close = |n: &str| closest(&Name::parse(n).unwrap(), &have).map(|c| c.to_string());
        assert_eq!(close("wbe"), Some("web".into()));
        assert_eq!(close("backnd"), Some("backend".into()));
        assert_eq!(close("bakcend"), Some("backend".into()));
        assert_eq!(close("agent-2"), None);
        assert_eq!(close("agent-12"), None);
        assert_eq!(
            close("WEB"),
            None,
            "the same name in another case is that name"
        );
        assert_eq!(close("frontend"), None);
        assert_eq!(close("ops"), None);
        assert_eq!(
            close("apx"),
            None,
            "short names are different agents, not typos"
        );
        assert_eq!(
            close("aip"),
            Some("api".into()),
            "a swap is a typo at any length"
        );
        let pair = names(&["s2", "rob"]);
        let near = |n: &str| closest(&Name::parse(n).unwrap(), &pair);
        assert_eq!(near("r2"), None);
        assert_eq!(near("bob"), None);
    }
}
