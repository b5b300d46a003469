//! File reservations through the real binary: `reserve`, `release`, `reservations` and
//! `check`, every refusal with its exit code, and real processes racing for one pattern.

use std::process::Stdio;

use serde_json::Value;

use crate::support::{Home, both_stores};

fn leases(home: &Home, who: &str) -> Vec<Value> {
    home.as_(who, ["--json", "reservations"]).json()["reservations"]
        .as_array()
        .expect("a list of leases")
        .clone()
}

fn reserve_refuses_a_conflict_naming_holder_pattern_reason_and_expiry(home: &Home) {
    let out = home
        .as_(
            "web@shop",
            [
                "reserve",
                "src/api/**",
                "--ttl",
                "30m",
                "--reason",
                "moving the users endpoint",
            ],
        )
        .stdout();
    assert!(
        out.starts_with("Reserved 'src/api/**' (exclusive) for web@shop until "),
        "{out}"
    );
    let run = home
        .as_("db@shop", ["reserve", "src/api/users.rs"])
        .fails(4);
    for needle in [
        "web@shop",
        "'src/api/**'",
        "moving the users endpoint",
        "until 20",
        "nothing was reserved",
    ] {
        assert!(run.stderr.contains(needle), "{needle}: {}", run.stderr);
    }
    // A shared lease over the exclusive one is refused too; elsewhere it goes ahead.
    home.as_("db@shop", ["reserve", "--shared", "src"]).fails(4);
    home.as_("db@shop", ["reserve", "--shared", "docs/**"]).ok();
    home.as_("ops@shop", ["reserve", "--shared", "docs/api.md"])
        .ok();
    let all = leases(home, "ops@shop");
    assert_eq!(all.len(), 3);
    assert!(all.iter().any(|l| l["holder"] == "web@shop"
        && l["exclusive"] == true
        && l["reason"] == "moving the users endpoint"));
    // Another project's tree is its own.
    home.as_("db@mill", ["reserve", "src/api/**"]).ok();
}

fn reserving_again_renews_and_keeps_the_id(home: &Home) {
    let first = home
        .as_("web@shop", ["--json", "reserve", "src/api", "--ttl", "5m"])
        .json();
    let again = home
        .as_("web@shop", ["--json", "reserve", "src/api", "--ttl", "2h"])
        .json();
    assert_eq!(first["reserved"][0]["id"], again["reserved"][0]["id"]);
    assert!(again["reserved"][0]["until"].as_str() > first["reserved"][0]["until"].as_str());
    assert_eq!(leases(home, "web@shop").len(), 1);
}

