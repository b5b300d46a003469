//! Decoding a message file never panics, and every message it yields survives the store's
//! own round trip: encode, decode again, same message, no warnings.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mailroom_core::{Address, MessageId};

fuzz_target!(|data: &[u8]| {
    let owner = Address::parse_canonical("owner@fuzz").expect("a valid address");
    // The first byte chooses whether the file is named after an id (as in a mailbox) or not.
    let (file_id, bytes) = match data.split_first() {
        Some((b, rest)) if b % 2 == 0 => (MessageId::parse("01KB3S9XGZ6V2Q1C1ZQ8D2M4TR"), rest),
        Some((_, rest)) => (None, rest),
        None => return,
    };
    let Ok((message, _warnings)) = mailroom_store_fs::decode_message(bytes, file_id, &owner) else {
        return;
    };
    let text = mailroom_store_fs::encode_message(&message);
    let (again, warnings) =
        mailroom_store_fs::decode_message(text.as_bytes(), Some(message.id), &owner)
            .unwrap_or_else(|e| panic!("an encoded message does not decode ({e}): {text:?}"));
    assert_eq!(
        again, message,
        "the round trip changed the message: {text:?}"
    );
    assert_eq!(
        warnings,
        Vec::<String>::new(),
        "an encoded message needs warnings: {text:?}"
    );
});
