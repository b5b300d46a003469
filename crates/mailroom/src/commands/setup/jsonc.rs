//! Editing a harness's JSON or JSONC config in place, through `jsonc-parser`'s concrete syntax
//! tree: comments, key order, indentation and every byte outside what mailroom adds stay as
//! they were, and removing what was added gives the original text back. (A plain map would
//! drop comments and reorder keys; `jsonc-parser` is dprint's parser, kept up and used by Deno,
//! and its CST inserts in the file's own indentation style.)

use anyhow::{Result, anyhow};
use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstNode, CstObject, CstRootNode};
use serde_json::Value;

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

/// Applies (or with `remove`, takes out) `pieces` to `text` (None: the file is absent).
/// Returns the new text, or None when the file should not exist (it held nothing but what
/// mailroom had put there, inside `skeleton`). `is_ours` tells a hook command mailroom wrote.
pub fn edit(
    text: Option<&str>,
    pieces: &[JsonPiece],
    skeleton: &Value,
    strict: bool,
    remove: bool,
    is_ours: &dyn Fn(&str) -> bool,
) -> Result<Option<String>> {
    let source = match text {
        Some(t) if !t.trim().is_empty() => t.to_owned(),
        _ if remove => return Ok(text.map(str::to_owned)),
        _ => new_document(skeleton),
    };
    // The CST parser keeps comments whatever its options say: plain JSON is checked with a
    // plain JSON parser.
    if strict && let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(&source) {
        return Err(if CstRootNode::parse(&source, &options(false)).is_ok() {
            anyhow!(
                "the harness reads it as plain JSON, which has no comments or trailing commas ({e}); remove them first"
            )
        } else {
            anyhow!("it is not valid JSON: {e}")
        });
    }
    let root = CstRootNode::parse(&source, &options(strict))
        .map_err(|e| anyhow!("it is not valid JSON: {e}"))?;
    let Some(obj) = root.object_value() else {
        return Err(anyhow!("it does not hold a JSON object"));
    };
    for piece in pieces {
        match piece {
            JsonPiece::Server { container, value } => server(&obj, container, value, remove)?,
            JsonPiece::Hooks { flat, events } => hooks(&obj, *flat, events, remove, is_ours)?,
        }
    }
    let out = root.to_string();
    if remove && root.to_serde_value().as_ref() == Some(skeleton) && !has_comments(&root) {
        // Nothing left but the frame mailroom wrote into a new file.
        return Ok(None);
    }
    Ok(Some(out))
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

fn server(obj: &CstObject, container: &str, value: &Value, remove: bool) -> Result<()> {
    once(obj, container)?;
    if let Some(servers) = obj
        .get(container)
        .and_then(|p| p.value())
        .and_then(|v| v.as_object())
    {
        once(&servers, "mailroom")?;
    }
    let servers = match obj.get(container) {
        Some(prop) => match prop.value() {
            Some(v) => Some(
                v.as_object()
                    .ok_or_else(|| anyhow!("its \"{container}\" is not an object"))?,
            ),
            None => None,
        },
        None => None,
    };
    if remove {
        if let Some(servers) = servers
            && let Some(ours) = servers.get("mailroom")
        {
            ours.remove();
            if servers.properties().is_empty()
                && let Some(prop) = obj.get(container)
            {
                prop.remove();
            }
        }
        return Ok(());
    }
    let servers = match servers {
        Some(s) => s,
        None => {
            obj.append(container, CstInputValue::Object(vec![]));
            obj.object_value(container)
                .ok_or_else(|| anyhow!("cannot add \"{container}\""))?
        }
    };
    match servers.get("mailroom") {
        Some(prop) => {
            // What the user added to the entry (`env`, `cwd`, a timeout...) stays; setup
            // rewrites only the keys it writes.
            let current = prop.value().and_then(|v| v.to_serde_value());
            let mut wanted = value.clone();
            if let (Some(Value::Object(old)), Value::Object(new)) = (&current, &mut wanted) {
                for (k, v) in old {
                    if !new.contains_key(k) {
                        new.insert(k.clone(), v.clone());
                    }
                }
            }
            if current.as_ref() != Some(&wanted) {
                prop.set_value(input(&wanted));
            }
        }
        None => {
            let text = servers.to_string();
            if is_one_line(&text)
                && !servers.properties().is_empty()
                && let Some(close) = text.rfind('}')
                && let Some(prop) = obj.get(container)
            {
                // The CST would spread the container over several lines for good (and
                // --uninstall could not put it back on one): the entry goes on its line.
                let spliced = format!(
                    "{}, \"mailroom\": {} {}",
                    text[..close].trim_end().trim_end_matches(','),
                    inline(value),
                    &text[close..]
                );
                prop.set_value(CstInputValue::String(String::new()));
                if let Some(lit) = prop.value().and_then(|v| v.as_string_lit()) {
                    lit.set_raw_value(spliced);
                }
            } else {
                servers.append("mailroom", input(value));
            }
        }
    }
    Ok(())
}

fn hooks(
    obj: &CstObject,
    flat: bool,
    events: &[HookEntry],
    remove: bool,
    is_ours: &dyn Fn(&str) -> bool,
) -> Result<()> {
    once(obj, "hooks")?;
    if let Some(h) = obj
        .get("hooks")
        .and_then(|p| p.value())
        .and_then(|v| v.as_object())
    {
        for entry in events {
            once(&h, entry.event)?;
        }
    }
    let hooks = match obj.get("hooks").and_then(|p| p.value()) {
        Some(v) => Some(
            v.as_object()
                .ok_or_else(|| anyhow!("its \"hooks\" is not an object"))?,
        ),
        None => None,
    };
    if remove {
        let Some(hooks) = hooks else { return Ok(()) };
        for entry in events {
            let Some(list) = hooks.get(entry.event).and_then(|p| p.value()) else {
                continue;
            };
            let Some(list) = list.as_array() else {
                continue;
            };
            remove_ours(&list, flat, is_ours);
            if list.elements().is_empty()
                && let Some(prop) = hooks.get(entry.event)
            {
                prop.remove();
            }
        }
        if hooks.properties().is_empty()
            && let Some(prop) = obj.get("hooks")
        {
            prop.remove();
        }
        return Ok(());
    }
    let hooks = match hooks {
        Some(h) => h,
        None => {
            obj.append("hooks", CstInputValue::Object(vec![]));
            obj.object_value("hooks")
                .ok_or_else(|| anyhow!("cannot add \"hooks\""))?
        }
    };
    for entry in events {
        let wanted = entry_value(entry, flat);
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
        let ours: Vec<Value> = list
            .elements()
            .iter()
            .filter_map(|e| e.to_serde_value())
            .filter(|v| mentions_ours(v, flat, is_ours))
            .collect();
        if ours.len() == 1 && ours[0] == wanted {
            continue;
        }
        remove_ours(&list, flat, is_ours);
        if is_one_line(&list.to_string()) && !list.elements().is_empty() {
            let node = list.append(CstInputValue::String(String::new()));
            if let Some(lit) = node.as_string_lit() {
                lit.set_raw_value(inline(&wanted));
            }
        } else {
            list.append(input(&wanted));
        }
    }
    Ok(())
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

fn command_is_ours(v: &Value, is_ours: &dyn Fn(&str) -> bool) -> bool {
    v.get("command")
        .and_then(Value::as_str)
        .is_some_and(is_ours)
}

fn mentions_ours(v: &Value, flat: bool, is_ours: &dyn Fn(&str) -> bool) -> bool {
    if flat {
        return command_is_ours(v, is_ours);
    }
    v.get("hooks")
        .and_then(Value::as_array)
        .is_some_and(|hs| hs.iter().any(|h| command_is_ours(h, is_ours)))
}

/// Takes mailroom's hooks out of one event's list: a group holding only mailroom's commands
/// goes whole; from a group someone else added to, only mailroom's command goes.
fn remove_ours(list: &jsonc_parser::cst::CstArray, flat: bool, is_ours: &dyn Fn(&str) -> bool) {
    for element in list.elements() {
        let Some(v) = element.to_serde_value() else {
            continue;
        };
        if flat {
            if command_is_ours(&v, is_ours) {
                element.remove();
            }
            continue;
        }
        if !mentions_ours(&v, false, is_ours) {
            continue;
        }
        let only_ours = v
            .get("hooks")
            .and_then(Value::as_array)
            .is_some_and(|hs| hs.iter().all(|h| command_is_ours(h, is_ours)));
        if only_ours {
            element.remove();
        } else if let Some(group) = element.as_object()
            && let Some(inner) = group.array_value("hooks")
        {
            for h in inner.elements() {
                if h.to_serde_value()
                    .is_some_and(|hv| command_is_ours(&hv, is_ours))
                {
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
    const ORDER: [&str; 9] = [
        "$schema", "version", "name", "type", "matcher", "command", "args", "enabled", "hooks",
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

    #[test]
    fn adding_then_removing_gives_the_original_bytes_back() {
        let original = "{\n  // mine\n  \"mcpServers\": {\n    \"other\": {\"command\": \"x\"}\n  },\n  \"hooks\": {\n    \"Stop\": [\n      {\"hooks\": [{\"type\": \"command\", \"command\": \"say bye\"}]}\n    ]\n  },\n  \"model\": \"opus\"\n}\n";
        let added = edit(Some(original), &pieces(), &json!({}), false, false, &ours)
            .unwrap()
            .unwrap();
        assert!(added.contains("// mine") && added.contains("mailroom hook claude Stop"));
        let again = edit(Some(&added), &pieces(), &json!({}), false, false, &ours)
            .unwrap()
            .unwrap();
        assert_eq!(again, added, "idempotent");
        let removed = edit(Some(&added), &pieces(), &json!({}), false, true, &ours)
            .unwrap()
            .unwrap();
        assert_eq!(removed, original);
    }

    #[test]
    fn a_container_on_one_line_stays_on_one_line() {
        let original = "{\n  \"mcpServers\": { \"github\": { \"command\": \"gh\" } },\n  \"hooks\": { \"Stop\": [{ \"hooks\": [] }] }\n}\n";
        let added = edit(Some(original), &pieces(), &json!({}), true, false, &ours)
            .unwrap()
            .unwrap();
        assert_eq!(
            added,
            "{\n  \"mcpServers\": { \"github\": { \"command\": \"gh\" }, \"mailroom\": { \"command\": \"mailroom\", \"args\": [\"mcp\"] } },\n  \"hooks\": { \"Stop\": [{ \"hooks\": [] }, { \"hooks\": [{ \"type\": \"command\", \"command\": \"mailroom hook claude Stop\" }] }] }\n}\n"
        );
        serde_json::from_str::<Value>(&added).unwrap();
        let again = edit(Some(&added), &pieces(), &json!({}), true, false, &ours)
            .unwrap()
            .unwrap();
        assert_eq!(again, added);
        let removed = edit(Some(&added), &pieces(), &json!({}), true, true, &ours)
            .unwrap()
            .unwrap();
        assert_eq!(removed, original);
    }

    #[test]
    fn a_new_file_goes_away_again() {
        let added = edit(None, &pieces(), &json!({}), false, false, &ours)
            .unwrap()
            .unwrap();
        assert_eq!(
            edit(Some(&added), &pieces(), &json!({}), false, true, &ours).unwrap(),
            None
        );
    }
}
