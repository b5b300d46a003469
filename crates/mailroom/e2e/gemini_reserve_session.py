"""File reservations in a real Gemini CLI session (`gemini -p`), after `mailroom setup gemini`,
against the Gemini API stand-in of gemini_session.py (same stub server, another script).

Another agent (`api`) holds `src/api/**`; the scripted model calls `write_file` on
`src/api/users.rs`. Gemini CLI shows the model nothing from BeforeTool but a refusal, so:
1. by default the write goes ahead (the file changed) and the notice, from the AfterTool hook,
   comes with the tool's result in the next request, framed as untrusted data, naming the
   holder and the pattern, and saying the edit went ahead;
2. enforcing (`MAILROOM_ENFORCE_RESERVATIONS=1`, no hook edited), BeforeTool refuses the write:
   the file is unchanged and the refusal, with the same words, is the tool's result.

Usage: python3 gemini_reserve_session.py PATH/TO/mailroom PATH/TO/gemini
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
import gemini_session as base  # noqa: E402  (the stand-in of the Gemini API)

MAILROOM, GEMINI = sys.argv[1], sys.argv[2]
TIMEOUT = 180
ORIGINAL, CHANGED = "fn users() {}\n", "fn users_v2() {}\n"
REASON = "moving the users endpoint"
FINAL = "Finished the task."
check, failures = base.check, base.failures


def scripted_for(target):
    def scripted(body):
        if not base.is_main(body):
            return None
        if not base.answered_shell(body):
            return {"functionCall": {"name": "write_file", "args": {"file_path": target, "content": CHANGED}}}
        return {"text": FINAL}
    return scripted


def main():
    began = time.monotonic()
    work = pathlib.Path(tempfile.mkdtemp(prefix="mailroom-gemini-reserve-"))
    try:
        for enforce in (False, True):
            session(work / ("enforced" if enforce else "advisory"), enforce)
    except Exception as e:
        check("the test runs to its end", False, repr(e))
    took = time.monotonic() - began
    if failures:
        print(f"gemini-cli reservation session e2e: FAIL ({len(failures)} checks) in {took:.1f} s; files kept in {work}")
        sys.exit(1)
    shutil.rmtree(work, ignore_errors=True)
    print(f"gemini-cli reservation session e2e: ok, after `mailroom setup gemini`: write_file on a reserved "
          f"file brought the notice with its result, and enforcing refused it, in {took:.1f} s")


def session(work, enforce):
    what = "enforcing" if enforce else "by default"
    user, repo, bin_dir, mail = work / "user", work / "src" / "web", work / "bin", work / "mail"
    for d in (user / ".gemini", repo / "src" / "api", bin_dir):
        d.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    target = repo / "src" / "api" / "users.rs"
    target.write_text(ORIGINAL)
    (bin_dir / "mailroom").symlink_to(MAILROOM)
    (user / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(repo): "TRUST_FOLDER"}))
    (user / ".gemini" / "settings.json").write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}, "privacy": {"usageStatisticsEnabled": False}}))
    log = work / "requests.jsonl"
    log.write_text("")
    base.scripted = scripted_for(str(target))
    base.Stub.log_path = str(log)
    stub = ThreadingHTTPServer(("127.0.0.1", 0), base.Stub)
    threading.Thread(target=stub.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{stub.server_address[1]}"
    env = {
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "LANG": "C.UTF-8",
        "HOME": str(user),
        "MAILROOM_HOME": str(mail),
        "GOOGLE_GEMINI_BASE_URL": url,
        "GEMINI_API_KEY": "stub-not-a-key",
        "HTTP_PROXY": url, "HTTPS_PROXY": url, "http_proxy": url, "https_proxy": url,
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
        "GEMINI_CLI_NO_RELAUNCH": "true",
        "NO_COLOR": "1",
    }

    def mailroom(*args):
        r = subprocess.run(["mailroom", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=30)
        check(f"{what}: mailroom {' '.join(args)} exits 0", r.returncode == 0, r.stderr)

    mailroom("--as", "api", "reserve", "src/api/**", "--reason", REASON)
    mailroom("setup", "gemini")
    if enforce:
        env["MAILROOM_ENFORCE_RESERVATIONS"] = "1"

    cmd = [GEMINI, "-p", "Do the task.", "--approval-mode", "yolo", "--output-format", "json"]
    proc = subprocess.Popen(cmd, cwd=repo, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        check(f"{what}: gemini finishes within {TIMEOUT} s", False, err[-2000:])
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        stub.shutdown()
        stub.server_close()
    check(f"{what}: gemini exits 0", proc.returncode == 0, f"exit {proc.returncode}: {out[-1500:]} {err[-2000:]}")

    requests = [json.loads(line) for line in log.read_text().splitlines()]
    after = [r["body"] for r in requests if r["method"] == "POST" and isinstance(r["body"], dict)
             and base.is_main(r["body"]) and base.answered_shell(r["body"])]
    check(f"{what}: a request follows the write", after, f"stdout: {out[-3000:]}\nstderr: {err[-1500:]}")
    if not after:
        return
    text = json.dumps(after[0].get("contents"))
    for needle in ("UNTRUSTED DATA", "api@default holds 'src/api/**' until", REASON, "mailroom send --to api@default"):
        check(f"{what}: the request after the write carries the notice ({needle})", needle in text, text[-3000:])
    if enforce:
        check("enforcing: the file is unchanged", target.read_text() == ORIGINAL, target.read_text())
        check("enforcing: the refusal is the tool's result", "The edit was refused" in text, text[-3000:])
    else:
        check("by default: the write went ahead", target.read_text() == CHANGED, target.read_text())
        check("by default: the notice says the edit went ahead", "The edit went ahead" in text, text[-3000:])
    outside = [r for r in requests if r["method"] == "CONNECT"]
    check(f"{what}: no request tried to leave the machine", not outside, outside)
    start = text.find("mailroom: file reservation notice")
    print(f"{what}, the notice as the model got it:")
    print(text[start:start + 500].encode().decode("unicode_escape", "replace") if start >= 0 else "(none)")


if __name__ == "__main__":
    main()
