//! Text rules shared by every interface: one-line fields, default subjects, the body limit.
//!
//! Whatever reaches a frontmatter line or a framing line goes through [`clean_line`] first, so
//! no field can carry a line break or a control character.

/// Largest body accepted, in bytes (1 MiB), by every interface.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Longest subject kept, in characters; longer ones are refused.
pub const MAX_SUBJECT_CHARS: usize = 200;

/// Length at which a subject taken from the body's first line is cut.
pub const DEFAULT_SUBJECT_CHARS: usize = 72;

/// Whether `s` is already what [`clean_line`] would make of it.
pub fn is_clean_line(s: &str) -> bool {
    !s.starts_with(' ')
        && !s.ends_with(' ')
        && !s.contains("  ")
        && !s
            .chars()
            .any(|c| c.is_control() || (c.is_whitespace() && c != ' '))
}

/// Collapses every run of CR, LF, tabs and other control characters into one space and trims
/// the ends.
pub fn clean_line(s: &str) -> String {
    if is_clean_line(s) {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len());
    let mut gap = false;
    for c in s.chars() {
        if c.is_control() || c.is_whitespace() {
            gap = true;
        } else {
            if gap && !out.is_empty() {
                out.push(' ');
            }
            gap = false;
            out.push(c);
        }
    }
    out
}

/// The subject used when none is given: the body's first non-blank line, cut at
/// [`DEFAULT_SUBJECT_CHARS`] characters (with an ellipsis when cut).
pub fn default_subject(body: &str) -> String {
    let line = body
        .lines()
        .map(clean_line)
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    if line.chars().count() <= DEFAULT_SUBJECT_CHARS {
        return line;
    }
    let mut cut: String = line.chars().take(DEFAULT_SUBJECT_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// The subject of a reply: `Re: ` added once, never doubled.
pub fn reply_subject(original: &str) -> String {
    let lower = original.to_ascii_lowercase();
    if lower.starts_with("re:") {
        original.to_owned()
    } else {
        format!("Re: {original}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_line_collapses_breaks_and_controls() {
        assert_eq!(clean_line("a\r\nb\tc\u{1b}[31m d"), "a b c [31m d");
        assert_eq!(clean_line("  ---\n---  "), "--- ---");
        assert_eq!(clean_line("\n\n"), "");
    }

    #[test]
    fn default_subject_takes_the_first_line_and_cuts_it() {
        assert_eq!(default_subject("\n\n  Hello there\nmore"), "Hello there");
        let long = "x".repeat(100);
        let s = default_subject(&long);
        assert_eq!(s.chars().count(), 72);
        assert!(s.ends_with('…'));
        assert_eq!(default_subject(""), "");
    }

    #[test]
    fn reply_subject_is_not_doubled() {
        assert_eq!(reply_subject("Build broke"), "Re: Build broke");
        assert_eq!(reply_subject("Re: Build broke"), "Re: Build broke");
        assert_eq!(reply_subject("RE: x"), "RE: x");
    }
}
