//! The on-disk text format: a `---` frontmatter header of `key: value` lines, then the body
//! verbatim (see docs/FORMAT.md).
//!
//! Invariant: what [`Writer`] produces, [`parse`] reads back exactly; header values are one
//! line each (JSON-quoted where they could hold anything), so no value can end the header and
//! no body can become header. The reader is the core's (`interchange::frontmatter`, which also
//! reads repo-mailbox's files), re-exported here: one reader for every frontmatter file.

use std::fmt::Write as _;

pub use mailroom_core::interchange::frontmatter::{Doc, ParseError, Value, parse};

/// Builds a header in the canonical form.
#[derive(Debug, Default)]
pub struct Writer {
    out: String,
}

impl Writer {
    pub fn new() -> Writer {
        Writer {
            out: String::from("---\n"),
        }
    }

    /// A value known to be a plain token (ids, names, enums, dates): written bare.
    pub fn token(&mut self, key: &str, value: &str) -> &mut Writer {
        debug_assert!(
            is_plain_token(value),
            "{key}: {value:?} is not a plain token"
        );
        if is_plain_token(value) {
            let _ = writeln!(self.out, "{key}: {value}");
        } else {
            self.text(key, value);
        }
        self
    }

    /// Free text: written as a JSON string, which is also a YAML double-quoted string.
    pub fn text(&mut self, key: &str, value: &str) -> &mut Writer {
        let _ = writeln!(self.out, "{key}: {}", quote(value));
        self
    }

    pub fn list(&mut self, key: &str, values: &[String]) -> &mut Writer {
        let items: Vec<String> = values.iter().map(|v| quote(v)).collect();
        let _ = writeln!(self.out, "{key}: [{}]", items.join(", "));
        self
    }

    /// Closes the header and appends the body verbatim.
    pub fn finish(mut self, body: &str) -> String {
        self.out.push_str("---\n");
        self.out.push_str(body);
        self.out
    }
}

fn quote(s: &str) -> String {
    // Serialising a str cannot fail; the fallback keeps the header well-formed regardless.
    serde_json::to_string(s).unwrap_or_else(|_| String::from("\"\""))
}

fn is_plain_token(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@' | ':' | '+'))
        && !s.starts_with(['-', ':', '@'])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn doc(fields: &[(&str, Value)], body: &str) -> Doc {
        Doc {
            fields: fields
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
            body: body.to_owned(),
        }
    }

    #[test]
    fn reads_what_it_writes() {
        let mut w = Writer::new();
        w.token("id", "01ABC")
            .text("subject", "a: \"b\"\n---")
            .list("to", &["x@y".into()]);
        let text = w.finish("---\nbody: not header\n---\n");
        assert_eq!(
            parse(text.as_bytes()),
            Ok(doc(
                &[
                    ("id", Value::Text("01ABC".into())),
                    ("subject", Value::Text("a: \"b\"\n---".into())),
                    ("to", Value::List(vec!["x@y".into()])),
                ],
                "---\nbody: not header\n---\n"
            ))
        );
    }

    proptest! {
        #[test]
        fn any_text_round_trips_and_body_never_becomes_header(
            subject in "(?s).{0,80}",
            body in "(?s)(.|---\n|\n---|> |\r\n){0,200}",
            items in proptest::collection::vec("(?s).{0,20}", 0..4),
        ) {
            let mut w = Writer::new();
            w.token("id", "01X").text("subject", &subject).list("to", &items);
            let text = w.finish(&body);
            let d = parse(text.as_bytes()).unwrap();
            prop_assert_eq!(d.fields.len(), 3);
            prop_assert_eq!(d.text("subject"), Some(subject));
            prop_assert_eq!(d.get("to"), Some(&Value::List(items)));
            prop_assert_eq!(d.body, body);
        }
    }
}
