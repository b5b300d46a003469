//! `setup git-hook`: the pre-commit guard of file reservations in a real repository, committed
//! to by real `git commit`s that run the real binary.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::Home;

/// A repository `shop` under the home's working folder whose agent is `db@shop`, with one
/// commit, and `web@shop` holding `src/api/**`.
fn repo(home: &Home) -> PathBuf {
    let repo = home.root().join("work").join("shop");
    std::fs::create_dir_all(repo.join("src/api")).unwrap();
    std::fs::write(
        repo.join(".mailroom.toml"),
        "project = \"shop\"\nhandle = \"db\"\n",
    )
    .unwrap();
    std::fs::write(repo.join("README.md"), "shop\n").unwrap();
    assert!(git(home, &repo, &["init", "-q"]).status.success());
    assert!(git(home, &repo, &["add", "."]).status.success());
    let first = git(home, &repo, &["commit", "-q", "-m", "first"]);
    assert!(first.status.success(), "{first:?}");
    home.as_(
        "web@shop",
        [
            "reserve",
            "src/api/**",
            "--reason",
            "moving the users endpoint",
        ],
    )
    .ok();
    repo
}

/// `git ARGS` in `repo`, with the home's mailroom in its environment (as an agent's shell
/// has it) and no configuration of the machine's.
fn git(home: &Home, repo: &Path, args: &[&str]) -> Output {
    git_guarded(home, repo, args, None)
}

/// [`git`] with `MAILROOM_GUARD` set to `guard`.
fn git_guarded(home: &Home, repo: &Path, args: &[&str], guard: Option<&str>) -> Output {
    let mut cmd = Command::new("git");
    cmd.args([
        "-c",
        "user.name=Test",
        "-c",
        "user.email=test@example.invalid",
    ])
    .args(args)
    .current_dir(repo)
    .env("HOME", home.root())
    .env("GIT_CONFIG_NOSYSTEM", "1")
    .env("MAILROOM_HOME", home.path())
    .env("TMPDIR", home.root())
    .env_remove("MAILROOM_AS")
    .env_remove("MAILROOM_URL")
    .env_remove("MAILROOM_GUARD")
    .env_remove("MAILROOM_ENFORCE_RESERVATIONS");
    if let Some(v) = guard {
        cmd.env("MAILROOM_GUARD", v);
    }
    cmd.output().expect("git runs")
}

/// Changes `file`, stages it and commits it.
fn commit(home: &Home, repo: &Path, file: &str, guard: Option<&str>) -> Output {
    let path = repo.join(file);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, format!("{file} changed\n")).unwrap();
    assert!(git(home, repo, &["add", file]).status.success());
    git_guarded(home, repo, &["commit", "-q", "-m", file], guard)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The guard refuses a commit touching another agent's reserved files, naming the lease, and
