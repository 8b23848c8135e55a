"""No secret at rest (issue 10, reliability): run a session with distinctive fake keys, then grep the disk.

The keys: an Anthropic key and an OpenAI key in the environment, an OpenAI key stored in a
keyring (an in-memory backend, set with `bulkhead auth set openai` through `app.cli.main`,
read from stdin; it shadows the environment one), AWS access key id + secret + session token
for Bedrock. Each provider (through `open_engine`, the way the app finds its key) runs
several turns against the lab: answers, tool reads (one big enough to spill to a file),
a 500 that is retried, a 413 from nginx that is recovered, a `/compact` (receipts), and
hooks on every event. Then sessions are exported as md, json and har.

Afterwards every byte bulkhead wrote is scanned for every key — the database and its
-wal/-shm files, every file under BULKHEAD_HOME (session folders, receipts, spill files,
transcripts, state.toml), the exports, what the hooks were sent, what the CLI printed, and
`screenshots/*.svg` when the repository has any. None may appear, whole or in part.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import keyring
import pytest
from keyring.backend import KeyringBackend

from app.cli import main as cli_main
from app.config import config_path, load_settings
from app.engine.bootstrap import open_engine
from app.engine.session import Session
from tests.reliability.conftest import MODELS, RecordedSleep

REPO = Path(__file__).resolve().parents[2]

# Each key holds a core no other text would: the scan looks for the whole key and for its core.
ANTHROPIC_ENV_KEY = "sk-ant-api03-FAKE-XYZZY-ANTHROPIC-ENV-9f3k2m1q8w7e6r5t4y3u2i1o0p-AAAA"
OPENAI_ENV_KEY = "sk-proj-FAKE-PLUGH-OPENAI-ENV-4h5j6k7l8z9x0c1v2b3n4m5q6w7e-BBBB"
OPENAI_KEYRING_KEY = "sk-proj-FAKE-FROBOZZ-OPENAI-KEYRING-1a2s3d4f5g6h7j8k9l0z-CCCC"
AWS_ACCESS_KEY_ID = "AKIAFAKEGRUEXYZZY042"
AWS_SECRET_ACCESS_KEY = "FAKEsecretGRUE/xyzzy+PlughFrobozz0123456789ab"
AWS_SESSION_TOKEN = "FwoGZXIvYXdzEFAKE-SESSION-TOKEN-ZORKMID-//////////wEaDFAKEFAKEFAKE=="
SECRETS = {
    "anthropic env key": ANTHROPIC_ENV_KEY,
    "openai env key": OPENAI_ENV_KEY,
    "openai keyring key": OPENAI_KEYRING_KEY,
    "aws access key id": AWS_ACCESS_KEY_ID,
    "aws secret": AWS_SECRET_ACCESS_KEY,
    "aws session token": AWS_SESSION_TOKEN,
}
CORES = {
    "XYZZY-ANTHROPIC-ENV",
    "PLUGH-OPENAI-ENV",
    "FROBOZZ-OPENAI-KEYRING",
    "GRUEXYZZY042",
    "GRUE/xyzzy+PlughFrobozz",
    "SESSION-TOKEN-ZORKMID",
}


class MemoryKeyring(KeyringBackend):
    """A keyring that lives in this process only."""

    priority = 1

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.items.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.items[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.items.pop((service, username), None)


def needles() -> dict[str, bytes]:
    """What to look for: each key, its core, and the key in base64 (as a Basic auth header would carry it)."""
    found: dict[str, bytes] = {}
    for name, value in SECRETS.items():
        found[name] = value.encode()
        found[f"{name} (base64)"] = base64.b64encode(value.encode())
    for core in CORES:
        found[f"core {core}"] = core.encode()
    return found


def scan(paths: list[Path], extra: dict[str, bytes]) -> list[str]:
    """`where: which secret` for every secret found in the files or the extra texts."""
    hits: list[str] = []
    wanted = needles()
    blobs = [(str(p), p.read_bytes()) for p in paths if p.is_file()] + list(extra.items())
    for where, data in blobs:
        for name, needle in wanted.items():
            if needle in data:
                at = data.index(needle)
                context = data[max(0, at - 60) : at + len(needle) + 20].decode("utf-8", "replace")
                hits.append(f"{where}: {name} … {context!r}")
    return hits


@pytest.fixture
def memory_keyring():
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)


@pytest.fixture
def secret_env(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_ENV_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_ENV_KEY)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", AWS_ACCESS_KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", AWS_SECRET_ACCESS_KEY)
    monkeypatch.setenv("AWS_SESSION_TOKEN", AWS_SESSION_TOKEN)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


HOOK_SCRIPT = """\
#!/bin/sh
# a hook that keeps what it was sent (to be scanned too) and says something (stored as its output)
cat >> "$SECRETS_HOOK_LOG"
echo >> "$SECRETS_HOOK_LOG"
echo "hook ok: $BULKHEAD_HOOK_EVENT"
"""
HOOK_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PreCompact",
    "PostCompact",
    "Stop",
    "RequestRejected",
    "SessionEnd",
)


def write_config(path: Path, lab_url: str, hook: Path) -> None:
    command = str(hook)
    hooks = "".join(
        f'\n[[hooks.{event}]]\ncommand = {json.dumps(command)}\nmatcher = "*"\n' for event in HOOK_EVENTS
    )
    path.write_text(
        f"""\
