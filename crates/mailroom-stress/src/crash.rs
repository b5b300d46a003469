//! `crash`: start one mailroom operation, `kill -9` it at a random instant within its typical
//! duration, then require that the home is consistent before any repair, that `doctor --fix`
//! leaves it clean, and that nothing acknowledged was lost or doubled.
//!
//! Invariant: each trial's choices come from the run seed and the trial number alone (only
//! the instant the kill lands depends on the machine); homes are replaced every few trials so
//! a check costs O(trial), not O(run).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::Result;
use clap::Args;
use serde_json::{Value, json};

use crate::bodies::{self, Marker};
use crate::check::{self, Category, Problems};
use crate::ledger::{Edit, EditOutcome, Ledger};
use crate::mcp::{McpClient, tool_result};
use crate::rng::Rng;
use crate::runner::{Mailroom, Outcome};
use crate::work::{Common, PgServer, Work};

#[derive(Debug, Args)]
pub struct CrashArgs {
    #[command(flatten)]
    pub common: Common,
    /// Small size for CI: 50 trials.
    #[arg(long)]
    pub quick: bool,
    /// Trials to run (default 1,000; 50 with --quick).
    #[arg(long)]
    pub trials: Option<usize>,
    /// Trials sharing one home before a fresh one is started.
    #[arg(long, default_value_t = 20)]
    pub per_home: usize,
}

const SENDERS: [&str; 2] = ["a@crash", "b@crash"];
const RECIPIENTS: [&str; 3] = ["r0@crash", "r1@crash", "r2@crash"];

/// The operation a trial kills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Victim {
    /// A send to two recipients.
    Send,
    /// A send to two recipients with an idempotency key, retried after the kill.
    KeyedSend,
    Reply,
    Edit,
    DoneAll,
    /// A `mailroom mcp` server with three `write_mail` calls in flight.
    McpSend,
    /// The same with idempotency keys; each call left unanswered is made again through a
    /// fresh server.
    McpKeyedSend,
}

/// How many victims there are.
const VICTIMS: usize = 7;

/// The `write_mail` calls an MCP victim has in flight when it is killed.
const MCP_CALLS: usize = 3;

impl Victim {
    const ALL: [Victim; VICTIMS] = [
        Victim::Send,
        Victim::KeyedSend,
        Victim::Reply,
        Victim::Edit,
        Victim::DoneAll,
        Victim::McpSend,
        Victim::McpKeyedSend,
    ];

    fn index(self) -> usize {
        self as usize
    }

    fn is_mcp(self) -> bool {
        matches!(self, Victim::McpSend | Victim::McpKeyedSend)
    }
}

#[derive(Debug, Default)]
struct Stats {
    killed: usize,
    completed: usize,
    /// Killed sends by how many of their two recipients got a copy: none, one, both.
    send_reach: [usize; 3],
    retried: usize,
    acknowledged: usize,
    debris_cleaned: usize,
    operations: u64,
    /// MCP victims: trials, calls made, calls answered before the kill.
    mcp_trials: usize,
    mcp_calls: usize,
    mcp_answered: usize,
    /// Unanswered `write_mail` calls by whether their recipient got a copy.
    mcp_reach: [usize; 2],
    /// Unanswered keyed calls made again through a fresh server.
    mcp_resent: usize,
    /// PostgreSQL: backends terminated under a running command, and the commands that then
    /// said they failed (the rest had finished or not yet connected).
    backends_cut: usize,
    cut_refused: usize,
}

/// One home and what was done in it.
struct Home<'j> {
    mr: Mailroom<'j>,
    ledger: Ledger,
    seq: u64,
}

impl Home<'_> {
    fn next_marker(&mut self, from: &str) -> Marker {
        self.seq += 1;
        Marker {
            from: from.to_owned(),
            seq: self.seq,
        }
    }
}

