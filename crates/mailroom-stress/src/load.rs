//! `load`: N sender processes × M sends to overlapping mailboxes while other processes list,
//! read, archive, edit and cancel; every output is checked as it arrives and the whole home at
//! the end.
//!
//! Invariant: each worker thread runs one process at a time and records its outcome in the
//! ledger before starting the next; what a send will deliver is planned before it starts, so
//! a reader racing it can always be judged.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use anyhow::{Result, anyhow};
use clap::Args;
use serde_json::Value;

use crate::bodies::{self, Marker};
use crate::check::{self, Category, Problems};
use crate::disk::Folder;
use crate::ledger::{Cancel, EditOutcome, Ledger};
use crate::mcp::{McpClient, error_code, tool_result};
use crate::rng::Rng;
use crate::runner::{Mailroom, Outcome};
use crate::work::{Common, Work};

#[derive(Debug, Args)]
pub struct LoadArgs {
    #[command(flatten)]
    pub common: Common,
    /// Small sizes for CI: 4 senders × 100 sends.
    #[arg(long)]
    pub quick: bool,
    /// Sender processes running at once (default 8; 4 with --quick).
    #[arg(long)]
    pub senders: Option<usize>,
    /// Sends per sender (default 1,000; 100 with --quick).
    #[arg(long)]
    pub sends: Option<usize>,
    /// Long-lived `mailroom mcp` servers sending (write_mail) as many times each as a CLI
    /// sender (default 2; 1 with --quick).
    #[arg(long)]
    pub mcp_senders: Option<usize>,
}

/// The mailboxes every sender writes to: r0 is listed and archived constantly, r1 listed a
/// few at a time and read-and-archived, r2 read by id, r3 left alone (so edits land in place
/// and cancels succeed there).
const RECIPIENTS: [&str; 4] = ["r0@stress", "r1@stress", "r2@stress", "r3@stress"];

fn sender_name(i: usize) -> String {
    format!("s{i}@stress")
}

/// The identity an MCP sender's server is bound to.
fn mcp_sender_name(k: usize) -> String {
    format!("m{k}@stress")
}

/// The run channel the channel workload posts to and reads, and who does it.
const CHANNEL: &str = "run-1";
const POSTER: &str = "poster@stress";
const LEADER: &str = "leader@stress";

/// What the channel workload did: acknowledged posts (id → body) and every entry shown to
/// either of the two readers (who read as the same member).
#[derive(Default)]
struct ChannelLog {
    posted: Mutex<HashMap<String, String>>,
    shown: Mutex<Vec<(String, String)>>,
    posting: std::sync::atomic::AtomicBool,
}

struct Shared<'a> {
    mr: Mailroom<'a>,
    channel: ChannelLog,
    seed: u64,
    ledger: Mutex<Ledger>,
    problems: Mutex<Problems>,
    senders_left: AtomicUsize,
    stats: Stats,
}

#[derive(Default)]
struct Stats {
    listings: AtomicUsize,
    entries: AtomicUsize,
    retries: AtomicUsize,
    edited: AtomicUsize,
    corrected: AtomicUsize,
    cancelled: AtomicUsize,
    refused: AtomicUsize,
    mcp_servers: AtomicUsize,
    mcp_calls: AtomicUsize,
    mcp_acked: AtomicUsize,
    mcp_listings: AtomicUsize,
}

fn bump(a: &AtomicUsize, n: usize) {
    a.fetch_add(n, Ordering::Relaxed);
}

fn get(a: &AtomicUsize) -> usize {
    a.load(Ordering::Relaxed)
}

impl Shared<'_> {
    fn ledger(&self) -> MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn problem(&self, c: Category, what: impl Into<String>) {
        self.problems
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(c, what);
    }

    fn senders_done(&self) -> bool {
        self.senders_left.load(Ordering::SeqCst) == 0
    }

    /// A run whose exit code must be one of `allowed`; anything else is a problem.
    fn run(
        &self,
        who: &str,
        args: &[&str],
        stdin: Option<&str>,
        allowed: &[i32],
    ) -> Result<Option<(Outcome, Value)>> {
        let o = self.mr.run(Some(who), args, stdin, "load")?;
        let allowed_code = o.code.is_some_and(|c| allowed.contains(&c));
        match o.json() {
            Some(v) if allowed_code => Ok(Some((o, v))),
            _ => {
                self.problem(
                    Category::Failed,
                    format!(
                        "{who} {}: {}",
                        args.join(" ").chars().take(120).collect::<String>(),
                        o.describe()
                    ),
                );
                Ok(None)
            }
        }
    }

    /// Checks a listing; `pending_since` (when its command started) for listings of pending
    /// mail.
    fn check_listing(&self, v: &Value, mailbox: &str, what: &str, pending_since: Option<Instant>) {
        let mut p = Problems::default();
        check::check_listing(v, mailbox, what, pending_since, &self.ledger(), &mut p);
        bump(&self.stats.listings, 1);
        bump(
            &self.stats.entries,
            v["messages"].as_array().map_or(0, Vec::len),
        );
        if !p.is_empty() {
            self.problems
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .extend(p);
        }
    }
}

