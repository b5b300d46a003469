//! Reading m_AI_l mailbox files and Markdown tables never panics, and every problem names a
//! line that exists.
#![no_main]

use jiff::Timestamp;
use libfuzzer_sys::fuzz_target;
use mailroom_core::interchange::m_ai_l;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let lines = text.lines().count().max(1);
    let parsed = m_ai_l::parse(text, Timestamp::UNIX_EPOCH);
    let outbox = m_ai_l::parse_outbox(text, Timestamp::UNIX_EPOCH);
    for p in parsed.problems.iter().chain(&outbox.problems) {
        assert!(
            p.line >= 1 && p.line <= lines,
            "problem at line {} of {lines}",
            p.line
        );
    }
    for row in m_ai_l::project_rows(text) {
        assert!(row.line >= 1 && row.line <= lines, "project row at line {}", row.line);
    }
    for (line, _cells) in m_ai_l::table_rows(text) {
        assert!(
            line >= 1 && line <= lines,
            "table row at line {line} of {lines}"
        );
    }
});