pub fn run(args: &CrashArgs) -> Result<bool> {
    let trials = args.trials.unwrap_or(if args.quick { 50 } else { 1000 });
    let work = Work::new(&args.common, "crash")?;
    println!(
        "crash: seed={} trials={trials} bin={}",
        work.seed,
        work.bin.display()
    );
    let started = Instant::now();
    let typical = calibrate(&work)?;
    let pg = work.pg.as_ref();
    println!(
        "crash: typical durations (median of 5): {}",
        Victim::ALL
            .iter()
            .map(|v| format!("{v:?}={:.1}ms", typical[v.index()].as_secs_f64() * 1000.0))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let mut stats = Stats::default();
    let mut problems = Problems::default();
    let mut home: Option<Home<'_>> = None;
    for trial in 0..trials {
        if trial % args.per_home.max(1) == 0 {
            if let Some(h) = home.take() {
                retire(h, &mut stats, problems.is_empty())?;
            }
            home = Some(Home {
                mr: work.mailroom(&format!("home-{trial}"))?,
                ledger: Ledger::default(),
                seq: 0,
            });
        }
        let Some(h) = home.as_mut() else { continue };
        let mut rng = Rng::derive(work.seed, &[trial as u64]);
        let before = problems.len();
        let label = one_trial(h, pg, &mut rng, &typical, &mut stats, &mut problems)?;
        problems.label_since(before, &format!("trial {trial} ({label})"));
    }
    if let Some(h) = home.take() {
        retire(h, &mut stats, problems.is_empty())?;
    }
    // Imports read a tree of files into a home; they are proved on the file store only.
    let (import_kills, import_trials) = if work.pg.is_none() {
        let before = problems.len();
        let r = crate::import_crash::run(&work, (trials / 10).max(5), &mut problems)?;
        problems.label_since(before, "imports");
        r
    } else {
        (0, 0)
    };
    println!(
        "crash: trials={trials} faults_injected={} completed_before_kill={} killed_sends_reaching(0/1/2 recipients)={}/{}/{} keyed_retries={} operations={} acknowledged={} debris_cleaned={} imports(trials={import_trials} killed={import_kills}) mcp(trials={} calls={} answered_before_kill={} unanswered_reaching(0/1)={}/{} keyed_resends={}) pg(backends_cut={} cut_refused={}) {problems} seed={} duration={:.1}s",
        stats.killed,
        stats.completed,
        stats.send_reach[0],
        stats.send_reach[1],
        stats.send_reach[2],
        stats.retried,
        stats.operations,
        stats.acknowledged,
        stats.debris_cleaned,
        stats.mcp_trials,
        stats.mcp_calls,
        stats.mcp_answered,
        stats.mcp_reach[0],
        stats.mcp_reach[1],
        stats.mcp_resent,
        stats.backends_cut,
        stats.cut_refused,
        work.seed,
        started.elapsed().as_secs_f64()
    );
    let passed = problems.is_empty();
    if !passed {
        println!(
            "crash: FAILED with {} problems (reproduce the choices with --seed {}):\n{}",
            problems.len(),
            work.seed,
            problems.listing(50)
        );
    }
    work.close(passed)?;
    Ok(passed)
}

/// Adds a finished home's figures; removes it when everything so far passed.
fn retire(h: Home<'_>, stats: &mut Stats, passed: bool) -> Result<()> {
    stats.operations += h.mr.runs();
    stats.acknowledged += h.ledger.acked_count();
    if passed {
        let _ = std::fs::remove_dir_all(h.mr.home());
    }
    Ok(())
}

/// The median wall time of each victim, run to completion five times in a scratch home.
fn calibrate(work: &Work) -> Result<[Duration; VICTIMS]> {
    let mut h = Home {
        mr: work.mailroom("calibrate")?,
        ledger: Ledger::default(),
        seq: 0,
    };
    let mut out = [Duration::ZERO; VICTIMS];
    let mut rng = Rng::derive(work.seed, &[u64::MAX]);
    for v in Victim::ALL {
        let mut times = Vec::new();
        for _ in 0..5 {
            setup(&mut h, &mut rng, &mut Problems::default())?;
            if v.is_mcp() {
                let plan = plan_mcp(&mut h, &mut rng, v);
                if let Ok((answers, took)) = run_mcp(&h, &plan, None)? {
                    times.push(took);
                    acknowledge_mcp(&mut h, &plan, &answers, &mut Problems::default());
                }
                continue;
            }
            let Some(op) = prepare(&mut h, &mut rng, v) else {
                continue;
            };
            let t = Instant::now();
            let child =
                h.mr.spawn(Some(&op.who), &op.args_ref(), op.stdin.as_deref())?;
            let o =
                h.mr.finish(child, Some(&op.who), &op.args_ref(), "calibrate")?;
            times.push(t.elapsed());
            acknowledge(&mut h, &op, &o, &mut Problems::default());
        }
        times.sort();
        out[v.index()] = times
            .get(times.len() / 2)
            .copied()
            .unwrap_or(Duration::from_millis(5));
    }
    let _ = std::fs::remove_dir_all(h.mr.home());
    Ok(out)
}

/// An acknowledged send from a random sender to two recipients, and sometimes an inbox read,
/// so that replies, edits and `done --all` find mail in every state.
fn setup(h: &mut Home<'_>, rng: &mut Rng, p: &mut Problems) -> Result<()> {
    let from = SENDERS[rng.below(2) as usize];
    let marker = h.next_marker(from);
    let to = two_recipients(rng);
    let subject = bodies::subject(&marker);
    let body = bodies::body(&marker, 1);
    h.ledger.plan_send(marker.clone(), to.clone(), None);
    let args = [
        "send",
        "--subject",
        &subject,
        "--to",
        &to[0],
        "--to",
        &to[1],
    ];
    let o = h.mr.run(Some(from), &args, Some(&body), "setup")?;
    match o
        .json()
        .filter(|_| o.ok())
        .and_then(|v| v["id"].as_str().map(str::to_owned))
    {
        Some(id) => {
            if let Err(e) = h.ledger.ack_send(&marker, &id) {
                p.push(Category::Doubled, e);
            }
        }
        None => p.push(
            Category::Failed,
            format!("setup send {marker}: {}", o.describe()),
        ),
    }
    if rng.chance(50) {
        let who = RECIPIENTS[rng.below(3) as usize];
        let started = std::time::Instant::now();
        let o = h.mr.run(Some(who), &["inbox"], None, "setup")?;
        match o.json().filter(|_| o.ok()) {
            Some(v) => check::check_listing(&v, who, "inbox", Some(started), &h.ledger, p),
            None => p.push(
                Category::Failed,
                format!("setup inbox of {who}: {}", o.describe()),
            ),
        }
    }
    Ok(())
}

fn two_recipients(rng: &mut Rng) -> Vec<String> {
    let first = rng.below(3) as usize;
    let second = (first + 1 + rng.below(2) as usize) % 3;
    vec![RECIPIENTS[first].to_owned(), RECIPIENTS[second].to_owned()]
}

/// A planned operation: who runs what, and what the ledger must learn if it completes.
struct Op {
    victim: Victim,
    who: String,
    args: Vec<String>,
    stdin: Option<String>,
    marker: Option<Marker>,
    target: Option<String>,
}

impl Op {
    fn args_ref(&self) -> Vec<&str> {
        self.args.iter().map(String::as_str).collect()
    }
}

/// Plans `victim` in the ledger (before it starts); `None` when the home has nothing it could
/// act on.
fn prepare(h: &mut Home<'_>, rng: &mut Rng, victim: Victim) -> Option<Op> {
    let acked: Vec<String> = h
        .ledger
        .acked_ids()
        .iter()
        .filter(|id| h.ledger.by_id(id).is_some_and(|s| s.reply_to.is_none()))
        .cloned()
        .collect();
    match victim {
        Victim::Send | Victim::KeyedSend => {
            let from = SENDERS[rng.below(2) as usize];
            let marker = h.next_marker(from);
            let to = two_recipients(rng);
            let mut args = vec![
                "send".to_owned(),
                "--subject".into(),
                bodies::subject(&marker),
                "--to".into(),
                to[0].clone(),
                "--to".into(),
                to[1].clone(),
            ];
            if victim == Victim::KeyedSend {
                args.extend([
                    "--idempotency-key".into(),
                    format!("key-{}-{}", marker.from, marker.seq),
                ]);
            }
            h.ledger.plan_send(marker.clone(), to, None);
            Some(Op {
                victim,
                who: from.to_owned(),
                args,
                stdin: Some(bodies::body(&marker, 1)),
                marker: Some(marker),
                target: None,
            })
        }
        Victim::Reply => {
            let id = acked.get(rng.below(acked.len() as u64) as usize)?.clone();
            let orig = h.ledger.by_id(&id)?;
            let me = orig.to[rng.below(orig.to.len() as u64) as usize].clone();
            let back = orig.marker.from.clone();
            let marker = h.next_marker(&me);
            h.ledger
                .plan_send(marker.clone(), vec![back], Some(id.clone()));
            Some(Op {
                victim,
                who: me,
                args: vec![
                    "reply".into(),
                    id.clone(),
                    "--message".into(),
                    bodies::body(&marker, 1),
                ],
                stdin: None,
                marker: Some(marker),
                target: Some(id),
            })
        }
        Victim::Edit => {
            let candidates: Vec<&String> = acked
                .iter()
                .filter(|id| h.ledger.by_id(id).is_some_and(|s| s.edit == Edit::None))
                .collect();
            let id = (*candidates.get(rng.below(candidates.len() as u64) as usize)?).clone();
            if !h.ledger.plan_edit(&id) {
                return None;
            }
            let marker = h.ledger.by_id(&id)?.marker.clone();
            Some(Op {
                victim,
                who: marker.from.clone(),
                args: vec![
                    "edit".into(),
                    id.clone(),
                    "--message".into(),
                    bodies::body(&marker, 2),
                ],
                stdin: None,
                marker: None,
                target: Some(id),
            })
        }
        Victim::DoneAll => Some(Op {
            victim,
            who: RECIPIENTS[rng.below(3) as usize].to_owned(),
            args: vec!["done".into(), "--all".into()],
            stdin: None,
            marker: None,
            target: None,
        }),
        // Not a CLI command: `plan_mcp` plans these.
        Victim::McpSend | Victim::McpKeyedSend => None,
    }
}

/// Teaches the ledger what a completed operation reported.
fn acknowledge(h: &mut Home<'_>, op: &Op, o: &Outcome, p: &mut Problems) {
    let Some(v) = o.json().filter(|_| o.ok()) else {
        p.push(
            Category::Failed,
            format!("{:?} by {}: {}", op.victim, op.who, o.describe()),
        );
        return;
    };
    match op.victim {
        Victim::Send | Victim::KeyedSend | Victim::Reply => {
            let (Some(marker), Some(id)) = (&op.marker, v["id"].as_str()) else {
                p.push(
                    Category::Failed,
                    format!("{:?} printed no id: {v}", op.victim),
                );
                return;
            };
            if let Err(e) = h.ledger.ack_send(marker, id) {
                p.push(Category::Doubled, e);
            }
            if let (Some(orig), Some(true)) = (&op.target, v["closed"].as_bool()) {
                h.ledger.closed(&op.who, orig);
            }
        }
        Victim::Edit => {
            let Some(id) = &op.target else { return };
            let outcomes = v["outcomes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|o| {
                    let to = o["recipient"].as_str()?.to_owned();
                    let outcome = match (o["outcome"].as_str()?, o["correction_id"].as_str()) {
                        ("edited", _) => EditOutcome::Edited,
                        ("correction", Some(c)) => EditOutcome::Correction(c.to_owned()),
                        ("cancelled", _) => EditOutcome::Cancelled,
                        _ => return None,
                    };
                    Some((to, outcome))
                })
                .collect();
            h.ledger.report_edit(id, outcomes);
        }
        Victim::DoneAll | Victim::McpSend | Victim::McpKeyedSend => {}
    }
}