fn check_exits_4_naming_the_lease_and_0_for_the_holder_and_free_paths(home: &Home) {
    home.as_("web@shop", ["reserve", "src/api", "--reason", "refactor"])
        .ok();
    let run = home
        .as_("db@shop", ["check", "README.md", "src/api/v1/users.rs"])
        .fails(4);
    assert!(
        run.stderr
            .contains("'src/api/v1/users.rs' is reserved: web@shop holds 'src/api'"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("refactor"), "{}", run.stderr);
    let v: Value = serde_json::from_str(
        &home
            .as_("db@shop", ["--json", "check", "src/api/x.rs"])
            .fails(4)
            .stdout,
    )
    .expect("one JSON document on stdout");
    assert_eq!(v["ok"], false);
    assert_eq!(v["blocked"][0]["lease"]["holder"], "web@shop");
    home.as_("db@shop", ["check", "README.md"]).ok();
    home.as_("web@shop", ["check", "src/api/x.rs"]).ok();
    // Shared leases never block an edit.
    home.as_("ops@shop", ["reserve", "--shared", "docs"]).ok();
    home.as_("db@shop", ["check", "docs/x.md"]).ok();
}

fn release_refuses_anothers_lease_and_human_may_release_any(home: &Home) {
    let v = home
        .as_("web@shop", ["--json", "reserve", "src/api/**", "lib/**"])
        .json();
    let id = v["reserved"][0]["id"].as_str().expect("an id").to_owned();
    let run = home.as_("db@shop", ["release", &id]).fails(4);
    assert!(
        run.stderr
            .contains("only its holder or HUMAN may release it"),
        "{}",
        run.stderr
    );
    home.as_("db@shop", ["release", "src/api/**"]).fails(3);
    home.as_("db@shop", ["release", "01ARZ3NDEKTSV4RRFFQ69G5FAV"])
        .fails(3);
    assert_eq!(
        home.as_("db@shop", ["release"]).run().code,
        2,
        "a usage error"
    );
    home.as_("db@shop", ["release", "--all"]).ok();
    assert_eq!(leases(home, "db@shop").len(), 2);
    let out = home
        .as_("HUMAN", ["--project", "shop", "release", &id])
        .stdout();
    assert!(out.contains("Released 'src/api/**' of web@shop"), "{out}");
    home.as_("web@shop", ["release", "./lib/**"]).ok();
    assert!(leases(home, "web@shop").is_empty());
    assert_eq!(
        home.as_("web@shop", ["reservations"]).stdout(),
        "No active reservations in 'shop'.\n"
    );
}

fn bad_reservations_are_refused_with_exit_2_and_change_nothing(home: &Home) {
    for args in [
        vec!["reserve", "src", "--ttl", "10s"],
        vec!["reserve", "src", "--ttl", "25h"],
        vec!["reserve", "src", "--ttl", "soon"],
        vec!["reserve", "../elsewhere"],
        vec!["reserve", "{a,b}"],
        vec!["check", "/definitely/not/the/repository"],
    ] {
        home.as_("web@shop", &args).fails(2);
    }
    for usage in [vec!["reserve"], vec!["check"]] {
        assert_eq!(home.as_("web@shop", &usage).run().code, 2, "{usage:?}");
    }
    assert!(leases(home, "web@shop").is_empty());
}

/// Real processes, started together, racing for one pattern: exactly one gets it.
fn processes_racing_for_one_pattern_exactly_one_wins(home: &Home) {
    for round in 0..3 {
        let pattern = format!("race/{round}/**");
        let children: Vec<_> = ["a", "b", "c", "d", "e", "f"]
            .iter()
            .map(|h| {
                home.process()
                    .args(["--as", &format!("{h}@shop"), "reserve", &pattern])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("the binary starts")
            })
            .collect();
        let codes: Vec<i32> = children
            .into_iter()
            .map(|mut c| c.wait().expect("it ends").code().unwrap_or(-1))
            .collect();
        assert_eq!(
            codes.iter().filter(|c| **c == 0).count(),
            1,
            "round {round}: {codes:?}"
        );
        assert!(
            codes.iter().all(|c| *c == 0 || *c == 4),
            "round {round}: {codes:?}"
        );
    }
    assert_eq!(leases(home, "a@shop").len(), 3);
}

/// `check` takes paths as the agent sees them: absolute inside the checkout, or relative to
/// where it runs, and compares them repository-relative.
#[test]
fn check_reads_paths_relative_to_the_repository_top_level() {
    let home = Home::new();
    let repo = home.root().join("work").join("shop");
    std::fs::create_dir_all(repo.join("src/api")).unwrap();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&repo)
        .status()
        .unwrap();
    assert!(git.success());
    home.as_("web@shop", ["reserve", "src/api"]).ok();
    let top = crate::support::git_toplevel(&repo).unwrap();
    let abs = top.join("src/api/users.rs");
    home.as_("db@shop", ["check", abs.to_str().unwrap()])
        .current_dir(&repo)
        .fails(4);
    home.as_("db@shop", ["check", "users.rs"])
        .current_dir(repo.join("src/api"))
        .fails(4);
    home.as_("db@shop", ["check", "../README.md"])
        .current_dir(repo.join("src"))
        .ok();
    home.as_("db@shop", ["check", "/etc/passwd"])
        .current_dir(&repo)
        .fails(2);
}