default_route = "claude"
retry_base_delay = 0.01
retry_max_delay = 0.05
request_timeout = 30

[routes.claude]
provider = "anthropic"
model = "{MODELS["anthropic"]}"
base_url = "{lab_url}"

[routes.gpt]
provider = "openai"
model = "{MODELS["openai"]}"
base_url = "{lab_url}/v1"

[routes.rock]
provider = "bedrock"
model = "{MODELS["bedrock"]}"
endpoint_url = "{lab_url}"
region = "us-east-1"
{hooks}""",
        encoding="utf-8",
    )


def run_cli(argv: list[str], capsys, stdin: str | None = None, monkeypatch=None) -> tuple[int, str]:
    if stdin is not None and monkeypatch is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = cli_main(argv)
    out = capsys.readouterr()
    return code, out.out + out.err


async def test_no_key_is_ever_written_down(
    fresh_lab, isolated_home, tmp_path, monkeypatch, capsys, memory_keyring, secret_env
):
    lab = fresh_lab
    printed: dict[str, bytes] = {}
    hook = tmp_path / "hook.sh"
    hook.write_text(HOOK_SCRIPT, encoding="utf-8")
    hook.chmod(0o755)
    hook_log = tmp_path / "hook-payloads.jsonl"
    monkeypatch.setenv("SECRETS_HOOK_LOG", str(hook_log))
    config = config_path()
    write_config(config, lab.url, hook)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("".join(f"line {i}: nothing secret here\n" for i in range(50)))
    (workspace / "big.txt").write_text(
        "".join(f"row {i:05d} of a file too big for one tool result\n" for i in range(1200))
    )

    # The keyring key, stored the way a user stores it (stdin, not a terminal).
    code, out = run_cli(
        ["auth", "set", "openai"], capsys, stdin=OPENAI_KEYRING_KEY + "\n", monkeypatch=monkeypatch
    )
    assert code == 0, out
    assert memory_keyring.get_password("bulkhead", "openai") == OPENAI_KEYRING_KEY
    printed["auth set"] = out.encode()
    code, out = run_cli(["auth", "status"], capsys)
    printed["auth status"] = out.encode()
    assert "keyring" in out

    session_ids = []
    for route_name in ("claude", "gpt", "rock"):
        settings = load_settings()
        engine, choice, _ = open_engine(settings, route_name=route_name, workspace=workspace)
        if route_name == "gpt":
            assert choice.api_key == OPENAI_KEYRING_KEY  # the keyring wins over the environment
        if route_name == "claude":
            assert choice.api_key == ANTHROPIC_ENV_KEY
        engine.sender.sleep = RecordedSleep()
        session_ids.append(engine.session.id)
        await engine.start()
        outcomes = []
        lab.configure(gateway="none", cap=None, faults=None)
        outcomes.append(await engine.submit(f"hello from {route_name}"))
        outcomes.append(await engine.submit("!read notes.txt"))
        outcomes.append(await engine.submit("!read big.txt"))  # over 20,000 chars: spilled to a file
        lab.configure(faults="500@1")
        outcomes.append(await engine.submit("this one is retried after a 500"))
        lab.configure(faults=None)
        outcomes.append(await engine.submit("!big 40KB"))
        lab.configure(gateway="nginx", cap="48KB")
        outcomes.append(await engine.submit("after the 413: " + "padding " * 2000))
        lab.configure(gateway="none", cap=None)
        await engine.compact("keep the key facts")
        outcomes.append(await engine.submit("after the compaction"))
        await engine.close()
        assert [o.outcome for o in outcomes] == ["answered"] * len(outcomes), [o.error for o in outcomes]
        rows = engine.session.store.list_requests(engine.session.id)
        assert any(r["status"] == 413 for r in rows), "a rejection was recorded"
        assert any(r["status"] == 500 for r in rows), "a retried failure was recorded"
        assert engine.session.counters.recoveries_ok >= 1
        assert engine.session.receipts_path.exists()
        assert any(
            r["request_headers"].get(name) == "[redacted]"
            for r in rows
            for name in ("x-api-key", "authorization")
        ), f"the key was sent (its header is recorded, redacted): {rows[0]['request_headers']}"
        if route_name == "rock":
            assert any(r["request_headers"].get("x-amz-security-token") == "[redacted]" for r in rows)

    spills = [p for p in isolated_home.rglob("*") if p.is_file() and p.parent.name == "spill"]
    assert spills, "the big read was spilled to a file in the session folder"

    exports = []
    for session_id in session_ids:
        for fmt in ("md", "json", "har"):
            target = tmp_path / "exports" / f"{session_id}.{fmt}"
            target.parent.mkdir(exist_ok=True)
            code, out = run_cli(
                ["sessions", "export", session_id, "--format", fmt, "-o", str(target)], capsys
            )
            assert code == 0, out
            exports.append(target)
        code, out = run_cli(["sessions", "show", session_id], capsys)
        printed[f"sessions show {session_id}"] = out.encode()
    for argv in (["sessions", "list"], ["archive", "list"], ["config", "show"]):
        code, out = run_cli(argv, capsys)
        printed[" ".join(argv)] = out.encode()

    home_files = sorted(p for p in isolated_home.rglob("*") if p.is_file())
    database = isolated_home / "bulkhead.db"
    assert database in home_files
    screenshots = sorted((REPO / "screenshots").glob("*.svg")) if (REPO / "screenshots").is_dir() else []
    scanned = home_files + exports + [hook_log] + screenshots

    hits = scan(scanned, printed)

    assert hook_log.stat().st_size > 0, "the hooks ran"
    assert all(p.stat().st_size for p in exports)
    assert any(p.name == "compaction.jsonl" for p in home_files), "receipts were written"
    assert not hits, "secrets found at rest:\n" + "\n".join(hits)
    with capsys.disabled():
        print(
            f"\nsecrets: {len(SECRETS)} fake keys, {len(scanned)} files "
            f"({sum(p.stat().st_size for p in scanned if p.is_file()):,} bytes) + {len(printed)} CLI outputs "
            f"scanned — no key found"
        )


def test_the_scan_finds_a_planted_key(tmp_path):
    """The scanner is not blind: a key planted in a file (or only its core, or its base64) is reported."""
    planted = tmp_path / "planted.bin"
    planted.write_bytes(b"\x00header " + AWS_SECRET_ACCESS_KEY.encode() + b" trailer")
    partial = tmp_path / "partial.txt"
    partial.write_text("Authorization: Bearer sk-proj-FAKE-FROBOZZ-OPENAI-KEYRING-1a2s…(66 chars)")
    encoded = tmp_path / "basic.txt"
    encoded.write_bytes(b"Basic " + base64.b64encode(ANTHROPIC_ENV_KEY.encode()))

    hits = scan([planted, partial, encoded], {"stdout": OPENAI_ENV_KEY.encode()})

    assert any("planted.bin: aws secret" in h for h in hits)
    assert any("partial.txt: core FROBOZZ-OPENAI-KEYRING" in h for h in hits)
    assert any("basic.txt: anthropic env key (base64)" in h for h in hits)
    assert any("stdout: openai env key" in h for h in hits)


# -- issue 14: secrets echoed back, `!shell env`, a password in base_url ------------------------------------
BASE_URL_PASSWORD = "FAKE-baseurl-PASS-GRUEBLEEN-7q"
PROXY_PASSWORD = "FAKE-proxy-PASS-QUENDOR-3x"
GATEWAY_KEY = "gw-FAKE-GATEWAY-KEY-ZORKMID-API-44aa55bb"  # a route's api_key_env
GITHUB_TOKEN = "ghp_FAKEFLATHEADgithubtoken0123456789abcd"  # not a provider key: the shell keeps it, redacted
ECHO_SECRETS = {
    "base_url password": BASE_URL_PASSWORD,
    "proxy password": PROXY_PASSWORD,
    "gateway key (api_key_env)": GATEWAY_KEY,
    "github token": GITHUB_TOKEN,
}
ECHO_CORES = {"GRUEBLEEN", "PASS-QUENDOR", "GATEWAY-KEY-ZORKMID", "FLATHEADgithub"}


class EchoHandler(BaseHTTPRequestHandler):
    """A gateway that quotes the credentials it received: in an error body and in `x-echo-authorization`."""

    def do_POST(self) -> None:  # http.server's naming
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        received = {
            name: self.headers.get(name) for name in ("x-api-key", "authorization") if self.headers.get(name)
        }
        quoted = "; ".join(f"{k}={v}" for k, v in received.items())
        if self.path.startswith("/v1/chat"):
            body = {
                "error": {
                    "message": f"Incorrect API key provided: {quoted}",
                    "type": "invalid_request_error",
                    "code": "invalid_api_key",
                }
            }
        else:
            body = {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": f"gateway says: bad credentials {quoted}",
                },
            }
        data = json.dumps(body).encode()
        self.send_response(400)
        self.send_header("content-type", "application/json")
        self.send_header("x-echo-authorization", quoted)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def echo_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), EchoHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def echo_needles() -> dict[str, bytes]:
    found = needles()
    for name, value in ECHO_SECRETS.items():
        found[name] = value.encode()
        found[f"{name} (base64)"] = base64.b64encode(value.encode())
    for core in ECHO_CORES:
        found[f"core {core}"] = core.encode()
    return found


def test_echoed_keys_shell_env_and_base_url_passwords_never_reach_disk_exports_or_stderr(
    fresh_lab, echo_server, isolated_home, tmp_path, monkeypatch, capsys, secret_env
):
    monkeypatch.setenv("MY_GATEWAY_API_KEY", GATEWAY_KEY)
    monkeypatch.setenv("GITHUB_TOKEN", GITHUB_TOKEN)
    monkeypatch.setenv("HTTPS_PROXY", f"http://carol:{PROXY_PASSWORD}@proxy.invalid:3128")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    monkeypatch.chdir(workspace)
    config_path().write_text(
        f"""\
