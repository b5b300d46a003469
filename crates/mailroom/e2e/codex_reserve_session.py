"""File reservations in a real Codex session (`codex exec`), after `mailroom setup codex`, against
the Responses API stand-in of codex_session.py (same stub server and hook trust, another script).

The model is `gpt-5.5` of Codex's own catalog, so Codex offers its patch tool, `apply_patch` (a
freeform tool). Another agent (`api`) holds `src/api/**`; the scripted model patches
`src/api/users.rs`. Asserted on the requests the stand-in recorded and on the file:
1. by default the patch goes ahead (the file changed) and the request after it carries the
   PreToolUse hook's notice, framed as untrusted data, naming the holder and the pattern;
2. enforcing (`MAILROOM_ENFORCE_RESERVATIONS=1`, no hook edited), the patch is refused: the file
   is unchanged and the refusal, with the same words, reaches the model.

Usage: python3 codex_reserve_session.py PATH/TO/mailroom PATH/TO/codex
"""

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from http.server import ThreadingHTTPServer

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import codex_session as base  # noqa: E402  (the stand-in, its SSE and the hook trust)

MAILROOM, CODEX = sys.argv[1], sys.argv[2]
TIMEOUT = 180
ORIGINAL, CHANGED = "fn users() {}\n", "fn users_v2() {}\n"
REASON = "moving the users endpoint"
PATCH = ("*** Begin Patch\n*** Update File: src/api/users.rs\n@@\n-fn users() {}\n+fn users_v2() {}\n"
         "*** End Patch\n")
FINAL = "Finished the task."
check, failures = base.check, base.failures


def offers_patch(body):
    return any(isinstance(t, dict) and t.get("name") == "apply_patch" for t in body.get("tools") or [])


def scripted(body):
    if not offers_patch(body):
        return {"type": "message", "role": "assistant", "id": "msg_side",
                "content": [{"type": "output_text", "text": "ok", "annotations": []}]}
    if not base.answered(body):
        return {"type": "custom_tool_call", "id": "ctc_1", "call_id": base.CALL_ID, "name": "apply_patch",
                "input": PATCH}
    return {"type": "message", "role": "assistant", "id": "msg_final",
            "content": [{"type": "output_text", "text": FINAL, "annotations": []}]}


base.scripted = scripted


def main():
    began = time.monotonic()
    work = pathlib.Path(tempfile.mkdtemp(prefix="mailroom-codex-reserve-"))
    try:
        for enforce in (False, True):
            session(work / ("enforced" if enforce else "advisory"), enforce)
    except Exception as e:
        check("the test runs to its end", False, repr(e))
    took = time.monotonic() - began
    if failures:
        print(f"codex reservation session e2e: FAIL ({len(failures)} checks) in {took:.1f} s; files kept in {work}")
        sys.exit(1)
    shutil.rmtree(work, ignore_errors=True)
    print(f"codex reservation session e2e: ok, after `mailroom setup codex`: apply_patch on a reserved file "
          f"carried the notice to the model, and enforcing refused it, in {took:.1f} s")


def session(work, enforce):
    what = "enforcing" if enforce else "by default"
    user, repo, bin_dir, mail = work / "user", work / "src" / "web", work / "bin", work / "mail"
    for d in (user / ".codex", repo / "src" / "api", bin_dir):
        d.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    target = repo / "src" / "api" / "users.rs"
    target.write_text(ORIGINAL)
    (bin_dir / "mailroom").symlink_to(MAILROOM)
    log = work / "requests.jsonl"
    log.write_text("")
    base.Stub.log_path = str(log)
    stub = ThreadingHTTPServer(("127.0.0.1", 0), base.Stub)
    threading.Thread(target=stub.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{stub.server_address[1]}"
    (user / ".codex" / "config.toml").write_text(
        'model = "gpt-5.5"\nmodel_provider = "stub"\ncheck_for_update_on_startup = false\n\n'
        '[analytics]\nenabled = false\n\n[features]\nplugins = false\napps = false\n\n'
        f'[model_providers.stub]\nname = "stub"\nbase_url = "{url}/v1"\nwire_api = "responses"\n'
        'env_key = "STUB_API_KEY"\nrequest_max_retries = 0\nstream_max_retries = 0\n\n'
        f'[projects."{repo}"]\ntrust_level = "trusted"\n')
    env = {
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "LANG": "C.UTF-8",
        "HOME": str(user),
        "CODEX_HOME": str(user / ".codex"),
        "MAILROOM_HOME": str(mail),
        "STUB_API_KEY": "stub-not-a-key",
        "HTTP_PROXY": url, "HTTPS_PROXY": url, "http_proxy": url, "https_proxy": url,
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
        "NO_COLOR": "1",
    }

    def mailroom(*args):
        r = subprocess.run(["mailroom", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=30)
        check(f"{what}: mailroom {' '.join(args)} exits 0", r.returncode == 0, r.stderr)

    mailroom("--as", "api", "reserve", "src/api/**", "--reason", REASON)
    mailroom("setup", "codex")
    base.trust_hooks(repo, env, user / ".codex" / "config.toml")
    if enforce:
        env["MAILROOM_ENFORCE_RESERVATIONS"] = "1"

    cmd = [CODEX, "exec", "--dangerously-bypass-approvals-and-sandbox", "--json", "Do the task."]
    proc = subprocess.Popen(cmd, cwd=repo, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        check(f"{what}: codex finishes within {TIMEOUT} s", False, err[-2000:])
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        stub.shutdown()
        stub.server_close()
    check(f"{what}: codex exits 0", proc.returncode == 0, f"exit {proc.returncode}: {out[-1500:]} {err[-2000:]}")

    requests = [json.loads(line) for line in log.read_text().splitlines()]
    after = [r["body"] for r in requests if r["method"] == "POST" and isinstance(r["body"], dict)
             and offers_patch(r["body"]) and base.answered(r["body"])]
    check(f"{what}: a request follows the patch", after, f"stdout: {out[-3000:]}\nstderr: {err[-1500:]}")
    if not after:
        return
    text = json.dumps(after[0].get("input"))
    for needle in ("UNTRUSTED DATA", "api@default holds 'src/api/**' until", REASON, "mailroom send --to api@default"):
        check(f"{what}: the request after the patch carries the notice ({needle})", needle in text, text[-3000:])
    if enforce:
        check("enforcing: the file is unchanged", target.read_text() == ORIGINAL, target.read_text())
        check("enforcing: the refusal reaches the model", "The edit was refused" in text, text[-3000:])
    else:
        check("by default: the patch went ahead", target.read_text() == CHANGED, target.read_text())
        check("by default: the notice says the edit goes ahead", "The edit goes ahead" in text, text[-3000:])
    outside = [r for r in requests if r["method"] == "CONNECT"]
    check(f"{what}: no request tried to leave the machine", not outside, outside)
    start = text.find("mailroom: file reservation notice")
    print(f"{what}, the notice as the model got it:")
    print(text[start:start + 500].encode().decode("unicode_escape", "replace") if start >= 0 else "(none)")


if __name__ == "__main__":
    main()