pub fn run(args: &LoadArgs) -> Result<bool> {
    let (senders, per) = match args.quick {
        true => (args.senders.unwrap_or(4), args.sends.unwrap_or(100)),
        false => (args.senders.unwrap_or(8), args.sends.unwrap_or(1000)),
    };
    let mcp_senders = args.mcp_senders.unwrap_or(if args.quick { 1 } else { 2 });
    let work = Work::new(&args.common, "load")?;
    println!(
        "load: seed={} senders={senders} sends={per} mcp_senders={mcp_senders} bin={}",
        work.seed,
        work.bin.display()
    );
    let started = Instant::now();
    let sh = Shared {
        mr: work.mailroom("home")?,
        seed: work.seed,
        channel: ChannelLog {
            posting: std::sync::atomic::AtomicBool::new(true),
            ..ChannelLog::default()
        },
        ledger: Mutex::new(Ledger::default()),
        problems: Mutex::new(Problems::default()),
        senders_left: AtomicUsize::new(senders + mcp_senders),
        stats: Stats::default(),
    };
    std::thread::scope(|scope| -> Result<()> {
        let mut handles = Vec::new();
        for i in 0..senders {
            let sh = &sh;
            handles.push(scope.spawn(move || {
                let r = sender(sh, i, per);
                sh.senders_left.fetch_sub(1, Ordering::SeqCst);
                r
            }));
        }
        for k in 0..mcp_senders {
            let sh = &sh;
            handles.push(scope.spawn(move || {
                let r = mcp_sender(sh, k, per);
                sh.senders_left.fetch_sub(1, Ordering::SeqCst);
                r
            }));
        }
        for n in 0..2 {
            let sh = &sh;
            handles.push(scope.spawn(move || lister(sh, n)));
        }
        handles.push(scope.spawn(|| mcp_reader(&sh)));
        handles.push(scope.spawn(|| archiver(&sh)));
        handles.push(scope.spawn(|| reader_by_id(&sh)));
        for m in 0..2 {
            let sh = &sh;
            handles.push(scope.spawn(move || mutator(sh, m)));
        }
        let posts = if args.quick { 40 } else { 400 };
        let shr = &sh;
        handles.push(scope.spawn(move || poster(shr, posts)));
        for _ in 0..2 {
            let sh = &sh;
            handles.push(scope.spawn(move || channel_reader(sh)));
        }
        for h in handles {
            h.join()
                .map_err(|_| anyhow!("a worker thread panicked"))??;
        }
        Ok(())
    })?;
    final_check(&sh)?;
    let (posts, shown) = check_channel(&sh);

    let problems = sh
        .problems
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    let ledger = sh
        .ledger
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    let st = &sh.stats;
    println!(
        "load: operations={} acknowledged={} retries={} listings={} entries_checked={} edits(in place={} corrections={}) cancels(done={} refused={}) channel(posts={posts} shown={shown}) mcp(servers={} calls={} acknowledged={} listings={}) {problems} duration={:.1}s",
        sh.mr.runs(),
        ledger.acked_count(),
        get(&st.retries),
        get(&st.listings),
        get(&st.entries),
        get(&st.edited),
        get(&st.corrected),
        get(&st.cancelled),
        get(&st.refused),
        get(&st.mcp_servers),
        get(&st.mcp_calls),
        get(&st.mcp_acked),
        get(&st.mcp_listings),
        started.elapsed().as_secs_f64()
    );
    let passed = problems.is_empty();
    if !passed {
        println!(
            "load: FAILED with {} problems (reproduce the choices with --seed {}):\n{}",
            problems.len(),
            work.seed,
            problems.listing(50)
        );
    }
    work.close(passed)?;
    Ok(passed)
}

