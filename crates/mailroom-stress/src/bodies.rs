//! The messages the harness sends: every body is a pure function of its sender, its sequence
//! number and its revision, so any copy found later can be checked byte for byte.
//!
//! Invariant: a body's first line is its marker (`stress <from> #<seq> rev <rev>`), and
//! [`parse_marker`] + [`body`] regenerate exactly what was sent; a torn or mixed-up copy can
//! never pass [`matches`].

use crate::rng::Rng;

/// Which send a body belongs to: its sender and that sender's sequence number.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Marker {
    pub from: String,
    pub seq: u64,
}

impl std::fmt::Display for Marker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} #{}", self.from, self.seq)
    }
}

const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789 .,;:-_()[]";

/// The body of revision `rev` of the send `m`: a few hundred bytes to a few kilobytes.
pub fn body(m: &Marker, rev: u32) -> String {
    let mut rng = Rng::derive(0x6d61_696c, &[fnv(&m.from), m.seq, u64::from(rev)]);
    let lines = 2 + rng.below(60);
    let mut out = format!("stress {} #{} rev {rev}\n", m.from, m.seq);
    for n in 0..lines {
        let width = 10 + rng.below(90) as usize;
        let text: String = (0..width)
            .map(|_| char::from(ALPHABET[rng.below(ALPHABET.len() as u64) as usize]))
            .collect();
        out.push_str(&format!("{n}: {text}\n"));
    }
    out.push_str(&format!("end of {} #{} rev {rev}\n", m.from, m.seq));
    out
}

/// The subject every revision of `m` carries.
pub fn subject(m: &Marker) -> String {
    format!("stress {m}")
}

/// The marker and revision a body claims to be (its first line), if it is one of ours.
pub fn parse_marker(body: &str) -> Option<(Marker, u32)> {
    let first = body.lines().next()?;
    let rest = first.strip_prefix("stress ")?;
    let (from, rest) = rest.split_once(" #")?;
    let (seq, rev) = rest.split_once(" rev ")?;
    Some((
        Marker {
            from: from.to_owned(),
            seq: seq.parse().ok()?,
        },
        rev.parse().ok()?,
    ))
}

/// True when `text` is exactly revision `rev` of `m`.
pub fn matches(text: &str, m: &Marker, rev: u32) -> bool {
    text == body(m, rev)
}

/// What a CORRECTION's body ends with: the corrected text (revision 2).
pub fn correction_tail(m: &Marker) -> String {
    format!("The corrected text:\n\n{}", body(m, 2))
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_names_its_send_and_regenerates_exactly() {
        let m = Marker {
            from: "s1@stress".into(),
            seq: 42,
        };
        let b = body(&m, 2);
        assert_eq!(parse_marker(&b), Some((m.clone(), 2)));
        assert!(matches(&b, &m, 2));
        assert!(!matches(&b[..b.len() - 1], &m, 2));
        assert_ne!(body(&m, 1), b);
    }
}
