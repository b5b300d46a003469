//! Newline-delimited JSON-RPC over a byte stream (stdio), answering what rmcp's own stdio
//! transport passes over in silence: a line that is not JSON gets a parse error (-32700), a
//! line that is JSON but no MCP message gets an invalid-request error (-32600, with its id when
//! it has one), and a line over [`MAX_LINE`] is skipped with an error. Every line a client sends
//! is answered, and none stops the server.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// The longest line read: a body at the 1 MiB limit, escaped as JSON, fits many times over;
/// anything longer is skipped without being held in memory.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// A transport over a reader and a writer of JSON-RPC lines.
#[derive(Debug)]
pub struct Lines<R, W> {
    reader: BufReader<R>,
    writer: Arc<Mutex<W>>,
}

impl<R, W> Lines<R, W>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    pub fn new(reader: R, writer: W) -> Lines<R, W> {
        Lines {
            reader: BufReader::with_capacity(64 * 1024, reader),
            writer: Arc::new(Mutex::new(writer)),
        }
    }
}

async fn write_line<W: AsyncWrite + Unpin>(
    writer: &Mutex<W>,
    mut line: String,
) -> std::io::Result<()> {
    line.push('\n');
    let mut w = writer.lock().await;
    w.write_all(line.as_bytes()).await?;
    w.flush().await
}

/// One line, or `Err(())` when it was longer than [`MAX_LINE`] (its bytes are dropped);
/// `None` at the end of the stream.
async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
) -> std::io::Result<Option<Result<(), ()>>> {
    buf.clear();
    let mut too_long = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if buf.is_empty() && !too_long {
                None
            } else if too_long {
                Some(Err(()))
            } else {
                Some(Ok(()))
            });
        }
        let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..i], i + 1),
            None => (available, available.len()),
        };
        let found = done > chunk.len();
        if !too_long && buf.len() + chunk.len() <= MAX_LINE {
            buf.extend_from_slice(chunk);
        } else {
            too_long = true;
            buf.clear();
        }
        reader.consume(done);
        if found {
            return Ok(Some(if too_long { Err(()) } else { Ok(()) }));
        }
    }
}

fn error_line(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
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
        async move {
            let line = serde_json::to_string(&item).map_err(std::io::Error::other)?;
            write_line(&writer, line).await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let mut buf = Vec::new();
        loop {
            let answer = match read_line(&mut self.reader, &mut buf).await {
                Err(_) | Ok(None) => return None,
                Ok(Some(Err(()))) => error_line(
                    Value::Null,
                    -32600,
                    &format!("the request is over {MAX_LINE} bytes; it was skipped"),
                ),
                Ok(Some(Ok(()))) => {
                    let line = buf.trim_ascii();
                    if line.is_empty() {
                        continue;
                    }
                    match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line) {
                        Ok(message) => return Some(message),
                        Err(e) => match serde_json::from_slice::<Value>(line) {
                            Err(_) => error_line(Value::Null, -32700, &format!("parse error: {e}")),
                            Ok(v) => {
                                let id = match v.get("id") {
                                    Some(id @ (Value::Number(_) | Value::String(_))) => id.clone(),
                                    _ => Value::Null,
                                };
                                error_line(id, -32600, &format!("invalid request: {e}"))
                            }
                        },
                    }
                }
            };
            if write_line(&self.writer, answer.to_string()).await.is_err() {
                return None;
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.writer.lock().await.flush().await
    }
}