default_route = "claude-echo"
retry_base_delay = 0.01
retry_max_delay = 0.05
retry_max_attempts = 0

[routes.claude-echo]
provider = "anthropic"
model = "{MODELS["anthropic"]}"
base_url = "http://alice:{BASE_URL_PASSWORD}@{echo_server}"

[routes.gpt-echo]
provider = "openai"
model = "{MODELS["openai"]}"
base_url = "http://bob:{BASE_URL_PASSWORD}@{echo_server}/v1"
api_key_env = "MY_GATEWAY_API_KEY"

[routes.claude-lab]
provider = "anthropic"
model = "{MODELS["anthropic"]}"
base_url = "{fresh_lab.url}"
""",
        encoding="utf-8",
    )
    printed: dict[str, bytes] = {}

    def cli(*argv: str) -> tuple[int, str]:
        code = cli_main(list(argv))
        out = capsys.readouterr()
        printed[" ".join(argv)] = (out.out + out.err).encode()
        return code, out.out + out.err

    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code, out = cli("-r", "claude-echo", "-p", "hello through a gateway that quotes my key")
    assert code == 1 and "bad credentials" in out, out
    code, out = cli("-r", "gpt-echo", "-p", "hello through a gateway that quotes my key")
    assert code == 1 and "rejected" in out, out
    code, out = cli("-r", "claude-lab", "--yes", "-p", "!shell env")
    assert code == 0, out
    code, out = cli("-r", "claude-lab", "--yes", "-p", "!shell echo $GITHUB_TOKEN")
    assert code == 0 and "[redacted]" in out, (
        out
    )  # the answer quotes the token: streamed in pieces, still caught
    code, out = cli("-r", "claude-lab", "--yes", "--json", "-p", "!shell echo $GITHUB_TOKEN")
    assert code == 0, out
    streamed = "".join(
        json.loads(line).get("text", "")
        for line in out.splitlines()
        if line.startswith("{") and json.loads(line).get("type") == "text"
    )
    printed["--json text events joined"] = streamed.encode()

    from app.store import Store

    store = Store()
    sessions = [row["id"] for row in store.list_sessions()]
    assert len(sessions) == 5
    rows = [r for s in sessions for r in store.list_requests(s)]
    echoed = [r for r in rows if r["status"] == 400]
    assert len(echoed) == 2 and all("[redacted]" in r["error_body"] for r in echoed), echoed
    assert all(r["response_headers"].get("x-echo-authorization", "").count("[redacted]") for r in echoed)
    env_result = next(
        m
        for s in sessions
        for m in Session.load(store, s).master
        if m.role == "tool" and "PATH=" in m.all_text()
    ).all_text()
    for name in (
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "MY_GATEWAY_API_KEY",
    ):
        assert f"{name}=" not in env_result, f"the shell saw {name}"
    assert "GITHUB_TOKEN=[redacted]" in env_result  # kept for gh & co, but its value never stored
    assert "HTTPS_PROXY=http://carol:[redacted]@proxy.invalid:3128" in env_result
    store.close()

    exports = []
    for session_id in sessions:
        for fmt in ("md", "json", "har"):
            target = tmp_path / "exports" / f"{session_id}.{fmt}"
            target.parent.mkdir(exist_ok=True)
            code, out = cli("sessions", "export", session_id, "--format", fmt, "-o", str(target))
            assert code == 0, out
            exports.append(target)
        cli("sessions", "show", session_id)
    for argv in (("sessions", "list"), ("config", "show"), ("config", "check")):
        cli(*argv)
    assert "http://alice:***@" in printed["config show"].decode()

    scanned = sorted(p for p in isolated_home.rglob("*") if p.is_file()) + exports
    wanted = echo_needles()
    hits = []
    for where, data in [(str(p), p.read_bytes()) for p in scanned] + list(printed.items()):
        hits += [f"{where}: {name}" for name, needle in wanted.items() if needle in data]
    assert not hits, "secrets found:\n" + "\n".join(hits)
    with capsys.disabled():
        print(
            f"\nsecrets (echo, shell env, base_url): {len(wanted)} needles, {len(scanned)} files "
            f"+ {len(printed)} CLI outputs scanned — none found"
        )


# -- issue 37: evidence cut through a key, MCP logs and dialogs, the TUI's live text -------------------------
class CutHandler(BaseHTTPRequestHandler):
    """A gateway whose 400 quotes the key just where the evidence is cut (80 characters in)."""

    def do_POST(self) -> None:  # http.server's naming
        self.rfile.read(int(self.headers.get("content-length") or 0))
        said = f"upstream refused {'x' * 40} {ANTHROPIC_ENV_KEY} for this request"
        data = json.dumps(
            {"type": "error", "error": {"type": "invalid_request_error", "message": said}}
        ).encode()
        self.send_response(400)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


MCP_TOKEN = "ghp_FAKEmcpTOKENsyzygy0123456789abcdefgh"


async def test_evidence_mcp_logs_and_dialogs_and_the_live_screen_hold_no_key(
    fresh_lab, isolated_home, tmp_path, monkeypatch, capsys, secret_env
):
    from textual.geometry import Region

    from app.ui.app import BulkheadApp
    from app.ui.headless import ready, settle, until
    from app.ui.screens.mcp_trust import McpTrustScreen
    from tests.mcp.conftest import DEMO

    pytest.importorskip("mcp", reason="the mcp SDK is not installed")
    server = ThreadingHTTPServer(("127.0.0.1", 0), CutHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("GITHUB_TOKEN", MCP_TOKEN)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "gh": {
                        "command": sys.executable,
                        "args": [str(DEMO), "--say-args", "--token", "${GITHUB_TOKEN}"],
                    }
                }
            }
        )
    )
    monkeypatch.chdir(workspace)
    config_path().write_text(
        f"""\
