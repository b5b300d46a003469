//! Newline-delimited JSON-RPC over a byte stream (stdio), answering what rmcp's own stdio
//! transport passes over in silence: a line serde cannot read gets a parse error (-32700), a
//! line that is JSON but no MCP message gets an invalid-request error (-32600), a known method
//! with params it cannot take gets invalid params (-32602), a batch gets -32600 for each of its
//! requests, and a line over [`MAX_LINE`] is skipped with an error. Each answer carries the
//! request's id whenever the line still shows it. Every line a client sends is answered, and
//! none stops the server.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequestMethod, CallToolRequestParams, ClientRequest, JsonObject, JsonRpcMessage,
    JsonRpcRequest, JsonRpcVersion2_0, NumberOrString, Request, RequestId, ServerResult,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

use crate::server::Written;

/// The longest line read: a body at the 1 MiB limit, escaped as JSON, fits many times over;
/// anything longer is skipped without being held in memory.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// A transport over a reader and a writer of JSON-RPC lines.
#[derive(Debug)]
pub struct Lines<R, W> {
    reader: BufReader<R>,
    writer: Arc<Mutex<Out<W>>>,
    /// The line read so far. rmcp drops a `receive` future whenever an answer is ready first,
    /// so what a read has taken out of the reader lives here, not in the future, and the rest
    /// of the line continues it at the next `receive`.
    line: Line,
    /// Error answers of this transport's own, kept until the writer takes them (a dropped
    /// `receive` must not lose one).
    answers: Vec<String>,
    /// Request ids rmcp cannot hold (integers past `i64`), each standing in as a string of
    /// ours until its answer goes out with the id as the client wrote it.
    big_ids: BigIds,
    /// Results written as JSON text by their tool, spliced into their answers here.
    written: Option<Arc<Written>>,
}

/// Integer ids over `i64::MAX` (JSON-RPC allows any number; rmcp keeps an `i64`), each under
/// the stand-in string rmcp carries for it. A stand-in starts with a NUL, which no id a
/// client writes in earnest does.
#[derive(Debug, Default)]
struct BigIds {
    by_stand_in: std::collections::HashMap<String, u64>,
    next: u64,
}

impl BigIds {
    fn stand_in(&mut self, id: u64) -> String {
        self.next += 1;
        let s = format!("\u{0}{}", self.next);
        self.by_stand_in.insert(s.clone(), id);
        s
    }
}

/// A line being read: its bytes so far, or the fact that it outgrew [`MAX_LINE`].
#[derive(Debug, Default)]
struct Line {
    bytes: Vec<u8>,
    too_long: bool,
}

/// The writer with the bytes of a line whose write was cut off (its future dropped): they go
/// out first, before any other line, so lines never interleave.
#[derive(Debug)]
struct Out<W> {
    writer: W,
    /// Lines queued, of which the first `sent` bytes are written.
    unwritten: Vec<u8>,
    sent: usize,
}

impl<R, W> Lines<R, W>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    pub fn new(reader: R, writer: W) -> Lines<R, W> {
        Lines {
            reader: BufReader::with_capacity(64 * 1024, reader),
            writer: Arc::new(Mutex::new(Out {
                writer,
                unwritten: Vec::new(),
                sent: 0,
            })),
            line: Line::default(),
            answers: Vec::new(),
            big_ids: BigIds::default(),
            written: None,
        }
    }

    /// Writes each tool result held in `written` into its answer, where the result rmcp
    /// carries has its stand-in (see `server::Written`).
    pub(crate) fn with_written(mut self, written: Arc<Written>) -> Lines<R, W> {
        self.written = Some(written);
        self
    }

    /// Writes the queued error answers. They move into the writer's queue in the same step
    /// that takes the lock (no await between), so a dropped call neither loses nor doubles one.
    async fn write_answers(&mut self) -> std::io::Result<()> {
        if self.answers.is_empty() {
            return Ok(());
        }
        let writer = self.writer.clone();
        let mut out = writer.lock().await;
        for answer in self.answers.drain(..) {
            out.queue(&answer);
        }
        out.drain().await
    }
}