/// Starts a CLI operation and kills it; a killed keyed send is retried. Returns the trial's
/// label, or `None` when the home had nothing to act on.
fn cli_victim(
    h: &mut Home<'_>,
    pg: Option<&PgServer>,
    rng: &mut Rng,
    victim: Victim,
    typical: &[Duration; VICTIMS],
    stats: &mut Stats,
    p: &mut Problems,
) -> Result<Option<String>> {
    let op = match prepare(h, rng, victim) {
        Some(op) => op,
        None => match prepare(h, rng, Victim::Send) {
            Some(op) => op,
            None => return Ok(None),
        },
    };
    let window = typical[op.victim.index()].mul_f64(1.25);
    let delay = Duration::from_nanos(rng.below(window.as_nanos().max(1) as u64));
    // On PostgreSQL, half the faults are the server side of the connection dying instead:
    // the client's backend is terminated and the client must say it could not be sure.
    let cut = pg.filter(|_| rng.chance(50));
    let label = format!(
        "{:?} by {}, {} after {}µs",
        op.victim,
        op.who,
        if cut.is_some() { "backend cut" } else { "kill" },
        delay.as_micros()
    );

    let args = op.args_ref();
    let mut child = h.mr.spawn(Some(&op.who), &args, op.stdin.as_deref())?;
    // The fault injection itself: a random instant within the operation's typical run.
    std::thread::sleep(delay);
    let mut interrupted = false;
    match (cut, h.mr.url()) {
        (Some(pg), Some(url)) => {
            // A volley: the command's backend, and each it reconnects with, is cut until the
            // command ends (ten seconds at most: one that hangs is then seen below).
            let until = Instant::now() + Duration::from_secs(10);
            let mut n = 0;
            loop {
                n += pg.cut(url)?;
                if child.try_wait()?.is_some() || Instant::now() > until {
                    break;
                }
                // The volley's pace (part of the fault), not a synchronisation: the loop ends
                // on the child's exit, seen by `try_wait`.
                std::thread::sleep(Duration::from_millis(1));
            }
            stats.backends_cut += n;
            let o =
                h.mr.finish(child, Some(&op.who), &args, "victim (backend cut)")?;
            if n > 0 && o.code == Some(1) && o.stdout.contains("\"error\"") {
                // Refused for a store failure: documented, and whatever happened is either all
                // of the change or none of it; the checker holds it to that below.
                interrupted = true;
                stats.cut_refused += 1;
                // A fault that landed mid-run, like a kill that did.
                stats.killed += 1;
            } else {
                stats.completed += 1;
                acknowledge(h, &op, &o, p);
            }
        }
        _ => {
            child.kill()?;
            let o = h.mr.finish(child, Some(&op.who), &args, "victim")?;
            if o.signal == Some(9) {
                interrupted = true;
                stats.killed += 1;
            } else {
                stats.completed += 1;
                acknowledge(h, &op, &o, p);
            }
        }
    }

    if interrupted
        && matches!(op.victim, Victim::Send | Victim::KeyedSend)
        && let Some(marker) = &op.marker
    {
        let reach = copies_of(h, marker)?;
        stats.send_reach[reach.min(2)] += 1;
        if cut.is_some() && reach == 1 {
            p.push(
                Category::Torn,
                format!("{marker}: a send whose backend was cut reached one of its two recipients"),
            );
        }
    }
    if interrupted && op.victim == Victim::KeyedSend {
        stats.retried += 1;
        let o =
            h.mr.run(Some(&op.who), &args, op.stdin.as_deref(), "retry")?;
        acknowledge(h, &op, &o, p);
    }
    Ok(Some(label))
}

