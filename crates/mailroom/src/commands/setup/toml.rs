//! Codex's `config.toml`, edited with `toml_edit` so comments, order and spacing stay:
//! `[mcp_servers.mailroom]`, and mailroom's hooks as `[[hooks.EVENT]]` tables when the user
//! keeps their hooks there (Codex reads hooks from `hooks.json` and from `config.toml`, and
//! warns when both hold some: "prefer a single representation").

use anyhow::{Result, anyhow};
use serde_json::Value;

use super::Remote;
use super::jsonc::{self, HookEntry};
use super::record::{Record, Replaced};

/// The variables Codex forwards to the server: it starts MCP servers with a filtered
/// environment (HOME, PATH, USER, LANG, ... only), so without them the MCP server would open
/// another mailroom than the hooks, which get the whole environment (docs: config-reference,
/// `mcp_servers.<id>.env_vars`).
const FORWARDED: [&str; 3] = ["MAILROOM_HOME", "MAILROOM_URL", "MAILROOM_AS"];

/// Whether `t`'s `env_vars` is absent, or is setup's list.
fn forwards_as_setup_does(t: &dyn toml_edit::TableLike) -> bool {
    match t.get("env_vars") {
        None => true,
        Some(v) => v.as_array().is_some_and(|a| {
            a.iter().map(|v| v.as_str()).collect::<Vec<_>>()
                == FORWARDED.iter().map(|s| Some(*s)).collect::<Vec<_>>()
        }),
    }
}

/// Whether a `[mcp_servers.mailroom]` table is as `setup --remote` writes it: `url` and
/// `bearer_token_env_var`, nothing else.
fn toml_remote_shaped(t: &dyn toml_edit::TableLike) -> bool {
    t.iter()
        .all(|(k, v)| matches!(k, "url" | "bearer_token_env_var") && v.as_str().is_some())
        && t.contains_key("url")
}

/// Whether a `[mcp_servers.mailroom]` table is as some setup writes it, for any install of
/// mailroom: `command` and `args` a command line setup writes (`super::is_our_server`),
/// setup's `env_vars` or none, nothing else; or as `setup --remote` writes it.
fn toml_setup_shaped(t: &dyn toml_edit::TableLike) -> bool {
    if toml_remote_shaped(t) {
        return true;
    }
    let argv: Option<Vec<String>> = t.get("command").and_then(|c| c.as_str()).and_then(|c| {
        let args: Option<Vec<String>> = match t.get("args") {
            None => Some(Vec::new()),
            Some(a) => a
                .as_array()?
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect(),
        };
        Some(std::iter::once(c.to_owned()).chain(args?).collect())
    });
    forwards_as_setup_does(t)
        && t.iter()
            .all(|(k, _)| k == "command" || k == "args" || k == "env_vars")
        && argv.is_some_and(|a| super::is_our_server(&a))
}

/// Whether a `[mcp_servers.mailroom]` table is exactly what setup writes now (or wrote before
/// it forwarded the environment).
fn toml_exactly(t: &dyn toml_edit::TableLike, command: &str, args: &[String]) -> bool {
    forwards_as_setup_does(t)
        && t.iter()
            .all(|(k, _)| k == "command" || k == "args" || k == "env_vars")
        && t.get("command").and_then(|c| c.as_str()) == Some(command)
        && t.get("args").and_then(|a| a.as_array()).is_some_and(|a| {
            a.iter().map(|v| v.as_str()).collect::<Vec<_>>()
                == args.iter().map(|s| Some(s.as_str())).collect::<Vec<_>>()
        })
}