/// Writes one line. Cancel-safe: once the lock is held the line is queued in
/// [`Out::unwritten`], and whatever a dropped call left unwritten goes out, in order, with the
/// next call.
async fn write_line<W: AsyncWrite + Unpin>(
    writer: &Mutex<Out<W>>,
    line: String,
) -> std::io::Result<()> {
    let mut out = writer.lock().await;
    if out.unwritten.is_empty() {
        // The line's own buffer becomes the queue: a long answer is not copied.
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        out.unwritten = bytes;
    } else {
        out.queue(&line);
    }
    out.drain().await
}

impl<W: AsyncWrite + Unpin> Out<W> {
    fn queue(&mut self, line: &str) {
        self.unwritten.extend_from_slice(line.as_bytes());
        self.unwritten.push(b'\n');
    }

    async fn drain(&mut self) -> std::io::Result<()> {
        // What is written is counted, not removed from the front: a long line goes out in
        // pipe-sized pieces, and moving the rest down after each would copy it again and again.
        while self.sent < self.unwritten.len() {
            let n = self.writer.write(&self.unwritten[self.sent..]).await?;
            if n == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            self.sent += n;
        }
        self.unwritten = Vec::new();
        self.sent = 0;
        self.writer.flush().await
    }
}

/// `item` serialised, with the stand-in object `stand_in` replaced by `json`, in one buffer
/// made large enough for both at the start (`room`: the size of the rest, about). The result
/// comes after the id in an answer, so the last occurrence is the stand-in even if a client
/// chose an id that looks like one.
fn splice<T: serde::Serialize>(
    item: &T,
    room: usize,
    stand_in: &str,
    json: &str,
) -> serde_json::Result<String> {
    let mut line = Vec::with_capacity(room + json.len() + 1);
    serde_json::to_writer(&mut line, item)?;
    // serde_json writes UTF-8; a failure here cannot happen and is an error, not a panic.
    let mut line =
        String::from_utf8(line).map_err(<serde_json::Error as serde::ser::Error>::custom)?;
    if let Some(at) = line.rfind(stand_in) {
        // Only the end of the answer (`,"isError":false}}`) moves.
        line.replace_range(at..at + stand_in.len(), json);
    }
    Ok(line)
}

/// Reads on with `line` until it ends: `Ok(true)` when a line is complete in it (`too_long`
/// says whether it was skipped for being over [`MAX_LINE`]), `Ok(false)` at the end of the
/// stream with nothing pending. Cancel-safe: every byte taken from the reader is in `line`
/// before the next await.
async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    line: &mut Line,
) -> std::io::Result<bool> {
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(!line.bytes.is_empty() || line.too_long);
        }
        let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..i], i + 1),
            None => (available, available.len()),
        };
        let found = done > chunk.len();
        if !line.too_long && line.bytes.len() + chunk.len() <= MAX_LINE {
            line.bytes.extend_from_slice(chunk);
        } else {
            line.too_long = true;
            line.bytes = Vec::new();
        }
        reader.consume(done);
        if found {
            return Ok(true);
        }
    }
}

fn error_line(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// The methods of MCP requests rmcp knows: a request naming one whose params rmcp could not
/// read arrives as a custom request, and is answered "invalid params", not "method not found".
const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "logging/setLevel",
    "completion/complete",
];