/// One trial; returns its label for problem reports.
fn one_trial(
    h: &mut Home<'_>,
    pg: Option<&PgServer>,
    rng: &mut Rng,
    typical: &[Duration; VICTIMS],
    stats: &mut Stats,
    p: &mut Problems,
) -> Result<String> {
    setup(h, rng, p)?;
    let victim = Victim::ALL[rng.below(VICTIMS as u64) as usize];
    let label = if victim.is_mcp() {
        mcp_victim(h, rng, victim, typical, stats, p)?
    } else {
        match cli_victim(h, pg, rng, victim, typical, stats, p)? {
            Some(label) => label,
            None => return Ok("nothing to do".into()),
        }
    };

    let start = p.len();
    check::check_disk(&h.mr.snapshot()?, &h.ledger, p);
    p.label_since(start, "before doctor");

    let start = p.len();
    let fix = h.mr.run(None, &["doctor", "--fix"], None, "doctor --fix")?;
    match fix.json().filter(|_| fix.ok()) {
        Some(v) => stats.debris_cleaned += v["findings"].as_array().map_or(0, Vec::len),
        None => p.push(
            Category::Failed,
            format!("doctor --fix: {}", fix.describe()),
        ),
    }
    let again = h.mr.run(None, &["doctor"], None, "doctor")?;
    let clean = again
        .json()
        .is_some_and(|v| v["findings"].as_array().is_some_and(Vec::is_empty));
    if !again.ok() || !clean {
        p.push(
            Category::Failed,
            format!(
                "doctor after --fix: {}: {}",
                again.describe(),
                again.stdout.trim()
            ),
        );
    }
    let snap = h.mr.snapshot()?;
    for t in &snap.temp_files {
        p.push(
            Category::Failed,
            format!("{} is left after doctor --fix", t.display()),
        );
    }
    check::check_disk(&snap, &h.ledger, p);
    p.label_since(start, "after doctor --fix");
    Ok(label)
}

