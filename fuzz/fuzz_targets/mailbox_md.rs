//! Reading a `mailbox.md` never panics, and rendering is a fixed point: what `render` writes
//! for the entries read parses back to as many entries, which render to the same text.
#![no_main]

use jiff::Timestamp;
use libfuzzer_sys::fuzz_target;
use mailroom_core::interchange::mailbox_md;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let first = mailbox_md::parse(text, Timestamp::UNIX_EPOCH);
    let rendered = mailbox_md::render(&first.entries);
    let second = mailbox_md::parse(&rendered, Timestamp::UNIX_EPOCH);
    assert_eq!(
        second.entries.len(),
        first.entries.len(),
        "render → parse changed the number of entries: {rendered:?}"
    );
    let again = mailbox_md::render(&second.entries);
    assert_eq!(again, rendered, "render → parse → render is not stable");
});
