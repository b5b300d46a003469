//! Editing a harness's JSON or JSONC config in place, through `jsonc-parser`'s concrete syntax
//! tree: comments, key order, indentation and every byte outside what mailroom adds stay as
//! they were, and removing what was added gives the original text back. (A plain map would
//! drop comments and reorder keys; `jsonc-parser` is dprint's parser, kept up and used by Deno,
//! and its CST inserts in the file's own indentation style.)

use anyhow::{Result, anyhow};
use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstNode, CstObject, CstRootNode};
use serde_json::Value;

use super::record::Replaced;

/// One thing mailroom keeps in a JSON config.
#[derive(Clone, Debug)]
pub enum JsonPiece {
    /// `CONTAINER.mailroom = VALUE` (an MCP server entry).
    Server {
        container: &'static str,
        value: Value,
    },
    /// Hooks under `hooks.EVENT`: Claude Code's shape (a matcher group holding
    /// `{"type": "command", "command": ...}`), or Cursor's flat `{"command": ...}`.
    Hooks {
        flat: bool,
        /// (event, matcher, command, extra fields of the command object)
        events: Vec<HookEntry>,
    },
}

#[derive(Clone, Debug)]
pub struct HookEntry {
    pub event: &'static str,
    pub matcher: Option<&'static str>,
    pub command: String,
    /// Fields the command object carries besides `type` and `command` (Gemini CLI's `name`).
    pub extra: Vec<(&'static str, Value)>,
}

/// What a file's record says setup wrote into it (empty: no record).
#[derive(Debug, Default)]
pub struct Known<'a> {
    /// Setup wrote the `mailroom` server entry.
    pub server: bool,
    /// The hooks setup wrote (each as `entry_value` makes it).
    pub hooks: &'a [Value],
    /// Entries setup's took the place of, put back by `remove`.
    pub replaced: &'a [Replaced],
    /// The file's value before setup: None without a record; Some(None) when setup created
    /// the file. `remove` takes out a container only when setup added it.
    pub before: Option<Option<&'a Value>>,
}

/// A `mailroom` entry setup did not write and would not replace without `--replace`.
#[derive(Debug)]
pub struct Foreign(pub String);

impl std::fmt::Display for Foreign {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Foreign {}

/// What `add` did: the new text, the entries it took the place of, what it wrote.
#[derive(Debug)]
pub struct Added {
    pub text: String,
    pub replaced: Vec<Replaced>,
    pub hooks: Vec<Value>,
    pub server: bool,
}

/// Adds `pieces` to `text` (None: the file is absent). `is_ours` tells a hook command of
/// mailroom's; `replace` lets setup take the place of a `mailroom` server entry it did not
/// write (recorded in `Added::replaced`), which is refused otherwise.
pub fn add(
    text: Option<&str>,
    pieces: &[JsonPiece],
    skeleton: &Value,
    strict: bool,
    known: &Known,
    replace: bool,
    is_ours: &dyn Fn(&str) -> bool,
) -> Result<Added> {
    let source = match text {
        Some(t) if !t.trim().is_empty() => t.to_owned(),
        _ => new_document(skeleton),
    };
    let root = parse(&source, strict)?;
    let line = one_line(&root, &source);
    let Some(obj) = root.object_value() else {
        return Err(anyhow!("it does not hold a JSON object"));
    };
    let mut added = Added {
        text: String::new(),
        replaced: Vec::new(),
        hooks: Vec::new(),
        server: false,
    };
    for piece in pieces {
        match piece {
            JsonPiece::Server { container, value } => {
                add_server(&obj, container, value, known, replace, &mut added)?
            }
            JsonPiece::Hooks { flat, events } => {
                add_hooks(&obj, *flat, events, known, is_ours, &mut added)?
            }
        }
    }
    added.text = finish(&root, &source, line);
    Ok(added)
}

/// Takes out of `text` what `known` says setup wrote (without a record: only entries exactly
/// as setup writes them now) and puts back what setup's entries replaced. Returns None when
/// the file should not exist: setup created it and nothing but its frame is left.
pub fn remove(
    text: Option<&str>,
    pieces: &[JsonPiece],
    skeleton: &Value,
    strict: bool,
    known: &Known,
    is_ours: &dyn Fn(&str) -> bool,
) -> Result<Option<String>> {
    let source = match text {
        Some(t) if !t.trim().is_empty() => t.to_owned(),
        _ => return Ok(text.map(str::to_owned)),
    };
    let root = parse(&source, strict)?;
    let line = one_line(&root, &source);
    let Some(obj) = root.object_value() else {
        return Err(anyhow!("it does not hold a JSON object"));
    };
    for piece in pieces {
        match piece {
            JsonPiece::Server { container, value } => remove_server(&obj, container, value, known)?,
            JsonPiece::Hooks { flat, events } => remove_hooks(&obj, *flat, events, known, is_ours)?,
        }
    }
    let out = finish(&root, &source, line);
    let created = match known.before {
        Some(before) => before.is_none(),
        // No record: a file holding exactly what setup makes of no file was setup's.
        None => out == new_document(skeleton),
    };
    if created && root.to_serde_value().as_ref() == Some(skeleton) && !has_comments(&root) {
        return Ok(None);
    }
    Ok(Some(out))
}

/// The value of a JSON or JSONC text, if it has one.
pub fn value_of(text: &str) -> Option<Value> {
    CstRootNode::parse(text, &options(false))
        .ok()?
        .to_serde_value()
}

fn parse(source: &str, strict: bool) -> Result<CstRootNode> {
    // The CST parser keeps comments whatever its options say: plain JSON is checked with a
    // plain JSON parser.
    if strict && let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(source) {
        return Err(if CstRootNode::parse(source, &options(false)).is_ok() {
            anyhow!(
                "the harness reads it as plain JSON, which has no comments or trailing commas ({e}); remove them first"
            )
        } else {
            anyhow!("it is not valid JSON: {e}")
        });
    }
    CstRootNode::parse(source, &options(strict)).map_err(|e| anyhow!("it is not valid JSON: {e}"))
}

/// How a document written on one line is spaced: setup's edits keep it on that line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Line {
    /// `{"a":1}`: no space between tokens.
    Compact,
    /// `{ "a": 1 }`: one space where a line break would be.
    Spaced,
}