/// Claude Code's PreToolUse hook: silent for a free file, another tool or the lease's holder;
/// for another's exclusive lease, the notice as context (the edit goes ahead), or with
/// `--enforce` as the refusal.
fn the_pre_edit_hook_tells_the_model_of_anothers_lease_and_is_silent_otherwise(home: &Home) {
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
    let edit = |tool: &str, path: &str| {
        format!(
            r#"{{"tool_name":"{tool}","tool_input":{{"file_path":"{path}","old_string":"a","new_string":"b"}}}}"#
        )
    };
    let hook = |who: &str, input: String, extra: &[&str]| {
        let mut args = vec!["hook", "claude", "PreToolUse"];
        args.extend_from_slice(extra);
        let run = home.as_(who, &args).stdin(input).run();
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(run.stderr, "", "no warning");
        run.stdout
    };
    for (who, input) in [
        ("db@shop", edit("Edit", "README.md")),
        ("db@shop", edit("Read", "src/api/users.rs")),
        ("web@shop", edit("Edit", "src/api/users.rs")),
        ("db@mill", edit("Edit", "src/api/users.rs")),
    ] {
        assert_eq!(hook(who, input.clone(), &[]), "", "{who} {input}");
    }
    let out = hook("db@shop", edit("MultiEdit", "src/api/users.rs"), &[]);
    let v: Value = serde_json::from_str(&out).expect("one JSON answer");
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "PreToolUse");
    let text = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .expect("context for the model");
    for needle in [
        "UNTRUSTED DATA",
        "src/api/users.rs is reserved: web@shop holds 'src/api/**'",
        "moving the users endpoint",
        "mailroom send --to web@shop",
        "The edit goes ahead",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
    assert!(v["hookSpecificOutput"].get("permissionDecision").is_none());
    // The end shows in the reader's zone: TZ names it, a zone that does not read is UTC.
    for (tz, zone) in [
        ("Asia/Tokyo", " JST"),
        ("UTC", " UTC"),
        ("No/Such_Zone", " UTC"),
    ] {
        let input = edit("Edit", "src/api/users.rs");
        let run = home
            .as_("db@shop", ["hook", "claude", "PreToolUse"])
            .env("TZ", tz)
            .stdin(input)
            .run();
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(run.stdout.contains(zone), "{tz}: {}", run.stdout);
    }
    let notebook =
        r#"{"tool_name":"NotebookEdit","tool_input":{"notebook_path":"src/api/n.ipynb"}}"#;
    let v: Value =
        serde_json::from_str(&hook("db@shop", notebook.to_owned(), &["--enforce"])).expect("JSON");
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
    assert!(
        v["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .is_some_and(|r| r.contains("The edit was refused"))
    );
}

/// One hook run: exit 0, no warning, its stdout.
fn hook_out(home: &Home, who: &str, args: &[&str], input: &str) -> String {
    let run = home.as_(who, args).stdin(input.to_owned()).run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr, "", "no warning");
    run.stdout
}