default_route = "lab"
retry_max_attempts = 0

[routes.cut]
provider = "anthropic"
model = "{MODELS["anthropic"]}"
base_url = "http://127.0.0.1:{server.server_address[1]}"

[routes.lab]
provider = "anthropic"
model = "{MODELS["anthropic"]}"
base_url = "{fresh_lab.url}"
""",
        encoding="utf-8",
    )
    printed: dict[str, bytes] = {}
    seen: dict[str, bytes] = {}

    def run(*argv: str) -> tuple[int, str]:
        code = cli_main(list(argv))
        out = capsys.readouterr()
        printed[" ".join(argv)] = (out.out + out.err).encode()
        return code, out.out + out.err

    async def cli(*argv: str) -> tuple[int, str]:  # the CLI runs its own event loop: in a thread of its own
        return await asyncio.to_thread(run, *argv)

    def rendered(app) -> str:
        parts = []
        for widget in app.screen.walk_children(with_self=True):
            if widget.display and widget.size.area:
                for strip in widget.render_lines(Region(0, 0, widget.size.width, widget.size.height)):
                    parts.append("".join(text for text, _style, control in strip if not control) + "\n")
        return "".join(parts)

    try:
        monkeypatch.setattr(sys, "stdin", io.StringIO(""))
        code, out = await cli(
            "-r", "cut", "--json", "-p", "hello through a gateway that quotes my key at the cut"
        )
        assert code == 1, out
        assert (await cli("mcp", "approve"))[0] == 0
        code, out = await cli("mcp", "list")
        assert "${GITHUB_TOKEN}" in out, out
        code, out = await cli("-r", "lab", "-p", "hello with an MCP server that echoes its arguments")
        assert code == 0, out

        # the TUI: the .mcp.json question (reset, so it is asked), then a key streamed back by the model
        await cli("mcp", "reset")
        settings = load_settings().with_overrides(workspace=str(workspace), approval="never-ask")
        app = BulkheadApp(settings, workspace=workspace, keymap={}, cursor_blink=False)
        async with app.run_test(size=(160, 50)) as pilot:
            await ready(pilot)
            await until(pilot, lambda: isinstance(app.screen, McpTrustScreen), "the .mcp.json question")
            seen["the .mcp.json question"] = (rendered(app) + app.export_screenshot()).encode()
            await pilot.press("n")
            app.prompt.set_text(f"!echo the key is {OPENAI_ENV_KEY} and the token {MCP_TOKEN}")
            await pilot.press("enter")
            await until(pilot, lambda: bool(app.chat.answers()), "the answer")
            seen["the streaming answer"] = (rendered(app) + app.export_screenshot()).encode()
            await settle(pilot)
            seen["the chat after the answer"] = (rendered(app) + app.export_screenshot()).encode()
            answer = app.chat.answers()[-1].raw
            assert "the key is [redacted] and the token [redacted]" in answer, answer
            for name in ("requests", "hooks"):
                app.inspector.show_panel(name)
                await pilot.pause()
                seen[f"the {name} panel"] = (rendered(app) + app.export_screenshot()).encode()
            await app.action_quit()
    finally:
        server.shutdown()
        server.server_close()

    from app.store import Store

    store = Store()
    cut_rows = [
        r for s in store.list_sessions() for r in store.list_requests(s["id"]) if r.get("status") == 400
    ]
    assert cut_rows and any("[redacted]" in " ".join(r.get("evidence") or []) for r in cut_rows), cut_rows
    exports = []
    for row in store.list_sessions():
        for fmt in ("json", "har", "md"):
            target = tmp_path / "exports" / f"{row['id']}.{fmt}"
            target.parent.mkdir(exist_ok=True)
            assert (await cli("sessions", "export", row["id"], "--format", fmt, "-o", str(target)))[0] == 0
            exports.append(target)
    store.close()
    logs = [p for p in isolated_home.rglob("*.stderr.log*")]
    assert logs and any(b"--say-args --token [redacted]" in p.read_bytes() for p in logs), logs

    wanted = needles() | {"mcp token": MCP_TOKEN.encode(), "core mcpTOKENsyzygy": b"mcpTOKENsyzygy"}
    scanned = sorted(p for p in isolated_home.rglob("*") if p.is_file()) + exports
    hits = []
    for where, data in (
        [(str(p), p.read_bytes()) for p in scanned] + list(printed.items()) + list(seen.items())
    ):
        hits += [
            f"{where}: {name} … {data[max(0, data.index(needle) - 80) : data.index(needle) + 20]!r}"
            for name, needle in wanted.items()
            if needle in data
        ]
    assert not hits, "secrets found:\n" + "\n".join(hits)
    with capsys.disabled():
        print(
            f"\nsecrets (evidence at a cut, MCP logs and question, the TUI's live text): {len(wanted)} needles, "
            f"{len(scanned)} files + {len(printed)} CLI outputs + {len(seen)} screens scanned — none found"
        )