/// What one line is: a message for rmcp, or the error answering it. An answer carries the
/// request's id wherever the line still shows it (JSON-RPC 2.0: null only when it cannot be
/// determined).
fn answer_to(line: &[u8], big_ids: &mut BigIds) -> Result<RxJsonRpcMessage<RoleServer>, Value> {
    if let Some(call) = tool_call(line) {
        return Ok(call);
    }
    match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line) {
        Ok(JsonRpcMessage::Request(r)) => match &r.request {
            ClientRequest::CustomRequest(c) if KNOWN_METHODS.contains(&c.method.as_str()) => {
                let id = serde_json::to_value(&r.id).unwrap_or(Value::Null);
                let why = match (c.method.as_str(), &c.params) {
                    ("tools/call", Some(params)) => {
                        serde_json::from_value::<CallToolRequestParams>(params.clone())
                            .err()
                            .map(|e| format!(": {e}"))
                            .unwrap_or_default()
                    }
                    _ => String::new(),
                };
                Err(error_line(
                    id,
                    -32602,
                    &format!(
                        "invalid params for {}{why} (tools/call takes a name and an object of arguments)",
                        c.method
                    ),
                ))
            }
            _ => Ok(JsonRpcMessage::Request(r)),
        },
        Ok(message) => Ok(message),
        Err(e) => match serde_json::from_slice::<Value>(line) {
            // Not JSON serde can read: invalid UTF-8, bad syntax, a number out of range,
            // nesting past serde's limit. The id may still be legible.
            Err(e) => Err(error_line(
                scan_id(line).unwrap_or(Value::Null),
                -32700,
                &format!("parse error: {e}"),
            )),
            Ok(Value::Array(items)) => Err(refuse_batch(&items)),
            Ok(mut v) => {
                let id = v.get("id").cloned();
                if let Some(big) = id
                    .as_ref()
                    .and_then(Value::as_u64)
                    .filter(|n| i64::try_from(*n).is_err())
                {
                    let stand_in = big_ids.stand_in(big);
                    v["id"] = Value::String(stand_in.clone());
                    let again = serde_json::to_vec(&v).map_err(|e| {
                        error_line(json!(big), -32603, &format!("internal error: {e}"))
                    })?;
                    return match answer_to(&again, big_ids) {
                        Ok(JsonRpcMessage::Request(r)) => Ok(JsonRpcMessage::Request(r)),
                        // Only a request is answered: nothing will come back for the stand-in.
                        other => {
                            big_ids.by_stand_in.remove(&stand_in);
                            other.map_err(|mut answer| {
                                answer["id"] = json!(big);
                                answer
                            })
                        }
                    };
                }
                if let Some(answer) = params_not_an_object(&v) {
                    return Err(answer);
                }
                Err(error_line(
                    legible_id(v.get("id")),
                    -32600,
                    &format!("invalid request: {e}"),
                ))
            }
        },
    }
}

/// The answer to a request for a known method whose params are there but not an object (an
/// array, a string): invalid params (-32602), as for params of the wrong shape.
fn params_not_an_object(v: &Value) -> Option<Value> {
    let method = v.get("method")?.as_str()?;
    let params = v.get("params")?;
    if !KNOWN_METHODS.contains(&method) || params.is_object() || params.is_null() {
        return None;
    }
    Some(error_line(
        legible_id(v.get("id")),
        -32602,
        &format!("invalid params for {method}: params must be an object, as MCP defines them"),
    ))
}

/// A `tools/call` request in the plain shape clients send (`jsonrpc`, `id`, `method`, and
/// params of only `name` and `arguments`), read in one pass into the request rmcp's general
/// reader makes of it. That reader tries each kind of message in turn through buffered
/// `untagged`/`flatten` values and builds an error value for each kind that does not fit:
/// about 25,000 instructions a request, a sixth of a durable `write_mail`. Any other line
/// (another method, `_meta`, a member this shape does not name, a duplicate member, a wrong
/// type, bad JSON) is `None` and takes the general path, which answers it as before.
fn tool_call(line: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Call {
        #[allow(dead_code, reason = "read only to check that it says 2.0")]
        jsonrpc: JsonRpcVersion2_0,
        id: RequestId,
        #[allow(dead_code, reason = "read only to check that it says tools/call")]
        method: CallToolRequestMethod,
        params: Obj<Params>,
    }
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Params {
        name: String,
        #[serde(default)]
        arguments: Option<JsonObject>,
    }
    let Obj(call) = serde_json::from_slice::<Obj<Call>>(line).ok()?;
    let Obj(Params { name, arguments }) = call.params;
    let mut params = CallToolRequestParams::new(name);
    params.arguments = arguments;
    Some(JsonRpcMessage::Request(JsonRpcRequest::new(
        call.id,
        ClientRequest::CallToolRequest(Request::new(params)),
    )))
}

/// `T` read only from a JSON object. serde's derived structs also take an array of their
/// fields in order (`"params": ["write_mail", {...}]`), which no JSON-RPC message or MCP params
/// may be and rmcp's reader refuses: such a line must take the general path.
struct Obj<T>(T);

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for Obj<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Object<T>(std::marker::PhantomData<T>);
        impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for Object<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(Object(std::marker::PhantomData)).map(Obj)
    }
}

