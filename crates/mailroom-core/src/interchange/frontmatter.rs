//! Reading a `---` frontmatter header of `key: value` lines followed by a body: mailroom's own
//! message files and repo-mailbox's are both written so.
//!
//! Invariant: reading never fails on content it can make sense of, and a body is returned
//! verbatim. The common shape (one `key: value` per line, values bare or JSON-quoted) is read by
//! a fast path; anything else a person could write (YAML quoting, block lists) by a full YAML
//! parser. Writing is the store's business (`mailroom_store_fs::frontmatter::Writer`).

/// A header field's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Text(String),
    List(Vec<String>),
}

impl Value {
    /// The value as one string (a list's items joined by ", ").
    pub fn text(&self) -> String {
        match self {
            Value::Text(s) => s.clone(),
            Value::List(items) => items.join(", "),
        }
    }

    /// The value as a list (a single text is a one-item list; an empty text is none).
    pub fn list(&self) -> Vec<String> {
        match self {
            Value::Text(s) if s.trim().is_empty() => vec![],
            Value::Text(s) => s.split(',').map(|p| p.trim().to_owned()).collect(),
            Value::List(items) => items.clone(),
        }
    }
}

/// A parsed document: header fields in order, and the body.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Doc {
    pub fields: Vec<(String, Value)>,
    pub body: String,
}

impl Doc {
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn text(&self, key: &str) -> Option<String> {
        self.get(key).map(Value::text)
    }
}

/// Why a document could not be read at all.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("is not UTF-8 text")]
    NotUtf8,
    #[error("does not start with a '---' frontmatter line")]
    NoHeader,
    #[error("has no closing '---' line after its header (torn or truncated)")]
    Unterminated,
    #[error("has a header that is not valid YAML: {0}")]
    BadYaml(String),
}

/// Parses a document; tolerant of hand-written headers.
pub fn parse(bytes: &[u8]) -> Result<Doc, ParseError> {
    let text = std::str::from_utf8(bytes).map_err(|_| ParseError::NotUtf8)?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or(ParseError::NoHeader)?;
    let (header, body) = split_header(rest).ok_or(ParseError::Unterminated)?;
    let fields = match fast_fields(header) {
        Some(f) => f,
        None => yaml_fields(header)?,
    };
    Ok(Doc {
        fields,
        body: body.to_owned(),
    })
}

/// Splits at the first line that is exactly `---`.
fn split_header(rest: &str) -> Option<(&str, &str)> {
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare == "---" && line.ends_with('\n') {
            return Some((&rest[..at], &rest[at + line.len()..]));
        }
        if bare == "---" {
            // `---` at the very end without a newline: an empty body.
            return Some((&rest[..at], ""));
        }
        at += line.len();
    }
    None
}

/// The common case: one `key: value` per line. `None` hands over to the YAML parser.
fn fast_fields(header: &str) -> Option<Vec<(String, Value)>> {
    let mut fields = Vec::new();
    for line in header.lines() {
        let line = line.trim_end();
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if line.starts_with([' ', '\t', '-']) {
            return None;
        }
        let (key, value) = line.split_once(':')?;
        let value = value.trim();
        let value = if value.starts_with('"') {
            Value::Text(serde_json::from_str(value).ok()?)
        } else if value.starts_with('[') {
            Value::List(serde_json::from_str(value).ok()?)
        } else if value.starts_with(['\'', '|', '>', '{', '&', '*', '!']) {
            return None;
        } else {
            Value::Text(value.to_owned())
        };
        fields.push((key.trim().to_owned(), value));
    }
    Some(fields)
}

fn yaml_fields(header: &str) -> Result<Vec<(String, Value)>, ParseError> {
    use yaml_serde::Value as Y;
    let parsed: Y = yaml_serde::from_str(header).map_err(|e| ParseError::BadYaml(e.to_string()))?;
    let Y::Mapping(map) = parsed else {
        return Err(ParseError::BadYaml(
            "the header is not a mapping of keys to values".into(),
        ));
    };
    fn scalar(v: &Y) -> String {
        match v {
            Y::String(s) => s.clone(),
            Y::Bool(b) => b.to_string(),
            Y::Number(n) => n.to_string(),
            Y::Null => String::new(),
            other => yaml_serde::to_string(other)
                .unwrap_or_default()
                .trim()
                .to_owned(),
        }
    }
    Ok(map
        .iter()
        .map(|(k, v)| {
            let value = match v {
                Y::Sequence(items) => Value::List(items.iter().map(scalar).collect()),
                other => Value::Text(scalar(other)),
            };
            (scalar(k), value)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reads_hand_written_yaml() {
        let text = "---\nfrom: bob@web\nsubject: 'it''s here'\nto:\n  - a@b\n  - c@d\n---\nhi\n";
        let d = parse(text.as_bytes()).unwrap();
        assert_eq!(d.text("subject").as_deref(), Some("it's here"));
        assert_eq!(
            d.get("to"),
            Some(&Value::List(vec!["a@b".into(), "c@d".into()]))
        );
        assert_eq!(d.body, "hi\n");
        let plain = parse(b"---\r\nsubject: Re: plain words\r\n---\r\nbody").unwrap();
        assert_eq!(plain.text("subject").as_deref(), Some("Re: plain words"));
    }

    #[test]
    fn damaged_documents_say_why() {
        assert_eq!(parse(b"hello"), Err(ParseError::NoHeader));
        assert_eq!(parse(b"---\nid: 1\nsubj"), Err(ParseError::Unterminated));
        assert_eq!(parse(b"---\n\xff\n---\n"), Err(ParseError::NotUtf8));
        assert!(matches!(
            parse(b"---\nto: [unclosed\n  - x\n---\n"),
            Err(ParseError::BadYaml(_))
        ));
        assert_eq!(parse(b"---\n---").map(|d| d.body), Ok(String::new()));
    }

    proptest! {
        #[test]
        fn any_bytes_are_read_or_refused_without_a_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = parse(&bytes);
        }

        #[test]
        fn a_body_after_the_header_comes_back_verbatim(
            subject in "[A-Za-z0-9][A-Za-z0-9 ,.!?]{0,40}",
            body in "(?s)(.|---\n|\n---|\r\n){0,200}",
        ) {
            let text = format!("---\nfrom: web\nsubject: {subject}\n---\n{body}");
            let d = parse(text.as_bytes()).unwrap();
            prop_assert_eq!(d.text("subject"), Some(subject.trim_end().to_owned()));
            prop_assert_eq!(d.body, body);
        }
    }
}