/// How many copies of `marker`'s send are in a recipient's state folders now.
fn copies_of(h: &Home<'_>, marker: &Marker) -> Result<usize> {
    let snap = h.mr.snapshot()?;
    Ok(snap
        .copies
        .iter()
        .filter(|c| {
            c.folder.is_state()
                && c.decoded.as_ref().is_ok_and(|m| {
                    bodies::parse_marker(&m.body).is_some_and(|(mk, _)| &mk == marker)
                })
        })
        .count())
}

/// An MCP victim's calls: who its server is bound to, and each `write_mail` with the send it
/// is planned as.
struct McpPlan {
    who: String,
    calls: Vec<(Marker, Value)>,
}

/// Plans [`MCP_CALLS`] `write_mail` calls from one sender, each to one recipient (the tool
/// takes one), keyed for [`Victim::McpKeyedSend`].
fn plan_mcp(h: &mut Home<'_>, rng: &mut Rng, victim: Victim) -> McpPlan {
    let from = SENDERS[rng.below(2) as usize];
    let mut calls = Vec::new();
    for _ in 0..MCP_CALLS {
        let marker = h.next_marker(from);
        let to = RECIPIENTS[rng.below(3) as usize];
        let mut args = json!({
            "sender": from,
            "recipient": to,
            "subject": bodies::subject(&marker),
            "body": bodies::body(&marker, 1),
        });
        if victim == Victim::McpKeyedSend {
            args["idempotency_key"] = format!("mcp-key-{}-{}", marker.from, marker.seq).into();
        }
        h.ledger
            .plan_send(marker.clone(), vec![to.to_owned()], None);
        calls.push((marker, args));
    }
    McpPlan {
        who: from.to_owned(),
        calls,
    }
}

