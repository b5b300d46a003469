//! `mcp --listen`: MCP over Streamable HTTP through the real binary, with a raw HTTP client.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::Stdio;

use crate::support::Home;

/// One request on a fresh connection; the status line and the whole answer.
fn post(addr: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nconnection: close\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\ncontent-length: {}\r\n",
        body.len()
    );
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("host: {addr}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let status = answer[9..12].parse().unwrap();
    (status, answer)
}

fn call(tool: &str, args: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"{tool}","arguments":{args}}}}}"#
    )
}

#[test]
fn mcp_over_http_acts_as_the_tokens_identity_and_refuses_everything_else() {
    let home = Home::new();
    let bob = home
        .as_("HUMAN", ["token", "add", "bob@web", "--name", "bob"])
        .stdout();
    let bob = bob.trim();
    let mut server = home
        .process()
        .args(["mcp", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let url = first.trim();
    let addr = url
        .strip_prefix("http://")
        .and_then(|u| u.strip_suffix("/mcp"))
        .unwrap()
        .to_owned();
    let auth = format!("Bearer {bob}");
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

    let (status, answer) = post(&addr, &[], init);
    assert_eq!(status, 401, "{answer}");
    assert!(
        answer
            .to_ascii_lowercase()
            .contains("www-authenticate: bearer"),
        "{answer}"
    );
    let (status, _) = post(&addr, &[("authorization", "Bearer mailroom_wrong")], init);
    assert_eq!(status, 401);
    let (status, answer) = post(&addr, &[("authorization", &auth)], init);
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("\"serverInfo\""), "{answer}");

    // A write acts as bob@web, the token's identity.
    let (status, answer) = post(
        &addr,
        &[("authorization", &auth)],
        &call(
            "write_mail",
            r#"{"recipient":"alice@web","body":"over http"}"#,
        ),
    );
    assert_eq!(status, 200, "{answer}");
    assert!(!answer.contains("\"isError\":true"), "{answer}");
    let inbox = home.as_("alice@web", ["--json", "inbox"]).json();
    assert_eq!(inbox["messages"][0]["from"], "bob@web", "{inbox}");

    // DNS rebinding and foreign pages.
    let (status, _) = post(
        &addr,
        &[("authorization", &auth), ("host", "evil.example:80")],
        init,
    );
    assert_eq!(status, 403);
    let (status, _) = post(
        &addr,
        &[("authorization", &auth), ("origin", "http://evil.example")],
        init,
    );
    assert_eq!(status, 403);
    let big = "x".repeat(2 * 1024 * 1024 + 1);
    let (status, _) = post(&addr, &[("authorization", &auth)], &big);
    assert_eq!(status, 413);

    // Revoked: refused at the next request, no restart.
    home.as_("HUMAN", ["token", "revoke", "bob"]).ok();
    let (status, _) = post(&addr, &[("authorization", &auth)], init);
    assert_eq!(status, 401);

    server.kill().unwrap();
    server.wait().unwrap();
}
