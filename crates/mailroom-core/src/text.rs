//! Text rules shared by every interface: one-line fields, default subjects, the body limit,
//! and what a reader may be shown.
//!
//! Whatever reaches a frontmatter line goes through [`clean_line`] first, so no field can carry
//! a line break or a control character. Whatever reaches a reader (a terminal, a model) goes
//! through [`write_field`] (one-line fields) or [`write_body_line`] (body text), so no text from
//! a message can move a cursor, end a line for any reader, or hide or reorder what follows.

use std::fmt::Write;

/// Largest body accepted, in bytes (1 MiB), by every interface.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Longest subject kept, in characters; longer ones are refused.
pub const MAX_SUBJECT_CHARS: usize = 200;

/// Longest member role accepted, in characters: a role is one line ("backend", "reviewer"),
/// and a roster file must stay small enough for every reader to read it.
pub const MAX_ROLE_CHARS: usize = 200;

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

/// Longest one-line field shown by [`write_field`], in characters: the subject limit, so only a
/// hand-written file is ever cut.
pub const MAX_FIELD_CHARS: usize = MAX_SUBJECT_CHARS;

/// Whether some reader ends a line at `c`: LF and CR, VT and FF, the file, group and record
/// separators, NEL, and the Unicode line and paragraph separators (Python's `splitlines`, and
/// every reader that follows Unicode's line-breaking rules, split at each of them).
pub fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{b}' | '\u{c}' | '\u{1c}'..='\u{1e}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// Whether `c` reorders the text after it (bidi embeddings, overrides and isolates): a reader
/// would see the rest of the line in another order than a program reads it.
fn is_reordering(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Whether `c` is invisible yet changes what a reader sees or a program reads: bidi controls
/// and marks, zero-width characters, invisible operators, and the tag characters (text that
/// shows nothing but reaches a model).
pub fn is_invisible(c: char) -> bool {
    is_reordering(c)
        || matches!(
            c,
            '\u{200b}'..='\u{200f}'
                | '\u{061c}'
                | '\u{180e}'
                | '\u{2060}'..='\u{2064}'
                | '\u{206a}'..='\u{206f}'
                | '\u{feff}'
                | '\u{fff9}'..='\u{fffb}'
                | '\u{e0000}'..='\u{e007f}'
        )
}

/// Whether a script needs `c` inside words, so body text keeps it: the zero-width non-joiner
/// and joiner (Persian, Indic scripts, emoji sequences) and the bidi marks (right-to-left
/// text). None of them breaks a line, reorders text across a line, or starts one: a body line
/// always starts with the renderer's `> `.
fn is_needed_by_scripts(c: char) -> bool {
    matches!(c, '\u{200c}'..='\u{200f}' | '\u{061c}')
}

/// Whether body text shows `c` escaped: every C0 and C1 control but newline and tab (they move
/// the cursor, erase lines, or write the clipboard), every other line break, and every
/// invisible character ([`is_invisible`]: bidi embeddings, overrides and isolates, the zero-width
/// space, U+FEFF, word joiners and invisible operators, tag characters) but the few scripts
/// need ([`is_needed_by_scripts`]).
pub fn is_escaped_in_body(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || (is_line_break(c) && c != '\n')
        || (is_invisible(c) && !is_needed_by_scripts(c))
}

/// `json` (serde_json's compact output) with every character [`is_escaped_in_body`] names
/// written as a JSON `\uXXXX` escape: the same JSON value, but no string in it can end a line,
/// move a cursor or reorder text for a model or a terminal that reads the text as it is (serde
/// escapes only the C0 controls, leaving NEL, U+2028, U+2029 and bidi controls raw).
pub fn visible_json(json: String) -> String {
    // Printable ASCII (most results) holds nothing to escape: no look at each character.
    if json.bytes().all(|b| (0x20..0x7f).contains(&b)) || !json.chars().any(is_escaped_in_body) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if is_escaped_in_body(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Writes `c` visibly, as `\u{1b}`.
fn write_escape<W: Write + ?Sized>(out: &mut W, c: char) -> std::fmt::Result {
    write!(out, "\\u{{{:x}}}", u32::from(c))
}

/// Writes the one-line field `s` as a reader is shown it: [`clean_line`]'s rule (every run of
/// line breaks, controls and whitespace is one space, the ends trimmed), invisible characters
/// escaped (`\u{202e}`), cut at `max` characters with an ellipsis.
pub fn write_field<W: Write + ?Sized>(out: &mut W, s: &str, max: usize) -> std::fmt::Result {
    // Printable ASCII with single inner spaces (most subjects and names) is shown as it is.
    let b = s.as_bytes();
    if b.len() <= max
        && b.iter().all(|c| (b' '..=b'~').contains(c))
        && b.first() != Some(&b' ')
        && b.last() != Some(&b' ')
        && !s.contains("  ")
    {
        return out.write_str(s);
    }
    write_field_general(out, s, max)
}

/// [`write_field`] for any text.
fn write_field_general<W: Write + ?Sized>(out: &mut W, s: &str, max: usize) -> std::fmt::Result {
    if s.len() <= max && is_clean_line(s) && !s.chars().any(is_invisible) {
        return out.write_str(s);
    }
    let mut shown = 0;
    let mut gap = false;
    for c in s.chars() {
        if c.is_control() || c.is_whitespace() {
            gap = true;
            continue;
        }
        if shown >= max {
            return out.write_char('…');
        }
        if gap && shown > 0 {
            out.write_char(' ')?;
            shown += 1;
        }
        gap = false;
        if is_invisible(c) {
            write_escape(out, c)?;
        } else {
            out.write_char(c)?;
        }
        shown += 1;
    }
    Ok(())
}

/// [`write_field`] into a string, at most [`MAX_FIELD_CHARS`] characters.
pub fn field(s: &str) -> String {
    let mut out = String::new();
    let _ = write_field(&mut out, s, MAX_FIELD_CHARS);
    out
}

/// Writes one line of body text (split at `\n` by the caller) with every character a reader
/// could take as a control, a line break or a reordering escaped (`\u{1b}`, `\u{2028}`); a CR
/// ending the line is a line ending and is dropped.
pub fn write_body_line<W: Write + ?Sized>(out: &mut W, line: &str) -> std::fmt::Result {
    let line = line.strip_suffix('\r').unwrap_or(line);
    // Printable ASCII and tabs are never escaped: most lines are only that.
    if line
        .bytes()
        .all(|b| (b' '..=b'~').contains(&b) || b == b'\t')
    {
        return out.write_str(line);
    }
    let mut rest = line;
    while let Some(at) = rest.find(|c: char| is_escaped_in_body(c)) {
        out.write_str(&rest[..at])?;
        let c = rest[at..].chars().next().unwrap_or_default();
        write_escape(out, c)?;
        rest = &rest[at + c.len_utf8()..];
    }
    out.write_str(rest)
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

/// An error sentence as one visible line: errors quote user input, and a newline, a Unicode
/// line break, an escape sequence or a bidi override in it must not split the sentence, reach
/// a terminal raw, reorder it, or pose as a line of framing to a model.
pub fn escape_controls(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            if c.is_control() || is_line_break(c) || is_invisible(c) {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
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
    fn fields_are_one_line_with_invisible_characters_shown_and_a_length_cap() {
        assert_eq!(field("a\u{2028}b\u{85}c\u{1b}[2J"), "a b c [2J");
        assert_eq!(
            field("\u{202e}gnp.exe\u{2069}\u{200d}\u{e0041}"),
            "\\u{202e}gnp.exe\\u{2069}\\u{200d}\\u{e0041}"
        );
        let long = "x".repeat(MAX_FIELD_CHARS + 1);
        assert_eq!(field(&long), format!("{}…", "x".repeat(MAX_FIELD_CHARS)));
        assert_eq!(field("plain subject"), "plain subject");
    }

    #[test]
    fn body_text_escapes_invisibles_but_keeps_what_scripts_need() {
        let mut out = String::new();
        write_body_line(
            &mut out,
            "a\u{200b}b\u{feff}c\u{2060}d\u{202e}e\u{2066}f\u{200c}g\u{200d}h\u{200f}i",
        )
        .unwrap();
        assert_eq!(
            out,
            "a\\u{200b}b\\u{feff}c\\u{2060}d\\u{202e}e\\u{2066}f\u{200c}g\u{200d}h\u{200f}i"
        );
    }

    #[test]
    fn visible_json_is_the_same_value_with_no_raw_break_or_invisible() {
        let value =
            serde_json::json!({"s": "a\u{2028}b\u{85}c\u{202e}d\u{e0041}e\u{1b}f\u{200d}g\n"});
        let raw = value.to_string();
        assert!(raw.contains('\u{2028}') && raw.contains('\u{85}'));
        let shown = visible_json(raw.clone());
        assert!(!shown.chars().any(is_escaped_in_body), "{shown}");
        assert!(
            shown.contains("\\u2028") && shown.contains("\\udb40\\udc41"),
            "{shown}"
        );
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&shown).unwrap(),
            value
        );
        assert_eq!(visible_json("{\"a\":1}".to_owned()), "{\"a\":1}");
        // DEL is ASCII but a control: serde leaves it raw, the text does not.
        assert_eq!(
            visible_json("{\"a\":\"\u{7f}\"}".to_owned()),
            "{\"a\":\"\\u007f\"}"
        );
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

    proptest::proptest! {
        /// The ASCII fast path of a field writes what the general path writes.
        #[test]
        fn the_ascii_fast_path_of_a_field_shows_what_the_general_path_shows(
            s in "[ -~\t]{0,12}|[ a-z]{0,90}",
            max in 0usize..100,
        ) {
            let mut fast = String::new();
            write_field(&mut fast, &s, max).unwrap();
            let mut general = String::new();
            write_field_general(&mut general, &s, max).unwrap();
            proptest::prop_assert_eq!(fast, general);
        }
    }
}