/// Sender `i`: `per` sends to one or two recipients; some carry an idempotency key and are
/// retried once, which must give the same id back and deliver nothing new.
/// `done ID` as `me`, recording in the ledger what it archived and when it had.
fn done(sh: &Shared<'_>, me: &str, id: &str) -> Result<()> {
    if let Some((o, v)) = sh.run(me, &["done", id], None, &[0, 4])? {
        let exited = Instant::now();
        if o.code == Some(0) {
            let mut ledger = sh.ledger();
            for m in v["messages"].as_array().into_iter().flatten() {
                if let Some(id) = m["id"].as_str() {
                    ledger.archived(me, id, exited);
                }
            }
        }
    }
    Ok(())
}

/// `done --all` as `me`, recorded as a sweep of its mailbox.
fn done_all(sh: &Shared<'_>, me: &str) -> Result<()> {
    let started = Instant::now();
    if sh.run(me, &["done", "--all"], None, &[0])?.is_some() {
        sh.ledger().swept(me, started, Instant::now());
    }
    Ok(())
}

/// `inbox ARGS` as `me`, checked as a listing of pending mail; returns its output.
fn inbox(sh: &Shared<'_>, me: &str, args: &[&str], what: &str) -> Result<Option<Value>> {
    let started = Instant::now();
    let Some((_, v)) = sh.run(me, args, None, &[0])? else {
        return Ok(None);
    };
    sh.check_listing(&v, me, what, Some(started));
    Ok(Some(v))
}

fn sender(sh: &Shared<'_>, i: usize, per: usize) -> Result<()> {
    let me = sender_name(i);
    for seq in 0..per {
        let mut rng = Rng::derive(sh.seed, &[i as u64, seq as u64]);
        let first = rng.below(4) as usize;
        let mut to = vec![RECIPIENTS[first].to_owned()];
        if rng.chance(35) {
            to.push(RECIPIENTS[(first + 1 + rng.below(3) as usize) % 4].to_owned());
        }
        let key = rng.chance(15).then(|| format!("key-{}-{i}-{seq}", sh.seed));
        let marker = Marker {
            from: me.clone(),
            seq: seq as u64,
        };
        let subject = bodies::subject(&marker);
        let body = bodies::body(&marker, 1);
        let mut args = vec!["send", "--subject", &subject];
        for t in &to {
            args.extend(["--to", t.as_str()]);
        }
        if let Some(k) = &key {
            args.extend(["--idempotency-key", k.as_str()]);
        }
        sh.ledger().plan_send(marker.clone(), to.clone(), None);
        let attempts = if key.is_some() { 2 } else { 1 };
        for attempt in 0..attempts {
            let Some((_, v)) = sh.run(&me, &args, Some(&body), &[0])? else {
                continue;
            };
            let Some(id) = v["id"].as_str() else {
                sh.problem(
                    Category::Failed,
                    format!("send {marker} printed no id: {v}"),
                );
                continue;
            };
            if v["duplicate"].as_bool() != Some(attempt > 0) {
                sh.problem(
                    Category::Doubled,
                    format!(
                        "send {marker} attempt {} reported duplicate={}",
                        attempt + 1,
                        v["duplicate"]
                    ),
                );
            }
            if attempt > 0 {
                bump(&sh.stats.retries, 1);
            }
            if let Err(e) = sh.ledger().ack_send(&marker, id) {
                sh.problem(Category::Doubled, e);
            }
        }
    }
    Ok(())
}

/// Starts a server bound to `me`, counting it; a server that fails to start is a problem.
fn mcp_start<'a>(sh: &'a Shared<'a>, me: &str) -> Option<McpClient<'a>> {
    match McpClient::start(&sh.mr, me) {
        Ok(c) => {
            bump(&sh.stats.mcp_servers, 1);
            Some(c)
        }
        Err(e) => {
            sh.problem(Category::Failed, format!("{e:#}"));
            None
        }
    }
}

/// Closes a server as a client leaving does: it must exit 0.
fn mcp_close(sh: &Shared<'_>, c: McpClient<'_>, me: &str) -> Result<()> {
    bump(&sh.stats.mcp_calls, c.calls() as usize);
    let o = c.close()?;
    if !o.ok() {
        sh.problem(
            Category::Failed,
            format!("mcp as {me} on closing its stdin: {}", o.describe()),
        );
    }
    Ok(())
}