/// A request id as JSON-RPC allows it (a string or an integer), else null.
fn legible_id(id: Option<&Value>) -> Value {
    match id {
        Some(id @ Value::String(_)) => id.clone(),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Value::Number(n.clone()),
        _ => Value::Null,
    }
}

/// The answer to a batch (a JSON array of messages). MCP 2025-03-26 allowed batches; 2025-06-18
/// removed them, and this server serves every revision the same way: each request of the
/// batch gets its own -32600 (in one array, as JSON-RPC answers a batch), so no client waits
/// forever on an id; a batch with no request in it (empty, or only notifications) gets one.
fn refuse_batch(items: &[Value]) -> Value {
    const WHY: &str = "batches are not supported (MCP removed them in 2025-06-18): send each message on its own line";
    let answers: Vec<Value> = items
        .iter()
        .filter(|item| item.get("method").is_some())
        .filter_map(|item| match legible_id(item.get("id")) {
            Value::Null => None,
            id => Some(error_line(id, -32600, WHY)),
        })
        .collect();
    if answers.is_empty() {
        error_line(Value::Null, -32600, WHY)
    } else {
        Value::Array(answers)
    }
}

/// The top-level `"id"` of a line serde cannot read, when it is a string or an integer that
/// reads whole: one pass over the bytes (any nesting depth, any bytes inside strings).
fn scan_id(line: &[u8]) -> Option<Value> {
    let mut i = skip_ws(line, 0);
    if line.get(i) != Some(&b'{') {
        return None;
    }
    let mut depth = 0usize;
    // Whether the next string at depth 1 is a member name.
    let mut key = false;
    while let Some(&b) = line.get(i) {
        match b {
            b'{' | b'[' => {
                depth += 1;
                key = depth == 1;
                i += 1;
            }
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return None;
                }
                i += 1;
            }
            b',' => {
                key = depth == 1;
                i += 1;
            }
            b'"' => {
                let end = string_end(line, i)?;
                let is_id = depth == 1 && key && &line[i..end] == b"\"id\"";
                key = false;
                i = end;
                if is_id {
                    i = skip_ws(line, i);
                    if line.get(i) != Some(&b':') {
                        return None;
                    }
                    return read_id(line, skip_ws(line, i + 1));
                }
            }
            _ => i += 1,
        }
    }
    None
}

fn skip_ws(line: &[u8], mut i: usize) -> usize {
    while line.get(i).is_some_and(|b| b.is_ascii_whitespace()) {
        i += 1;
    }
    i
}