fn one_line(root: &CstRootNode, source: &str) -> Option<Line> {
    let body = source.trim();
    if body.contains('\n') || body.is_empty() || has_comments(root) {
        return None;
    }
    fn spaced(node: &CstNode) -> bool {
        node.is_whitespace() || node.children().iter().any(spaced)
    }
    let value = root.value()?;
    Some(if spaced(&value) {
        Line::Spaced
    } else {
        Line::Compact
    })
}

/// The edited document: as the CST prints it, or back on its one line.
fn finish(root: &CstRootNode, source: &str, line: Option<Line>) -> String {
    let (Some(line), Some(value)) = (line, root.value()) else {
        return root.to_string();
    };
    fn walk(node: &CstNode, line: Line, out: &mut String) {
        match node {
            CstNode::Container(_) => node.children().iter().for_each(|c| walk(c, line, out)),
            CstNode::Leaf(_) if node.is_whitespace() || node.is_newline() => {
                if line == Line::Spaced && !out.is_empty() && !out.ends_with(' ') {
                    out.push(' ');
                }
            }
            CstNode::Leaf(_) => {
                let text = node.to_string();
                if line == Line::Spaced && matches!(text.as_str(), "}" | "]") {
                    // `{ }` and `[ ]` of an emptied container close up again.
                    if let Some(open) = out.strip_suffix(' ')
                        && (open.ends_with('{') || open.ends_with('['))
                    {
                        out.pop();
                    }
                }
                out.push_str(&text);
            }
        }
    }
    let mut body = String::new();
    walk(&value, line, &mut body);
    let lead = &source[..source.len() - source.trim_start().len()];
    let trail = &source[source.trim_end().len()..];
    format!("{lead}{}{trail}", body.trim())
}

