//! A bounds-checked reader over the length-prefixed fields of the store's private binary
//! files (the pending cache, the search indexes). Written by hand: those formats are read on
//! every listing and search, and a general serialiser cost more than the rest of a listing of
//! a thousand messages. Every read past the end is `None`, never a panic.

use jiff::Timestamp;

pub(crate) struct Reader<'a> {
    pub(crate) buf: &'a [u8],
    pub(crate) pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    pub(crate) fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    pub(crate) fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    pub(crate) fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    pub(crate) fn u128(&mut self) -> Option<u128> {
        Some(u128::from_le_bytes(self.take(16)?.try_into().ok()?))
    }

    pub(crate) fn i128(&mut self) -> Option<i128> {
        Some(i128::from_le_bytes(self.take(16)?.try_into().ok()?))
    }

    pub(crate) fn varint(&mut self) -> Option<u32> {
        let mut v: u32 = 0;
        for shift in (0..35).step_by(7) {
            let b = self.u8()?;
            v |= u32::from(b & 0x7f).checked_shl(shift)?;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    /// The bytes of a string field, unchecked: for a field only compared or skipped.
    pub(crate) fn str_bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }

    pub(crate) fn str(&mut self) -> Option<&'a str> {
        let n = self.u32()? as usize;
        std::str::from_utf8(self.take(n)?).ok()
    }

    pub(crate) fn opt_str(&mut self) -> Option<Option<&'a str>> {
        match self.take(1)? {
            [0] => Some(None),
            _ => self.str().map(Some),
        }
    }

    pub(crate) fn time(&mut self) -> Option<Timestamp> {
        Timestamp::from_millisecond(self.u64()? as i64).ok()
    }
}