/// lets through a commit elsewhere, the holder's own, and a human's with `MAILROOM_GUARD=off`.
#[test]
fn the_guard_refuses_a_commit_under_anothers_lease_and_lets_a_human_through() {
    let home = Home::new();
    let repo = repo(&home);
    let out = home
        .cmd(["setup", "git-hook"])
        .current_dir(&repo)
        .ok()
        .stdout;
    assert!(
        out.starts_with("Installed the mailroom pre-commit guard in "),
        "{out}"
    );
    assert!(commit(&home, &repo, "README.md", None).status.success());
    let refused = commit(&home, &repo, "src/api/users.rs", None);
    assert!(!refused.status.success());
    let text = stderr(&refused);
    for needle in [
        "'src/api/users.rs' is reserved: web@shop holds 'src/api/**' (exclusive) until ",
        "for \"moving the users endpoint\"",
        "mailroom: commit refused",
        "MAILROOM_GUARD=off",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
    let log = git(&home, &repo, &["log", "--format=%s"]);
    assert_eq!(String::from_utf8_lossy(&log.stdout), "README.md\nfirst\n");
    // A human goes ahead.
    let through = commit(&home, &repo, "src/api/users.rs", Some("off"));
    assert!(through.status.success(), "{}", stderr(&through));
    // A rename out of the reserved folder touches it too.
    assert!(
        git(&home, &repo, &["mv", "src/api/users.rs", "users.rs"])
            .status
            .success()
    );
    let moved = git(&home, &repo, &["commit", "-q", "-m", "move"]);
    assert!(!moved.status.success());
    assert!(stderr(&moved).contains("'src/api/users.rs' is reserved"));
    // Installing again changes nothing.
    let again = home
        .cmd(["setup", "git-hook"])
        .current_dir(&repo)
        .ok()
        .stdout;
    assert!(
        again.starts_with("The mailroom pre-commit guard is already in "),
        "{again}"
    );
}

/// A pre-commit hook already there runs first, its failure failing the commit with its own
/// status; `--uninstall` puts it back byte for byte, with its mode.
#[test]
fn an_existing_hook_is_chained_and_put_back_byte_for_byte() {
    let home = Home::new();
    let repo = repo(&home);
    let hook = repo.join(".git/hooks/pre-commit");
    let theirs = b"#!/bin/sh\n# the team's own checks\necho ran >> \"$(git rev-parse --git-dir)/ran\"\n[ -e fail ] && exit 3\nexit 0\n";
    std::fs::write(&hook, theirs).unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o750)).unwrap();
    home.cmd(["setup", "git-hook"]).current_dir(&repo).ok();
    assert!(
        repo.join(".git/hooks/pre-commit.mailroom-previous")
            .exists()
    );
    assert!(commit(&home, &repo, "README.md", None).status.success());
    let ran = std::fs::read_to_string(repo.join(".git/ran")).unwrap();
    assert_eq!(ran, "ran\n");
    // Their hook refusing: the guard stops there, with their status.
    std::fs::write(repo.join("fail"), "").unwrap();
    let run = Command::new(&hook)
        .current_dir(&repo)
        .env("MAILROOM_HOME", home.path())
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(3));
    assert!(!commit(&home, &repo, "docs.md", None).status.success());
    std::fs::remove_file(repo.join("fail")).unwrap();
    // Their hook passing, the lease still refuses.
    assert!(!commit(&home, &repo, "src/api/x.rs", None).status.success());
    let out = home
        .cmd(["setup", "git-hook", "--uninstall"])
        .current_dir(&repo)
        .ok()
        .stdout;
    assert!(out.contains("is the hook that was there before"), "{out}");
    assert_eq!(std::fs::read(&hook).unwrap(), theirs);
    assert_eq!(
        std::fs::metadata(&hook).unwrap().permissions().mode() & 0o7777,
        0o750
    );
    assert!(
        !repo
            .join(".git/hooks/pre-commit.mailroom-previous")
            .exists()
    );
    // Without the guard the reserved file commits.
    assert!(
        git(&home, &repo, &["commit", "-q", "-m", "x"])
            .status
            .success()
    );
    let again = home
        .cmd(["setup", "git-hook", "--uninstall"])
        .current_dir(&repo)
        .ok()
        .stdout;
    assert!(again.contains("nothing to remove"), "{again}");
}

/// `core.hooksPath` names the folder git runs hooks from: the guard goes there, and with no
/// hook before it, `--uninstall` leaves no file behind.
#[test]
fn the_guard_goes_where_core_hooks_path_says() {
    let home = Home::new();
    let repo = repo(&home);
    assert!(
        git(&home, &repo, &["config", "core.hooksPath", ".githooks"])
            .status
            .success()
    );
    home.cmd(["setup", "git-hook"]).current_dir(&repo).ok();
    let hook = repo.join(".githooks/pre-commit");
    assert!(hook.exists());
    assert!(!repo.join(".git/hooks/pre-commit").exists());
    let refused = commit(&home, &repo, "src/api/users.rs", None);
    assert!(!refused.status.success());
    assert!(stderr(&refused).contains("web@shop holds 'src/api/**'"));
    home.cmd(["setup", "git-hook", "--uninstall"])
        .current_dir(repo.join("src"))
        .ok();
    assert!(!hook.exists());
    assert_eq!(
        std::fs::read_dir(repo.join(".githooks")).unwrap().count(),
        0
    );
}

/// Outside a repository, or with a flag that means nothing here: one sentence, exit 2,
/// nothing written.
#[test]
fn setup_git_hook_refuses_what_it_cannot_do() {
    let home = Home::new();
    let run = home.cmd(["setup", "git-hook"]).fails(2);
    assert!(
        run.stderr.contains("is not inside a git repository"),
        "{}",
        run.stderr
    );
    let repo = repo(&home);
    let run = home
        .cmd(["setup", "git-hook", "--user"])
        .current_dir(&repo)
        .fails(2);
    assert!(run.stderr.contains("takes no --user"), "{}", run.stderr);
    assert!(!repo.join(".git/hooks/pre-commit").exists());
}
