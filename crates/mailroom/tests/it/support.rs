//! The test kit: a temporary home per test, a runner for the real `mailroom` binary, and the
//! normalisation that makes whole outputs comparable as snapshots.
//!
//! Invariant: every command runs with its own home (`MAILROOM_HOME`), without `MAILROOM_AS`,
//! with stdin closed unless a test gives one, and from a working directory outside any git
//! checkout unless the test asks for one; no run may panic.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use mailroom_store_pg::testing::TestDb;
use serde_json::Value;

/// The binary under test, as Cargo built it for this test run.
pub const BIN: &str = env!("CARGO_BIN_EXE_mailroom");

/// A temporary directory holding a mailroom home (`home/`) and a working directory (`work/`),
/// and, for a test run on PostgreSQL, the schema every command of the test uses instead.
#[derive(Debug)]
pub struct Home {
    root: tempfile::TempDir,
    /// Message ids in order of first appearance, for numbering them in snapshots.
    ids: Mutex<Vec<String>>,
    /// Set when the commands run against PostgreSQL (`MAILROOM_URL`), not the file home.
    db: Option<TestDb>,
}

impl Home {
    /// A home whose commands use a fresh PostgreSQL mailroom (a schema of its own on the test
    /// server), or `None` when the PostgreSQL tests are skipped on this machine.
    pub fn postgres(test: &str) -> Option<Home> {
        let db = TestDb::create(test)?;
        let mut home = Home::new();
        home.db = Some(db);
        Some(home)
    }

    /// The database URL the commands use, when they run on PostgreSQL.
    pub fn url(&self) -> Option<String> {
        self.db.as_ref().map(TestDb::url)
    }

    /// Whether the commands run on PostgreSQL.
    pub fn is_postgres(&self) -> bool {
        self.db.is_some()
    }

    /// Fails the test when a PostgreSQL run wrote anything into the file home.
    pub fn assert_no_file_home(&self) {
        if self.is_postgres() {
            assert!(
                !self.path().exists(),
                "a PostgreSQL mailroom writes nothing to the file home"
            );
        }
    }

    pub fn new() -> Home {
        let root = tempfile::Builder::new()
            .prefix("mailroom-it-")
            .tempdir()
            .expect("create a temporary directory");
        let work = root.path().join("work");
        std::fs::create_dir(&work).expect("create the working directory");
        assert_eq!(
            git_toplevel(&work),
            None,
            "the temporary directory must not be inside a git checkout"
        );
        Home {
            root,
            ids: Mutex::new(Vec::new()),
            db: None,
        }
    }

    /// The mailroom home (created by the binary on its first write).
    pub fn path(&self) -> PathBuf {
        self.root.path().join("home")
    }

