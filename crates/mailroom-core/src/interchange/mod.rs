//! The formats of the systems mailroom replaces, as pure text ⇄ record conversions: the
//! mailbox protocol's `mailbox.md` and m_AI_l's mailbox files. Reading them never fails as a
//! whole: what can be recovered is, and every line that cannot is reported with its number.

pub mod m_ai_l;
pub mod mailbox_md;

/// A problem found while reading a file, at a 1-based line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub line: usize,
    pub message: String,
}

/// A stable 128-bit hash of some text, for ids derived from content (re-imports must give the
/// same id on every machine and every version, which std's hashers do not promise). FNV-1a,
/// written out because it is eight lines and no dependency is worth it.
pub fn stable_hash(parts: &[&str]) -> u128 {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013B;
    let mut h = OFFSET;
    for part in parts {
        for b in part.bytes().chain(std::iter::once(0xff)) {
            h ^= u128::from(b);
            h = h.wrapping_mul(PRIME);
        }
    }
    h
}

#[cfg(test)]
mod tests {
    #[test]
    fn stable_hash_is_stable_and_separates_parts() {
        assert_eq!(super::stable_hash(&["a"]), super::stable_hash(&["a"]));
        assert_ne!(
            super::stable_hash(&["ab", "c"]),
            super::stable_hash(&["a", "bc"])
        );
        // Pinned to values computed outside this code (FNV-1a 128 of "mailroom" then the 0xff
        // separator): a change here would duplicate every re-imported message.
        assert_eq!(
            format!("{:032x}", super::stable_hash(&["mailroom"])),
            "cbe1d2823605cd6b410b94f220825abe"
        );
        assert_eq!(
            format!("{:032x}", super::stable_hash(&[])),
            "6c62272e07bb014262b821756295c58d",
            "no input leaves FNV's offset basis"
        );
    }
}