/// The answers that arrived, by call index, and how long the calls took.
type McpRun = (HashMap<usize, Value>, Duration);

/// Starts a server, completes the handshake, puts every planned call in flight at once, then
/// either kills the server after `kill_after` or waits for every answer and closes it. Returns
/// the answers that arrived, by call index, and how long the calls took; `Err` with the
/// reason when the server failed to start or answer.
fn run_mcp(
    h: &Home<'_>,
    plan: &McpPlan,
    kill_after: Option<Duration>,
) -> Result<std::result::Result<McpRun, String>> {
    let mut server = match McpClient::start(&h.mr, &plan.who) {
        Ok(s) => s,
        Err(e) => return Ok(Err(format!("{e:#}"))),
    };
    let t = Instant::now();
    let mut ids = Vec::new();
    for (_, args) in &plan.calls {
        ids.push(server.start_call("write_mail", args)?);
    }
    let mut answers = HashMap::new();
    match kill_after {
        Some(delay) => {
            // The fault injection itself: a random instant within the calls' typical run.
            std::thread::sleep(delay);
            let mut arrived = server.kill()?;
            for (i, id) in ids.iter().enumerate() {
                if let Some(a) = arrived.remove(id) {
                    answers.insert(i, a);
                }
            }
        }
        None => {
            for (i, id) in ids.iter().enumerate() {
                match server.answer(*id) {
                    Ok(a) => {
                        answers.insert(i, a);
                    }
                    Err(e) => return Ok(Err(format!("{e:#}"))),
                }
            }
            let took = t.elapsed();
            let o = server.close()?;
            if !o.ok() {
                return Ok(Err(format!(
                    "mcp as {} on closing its stdin: {}",
                    plan.who,
                    o.describe()
                )));
            }
            return Ok(Ok((answers, took)));
        }
    }
    Ok(Ok((answers, t.elapsed())))
}