/// The index just past the string starting at `start` (a `"`).
fn string_end(line: &[u8], start: usize) -> Option<usize> {
    let mut j = start + 1;
    loop {
        match line.get(j)? {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
}

/// The id value at `i`: a string, or an integer.
fn read_id(line: &[u8], i: usize) -> Option<Value> {
    let end = match line.get(i)? {
        b'"' => string_end(line, i)?,
        _ => {
            let len = line[i..]
                .iter()
                .take_while(|b| b.is_ascii_digit() || b"-+.eE".contains(b))
                .count();
            i + len
        }
    };
    let v = serde_json::from_slice::<Value>(&line[i..end]).ok()?;
    match legible_id(Some(&v)) {
        Value::Null => None,
        id => Some(id),
    }
}

impl<R, W> rmcp::transport::Transport<RoleServer> for Lines<R, W>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let writer = self.writer.clone();
        let id = match &item {
            JsonRpcMessage::Response(r) => Some(&r.id),
            JsonRpcMessage::Error(e) => e.id.as_ref(),
            _ => None,
        };
        let big = match id {
            Some(NumberOrString::String(s)) => self.big_ids.by_stand_in.remove(s.as_ref()),
            _ => None,
        };
        // A tool result written as JSON text: its stand-in, as serialised, the text, and
        // about the size of the rest of the answer (the text content, escaped).
        let written = match (&item, &self.written) {
            (JsonRpcMessage::Response(r), Some(written)) => match &r.result {
                ServerResult::CallToolResult(c) => c.structured_content.as_ref().and_then(|v| {
                    let json = written.take(v)?;
                    let room = c
                        .content
                        .iter()
                        .filter_map(|b| b.as_text())
                        .map(|t| t.text.len() + t.text.len() / 8)
                        .sum::<usize>()
                        + 256;
                    Some((serde_json::to_string(v).ok()?, json, room))
                }),
                _ => None,
            },
            _ => None,
        };
        async move {
            let line = match (big, written) {
                (None, None) => serde_json::to_string(&item),
                (None, Some((stand_in, json, room))) => splice(&item, room, &stand_in, &json),
                (Some(big), written) => serde_json::to_value(&item).and_then(|mut v| {
                    v["id"] = json!(big);
                    match written {
                        Some((stand_in, json, room)) => splice(&v, room, &stand_in, &json),
                        None => serde_json::to_string(&v),
                    }
                }),
            }
            .map_err(std::io::Error::other)?;
            drop(item);
            write_line(&writer, line).await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        if self.write_answers().await.is_err() {
            return None;
        }
        loop {
            match read_line(&mut self.reader, &mut self.line).await {
                Err(_) | Ok(false) => return None,
                Ok(true) => {}
            }
            // The line is complete: take it, so a cancellation from here on cannot read it twice.
            let Line { bytes, too_long } = std::mem::take(&mut self.line);
            let answer = if too_long {
                error_line(
                    Value::Null,
                    -32600,
                    &format!("the request is over {MAX_LINE} bytes; it was skipped"),
                )
            } else {
                let line = bytes.trim_ascii();
                if line.is_empty() {
                    continue;
                }
                match answer_to(line, &mut self.big_ids) {
                    Ok(message) => return Some(message),
                    Err(answer) => answer,
                }
            };
            self.answers.push(answer.to_string());
            if self.write_answers().await.is_err() {
                return None;
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.write_answers().await?;
        self.writer.lock().await.drain().await
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::{RoleServer, RxJsonRpcMessage, tool_call};

    /// What rmcp's own reader makes of a line, as JSON (the message types compare that way).
    fn general(line: &str) -> Option<Value> {
        serde_json::from_str::<RxJsonRpcMessage<RoleServer>>(line)
            .ok()
            .map(|m| serde_json::to_value(m).expect("a message serializes"))
    }

    fn fast(line: &str) -> Option<Value> {
        tool_call(line.as_bytes()).map(|m| serde_json::to_value(m).expect("a message serializes"))
    }

    #[test]
    fn a_plain_tool_call_reads_as_rmcp_reads_it() {
        for line in [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"write_mail","arguments":{"recipient":"b","body":"hi"}}}"#,
            r#"{"method":"tools/call","params":{"arguments":{"n":[1,{"x":null}]},"name":"get_roster"},"id":"a-1","jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"get_projects"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":null}}"#,
            r#" {"jsonrpc":"2.0","id":-9223372036854775808,"method":"tools/call","params":{"name":"\u00e9\n"}} "#,
        ] {
            let fast = fast(line).unwrap_or_else(|| panic!("fast path declined {line}"));
            assert_eq!(Some(fast), general(line), "{line}");
        }
    }

    #[test]
    fn any_other_line_is_left_to_the_general_reader() {
        for line in [
            // `_meta` (a progress token) and newer members rmcp reads.
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":1}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","requestState":"s"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"},"extra":1}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"1.0","id":7,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"id":8,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":[1]}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":7}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}"#,
            r#"[{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}]"#,
            // Arrays in place of objects: serde's structs would take their fields in order.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["write_mail",{"recipient":"b"}]}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":["read_mail"]}"#,
            r#"["2.0",3,"tools/call",{"name":"x"}]"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x","name":"y"}}"#,
            "",
            "\u{0}",
        ] {
            assert_eq!(fast(line), None, "{line}");
        }
    }

    proptest! {
        #[test]
        fn tool_calls_read_the_same_either_way(
            id in prop_oneof![any::<i64>().prop_map(|n| json!(n)), ".{0,12}".prop_map(|s| json!(s))],
            name in ".{0,16}",
            args in proptest::collection::btree_map(".{0,8}", ".{0,12}", 0..4),
            with_args in any::<bool>(),
        ) {
            let mut params = json!({"name": name});
            if with_args {
                params["arguments"] = json!(args);
            }
            let line = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string();
            let fast = fast(&line);
            prop_assert!(fast.is_some(), "declined {}", line);
            prop_assert_eq!(fast, general(&line));
        }
    }
}