fn notice_names_the_lease(text: &str, path: &str, ending: &str) {
    for needle in [
        "UNTRUSTED DATA",
        &format!("{path} is reserved: web@shop holds 'src/api/**' until "),
        "for \"moving the users endpoint\"",
        "mailroom send --to web@shop",
        ending,
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
}

/// Codex's patch tool: `apply_patch`, its patch in `tool_input.command`; every file the patch
/// adds, updates, deletes or moves to is checked. Claude Code's answer shape.
fn codex_pre_tool_use_reads_the_files_of_a_patch(home: &Home) {
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
    let patch = |file: &str| {
        serde_json::json!({
            "cwd": "/nonexistent",
            "tool_name": "apply_patch",
            "tool_input": {"command": format!(
                "*** Begin Patch\n*** Update File: README.md\n@@\n-a\n+b\n*** Add File: {file}\n+x\n*** End Patch\n"
            )},
        })
        .to_string()
    };
    let hook = ["hook", "codex", "PreToolUse"];
    assert_eq!(hook_out(home, "db@shop", &hook, &patch("docs/x.md")), "");
    assert_eq!(
        hook_out(home, "web@shop", &hook, &patch("src/api/x.rs")),
        ""
    );
    let shell = r#"{"tool_name":"exec_command","tool_input":{"cmd":"*** Add File: src/api/x.rs"}}"#;
    assert_eq!(hook_out(home, "db@shop", &hook, shell), "");
    let v: Value = serde_json::from_str(&hook_out(home, "db@shop", &hook, &patch("src/api/x.rs")))
        .expect("one JSON answer");
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "PreToolUse");
    notice_names_the_lease(
        v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .expect("context for the model"),
        "src/api/x.rs",
        "The edit goes ahead",
    );
    let v: Value = serde_json::from_str(&hook_out(
        home,
        "db@shop",
        &["hook", "codex", "PreToolUse", "--enforce"],
        &patch("src/api/x.rs"),
    ))
    .expect("one JSON answer");
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
    notice_names_the_lease(
        v["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .expect("the refusal's reason"),
        "src/api/x.rs",
        "The edit was refused",
    );
}

/// Gemini CLI's BeforeTool shows the model only a refusal: enforcing, it refuses
/// `write_file`/`replace` with the notice as the reason; otherwise it is silent and the notice
/// comes with the edit's result from AfterTool (whose context Gemini CLI appends to it).
fn gemini_refuses_before_the_tool_or_tells_after_it(home: &Home) {
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
    let call = |tool: &str, file: &str| {
        serde_json::json!({
            "tool_name": tool,
            "tool_input": {"file_path": file, "old_string": "a", "new_string": "b"},
            "tool_response": {"llmContent": "ok"},
        })
        .to_string()
    };
    let before = ["hook", "gemini", "BeforeTool"];
    assert_eq!(
        hook_out(
            home,
            "db@shop",
            &before,
            &call("write_file", "src/api/x.rs")
        ),
        ""
    );
    let enforcing = ["hook", "gemini", "BeforeTool", "--enforce"];
    assert_eq!(
        hook_out(
            home,
            "db@shop",
            &enforcing,
            &call("read_file", "src/api/x.rs")
        ),
        ""
    );
    assert_eq!(
        hook_out(home, "db@shop", &enforcing, &call("replace", "README.md")),
        ""
    );
    let v: Value = serde_json::from_str(&hook_out(
        home,
        "db@shop",
        &enforcing,
        &call("replace", "src/api/x.rs"),
    ))
    .expect("one JSON answer");
    assert_eq!(v["decision"], "deny");
    notice_names_the_lease(
        v["reason"].as_str().expect("the refusal's reason"),
        "src/api/x.rs",
        "The edit was refused",
    );
    // After the tool: the notice, with nothing new in the mailbox and then with new mail.
    let after = ["hook", "gemini", "AfterTool"];
    assert_eq!(
        hook_out(home, "db@shop", &after, &call("replace", "README.md")),
        ""
    );
    let v: Value = serde_json::from_str(&hook_out(
        home,
        "db@shop",
        &after,
        &call("write_file", "src/api/x.rs"),
    ))
    .expect("one JSON answer");
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "AfterTool");
    notice_names_the_lease(
        v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .expect("context"),
        "src/api/x.rs",
        "The edit went ahead",
    );
    home.send("web@shop", "db@shop", "MAIL-FOR-DB");
    let v: Value = serde_json::from_str(&hook_out(
        home,
        "db@shop",
        &after,
        &call("replace", "src/api/y.rs"),
    ))
    .expect("one JSON answer");
    let text = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .expect("context");
    notice_names_the_lease(text, "src/api/y.rs", "The edit went ahead");
    assert!(text.contains("MAIL-FOR-DB"), "{text}");
}

