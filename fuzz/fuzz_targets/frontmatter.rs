//! The frontmatter parser never panics, and what the canonical writer makes of a parsed
//! header (its identifier-like keys) parses back to the same fields and the same body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mailroom_store_fs::frontmatter::{self, Value, Writer};

fn plain_key(k: &str) -> bool {
    let mut chars = k.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fuzz_target!(|data: &[u8]| {
    let Ok(doc) = frontmatter::parse(data) else {
        return;
    };
    let kept: Vec<(String, Value)> = doc
        .fields
        .iter()
        .filter(|(k, _)| plain_key(k))
        .cloned()
        .collect();
    let mut w = Writer::new();
    for (k, v) in &kept {
        match v {
            Value::Text(s) => w.text(k, s),
            Value::List(items) => w.list(k, items),
        };
    }
    let text = w.finish(&doc.body);
    let again = frontmatter::parse(text.as_bytes()).expect("the writer's output parses");
    assert_eq!(
        again.fields, kept,
        "fields changed through the writer: {text:?}"
    );
    assert_eq!(again.body, doc.body, "the body changed through the writer");
});