/// MCP sender `k`: one long-lived `mailroom --as m<k>@stress mcp` making `per` `write_mail`
/// calls into the CLI senders' recipients, half naming the recipient as m_AI_l does (a handle
/// within `project_handle`); some carry an idempotency key and are called again, which must
/// give the same id back and deliver nothing new, exactly as for `send`.
fn mcp_sender(sh: &Shared<'_>, k: usize, per: usize) -> Result<()> {
    let me = mcp_sender_name(k);
    let Some(mut server) = mcp_start(sh, &me) else {
        return Ok(());
    };
    for seq in 0..per {
        let mut rng = Rng::derive(sh.seed, &[5000 + k as u64, seq as u64]);
        let to = RECIPIENTS[rng.below(4) as usize];
        let key = rng
            .chance(15)
            .then(|| format!("mcp-key-{}-{k}-{seq}", sh.seed));
        let marker = Marker {
            from: me.clone(),
            seq: seq as u64,
        };
        let mut args = if rng.chance(50) {
            let handle = |a: &str| a.split('@').next().unwrap_or(a).to_owned();
            serde_json::json!({"project_handle": "stress", "sender": handle(&me),
                "recipient": handle(to)})
        } else {
            serde_json::json!({"sender": me, "recipient": to})
        };
        args["subject"] = bodies::subject(&marker).into();
        args["body"] = bodies::body(&marker, 1).into();
        if let Some(k) = &key {
            args["idempotency_key"] = k.as_str().into();
        }
        sh.ledger()
            .plan_send(marker.clone(), vec![to.to_owned()], None);
        let attempts = if key.is_some() { 2 } else { 1 };
        for attempt in 0..attempts {
            let answer = match server.call("write_mail", &args) {
                Ok(a) => a,
                Err(e) => {
                    // The server is gone or hung: nothing more can be sent through it.
                    sh.problem(Category::Failed, format!("write_mail {marker}: {e:#}"));
                    return mcp_close(sh, server, &me);
                }
            };
            let v = match tool_result(&answer) {
                Ok(v) => v,
                Err(e) => {
                    sh.problem(Category::Failed, format!("write_mail {marker}: {e}"));
                    continue;
                }
            };
            let Some(id) = v["id"].as_str() else {
                sh.problem(
                    Category::Failed,
                    format!("write_mail {marker} returned no id: {v}"),
                );
                continue;
            };
            if v["duplicate"].as_bool() != Some(attempt > 0) {
                sh.problem(
                    Category::Doubled,
                    format!(
                        "write_mail {marker} attempt {} reported duplicate={}",
                        attempt + 1,
                        v["duplicate"]
                    ),
                );
            }
            if attempt > 0 {
                bump(&sh.stats.retries, 1);
            } else {
                bump(&sh.stats.mcp_acked, 1);
            }
            if let Err(e) = sh.ledger().ack_send(&marker, id) {
                sh.problem(Category::Doubled, e);
            }
        }
    }
    mcp_close(sh, server, &me)
}

/// An MCP reader, racing the two `inbox` loops on r0 through one long-lived server bound to
/// r0: `read_mail` of up to 4, which archives what it shows (m_AI_l's way) or, half the time,
/// leaves it pending (`no_archive`) and archives one of them with `mark_done`. Every listing
/// goes through the checks a CLI listing does.
fn mcp_reader(sh: &Shared<'_>) -> Result<()> {
    let me = RECIPIENTS[0];
    let mut rng = Rng::derive(sh.seed, &[1003]);
    let Some(mut server) = mcp_start(sh, me) else {
        return Ok(());
    };
    loop {
        let last = sh.senders_done();
        let archive = rng.chance(50);
        let args = if archive {
            serde_json::json!({"limit": 4})
        } else {
            serde_json::json!({"limit": 4, "no_archive": true})
        };
        let started = Instant::now();
        let answer = match server.call("read_mail", &args) {
            Ok(a) => a,
            Err(e) => {
                sh.problem(Category::Failed, format!("read_mail as {me}: {e:#}"));
                break;
            }
        };
        let exited = Instant::now();
        match tool_result(&answer) {
            Err(e) => sh.problem(Category::Failed, format!("read_mail as {me}: {e}")),
            Ok(v) => {
                let what = if archive {
                    "read_mail"
                } else {
                    "read_mail no_archive"
                };
                sh.check_listing(&v, me, what, Some(started));
                bump(&sh.stats.mcp_listings, 1);
                let ids = listed_ids(&v);
                if archive {
                    // Every copy it showed was moved from read to done before it answered.
                    let mut ledger = sh.ledger();
                    for id in &ids {
                        ledger.archived(me, id, exited);
                    }
                } else if !ids.is_empty() {
                    let id = &ids[rng.below(ids.len() as u64) as usize];
                    mcp_mark_done(sh, &mut server, me, id);
                }
            }
        }
        if last {
            break;
        }
    }
    mcp_close(sh, server, me)
}

