//! `demo`: the scripted exchange runs to the end and cleans up after itself.

use insta::assert_snapshot;

use crate::support::{Home, settings};

#[test]
fn demo_runs_the_whole_exchange_and_removes_its_home() {
    let mut s = settings();
    s.add_filter(r"mailroom-demo-[A-Za-z0-9]+", "mailroom-demo-[RANDOM]");
    let _s = s.bind_to_scope();
    let home = Home::new();
    let run = home.cmd(["demo"]).ok();
    assert_snapshot!(home.show(&run));
    let left: Vec<_> = std::fs::read_dir(home.root())
        .expect("list the temporary directory")
        .map(|e| e.expect("an entry").file_name())
        .collect();
    assert_eq!(left, ["work"], "the demo left files behind");
    assert_eq!(
        home.tree().0.len(),
        0,
        "the demo never touches the user's home"
    );
}