    /// The temporary directory around the home, for tests that need more directories.
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// `mailroom ARGS` run from the plain working directory, with no identity in the
    /// environment.
    pub fn cmd<I, S>(&self, args: I) -> TestCommand
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = self.process();
        cmd.args(args);
        TestCommand { cmd, stdin: None }
    }

    /// The binary as a plain process with this home's environment (the home, or the database
    /// when the test runs on PostgreSQL), for tests that drive it by hand: pipes held open,
    /// ptys, long-lived servers.
    pub fn process(&self) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.env_remove("MAILROOM_AS")
            .env_remove("MAILROOM_URL")
            .env_remove("MAILROOM_ENFORCE_RESERVATIONS")
            .env("MAILROOM_HOME", self.path())
            .env("TMPDIR", self.root())
            .current_dir(self.root().join("work"));
        if let Some(url) = self.url() {
            cmd.env("MAILROOM_URL", url);
        }
        cmd
    }

    /// `mailroom --as WHO ARGS`.
    pub fn as_<I, S>(&self, who: &str, args: I) -> TestCommand
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut c = self.cmd(["--as", who]);
        c.args(args);
        c
    }

    /// Sends `body` from `from` to `to` and returns the new message's id.
    pub fn send(&self, from: &str, to: &str, body: &str) -> String {
        let v = self
            .as_(from, ["--json", "send", "--to", to, "--message", body])
            .json();
        let id = v["id"].as_str().expect("send --json has an id").to_owned();
        self.id_number(&id);
        id
    }

    /// Every path under the home with its mode and content (or link target).
    pub fn tree(&self) -> Tree {
        let mut tree = Tree::default();
        walk(&self.path(), Path::new(""), &mut tree);
        tree
    }

    /// Number of message files in one state directory of a mailbox in project `default`.
    pub fn count(&self, handle: &str, state: &str) -> usize {
        let dir = self
            .path()
            .join("projects/default/boxes")
            .join(handle)
            .join(state);
        match std::fs::read_dir(&dir) {
            Ok(entries) => entries
                .map(|e| e.expect("read a directory entry").file_name())
                .filter(|n| n.to_string_lossy().ends_with(".md"))
                .count(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => panic!("cannot list {}: {e}", dir.display()),
        }
    }

    fn id_number(&self, token: &str) -> usize {
        let mut ids = self.ids.lock().expect("the id list is not poisoned");
        if let Some(i) = ids
            .iter()
            .position(|seen| seen.starts_with(token) || token.starts_with(seen.as_str()))
        {
            if token.len() > ids[i].len() {
                ids[i] = token.to_owned();
            }
            return i + 1;
        }
        ids.push(token.to_owned());
        ids.len()
    }

    /// `text` with the temporary directory replaced by `[TMP]`, each message id by `[ID-n]`
    /// (numbered by first appearance in this test, so relations between messages stay
    /// visible) and each 12-character short id by `[ID-n]` padded to 12 (tables keep their
    /// alignment). Dates are left to [`settings`]' filters.
    pub fn redact(&self, text: &str) -> String {
        let root = self.root().display().to_string();
        let text = text.replace(&root, "[TMP]");
        let mut out = String::with_capacity(text.len());
        let mut rest = text.as_str();
        while let Some(start) = rest.find(is_token_char) {
            out.push_str(&rest[..start]);
            let tail = &rest[start..];
            let len = tail.find(|c| !is_token_char(c)).unwrap_or(tail.len());
            let token = &tail[..len];
            if token.len() == 26 && token.chars().all(is_crockford) {
                out.push_str(&format!("[ID-{}]", self.id_number(token)));
            } else if token.len() == 12 && token.starts_with('0') && token.chars().all(is_crockford)
            {
                out.push_str(&format!(
                    "{:<12}",
                    format!("[ID-{}]", self.id_number(token))
                ));
            } else {
                out.push_str(token);
            }
            rest = &tail[len..];
        }
        out.push_str(rest);
        out
    }

    /// A run as one redacted text: exit code, stdout, and stderr when there is any.
    pub fn show(&self, run: &Run) -> String {
        let mut text = format!("[exit {}]\n{}", run.code, run.stdout);
        if !run.stderr.is_empty() {
            text.push_str("[stderr]\n");
            text.push_str(&run.stderr);
        }
        self.redact(&text)
    }

    /// Pretty JSON, redacted like [`Home::redact`].
    pub fn redact_json(&self, v: &Value) -> String {
        self.redact(&serde_json::to_string_pretty(v).expect("JSON serialises"))
    }
}

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric()
}

fn is_crockford(c: char) -> bool {
    c.is_ascii_digit() || (c.is_ascii_uppercase() && !matches!(c, 'I' | 'L' | 'O' | 'U'))
}

/// The nearest ancestor of `dir` that holds `.git`, as mailroom finds it.
pub fn git_toplevel(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_owned)
}

/// Insta settings shared by every snapshot: dates and times redacted.
pub fn settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_prepend_module_to_snapshot(true);
    s.add_filter(
        r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})",
        "[RFC3339]",
    );
    s.add_filter(r"\b\d{4}-\d{2}-\d{2} \d{2}:\d{2}\b", "YYYY-MM-DD hh:mm");
    s.add_filter(r"\b\d{8}-\d{4}\b", "YYYYMMDD-hhmm");
    s.add_filter(r"\b[0-9A-HJKMNP-TV-Z]{26}\b", "[ULID]");
    s
}

/// Everything under a home: relative path → (mode, content or link target; `None` for a
/// directory).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Tree(pub BTreeMap<PathBuf, (u32, Option<Vec<u8>>)>);