/// `mark_done` of one id through an MCP server, recorded as a `done` is.
fn mcp_mark_done(sh: &Shared<'_>, server: &mut McpClient<'_>, me: &str, id: &str) {
    let answer = server.call("mark_done", &serde_json::json!({"ids": [id]}));
    let exited = Instant::now();
    // The exit code `done` may end with here (4: another process archived or its sender
    // cancelled it since it was listed) is a refusal this may answer with too.
    if answer.as_ref().is_ok_and(|a| error_code(a) == Some(4)) {
        return;
    }
    match answer
        .as_ref()
        .map_err(|e| format!("{e:#}"))
        .and_then(tool_result)
    {
        Ok(v) => {
            let mut ledger = sh.ledger();
            for m in v["messages"].as_array().into_iter().flatten() {
                if let Some(id) = m["id"].as_str() {
                    ledger.archived(me, id, exited);
                }
            }
        }
        Err(e) => sh.problem(Category::Failed, format!("mark_done {id} as {me}: {e}")),
    }
}

/// r0 (two of these race): lists its inbox over and over, archives one listed message each
/// time and everything every eighth time.
fn lister(sh: &Shared<'_>, n: u64) -> Result<()> {
    let me = RECIPIENTS[0];
    let mut rng = Rng::derive(sh.seed, &[1000 + 10 * n]);
    for round in 0.. {
        let last = sh.senders_done();
        if let Some(v) = inbox(sh, me, &["inbox"], "inbox")? {
            let ids = listed_ids(&v);
            if !ids.is_empty() {
                done(sh, me, &ids[rng.below(ids.len() as u64) as usize])?;
            }
        }
        if round % 8 == 7 {
            done_all(sh, me)?;
        }
        if last {
            break;
        }
    }
    Ok(())
}

/// r1: lists a few at a time, reads one with `--archive`, marks another done.
fn archiver(sh: &Shared<'_>) -> Result<()> {
    let me = RECIPIENTS[1];
    let mut rng = Rng::derive(sh.seed, &[1001]);
    loop {
        let last = sh.senders_done();
        if let Some(v) = inbox(sh, me, &["inbox", "--limit", "4"], "inbox --limit 4")? {
            let ids = listed_ids(&v);
            if !ids.is_empty() {
                let k = rng.below(ids.len() as u64) as usize;
                if let Some((_, r)) = sh.run(me, &["read", &ids[k], "--archive"], None, &[0, 4])? {
                    if r["archived"] == true {
                        sh.ledger().archived(me, &ids[k], Instant::now());
                    }
                    sh.check_listing(&r, me, "read --archive", None);
                }
                if ids.len() > 1 {
                    done(sh, me, &ids[(k + 1) % ids.len()])?;
                }
            }
        }
        if last {
            break;
        }
    }
    Ok(())
}

/// r2: never lists; reads acknowledged messages by id and marks half of them done.
fn reader_by_id(sh: &Shared<'_>) -> Result<()> {
    let me = RECIPIENTS[2];
    let mut rng = Rng::derive(sh.seed, &[1002]);
    loop {
        let last = sh.senders_done();
        let pick = {
            let ledger = sh.ledger();
            let mine: Vec<&String> = ledger
                .acked_ids()
                .iter()
                .filter(|id| {
                    ledger
                        .by_id(id)
                        .is_some_and(|s| s.to.iter().any(|t| t == me))
                })
                .collect();
            (!mine.is_empty()).then(|| mine[rng.below(mine.len() as u64) as usize].clone())
        };
        match pick {
            Some(id) => {
                if let Some((_, v)) = sh.run(me, &["read", &id], None, &[0, 4])?
                    && v.get("messages").is_some()
                {
                    sh.check_listing(&v, me, "read", None);
                }
                if rng.chance(50) {
                    done(sh, me, &id)?;
                }
            }
            None if last => {}
            // Nothing acknowledged to r2 yet: the senders have only just started.
            None => std::thread::yield_now(),
        }
        if last {
            break;
        }
    }
    Ok(())
}