/// Codex's `config.toml` with setup's server added, edited with `toml_edit` so comments and
/// order stay.
pub(super) fn add(
    text: Option<&str>,
    (command, args): (&str, &[String]),
    remote: Option<&Remote>,
    hooks: &[HookEntry],
    known: &jsonc::Known,
    replace: bool,
    is_ours: &dyn Fn(&str) -> bool,
) -> Result<jsonc::Added> {
    let known_hooks = known.hooks;
    let known = known.server;
    let source = text.unwrap_or_default();
    let mut doc: toml_edit::DocumentMut = source
        .parse()
        .map_err(|e: toml_edit::TomlError| anyhow!("it is not valid TOML: {}", e.message()))?;
    let mut replaced = Vec::new();
    if !doc.contains_key("mcp_servers") {
        let mut t = toml_edit::Table::new();
        t.set_implicit(true);
        doc.insert("mcp_servers", toml_edit::Item::Table(t));
    }
    let servers = doc
        .get_mut("mcp_servers")
        .and_then(|s| s.as_table_like_mut())
        .ok_or_else(|| anyhow!("its mcp_servers is not a table"))?;
    let mut a = toml_edit::Array::new();
    for s in args {
        a.push(s.as_str());
    }
    let existing = servers.get("mailroom").map(|item| {
        (
            item.as_table_like().is_some_and(toml_setup_shaped),
            item.as_table_like().is_some(),
            item.to_string(),
        )
    });
    if let Some((shaped, table, raw)) = existing {
        let same = servers
            .get("mailroom")
            .and_then(|s| s.as_table_like())
            .is_some_and(|t| match remote {
                Some(r) => {
                    t.len() == 2
                        && t.get("url").and_then(|v| v.as_str()) == Some(r.url.as_str())
                        && t.get("bearer_token_env_var").and_then(|v| v.as_str())
                            == Some(r.var.as_str())
                }
                None => toml_exactly(t, command, args) && t.contains_key("env_vars"),
            });
        if !same && !known {
            if !shaped && !replace {
                return Err(jsonc::Foreign(format!(
                    "its [mcp_servers.mailroom] is an entry setup did not write ({})",
                    if table {
                        "a table with keys of its own"
                    } else {
                        "not a table"
                    }
                ))
                .into());
            }
            replaced.push(Replaced::Table {
                raw: table_text(&raw),
            });
            if !shaped {
                servers.remove("mailroom");
            }
        }
    }
    match (
        servers
            .get_mut("mailroom")
            .and_then(|s| s.as_table_like_mut()),
        remote,
    ) {
        (Some(t), Some(r)) => {
            // From a local entry to a remote one: setup's keys of the one go, the user's stay.
            for k in ["command", "args", "env_vars"] {
                t.remove(k);
            }
            if t.get("url").and_then(|v| v.as_str()) != Some(r.url.as_str()) {
                t.insert("url", toml_edit::value(r.url.as_str()));
            }
            if t.get("bearer_token_env_var").and_then(|v| v.as_str()) != Some(r.var.as_str()) {
                t.insert("bearer_token_env_var", toml_edit::value(r.var.as_str()));
            }
        }
        (None, Some(r)) => {
            let mut t = toml_edit::Table::new();
            t.insert("url", toml_edit::value(r.url.as_str()));
            t.insert("bearer_token_env_var", toml_edit::value(r.var.as_str()));
            servers.insert("mailroom", toml_edit::Item::Table(t));
        }
        // What the user added to setup's entry (`env`, `cwd`, a timeout...) stays; setup
        // rewrites only the keys it writes, and only when they differ.
        (Some(t), None) => {
            for k in ["url", "bearer_token_env_var"] {
                t.remove(k);
            }
            if t.get("command").and_then(|c| c.as_str()) != Some(command) {
                t.insert("command", toml_edit::value(command));
            }
            let same_args = t.get("args").and_then(|a| a.as_array()).is_some_and(|a| {
                a.iter().map(|v| v.as_str()).collect::<Vec<_>>()
                    == args.iter().map(|s| Some(s.as_str())).collect::<Vec<_>>()
            });
            if !same_args {
                t.insert("args", toml_edit::value(a));
            }
            // The user's own forwarded variables stay; setup's are added to them.
            let mut vars = t
                .get("env_vars")
                .and_then(|v| v.as_array())
                .cloned()
                .unwrap_or_default();
            let missing: Vec<&str> = FORWARDED
                .iter()
                .copied()
                .filter(|f| !vars.iter().any(|v| v.as_str() == Some(*f)))
                .collect();
            if !missing.is_empty() {
                for f in missing {
                    vars.push(f);
                }
                t.insert("env_vars", toml_edit::value(vars));
            }
        }
        (None, None) => {
            let mut t = toml_edit::Table::new();
            t.insert("command", toml_edit::value(command));
            t.insert("args", toml_edit::value(a));
            t.insert(
                "env_vars",
                toml_edit::value(FORWARDED.iter().copied().collect::<toml_edit::Array>()),
            );
            servers.insert("mailroom", toml_edit::Item::Table(t));
        }
    }
    let mut written = Vec::new();
    if !hooks.is_empty() {
        add_hooks(
            &mut doc,
            hooks,
            known_hooks,
            is_ours,
            &mut replaced,
            &mut written,
        )?;
    }
    Ok(jsonc::Added {
        text: doc.to_string(),
        replaced,
        hooks: written,
        server: true,
    })
}

