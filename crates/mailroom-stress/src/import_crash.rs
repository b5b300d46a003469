//! Importers under `kill -9`: an import killed at a random instant, then `doctor --fix`, then
//! the same import run again to completion, must leave exactly what one uninterrupted import
//! leaves: no message doubled, lost, torn or left in the wrong state.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::check::{Category, Problems};
use crate::rng::Rng;
use crate::runner::Mailroom;
use crate::work::Work;

/// A repo-mailbox tree: two repos with pending and archived mail, standing and retracted
/// broadcasts, and seen sets.
fn write_tree(root: &Path) -> Result<()> {
    let file = |dir: &Path,
                name: &str,
                from: &str,
                to: &str,
                subject: &str,
                body: &str|
     -> Result<()> {
        std::fs::create_dir_all(dir)?;
        std::fs::write(
            dir.join(name),
            format!(
                "---\nfrom: {from}\nto: {to}\nsubject: {subject}\ndate: 2026-03-13T10:{:02}:00Z\n---\n{body}\n",
                name.len() % 60
            ),
        )?;
        Ok(())
    };
    for (repo, other) in [("api", "web"), ("web", "api")] {
        for i in 0..12 {
            file(
                &root.join(repo).join("inbox"),
                &format!("20260313T10{i:02}00Z-i{i}-from-{other}.md"),
                other,
                repo,
                &format!("pending {i}"),
                &format!("pending body {i} for {repo}"),
            )?;
            file(
                &root.join(repo).join("archive"),
                &format!("20260312T10{i:02}00Z-a{i}-from-{other}.md"),
                other,
                repo,
                &format!("archived {i}"),
                &format!("archived body {i} for {repo}"),
            )?;
        }
    }
    let b = root.join("_broadcast");
    for i in 0..6 {
        file(
            &b.join("inbox"),
            &format!("20260313T09{i:02}00Z-b{i}-from-api.md"),
            "api",
            "broadcast",
            &format!("news {i}"),
            "news",
        )?;
    }
    for i in 0..3 {
        file(
            &b.join("archive"),
            &format!("20260311T09{i:02}00Z-r{i}-from-web.md"),
            "web",
            "broadcast",
            &format!("retracted {i}"),
            "old news",
        )?;
    }
    std::fs::create_dir_all(b.join("seen"))?;
    std::fs::write(
        b.join("seen").join("api"),
        "20260313T090000Z-b0-from-api.md\n20260313T090100Z-b1-from-api.md\n",
    )?;
    std::fs::write(
        b.join("seen").join("web"),
        "20260313T090000Z-b0-from-api.md\n20260311T090000Z-r0-from-web.md\n",
    )?;
    Ok(())
}

/// Every message copy, channel entry and seen mark in a home, by path relative to it (state
/// included, since the state is the directory); torn files are reported.
fn state_of_home(home: &Path, p: &mut Problems, label: &str) -> Result<BTreeSet<String>> {
    let mut out = BTreeSet::new();
    let mut stack = vec![home.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).with_context(|| format!("list {}", dir.display()))? {
            let path = entry?.path();
            let rel = path
                .strip_prefix(home)
                .unwrap_or(&path)
                .display()
                .to_string();
            if path.is_dir() {
                if !rel.ends_with("tmp") {
                    stack.push(path);
                }
                continue;
            }
            let keep = [
                "/unread/",
                "/read/",
                "/done/",
                "/cancelled/",
                "/entries/",
                "/retracted/",
                "/seen/",
                "/roster/",
            ]
            .iter()
            .any(|d| rel.contains(d));
            if !keep {
                continue;
            }
            if rel.ends_with(".md") && !rel.contains("/roster/") {
                let bytes = std::fs::read(&path)?;
                if let Err(e) = mailroom_store_fs::frontmatter::parse(&bytes) {
                    p.push(Category::Torn, format!("{label}: {rel} {e}"));
                }
            }
            out.insert(rel);
        }
    }
    Ok(out)
}

/// Runs `trials` killed imports; returns (faults injected, trials).
pub fn run(work: &Work, trials: usize, p: &mut Problems) -> Result<(usize, usize)> {
    let tree = work.root.join("coord");
    write_tree(&tree)?;
    let tree_arg = tree.display().to_string();
    let args = ["import", "repo-mailbox", tree_arg.as_str()];

    let reference = Mailroom::new(
        &work.bin,
        work.home("import-reference"),
        work.cwd.clone(),
        &work.journal,
        None,
    );
    let started = Instant::now();
    let first = reference.run(None, &args, None, "reference import")?;
    let typical = started.elapsed();
    if !first.ok() {
        p.push(
            Category::Failed,
            format!("reference import: {}", first.describe()),
        );
        return Ok((0, 0));
    }
    let want = state_of_home(reference.home(), p, "reference")?;

    let mut killed = 0;
    for t in 0..trials {
        let mut rng = Rng::derive(work.seed, &[9_000 + t as u64]);
        let home: PathBuf = work.home(&format!("import-{t}"));
        let mr = Mailroom::new(
            &work.bin,
            home.clone(),
            work.cwd.clone(),
            &work.journal,
            None,
        );
        let window = typical.mul_f64(1.25);
        let delay = Duration::from_nanos(rng.below(window.as_nanos().max(1) as u64));
        let mut child = mr.spawn(None, &args, None)?;
        // The fault injection itself: a random instant within the import's typical run.
        std::thread::sleep(delay);
        child.kill()?;
        let o = mr.finish(child, None, &args, "killed import")?;
        if o.signal == Some(9) {
            killed += 1;
        }
        let label = format!("import trial {t} (kill after {}µs)", delay.as_micros());
        let fix = mr.run(None, &["doctor", "--fix"], None, "doctor --fix")?;
        if !fix.ok() {
            p.push(
                Category::Failed,
                format!("{label}: doctor --fix: {}", fix.describe()),
            );
        }
        let again = mr.run(None, &args, None, "import again")?;
        if !again.ok() {
            p.push(
                Category::Failed,
                format!("{label}: the second import: {}", again.describe()),
            );
            continue;
        }
        let got = state_of_home(&home, p, &label)?;
        for missing in want.difference(&got) {
            p.push(
                Category::Lost,
                format!("{label}: {missing} is missing after the re-import"),
            );
        }
        for extra in got.difference(&want) {
            p.push(
                Category::Doubled,
                format!(
                    "{label}: {extra} is there after the re-import, not after one clean import"
                ),
            );
        }
    }
    Ok((killed, trials))
}