/// Editors and cancellers, acting as each message's sender: mostly on recent messages (still
/// unread somewhere), sometimes on old ones (read or archived by now).
fn mutator(sh: &Shared<'_>, m: usize) -> Result<()> {
    let mut rng = Rng::derive(sh.seed, &[2000 + m as u64]);
    loop {
        let last = sh.senders_done();
        let edit = rng.chance(55);
        let pick = {
            let mut ledger = sh.ledger();
            let ids = ledger.acked_ids();
            let n = ids.len() as u64;
            let id = match n {
                0 => None,
                _ if rng.chance(60) => Some(ids[(n - 1 - rng.below(n.min(16))) as usize].clone()),
                _ => Some(ids[rng.below(n) as usize].clone()),
            };
            id.filter(|id| {
                if edit {
                    ledger.plan_edit(id)
                } else {
                    ledger.plan_cancel(id)
                }
            })
            .and_then(|id| Some((ledger.by_id(&id)?.marker.clone(), id)))
        };
        match pick {
            Some((marker, id)) if edit => edit_one(sh, &marker, &id)?,
            Some((marker, id)) => cancel_one(sh, &marker, &id)?,
            None if last => {}
            // Nothing to edit yet, or the pick was taken: pick again.
            None => std::thread::yield_now(),
        }
        if last {
            break;
        }
    }
    Ok(())
}

fn edit_one(sh: &Shared<'_>, marker: &Marker, id: &str) -> Result<()> {
    let body = bodies::body(marker, 2);
    let Some((_, v)) = sh.run(&marker.from, &["edit", id, "--message", &body], None, &[0])? else {
        return Ok(());
    };
    let mut outcomes = Vec::new();
    for o in v["outcomes"].as_array().into_iter().flatten() {
        let to = o["recipient"].as_str().unwrap_or("").to_owned();
        let outcome = match (o["outcome"].as_str(), o["correction_id"].as_str()) {
            (Some("edited"), _) => EditOutcome::Edited,
            (Some("correction"), Some(c)) => EditOutcome::Correction(c.to_owned()),
            (Some("cancelled"), _) => EditOutcome::Cancelled,
            _ => {
                sh.problem(
                    Category::Failed,
                    format!("edit {id} printed an unknown outcome {o}"),
                );
                continue;
            }
        };
        match outcome {
            EditOutcome::Edited => bump(&sh.stats.edited, 1),
            EditOutcome::Correction(_) => bump(&sh.stats.corrected, 1),
            EditOutcome::Cancelled => {}
        }
        outcomes.push((to, outcome));
    }
    sh.ledger().report_edit(id, outcomes);
    Ok(())
}