impl Tree {
    /// The paths added, removed or changed from `self` to `after`, one per line.
    pub fn changes(&self, after: &Tree) -> Vec<String> {
        let mut out = Vec::new();
        for (path, entry) in &self.0 {
            match after.0.get(path) {
                None => out.push(format!("removed {}", path.display())),
                Some(now) if now != entry => out.push(format!("changed {}", path.display())),
                Some(_) => {}
            }
        }
        for path in after.0.keys().filter(|p| !self.0.contains_key(*p)) {
            out.push(format!("added {}", path.display()));
        }
        out
    }
}

fn walk(base: &Path, rel: &Path, tree: &mut Tree) {
    let path = base.join(rel);
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => panic!("cannot stat {}: {e}", path.display()),
    };
    let mode = meta.permissions().mode();
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(&path).expect("read a link");
        tree.0.insert(
            rel.to_owned(),
            (mode, Some(target.as_os_str().as_encoded_bytes().to_vec())),
        );
    } else if meta.is_dir() {
        tree.0.insert(rel.to_owned(), (mode, None));
        let mut names: Vec<_> = std::fs::read_dir(&path)
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", path.display()))
            .map(|e| e.expect("read a directory entry").file_name())
            .collect();
        names.sort();
        for name in names {
            walk(base, &rel.join(name), tree);
        }
    } else {
        let content =
            std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        tree.0.insert(rel.to_owned(), (mode, Some(content)));
    }
}

/// One command line to run, with optional stdin.
#[derive(Debug)]
pub struct TestCommand {
    cmd: Command,
    stdin: Option<Vec<u8>>,
}

/// What a run printed and how it ended.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl TestCommand {
    pub fn args<I, S>(&mut self, args: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.cmd.args(args);
        self
    }

    /// The same command line, run by another program (a copy of mailroom elsewhere).
    pub fn cmd_program(&mut self, program: impl AsRef<OsStr>) -> &mut Self {
        let mut cmd = Command::new(program);
        cmd.args(self.cmd.get_args());
        for (k, v) in self.cmd.get_envs() {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        if let Some(dir) = self.cmd.get_current_dir() {
            cmd.current_dir(dir);
        }
        self.cmd = cmd;
        self
    }

    pub fn env(&mut self, key: &str, value: impl AsRef<OsStr>) -> &mut Self {
        self.cmd.env(key, value);
        self
    }

    pub fn env_remove(&mut self, key: &str) -> &mut Self {
        self.cmd.env_remove(key);
        self
    }

    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.cmd.current_dir(dir);
        self
    }

    /// Runs it inside the network namespace `netns` (`ip netns exec`), with the same
    /// arguments, environment and directory: a command of another host.
    pub fn inside(&mut self, netns: &str) -> &mut Self {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", netns])
            .arg(self.cmd.get_program())
            .args(self.cmd.get_args());
        for (key, value) in self.cmd.get_envs() {
            match value {
                Some(v) => cmd.env(key, v),
                None => cmd.env_remove(key),
            };
        }
        if let Some(dir) = self.cmd.get_current_dir() {
            cmd.current_dir(dir);
        }
        self.cmd = cmd;
        self
    }

    pub fn stdin(&mut self, bytes: impl Into<Vec<u8>>) -> &mut Self {
        self.stdin = Some(bytes.into());
        self
    }

    /// Runs it whatever the outcome, checking only that it exited (no signal) and did not
    /// panic.
    pub fn run(&mut self) -> Run {
        self.cmd
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = self
            .cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {:?}: {e}", self.cmd));
        let writer = self.stdin.clone().map(|bytes| {
            let mut pipe = child.stdin.take().expect("stdin is piped");
            // The binary may stop reading early (an oversize body); a broken pipe is fine.
            std::thread::spawn(move || drop(pipe.write_all(&bytes)))
        });
        let out = child.wait_with_output().expect("wait for mailroom");
        if let Some(w) = writer {
            w.join().expect("the stdin writer does not panic");
        }
        let stdout = String::from_utf8(out.stdout).expect("stdout is UTF-8");
        let stderr = String::from_utf8(out.stderr).expect("stderr is UTF-8");
        assert!(
            !stderr.contains("panicked"),
            "{:?} panicked:\n{stderr}",
            self.cmd
        );
        let code = out
            .status
            .code()
            .unwrap_or_else(|| panic!("{:?} was killed: {:?}", self.cmd, out.status));
        Run {
            code,
            stdout,
            stderr,
        }
    }

    /// Runs it like [`TestCommand::run`], but kills it and fails the test when it has not
    /// exited within `limit`: for commands that must not block on what is in the home.
    pub fn run_within(&mut self, limit: std::time::Duration) -> Run {
        self.cmd
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = self
            .cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {:?}: {e}", self.cmd));
        let pid = child.id();
        if let (Some(bytes), Some(mut pipe)) = (self.stdin.clone(), child.stdin.take()) {
            std::thread::spawn(move || drop(pipe.write_all(&bytes)));
        }
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || drop(tx.send(child.wait_with_output())));
        let out = match rx.recv_timeout(limit) {
            Ok(out) => out.expect("wait for mailroom"),
            Err(_) => {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
                panic!("{:?} did not finish within {limit:?}", self.cmd);
            }
        };
        let stdout = String::from_utf8(out.stdout).expect("stdout is UTF-8");
        let stderr = String::from_utf8(out.stderr).expect("stderr is UTF-8");
        assert!(
            !stderr.contains("panicked"),
            "{:?} panicked:\n{stderr}",
            self.cmd
        );
        let code = out
            .status
            .code()
            .unwrap_or_else(|| panic!("{:?} was killed: {:?}", self.cmd, out.status));
        Run {
            code,
            stdout,
            stderr,
        }
    }

    /// Runs it and requires exit 0.
    pub fn ok(&mut self) -> Run {
        let run = self.run();
        assert_eq!(
            run.code, 0,
            "{:?} failed\nstdout:\n{}\nstderr:\n{}",
            self.cmd, run.stdout, run.stderr
        );
        run
    }

    /// Runs it, requires exit 0, and returns stdout.
    pub fn stdout(&mut self) -> String {
        self.ok().stdout
    }

    /// Runs it, requires exit 0, and parses stdout as JSON.
    pub fn json(&mut self) -> Value {
        let out = self.stdout();
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{out}"))
    }

    /// Runs it and requires exit `code` with a single `error:` line on stderr.
    pub fn fails(&mut self, code: i32) -> Run {
        let run = self.run();
        assert_eq!(
            run.code, code,
            "{:?}\nstdout:\n{}\nstderr:\n{}",
            self.cmd, run.stdout, run.stderr
        );
        assert!(
            run.stderr.starts_with("error: ") && run.stderr.lines().count() == 1,
            "{:?}: stderr is not one error line:\n{}",
            self.cmd,
            run.stderr
        );
        run
    }
}