/// Whether `text` keeps hooks in `[hooks]` tables (`[hooks.state]` is Codex's own
/// bookkeeping, not a hook).
pub(crate) fn has_hooks(text: &str) -> bool {
    text.parse::<toml_edit::DocumentMut>().is_ok_and(|doc| {
        doc.get("hooks")
            .and_then(|h| h.as_table_like())
            .is_some_and(|h| h.iter().any(|(k, _)| k != "state"))
    })
}

/// Whether every event of `events` has a command of mailroom's in `doc`'s `[[hooks.EVENT]]`.
pub(super) fn wired_hooks(
    doc: &toml_edit::DocumentMut,
    events: &[HookEntry],
    is_ours: &dyn Fn(&str) -> bool,
) -> bool {
    events.iter().all(|e| {
        doc.get("hooks")
            .and_then(|h| h.get(e.event))
            .and_then(|g| g.as_array_of_tables())
            .is_some_and(|g| !commands(g, is_ours).is_empty())
    })
}

/// A TOML value as JSON (hooks compare as `jsonc::entry_value` makes them).
fn json_of(item: &toml_edit::Item) -> Value {
    fn value(v: &toml_edit::Value) -> Value {
        match v {
            toml_edit::Value::String(s) => Value::String(s.value().clone()),
            toml_edit::Value::Integer(i) => Value::from(*i.value()),
            toml_edit::Value::Float(f) => Value::from(*f.value()),
            toml_edit::Value::Boolean(b) => Value::Bool(*b.value()),
            toml_edit::Value::Datetime(d) => Value::String(d.value().to_string()),
            toml_edit::Value::Array(a) => Value::Array(a.iter().map(value).collect()),
            toml_edit::Value::InlineTable(t) => {
                Value::Object(t.iter().map(|(k, v)| (k.to_owned(), value(v))).collect())
            }
        }
    }
    match item {
        toml_edit::Item::None => Value::Null,
        toml_edit::Item::Value(v) => value(v),
        toml_edit::Item::Table(t) => {
            Value::Object(t.iter().map(|(k, v)| (k.to_owned(), json_of(v))).collect())
        }
        toml_edit::Item::ArrayOfTables(a) => Value::Array(
            a.iter()
                .map(|t| json_of(&toml_edit::Item::Table(t.clone())))
                .collect(),
        ),
    }
}

/// One hook group as setup writes it: `[[hooks.EVENT]]` (with its matcher) holding one
/// `[[hooks.EVENT.hooks]]` command.
fn group(entry: &HookEntry) -> toml_edit::Table {
    let mut command = toml_edit::Table::new();
    command.insert("type", toml_edit::value("command"));
    command.insert("command", toml_edit::value(entry.command.as_str()));
    let mut commands = toml_edit::ArrayOfTables::new();
    commands.push(command);
    let mut g = toml_edit::Table::new();
    if let Some(m) = entry.matcher {
        g.insert("matcher", toml_edit::value(m));
    }
    g.insert("hooks", toml_edit::Item::ArrayOfTables(commands));
    g
}

/// mailroom's commands in one event's groups, each as setup would write it alone.
fn commands(groups: &toml_edit::ArrayOfTables, is_ours: &dyn Fn(&str) -> bool) -> Vec<Value> {
    let mut out = Vec::new();
    for g in groups.iter() {
        let g = json_of(&toml_edit::Item::Table(g.clone()));
        for h in g["hooks"].as_array().into_iter().flatten() {
            if h["command"].as_str().is_some_and(is_ours) {
                let mut single = serde_json::Map::new();
                if let Some(m) = g.get("matcher") {
                    single.insert("matcher".into(), m.clone());
                }
                single.insert("hooks".into(), Value::Array(vec![h.clone()]));
                out.push(Value::Object(single));
            }
        }
    }
    out
}

/// Takes the commands `drop` picks (each seen as `commands` gives it) out of one event's
/// groups; a group left without commands goes.
fn remove_commands(groups: &mut toml_edit::ArrayOfTables, drop: &dyn Fn(&Value) -> bool) {
    let mut emptied = Vec::new();
    for (i, g) in groups.iter_mut().enumerate() {
        let matcher = g.get("matcher").map(json_of);
        let Some(list) = g.get_mut("hooks") else {
            continue;
        };
        let picked = |h: &Value| {
            let mut single = serde_json::Map::new();
            if let Some(m) = &matcher {
                single.insert("matcher".into(), m.clone());
            }
            single.insert("hooks".into(), Value::Array(vec![h.clone()]));
            drop(&Value::Object(single))
        };
        let left = match list {
            toml_edit::Item::ArrayOfTables(a) => {
                a.retain(|t| !picked(&json_of(&toml_edit::Item::Table(t.clone()))));
                a.len()
            }
            toml_edit::Item::Value(toml_edit::Value::Array(a)) => {
                a.retain(|v| !picked(&json_of(&toml_edit::Item::Value(v.clone()))));
                a.len()
            }
            _ => continue,
        };
        if left == 0 {
            emptied.push(i);
        }
    }
    for i in emptied.into_iter().rev() {
        groups.remove(i);
    }
}