/// Teaches the ledger the sends whose answers arrived (each must be a success with an id).
fn acknowledge_mcp(
    h: &mut Home<'_>,
    plan: &McpPlan,
    answers: &HashMap<usize, Value>,
    p: &mut Problems,
) {
    for (i, (marker, _)) in plan.calls.iter().enumerate() {
        let Some(answer) = answers.get(&i) else {
            continue;
        };
        match tool_result(answer) {
            Ok(v) => match v["id"].as_str() {
                Some(id) => {
                    if let Err(e) = h.ledger.ack_send(marker, id) {
                        p.push(Category::Doubled, e);
                    }
                }
                None => p.push(
                    Category::Failed,
                    format!("write_mail {marker} returned no id: {v}"),
                ),
            },
            Err(e) => p.push(Category::Failed, format!("write_mail {marker}: {e}")),
        }
    }
}

/// Starts an MCP server with its calls in flight and kills it; every call it answered is
/// acknowledged, and for keyed calls every unanswered one is made again through a fresh server
/// (it must then be delivered exactly once). Returns the trial's label.
fn mcp_victim(
    h: &mut Home<'_>,
    rng: &mut Rng,
    victim: Victim,
    typical: &[Duration; VICTIMS],
    stats: &mut Stats,
    p: &mut Problems,
) -> Result<String> {
    let plan = plan_mcp(h, rng, victim);
    let window = typical[victim.index()].mul_f64(1.25);
    let delay = Duration::from_nanos(rng.below(window.as_nanos().max(1) as u64));
    let label = format!(
        "{victim:?} by {} ({} calls in flight), kill after {}µs",
        plan.who,
        plan.calls.len(),
        delay.as_micros()
    );
    stats.mcp_trials += 1;
    stats.mcp_calls += plan.calls.len();
    let answers = match run_mcp(h, &plan, Some(delay))? {
        Ok((answers, _)) => answers,
        Err(e) => {
            p.push(Category::Failed, e);
            return Ok(label);
        }
    };
    acknowledge_mcp(h, &plan, &answers, p);
    stats.mcp_answered += answers.len();
    if answers.len() == plan.calls.len() {
        stats.completed += 1;
    } else {
        stats.killed += 1;
    }
    let unanswered: Vec<usize> = (0..plan.calls.len())
        .filter(|i| !answers.contains_key(i))
        .collect();
    for &i in &unanswered {
        let reach = copies_of(h, &plan.calls[i].0)?;
        stats.mcp_reach[reach.min(1)] += 1;
    }
    if victim == Victim::McpKeyedSend && !unanswered.is_empty() {
        let again = McpPlan {
            who: plan.who.clone(),
            calls: unanswered.iter().map(|&i| plan.calls[i].clone()).collect(),
        };
        stats.mcp_resent += again.calls.len();
        stats.retried += again.calls.len();
        match run_mcp(h, &again, None)? {
            Ok((answers, _)) => acknowledge_mcp(h, &again, &answers, p),
            Err(e) => p.push(Category::Failed, format!("resending through MCP: {e}")),
        }
    }
    Ok(label)
}