/// What a harness accepts: plain JSON (`strict`), or JSON with comments and trailing commas
/// (JSONC); never JSON5's extras, which no harness reads.
pub fn options(strict: bool) -> ParseOptions {
    ParseOptions {
        allow_comments: !strict,
        allow_trailing_commas: !strict,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

fn new_document(skeleton: &Value) -> String {
    match skeleton.as_object() {
        Some(o) if !o.is_empty() => {
            let root = CstRootNode::parse("{}\n", &options(true));
            if let Ok(root) = root {
                root.set_value(input(skeleton));
                return root.to_string();
            }
            "{}\n".into()
        }
        _ => "{}\n".into(),
    }
}

fn has_comments(root: &CstRootNode) -> bool {
    fn walk(node: &CstNode) -> bool {
        if node.is_comment() {
            return true;
        }
        node.children().iter().any(walk)
    }
    root.children().iter().any(walk)
}

/// Refuses an object holding `name` more than once: the CST edits the first, the harness's
/// JSON parser keeps the last, so the edit would be invisible to it.
fn once(obj: &CstObject, name: &str) -> Result<()> {
    let n = obj
        .properties()
        .iter()
        .filter(|p| p.name().and_then(|n| n.decoded_value().ok()).as_deref() == Some(name))
        .count();
    if n > 1 {
        return Err(anyhow!(
            "it holds the key \"{name}\" {n} times and the harness reads only the last; keep one"
        ));
    }
    Ok(())
}

/// `obj[container]` as an object (None: absent), refusing a duplicated key or another type.
fn container(obj: &CstObject, container: &str) -> Result<Option<CstObject>> {
    once(obj, container)?;
    match obj.get(container).and_then(|p| p.value()) {
        Some(v) => {
            Ok(Some(v.as_object().ok_or_else(|| {
                anyhow!("its \"{container}\" is not an object")
            })?))
        }
        None => Ok(None),
    }
}

/// Whether `current` is a server entry as some setup writes it, for any install of mailroom:
/// only setup's keys, those besides the program and its arguments as `wanted` has them, and a
/// command line setup writes (`super::is_our_server`).
fn setup_shaped(current: &Value, wanted: &Value) -> bool {
    let (Some(cur), Some(want)) = (current.as_object(), wanted.as_object()) else {
        return false;
    };
    if remote_shaped(cur) {
        return true;
    }
    let argv: Option<Vec<String>> = match cur.get("command") {
        Some(Value::String(c)) => std::iter::once(Some(c.clone()))
            .chain(match cur.get("args") {
                Some(Value::Array(a)) => a.iter().map(|s| s.as_str().map(str::to_owned)).collect(),
                None => Vec::new(),
                Some(_) => vec![None],
            })
            .collect(),
        Some(Value::Array(a)) if !cur.contains_key("args") => {
            a.iter().map(|s| s.as_str().map(str::to_owned)).collect()
        }
        _ => None,
    };
    cur.iter().all(|(k, v)| match want.get(k) {
        None => false,
        Some(_) if k == "command" || k == "args" => true,
        Some(w) => v == w,
    }) && argv.is_some_and(|a| super::is_our_server(&a))
}

/// Whether a server entry is as `setup --remote` writes it for some harness: an http(s)
/// `url` (or Gemini CLI's `httpUrl`), one `Authorization` header that reads the token from a
/// variable in one of the harnesses' syntaxes (`${VAR}`, `${env:VAR}`, `{env:VAR}`), and
/// `type` and `enabled` only as setup writes them.
fn remote_shaped(cur: &serde_json::Map<String, Value>) -> bool {
    let reference = |v: &str| {
        let name = v
            .strip_prefix("Bearer ${env:")
            .or_else(|| v.strip_prefix("Bearer ${"))
            .or_else(|| v.strip_prefix("Bearer {env:"))
            .and_then(|n| n.strip_suffix('}'));
        name.is_some_and(|n| {
            !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
    };
    let urls: Vec<&Value> = ["url", "httpUrl"]
        .iter()
        .filter_map(|k| cur.get(*k))
        .collect();
    urls.len() == 1
        && urls[0]
            .as_str()
            .is_some_and(|u| u.starts_with("http://") || u.starts_with("https://"))
        && cur.iter().all(|(k, v)| match k.as_str() {
            "url" | "httpUrl" => true,
            "type" => v == "http" || v == "remote",
            "enabled" => v == true,
            "headers" => v.as_object().is_some_and(|h| {
                h.len() == 1
                    && h.get("Authorization")
                        .and_then(Value::as_str)
                        .is_some_and(reference)
            }),
            _ => false,
        })
}

/// The keys setup writes in a server entry, local or remote: what else an entry of setup's
/// holds is the user's, kept when setup rewrites it.
const SETUP_KEYS: [&str; 7] = [
    "type", "command", "args", "enabled", "url", "httpUrl", "headers",
];

/// A few words on an entry setup will not replace (never its values: an `env` may hold a
/// secret).
fn describe(current: Option<&Value>) -> String {
    match current {
        Some(Value::Object(o)) => match o.get("command") {
            Some(Value::String(c)) => format!("command {c:?}"),
            Some(Value::Array(a)) => match a.first().and_then(Value::as_str) {
                Some(c) => format!("command {c:?}"),
                None => "an object".into(),
            },
            _ => "an object without a command".into(),
        },
        Some(Value::Null) => "null".into(),
        Some(Value::String(_)) => "a string".into(),
        Some(Value::Array(_)) => "a list".into(),
        Some(_) => "a scalar".into(),
        None => "empty".into(),
    }
}

fn add_server(
    obj: &CstObject,
    name: &str,
    value: &Value,
    known: &Known,
    replace: bool,
    added: &mut Added,
) -> Result<()> {
    let servers = container(obj, name)?;
    if let Some(servers) = &servers {
        once(servers, "mailroom")?;
    }
    added.server = true;
    let servers = match servers {
        Some(s) => s,
        None => {
            obj.append(name, CstInputValue::Object(vec![]));
            obj.object_value(name)
                .ok_or_else(|| anyhow!("cannot add \"{name}\""))?
        }
    };
    let Some(prop) = servers.get("mailroom") else {
        let text = servers.to_string();
        if is_one_line(&text)
            && !servers.properties().is_empty()
            && let Some(close) = text.rfind('}')
            && let Some(prop) = obj.get(name)
        {
            // The CST would spread the container over several lines for good: the entry
            // goes on its line.
            let spliced = format!(
                "{}, \"mailroom\": {} {}",
                text[..close].trim_end().trim_end_matches(','),
                inline(value),
                &text[close..]
            );
            set_raw(&prop, spliced);
        } else {
            servers.append("mailroom", input(value));
        }
        return Ok(());
    };
    let current = prop.value().and_then(|v| v.to_serde_value());
    if current.as_ref() == Some(value) {
        return Ok(());
    }
    let raw = prop.value().map(|v| v.to_string()).unwrap_or_default();
    let ours = known.server;
    if ours || current.as_ref().is_some_and(|c| setup_shaped(c, value)) {
        if !ours {
            // Another setup's entry (another program path): put back by --uninstall.
            added.replaced.push(Replaced::Server {
                container: name.to_owned(),
                raw,
            });
        }
        // What the user added to setup's entry (`env`, `cwd`, a timeout...) stays; setup
        // rewrites only the keys it writes.
        let mut wanted = value.clone();
        if let (Some(Value::Object(old)), Value::Object(new)) = (&current, &mut wanted) {
            for (k, v) in old {
                if !new.contains_key(k) && !SETUP_KEYS.contains(&k.as_str()) {
                    new.insert(k.clone(), v.clone());
                }
            }
        }
        if current.as_ref() != Some(&wanted) {
            prop.set_value(input(&wanted));
        }
        return Ok(());
    }
    if !replace {
        return Err(Foreign(format!(
            "its \"{name}\" already has a \"mailroom\" entry that setup did not write ({})",
            describe(current.as_ref())
        ))
        .into());
    }
    added.replaced.push(Replaced::Server {
        container: name.to_owned(),
        raw,
    });
    prop.set_value(input(value));
    Ok(())
}

fn remove_server(obj: &CstObject, name: &str, value: &Value, known: &Known) -> Result<()> {
    let servers = container(obj, name)?;
    if let Some(servers) = &servers {
        once(servers, "mailroom")?;
        if let Some(prop) = servers.get("mailroom") {
            let current = prop.value().and_then(|v| v.to_serde_value());
            let shaped = current.as_ref().is_some_and(|c| setup_shaped(c, value));
            // With a record, setup's entry (the user may have added keys to it); without,
            // only an entry exactly as some setup writes it (another version's, another
            // install's, a launcher's).
            if known.server || (known.before.is_none() && shaped) {
                prop.remove();
            }
        }
    }
    for r in known.replaced {
        let Replaced::Server { container: c, raw } = r else {
            continue;
        };
        if c != name {
            continue;
        }
        let servers = match obj.object_value(name) {
            Some(s) => s,
            None => {
                obj.append(name, CstInputValue::Object(vec![]));
                obj.object_value(name)
                    .ok_or_else(|| anyhow!("cannot add \"{name}\""))?
            }
        };
        if servers.get("mailroom").is_none() {
            let prop = servers.append("mailroom", CstInputValue::Null);
            set_raw(&prop, raw.clone());
        }
    }
    if let Some(servers) = obj.object_value(name)
        && servers.properties().is_empty()
        && added_by_setup(known, &[name])
        && let Some(prop) = obj.get(name)
    {
        prop.remove();
    }
    Ok(())
}

/// Whether the value at `path` was not in the file before setup (without a record: assumed).
fn added_by_setup(known: &Known, path: &[&str]) -> bool {
    match known.before {
        None | Some(None) => true,
        Some(Some(before)) => path.iter().try_fold(before, |v, k| v.get(*k)).is_none(),
    }
}

/// Gives a property's value the raw JSON text `raw` (the CST's builder would re-space it).
fn set_raw(prop: &jsonc_parser::cst::CstObjectProp, raw: String) {
    prop.set_value(CstInputValue::String(String::new()));
    if let Some(lit) = prop.value().and_then(|v| v.as_string_lit()) {
        lit.set_raw_value(raw);
    }
}

/// `obj.hooks` and each event's list as objects, refusing duplicates and other types.
fn hooks_object(obj: &CstObject, events: &[HookEntry]) -> Result<Option<CstObject>> {
    let hooks = container(obj, "hooks")?;
    if let Some(h) = &hooks {
        for entry in events {
            once(h, entry.event)?;
        }
    }
    Ok(hooks)
}

fn add_hooks(
    obj: &CstObject,
    flat: bool,
    events: &[HookEntry],
    known: &Known,
    is_ours: &dyn Fn(&str) -> bool,
    added: &mut Added,
) -> Result<()> {
    let hooks = match hooks_object(obj, events)? {
        Some(h) => h,
        None => {
            obj.append("hooks", CstInputValue::Object(vec![]));
            obj.object_value("hooks")
                .ok_or_else(|| anyhow!("cannot add \"hooks\""))?
        }
    };
    for entry in events {
        let wanted = entry_value(entry, flat);
        added.hooks.push(wanted.clone());
        let list = match hooks.get(entry.event).and_then(|p| p.value()) {
            Some(v) => v
                .as_array()
                .ok_or_else(|| anyhow!("its \"hooks\".\"{}\" is not an array", entry.event))?,
            None => {
                hooks.append(entry.event, CstInputValue::Array(vec![]));
                hooks
                    .array_value(entry.event)
                    .ok_or_else(|| anyhow!("cannot add hooks.{}", entry.event))?
            }
        };
        let ours = commands(&list, flat, is_ours);
        if ours.len() == 1 && ours[0] == wanted {
            continue;
        }
        for value in ours {
            if value != wanted && !known.hooks.contains(&value) {
                // The user's own mailroom hook, or another setup's: put back by --uninstall.
                added.replaced.push(Replaced::Hook {
                    event: entry.event.to_owned(),
                    value,
                });
            }
        }
        remove_commands(&list, flat, &|v| is_ours_value(v, is_ours));
        append(&list, &wanted);
    }
    Ok(())
}

fn remove_hooks(
    obj: &CstObject,
    flat: bool,
    events: &[HookEntry],
    known: &Known,
    is_ours: &dyn Fn(&str) -> bool,
) -> Result<()> {
    let Some(hooks) = hooks_object(obj, events)? else {
        if known
            .replaced
            .iter()
            .all(|r| !matches!(r, Replaced::Hook { .. }))
        {
            return Ok(());
        }
        obj.append("hooks", CstInputValue::Object(vec![]));
        return remove_hooks(obj, flat, events, known, is_ours);
    };
    for entry in events {
        let wanted = entry_value(entry, flat);
        if let Some(list) = hooks.get(entry.event).and_then(|p| p.value()) {
            let list = list
                .as_array()
                .ok_or_else(|| anyhow!("its \"hooks\".\"{}\" is not an array", entry.event))?;
            remove_commands(&list, flat, &|v| match known.before {
                Some(_) => known.hooks.contains(v),
                None => hook_shaped(v, &wanted, is_ours),
            });
        }
        for r in known.replaced {
            let Replaced::Hook { event, value } = r else {
                continue;
            };
            if event != entry.event {
                continue;
            }
            let list = match hooks.array_value(entry.event) {
                Some(l) => l,
                None => {
                    hooks.append(entry.event, CstInputValue::Array(vec![]));
                    hooks
                        .array_value(entry.event)
                        .ok_or_else(|| anyhow!("cannot add hooks.{}", entry.event))?
                }
            };
            append(&list, value);
        }
        if let Some(list) = hooks.array_value(entry.event)
            && list.elements().is_empty()
            && added_by_setup(known, &["hooks", entry.event])
            && let Some(prop) = hooks.get(entry.event)
        {
            prop.remove();
        }
    }
    if hooks.properties().is_empty()
        && added_by_setup(known, &["hooks"])
        && let Some(prop) = obj.get("hooks")
    {
        prop.remove();
    }
    Ok(())
}

/// Appends `value` to a list, on the list's line when it is written on one.
fn append(list: &jsonc_parser::cst::CstArray, value: &Value) {
    if is_one_line(&list.to_string()) && !list.elements().is_empty() {
        let node = list.append(CstInputValue::String(String::new()));
        if let Some(lit) = node.as_string_lit() {
            lit.set_raw_value(inline(value));
        }
    } else {
        list.append(input(value));
    }
}

/// The JSON mailroom writes for one hook.
pub fn entry_value(entry: &HookEntry, flat: bool) -> Value {
    let mut command = serde_json::Map::new();
    if !flat {
        command.insert("type".into(), "command".into());
    }
    command.insert("command".into(), entry.command.clone().into());
    for (k, v) in &entry.extra {
        command.insert((*k).into(), v.clone());
    }
    if flat {
        return Value::Object(command);
    }
    let mut group = serde_json::Map::new();
    if let Some(m) = entry.matcher {
        group.insert("matcher".into(), m.into());
    }
    group.insert("hooks".into(), Value::Array(vec![Value::Object(command)]));
    Value::Object(group)
}

/// Whether one hook (as `commands` gives it) is as some setup writes `wanted`: the same
/// value but for its command, which is a command line of mailroom's (another install's path,
/// a launcher's, an earlier version's bare `mailroom`).
pub fn hook_shaped(v: &Value, wanted: &Value, is_ours: &dyn Fn(&str) -> bool) -> bool {
    fn command(v: &mut Value) -> Option<&mut Value> {
        match v.get("hooks").is_some() {
            true => v.get_mut("hooks")?.get_mut(0)?.get_mut("command"),
            false => v.get_mut("command"),
        }
    }
    let mut v = v.clone();
    let mut w = wanted.clone();
    let (Some(Value::String(c)), Some(want)) = (command(&mut v).cloned(), command(&mut w)) else {
        return false;
    };
    *want = Value::String(c.clone());
    v == w && is_ours(&c)
}

fn command_is_ours(v: &Value, is_ours: &dyn Fn(&str) -> bool) -> bool {
    v.get("command")
        .and_then(Value::as_str)
        .is_some_and(is_ours)
}

/// Whether one hook (as `commands` gives it) is a command of mailroom's.
fn is_ours_value(v: &Value, is_ours: &dyn Fn(&str) -> bool) -> bool {
    match v.get("hooks").and_then(Value::as_array) {
        Some(hs) => hs.iter().any(|h| command_is_ours(h, is_ours)),
        None => command_is_ours(v, is_ours),
    }
}

/// One command of a group as a group of its own (its matcher kept): how setup writes a hook.
fn single(group: &Value, command: &Value) -> Value {
    let mut g = serde_json::Map::new();
    if let Some(m) = group.get("matcher") {
        g.insert("matcher".into(), m.clone());
    }
    g.insert("hooks".into(), Value::Array(vec![command.clone()]));
    Value::Object(g)
}

/// mailroom's hook commands in one event's list, each as setup would write it alone.
fn commands(
    list: &jsonc_parser::cst::CstArray,
    flat: bool,
    is_ours: &dyn Fn(&str) -> bool,
) -> Vec<Value> {
    let mut out = Vec::new();
    for v in list.elements().iter().filter_map(|e| e.to_serde_value()) {
        if flat {
            if command_is_ours(&v, is_ours) {
                out.push(v);
            }
        } else if let Some(hs) = v.get("hooks").and_then(Value::as_array) {
            out.extend(
                hs.iter()
                    .filter(|h| command_is_ours(h, is_ours))
                    .map(|h| single(&v, h)),
            );
        }
    }
    out
}

/// Takes the hooks `drop` picks (each seen as `commands` gives it) out of one event's list: a
/// group left with no command goes whole; from a group with others, only the picked command.
fn remove_commands(list: &jsonc_parser::cst::CstArray, flat: bool, drop: &dyn Fn(&Value) -> bool) {
    for element in list.elements() {
        let Some(v) = element.to_serde_value() else {
            continue;
        };
        if flat {
            if drop(&v) {
                element.remove();
            }
            continue;
        }
        let Some(hs) = v.get("hooks").and_then(Value::as_array) else {
            continue;
        };
        let picked: Vec<bool> = hs.iter().map(|h| drop(&single(&v, h))).collect();
        if !picked.contains(&true) {
            continue;
        }
        if picked.iter().all(|p| *p) {
            element.remove();
        } else if let Some(group) = element.as_object()
            && let Some(inner) = group.array_value("hooks")
        {
            for (h, p) in inner.elements().into_iter().zip(picked) {
                if p {
                    h.remove();
                }
            }
        }
    }
}

fn is_one_line(text: &str) -> bool {
    !text.contains('\n')
}

/// `v` as JSON on one line, keys in the documentation's order: `{ "k": v, ... }`.
fn inline(v: &Value) -> String {
    match v {
        Value::Object(o) => {
            let mut fields: Vec<(&String, &Value)> = o.iter().collect();
            fields.sort_by_key(|(k, _)| rank(k));
            let inner: Vec<String> = fields
                .into_iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), inline(v)))
                .collect();
            if inner.is_empty() {
                "{}".into()
            } else {
                format!("{{ {} }}", inner.join(", "))
            }
        }
        Value::Array(a) => format!("[{}]", a.iter().map(inline).collect::<Vec<_>>().join(", ")),
        other => other.to_string(),
    }
}

/// The order the harnesses' documentation writes keys in, not alphabetical.
fn rank(k: &str) -> usize {
    const ORDER: [&str; 12] = [
        "$schema", "version", "name", "type", "matcher", "command", "args", "url", "httpUrl",
        "headers", "enabled", "hooks",
    ];
    ORDER.iter().position(|o| *o == k).unwrap_or(ORDER.len())
}

/// A serde value as the CST's input.
fn input(v: &Value) -> CstInputValue {
    match v {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(a) => CstInputValue::Array(a.iter().map(input).collect()),
        Value::Object(o) => {
            let mut fields: Vec<(&String, &Value)> = o.iter().collect();
            fields.sort_by_key(|(k, _)| rank(k));
            CstInputValue::Object(
                fields
                    .into_iter()
                    .map(|(k, v)| (k.clone(), input(v)))
                    .collect(),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ours(c: &str) -> bool {
        c.starts_with("mailroom hook")
    }

    fn pieces() -> Vec<JsonPiece> {
        vec![
            JsonPiece::Server {
                container: "mcpServers",
                value: json!({"command": "mailroom", "args": ["mcp"]}),
            },
            JsonPiece::Hooks {
                flat: false,
                events: vec![HookEntry {
                    event: "Stop",
                    matcher: None,
                    command: "mailroom hook claude Stop".into(),
                    extra: vec![],
                }],
            },
        ]
    }

    fn add_text(text: Option<&str>, strict: bool) -> String {
        add(
            text,
            &pieces(),
            &json!({}),
            strict,
            &Known::default(),
            false,
            &ours,
        )
        .unwrap()
        .text
    }

    fn remove_text(text: &str, strict: bool) -> Option<String> {
        remove(
            Some(text),
            &pieces(),
            &json!({}),
            strict,
            &Known::default(),
            &ours,
        )
        .unwrap()
    }

    #[test]
    fn adding_then_removing_gives_the_original_bytes_back() {
        let original = "{\n  // mine\n  \"mcpServers\": {\n    \"other\": {\"command\": \"x\"}\n  },\n  \"hooks\": {\n    \"Stop\": [\n      {\"hooks\": [{\"type\": \"command\", \"command\": \"say bye\"}]}\n    ]\n  },\n  \"model\": \"opus\"\n}\n";
        let added = add_text(Some(original), false);
        assert!(added.contains("// mine") && added.contains("mailroom hook claude Stop"));
        assert_eq!(add_text(Some(&added), false), added, "idempotent");
        assert_eq!(remove_text(&added, false).unwrap(), original);
    }

    #[test]
    fn a_container_on_one_line_stays_on_one_line() {
        let original = "{\n  \"mcpServers\": { \"github\": { \"command\": \"gh\" } },\n  \"hooks\": { \"Stop\": [{ \"hooks\": [] }] }\n}\n";
        let added = add_text(Some(original), true);
        assert_eq!(
            added,
            "{\n  \"mcpServers\": { \"github\": { \"command\": \"gh\" }, \"mailroom\": { \"command\": \"mailroom\", \"args\": [\"mcp\"] } },\n  \"hooks\": { \"Stop\": [{ \"hooks\": [] }, { \"hooks\": [{ \"type\": \"command\", \"command\": \"mailroom hook claude Stop\" }] }] }\n}\n"
        );
        serde_json::from_str::<Value>(&added).unwrap();
        assert_eq!(add_text(Some(&added), true), added);
        assert_eq!(remove_text(&added, true).unwrap(), original);
    }

    #[test]
    fn a_document_on_one_line_stays_on_one_line() {
        for original in [
            "{}",
            "{}\n",
            "{\"mcpServers\":{}}",
            "{\"mcpServers\":{},\"x\":1}\n",
            "{\"hooks\":{\"Stop\":[]}}",
            "{ \"x\": 1 }\n",
        ] {
            let added = add_text(Some(original), true);
            assert_eq!(
                added.trim_end().lines().count(),
                1,
                "{original:?} became {added:?}"
            );
            assert_eq!(
                &added[added.trim_end().len()..],
                &original[original.trim_end().len()..],
                "{original:?}: its end"
            );
            let v: Value = serde_json::from_str(&added).unwrap();
            assert_eq!(
                v["mcpServers"]["mailroom"]["command"], "mailroom",
                "{added}"
            );
            assert_eq!(add_text(Some(&added), true), added, "idempotent");
        }
        assert_eq!(
            add_text(Some("{\"mcpServers\":{}}"), true),
            "{\"mcpServers\":{\"mailroom\":{\"command\":\"mailroom\",\"args\":[\"mcp\"]}},\"hooks\":{\"Stop\":[{\"hooks\":[{\"type\":\"command\",\"command\":\"mailroom hook claude Stop\"}]}]}}"
        );
    }

    #[test]
    fn a_new_file_goes_away_again() {
        let added = add_text(None, false);
        assert_eq!(remove_text(&added, false), None);
    }

    #[test]
    fn a_server_entry_setup_did_not_write_is_refused_or_recorded_with_replace() {
        let original = "{\"mcpServers\":{\"mailroom\":{\"command\":\"/opt/custom/mailroom\",\"env\":{\"SECRET\":\"keep\"}}}}";
        let e = add(
            Some(original),
            &pieces(),
            &json!({}),
            true,
            &Known::default(),
            false,
            &ours,
        )
        .unwrap_err();
        assert!(e.downcast_ref::<Foreign>().is_some(), "{e}");
        assert!(
            !e.to_string().contains("SECRET") && !e.to_string().contains("keep"),
            "{e}"
        );
        let added = add(
            Some(original),
            &pieces(),
            &json!({}),
            true,
            &Known::default(),
            true,
            &ours,
        )
        .unwrap();
        assert_eq!(
            added.replaced,
            vec![Replaced::Server {
                container: "mcpServers".into(),
                raw: "{\"command\":\"/opt/custom/mailroom\",\"env\":{\"SECRET\":\"keep\"}}".into()
            }]
        );
        // Taken out again from a file changed since: setup's entry out, the user's back in.
        let changed = added
            .text
            .replace("\"mcpServers\"", "\"model\":\"x\",\"mcpServers\"");
        let known = Known {
            server: true,
            hooks: &added.hooks,
            replaced: &added.replaced,
            before: Some(Some(&serde_json::from_str(original).unwrap())),
        };
        let back = remove(Some(&changed), &pieces(), &json!({}), true, &known, &ours)
            .unwrap()
            .unwrap();
        assert_eq!(
            back,
            "{\"model\":\"x\",\"mcpServers\":{\"mailroom\":{\"command\":\"/opt/custom/mailroom\",\"env\":{\"SECRET\":\"keep\"}}}}"
        );
    }
}