/// The groups of `hooks.EVENT` (created when absent).
fn event_groups<'a>(
    doc: &'a mut toml_edit::DocumentMut,
    event: &str,
    create: bool,
) -> Result<Option<&'a mut toml_edit::ArrayOfTables>> {
    if create && !doc.contains_key("hooks") {
        let mut t = toml_edit::Table::new();
        t.set_implicit(true);
        doc.insert("hooks", toml_edit::Item::Table(t));
    }
    let Some(hooks) = doc.get_mut("hooks") else {
        return Ok(None);
    };
    let hooks = hooks
        .as_table_mut()
        .ok_or_else(|| anyhow!("its [hooks] is not a table"))?;
    if create && !hooks.contains_key(event) {
        hooks.insert(
            event,
            toml_edit::Item::ArrayOfTables(toml_edit::ArrayOfTables::new()),
        );
    }
    match hooks.get_mut(event) {
        None => Ok(None),
        Some(toml_edit::Item::ArrayOfTables(a)) => Ok(Some(a)),
        Some(_) => Err(anyhow!(
            "its hooks.{event} is not written as [[hooks.{event}]] tables; write it so, or keep hooks in hooks.json"
        )),
    }
}

fn add_hooks(
    doc: &mut toml_edit::DocumentMut,
    events: &[HookEntry],
    known: &[Value],
    is_ours: &dyn Fn(&str) -> bool,
    replaced: &mut Vec<Replaced>,
    written: &mut Vec<Value>,
) -> Result<()> {
    for entry in events {
        let wanted = jsonc::entry_value(entry, false);
        written.push(wanted.clone());
        let Some(groups) = event_groups(doc, entry.event, true)? else {
            continue;
        };
        let ours = commands(groups, is_ours);
        if ours.len() == 1 && ours[0] == wanted {
            continue;
        }
        for value in ours {
            if value != wanted && !known.contains(&value) {
                replaced.push(Replaced::Hook {
                    event: entry.event.to_owned(),
                    value,
                });
            }
        }
        remove_commands(groups, &|v| {
            v["hooks"][0]["command"].as_str().is_some_and(is_ours)
        });
        groups.push(group(entry));
    }
    Ok(())
}

/// A hook recorded as JSON (`{matcher?, hooks: [{type, command, ...}]}`) as a TOML group.
fn group_of(value: &Value) -> Option<toml_edit::Table> {
    let mut g = toml_edit::Table::new();
    if let Some(m) = value.get("matcher").and_then(Value::as_str) {
        g.insert("matcher", toml_edit::value(m));
    }
    let mut commands = toml_edit::ArrayOfTables::new();
    for h in value.get("hooks")?.as_array()? {
        let mut t = toml_edit::Table::new();
        for (k, v) in h.as_object()? {
            let v = match v {
                Value::String(s) => toml_edit::value(s.as_str()),
                Value::Bool(b) => toml_edit::value(*b),
                Value::Number(n) => toml_edit::value(n.as_i64()?),
                _ => return None,
            };
            t.insert(k, v);
        }
        commands.push(t);
    }
    g.insert("hooks", toml_edit::Item::ArrayOfTables(commands));
    Some(g)
}

