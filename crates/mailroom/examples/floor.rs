//! The floor a durable send is measured against: a process that only creates a file in a temp
//! directory, fdatasyncs it, renames it into place and fsyncs the directory — the least work
//! any crash-safe write can do. Usage: `floor DIR` (DIR must exist, with `tmp/` and `new/`).

use std::fs::{self, File};
use std::io::Write;

fn main() -> std::io::Result<()> {
    let dir = std::env::args_os()
        .nth(1)
        .map(std::path::PathBuf::from)
        .ok_or_else(|| std::io::Error::other("usage: floor DIR"))?;
    let name = format!(
        "{}.{}",
        std::process::id(),
        std::time::UNIX_EPOCH
            .elapsed()
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    );
    let tmp = dir.join("tmp").join(&name);
    let mut f = File::create(&tmp)?;
    f.write_all(b"---\nfrom: a@default\n---\nhello\n")?;
    f.sync_data()?;
    let new = dir.join("new");
    fs::rename(&tmp, new.join(&name))?;
    File::open(&new)?.sync_all()?;
    Ok(())
}