fn cancel_one(sh: &Shared<'_>, marker: &Marker, id: &str) -> Result<()> {
    let Some((o, v)) = sh.run(&marker.from, &["cancel", id], None, &[0, 4])? else {
        return Ok(());
    };
    let cancel = if o.code == Some(4) {
        bump(&sh.stats.refused, 1);
        Cancel::Refused
    } else {
        let states: Vec<(String, String)> = v["recipients"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| {
                (
                    r["recipient"].as_str().unwrap_or("").to_owned(),
                    r["state"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect();
        bump(
            &sh.stats.cancelled,
            states.iter().filter(|(_, s)| s == "cancelled").count(),
        );
        Cancel::Reported(states)
    };
    sh.ledger().report_cancel(id, cancel);
    Ok(())
}

fn listed_ids(v: &Value) -> Vec<String> {
    v["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["id"].as_str().map(str::to_owned))
        .collect()
}

/// After the run: every mailbox's inbox lists exactly its pending files, `doctor` finds
/// nothing, no temp file is left, and every file holds to the ledger.
/// Posts `n` entries to the run channel, one process each.
fn poster(sh: &Shared<'_>, n: usize) -> Result<()> {
    for seq in 0..n {
        let body = format!("channel entry {seq} of run {}", sh.seed);
        let posted = sh.run(
            POSTER,
            &["channel", "post", CHANNEL, "--message", &body],
            None,
            &[0],
        );
        if let Some((_, v)) = posted?
            && let Some(id) = v["id"].as_str()
        {
            sh.channel
                .posted
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(id.to_owned(), body);
        }
    }
    sh.channel.posting.store(false, Ordering::SeqCst);
    Ok(())
}

/// Reads the run channel as the leader (two of these race as the same member) until the
/// poster is done, then once more to drain it.
fn channel_reader(sh: &Shared<'_>) -> Result<()> {
    loop {
        let last = !sh.channel.posting.load(Ordering::SeqCst);
        // Until a post was acknowledged the run channel does not exist yet: "not found" (3) is
        // the right answer then, and only then.
        let exists = !sh
            .channel
            .posted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty();
        let allowed: &[i32] = if exists { &[0] } else { &[0, 3] };
        if let Some((_, v)) = sh.run(LEADER, &["channel", "read", CHANNEL], None, allowed)? {
            if v["damaged"].as_array().is_some_and(|d| !d.is_empty()) {
                sh.problem(
                    Category::Torn,
                    format!("channel read listed damaged entries: {}", v["damaged"]),
                );
            }
            let mut shown = sh
                .channel
                .shown
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            for m in v["messages"].as_array().into_iter().flatten() {
                let id = m["id"].as_str().unwrap_or_default().to_owned();
                let body = m["body"].as_str().unwrap_or_default().to_owned();
                shown.push((id, body));
            }
        }
        if last {
            return Ok(());
        }
    }
}

/// Every acknowledged post was shown exactly once across the two readers, byte for byte,
/// and nothing else was. Returns (posts, entries shown).
fn check_channel(sh: &Shared<'_>) -> (usize, usize) {
    let posted = sh
        .channel
        .posted
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let shown = sh
        .channel
        .shown
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let mut seen = HashSet::new();
    for (id, body) in &shown {
        if !seen.insert(id.clone()) {
            sh.problem(
                Category::Doubled,
                format!("channel entry {id} was shown twice to one member"),
            );
        }
        match posted.get(id) {
            Some(want) if want == body => {}
            Some(_) => sh.problem(
                Category::Torn,
                format!("channel entry {id} was shown with another body"),
            ),
            None => sh.problem(
                Category::Mismatch,
                format!("channel read showed {id}, which was never posted"),
            ),
        }
    }
    for id in posted.keys().filter(|id| !seen.contains(*id)) {
        sh.problem(
            Category::Lost,
            format!("channel entry {id} was posted but never shown to the leader"),
        );
    }
    (posted.len(), shown.len())
}

fn final_check(sh: &Shared<'_>) -> Result<()> {
    let before = sh.mr.snapshot()?;
    for mailbox in RECIPIENTS {
        let Some(v) = inbox(sh, mailbox, &["inbox"], "final inbox")? else {
            continue;
        };
        let listed: BTreeSet<String> = listed_ids(&v).into_iter().collect();
        let pending: BTreeSet<String> = before
            .copies
            .iter()
            .filter(|c| c.mailbox == mailbox && matches!(c.folder, Folder::Unread | Folder::Read))
            .map(|c| c.id.clone())
            .collect();
        for id in pending.difference(&listed) {
            sh.problem(
                Category::Lost,
                format!("{id} is pending in {mailbox} but inbox does not list it"),
            );
        }
        for id in listed.difference(&pending) {
            sh.problem(
                Category::Mismatch,
                format!("inbox of {mailbox} lists {id}, which is not pending on disk"),
            );
        }
    }
    let doctor = sh.mr.run(None, &["doctor"], None, "final doctor")?;
    let clean = doctor
        .json()
        .is_some_and(|v| v["findings"].as_array().is_some_and(Vec::is_empty));
    if !doctor.ok() || !clean {
        sh.problem(
            Category::Failed,
            format!(
                "doctor after a clean run: {}: {}",
                doctor.describe(),
                doctor.stdout.trim()
            ),
        );
    }
    let after = sh.mr.snapshot()?;
    for t in &after.temp_files {
        sh.problem(
            Category::Failed,
            format!("a temp file is left after a clean run: {}", t.display()),
        );
    }
    let mut p = Problems::default();
    check::check_disk(&after, &sh.ledger(), &mut p);
    sh.problems
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .extend(p);
    Ok(())
}