fn remove_hooks(
    doc: &mut toml_edit::DocumentMut,
    events: &[HookEntry],
    rec: Option<&Record>,
    is_ours: &dyn Fn(&str) -> bool,
) -> Result<()> {
    for entry in events {
        let wanted = jsonc::entry_value(entry, false);
        if let Some(groups) = event_groups(doc, entry.event, false)? {
            remove_commands(groups, &|v| match rec {
                Some(r) => r.hooks.contains(v),
                None => jsonc::hook_shaped(v, &wanted, is_ours),
            });
        }
        for r in rec.map(|r| r.replaced.as_slice()).unwrap_or_default() {
            let Replaced::Hook { event, value } = r else {
                continue;
            };
            if event != entry.event {
                continue;
            }
            if let (Some(groups), Some(g)) =
                (event_groups(doc, entry.event, true)?, group_of(value))
            {
                groups.push(g);
            }
        }
        let had = |path: &[&str]| {
            rec.and_then(|r| r.before.as_deref())
                .and_then(|b| b.parse::<toml_edit::DocumentMut>().ok())
                .is_some_and(|d| {
                    path.iter()
                        .try_fold(d.as_item(), |item, k| item.get(*k))
                        .is_some()
                })
        };
        if let Some(hooks) = doc.get_mut("hooks").and_then(|h| h.as_table_mut())
            && hooks
                .get(entry.event)
                .and_then(|g| g.as_array_of_tables())
                .is_some_and(|a| a.is_empty())
            && !had(&["hooks", entry.event])
        {
            hooks.remove(entry.event);
        }
    }
    let had_hooks = rec.and_then(|r| r.before.as_deref()).is_some_and(|b| {
        b.parse::<toml_edit::DocumentMut>()
            .is_ok_and(|d| d.contains_key("hooks"))
    });
    if doc
        .get("hooks")
        .and_then(|h| h.as_table())
        .is_some_and(|t| t.is_empty())
        && !had_hooks
    {
        doc.remove("hooks");
    }
    Ok(())
}

/// A `[mcp_servers.mailroom]` item's text as a document of its own, to be parsed back.
fn table_text(item: &str) -> String {
    let mut doc = toml_edit::DocumentMut::new();
    if let Ok(parsed) = format!("[mcp_servers.mailroom]\n{item}").parse::<toml_edit::DocumentMut>()
    {
        doc = parsed;
    } else if let Ok(parsed) =
        format!("mcp_servers.mailroom = {item}").parse::<toml_edit::DocumentMut>()
    {
        doc = parsed;
    }
    doc.to_string()
}

/// Codex's `config.toml` with setup's server taken out (with a record: the entry setup wrote;
/// without: only one exactly as some setup writes it) and what it replaced put back.
pub(super) fn remove(
    text: Option<&str>,
    hooks: &[HookEntry],
    rec: Option<&Record>,
    is_ours: &dyn Fn(&str) -> bool,
) -> Result<Option<String>> {
    let Some(source) = text else { return Ok(None) };
    let mut doc: toml_edit::DocumentMut = source
        .parse()
        .map_err(|e: toml_edit::TomlError| anyhow!("it is not valid TOML: {}", e.message()))?;
    let had_servers = rec.is_none_or(|r| {
        r.before.as_deref().is_some_and(|b| {
            b.parse::<toml_edit::DocumentMut>()
                .is_ok_and(|d| d.contains_key("mcp_servers"))
        })
    });
    if let Some(servers) = doc
        .get_mut("mcp_servers")
        .and_then(|s| s.as_table_like_mut())
    {
        let ours = match rec {
            Some(r) => r.server,
            None => servers
                .get("mailroom")
                .and_then(|s| s.as_table_like())
                .is_some_and(toml_setup_shaped),
        };
        if ours {
            servers.remove("mailroom");
        }
    }
    for r in rec.map(|r| r.replaced.as_slice()).unwrap_or_default() {
        let Replaced::Table { raw } = r else { continue };
        let Ok(mut back) = raw.parse::<toml_edit::DocumentMut>() else {
            continue;
        };
        let Some(item) = back
            .get_mut("mcp_servers")
            .and_then(|s| s.as_table_like_mut())
            .and_then(|s| s.remove("mailroom"))
        else {
            continue;
        };
        if !doc.contains_key("mcp_servers") {
            let mut t = toml_edit::Table::new();
            t.set_implicit(true);
            doc.insert("mcp_servers", toml_edit::Item::Table(t));
        }
        if let Some(servers) = doc
            .get_mut("mcp_servers")
            .and_then(|s| s.as_table_like_mut())
            && !servers.contains_key("mailroom")
        {
            servers.insert("mailroom", item);
        }
    }
    if !had_servers
        && doc
            .get("mcp_servers")
            .and_then(|s| s.as_table())
            .is_some_and(|t| t.is_empty() && t.is_implicit())
    {
        doc.remove("mcp_servers");
    }
    if !hooks.is_empty() {
        remove_hooks(&mut doc, hooks, rec, is_ours)?;
    }
    let out = doc.to_string();
    // A file setup created that holds nothing else goes away.
    let created = rec.map_or(out.trim().is_empty() && !source.trim().is_empty(), |r| {
        r.before.is_none()
    });
    Ok(if created && out.trim().is_empty() {
        None
    } else {
        Some(out)
    })
}