/// Refusal without editing the hooks: `enforce_reservations = true` in `.mailroom.toml`, or
/// `MAILROOM_ENFORCE_RESERVATIONS`, which wins over the file either way.
#[test]
fn enforcing_comes_from_the_repository_config_or_the_environment() {
    let home = Home::new();
    let repo = home.root().join("work").join("shop");
    std::fs::create_dir_all(&repo).unwrap();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&repo)
        .status()
        .unwrap();
    assert!(git.success());
    home.as_("web@shop", ["reserve", "src/api"]).ok();
    let input = r#"{"tool_name":"Write","tool_input":{"file_path":"src/api/x.rs","content":""}}"#;
    let decision = |env: Option<&str>| {
        let mut c = home.as_("db@shop", ["hook", "claude", "PreToolUse"]);
        c.current_dir(&repo).stdin(input);
        if let Some(v) = env {
            c.env("MAILROOM_ENFORCE_RESERVATIONS", v);
        }
        let run = c.run();
        assert_eq!(run.code, 0);
        let v: Value = serde_json::from_str(&run.stdout).expect("one JSON answer");
        (
            v["hookSpecificOutput"]["permissionDecision"].clone(),
            run.stderr,
        )
    };
    assert_eq!(decision(None).0, Value::Null);
    assert_eq!(decision(Some("1")).0, "deny");
    std::fs::write(repo.join(".mailroom.toml"), "enforce_reservations = true\n").unwrap();
    assert_eq!(decision(None).0, "deny");
    assert_eq!(decision(Some("off")).0, Value::Null);
    // A value that means neither: the hook warns and says nothing (the session goes on).
    let run = home
        .as_("db@shop", ["hook", "claude", "PreToolUse"])
        .current_dir(&repo)
        .stdin(input)
        .env("MAILROOM_ENFORCE_RESERVATIONS", "sometimes")
        .run();
    assert_eq!((run.code, run.stdout.as_str()), (0, ""));
    assert!(
        run.stderr
            .contains("MAILROOM_ENFORCE_RESERVATIONS is 'sometimes'; set it to 1"),
        "{}",
        run.stderr
    );
    std::fs::write(
        repo.join(".mailroom.toml"),
        "enforce_reservations = \"yes\"\n",
    )
    .unwrap();
    let run = home
        .as_("db@shop", ["check", "README.md"])
        .current_dir(&repo)
        .fails(2);
    assert!(
        run.stderr.contains("enforce_reservations"),
        "{}",
        run.stderr
    );
}

/// A reservation asks what a send asks: in an open (or new) project the holder joins, so the
/// project and its leases show in `projects` and the console; off a roster project's roster it
/// is refused and nothing is taken.
fn reserving_joins_an_open_project_and_a_roster_project_refuses_strangers(home: &Home) {
    home.as_("web@shop", ["reserve", "src/api/**"]).ok();
    let projects = home.as_("HUMAN", ["--json", "projects"]).json();
    assert!(projects.to_string().contains("\"shop\""), "{projects}");
    let roster = home
        .as_("HUMAN", ["--json", "roster", "--project", "shop"])
        .json();
    assert!(roster.to_string().contains("\"web\""), "{roster}");

    home.as_("HUMAN", ["projects", "add", "mill", "--policy", "roster"])
        .ok();
    let run = home.as_("db@mill", ["reserve", "src/**"]).fails(4);
    assert!(
        run.stderr.contains("not on the roster of project 'mill'"),
        "{}",
        run.stderr
    );
    assert!(leases(home, "db@mill").is_empty(), "nothing was taken");
}

both_stores!(
    reserving_joins_an_open_project_and_a_roster_project_refuses_strangers,
    codex_pre_tool_use_reads_the_files_of_a_patch,
    gemini_refuses_before_the_tool_or_tells_after_it,
    reserve_refuses_a_conflict_naming_holder_pattern_reason_and_expiry,
    reserving_again_renews_and_keeps_the_id,
    check_exits_4_naming_the_lease_and_0_for_the_holder_and_free_paths,
    release_refuses_anothers_lease_and_human_may_release_any,
    bad_reservations_are_refused_with_exit_2_and_change_nothing,
    processes_racing_for_one_pattern_exactly_one_wins,
    the_pre_edit_hook_tells_the_model_of_anothers_lease_and_is_silent_otherwise,
);