/// Kills a long-lived child (`watch`, `wait`) after a minute unless disarmed first, so a
/// wake-up that never comes fails the test instead of hanging it.
pub struct Watchdog {
    stop: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl Watchdog {
    pub fn arm(child: &std::process::Child) -> Watchdog {
        let pid = child.id();
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            if stopped
                .recv_timeout(std::time::Duration::from_secs(60))
                .is_err()
            {
                let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            }
        });
        Watchdog { stop, thread }
    }

    /// Stops the watchdog; the child was not killed by it after this returns.
    pub fn disarm(self) {
        let _ = self.stop.send(());
        self.thread.join().expect("the watchdog thread ends");
    }
}

/// Runs each named test on both stores: for `fn NAME(home: &Home)`, `both_stores!(NAME)` makes
/// `NAME::files`, run on a file home, and `NAME::postgres`, run on a fresh PostgreSQL mailroom
/// (which must leave the file home unwritten), through the same commands. Such a test must not
/// look at files under the home (write a plain `#[test]` for that) and names its snapshots:
/// both runs compare against the same one, so the two stores must print the same thing.
macro_rules! both_stores {
    ($($name:ident),+ $(,)?) => {$(
        mod $name {
            #[test]
            fn files() {
                super::$name(&$crate::support::Home::new());
            }

            #[test]
            fn postgres() {
                if let Some(home) = $crate::support::Home::postgres(module_path!()) {
                    super::$name(&home);
                    home.assert_no_file_home();
                }
            }
        }
    )+};
}
pub(crate) use both_stores;
