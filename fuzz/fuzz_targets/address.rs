//! Names and addresses: parsing never panics, an accepted name is a safe single path
//! component, and every accepted address prints to a string that parses back to it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mailroom_core::{Address, AddressSpec, Name};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(n) = Name::parse(s) {
        assert_eq!(n.as_str(), s);
        assert!(n.as_str().len() <= 64, "a name longer than 64 bytes");
        assert!(
            !n.as_str().contains(['/', '\\', '\0']) && !n.as_str().starts_with(['.', '_', '-']),
            "a name that is not a safe path component: {s:?}"
        );
    }
    if let Ok(spec) = AddressSpec::parse(s) {
        assert_eq!(AddressSpec::parse(&spec.to_string()), Ok(spec));
    }
    if let Ok(a) = Address::parse_canonical(s) {
        assert_eq!(Address::parse_canonical(&a.to_string()), Ok(a));
    }
});
