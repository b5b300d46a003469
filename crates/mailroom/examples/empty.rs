//! The smallest process built with mailroom's release profile: it starts, and it exits. The
//! benchmark reads the hooks (which run after every tool call of every agent) against it: what
//! a hook costs above it is mailroom's own work, not process start.

fn main() {}
