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

import base64
import io
import json
import sys
from pathlib import Path

import keyring
import pytest
from keyring.backend import KeyringBackend

from app.cli import main as cli_main
from app.config import config_path, load_settings
from app.engine.bootstrap import open_engine
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
    "anthropic env key": ANTHROPIC_ENV_KEY, "openai env key": OPENAI_ENV_KEY,
    "openai keyring key": OPENAI_KEYRING_KEY, "aws access key id": AWS_ACCESS_KEY_ID,
    "aws secret": AWS_SECRET_ACCESS_KEY, "aws session token": AWS_SESSION_TOKEN,
}
CORES = {"XYZZY-ANTHROPIC-ENV", "PLUGH-OPENAI-ENV", "FROBOZZ-OPENAI-KEYRING", "GRUEXYZZY042",
         "GRUE/xyzzy+PlughFrobozz", "SESSION-TOKEN-ZORKMID"}


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
                context = data[max(0, at - 60):at + len(needle) + 20].decode("utf-8", "replace")
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
HOOK_EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure", "PreCompact",
               "PostCompact", "Stop", "RequestRejected", "SessionEnd")


def write_config(path: Path, lab_url: str, hook: Path) -> None:
    command = str(hook)
    hooks = "".join(f'\n[[hooks.{event}]]\ncommand = {json.dumps(command)}\nmatcher = "*"\n' for event in HOOK_EVENTS)
    path.write_text(f"""\
default_route = "claude"
retry_base_delay = 0.01
retry_max_delay = 0.05
request_timeout = 30

[routes.claude]
provider = "anthropic"
model = "{MODELS['anthropic']}"
base_url = "{lab_url}"

[routes.gpt]
provider = "openai"
model = "{MODELS['openai']}"
base_url = "{lab_url}/v1"

[routes.rock]
provider = "bedrock"
model = "{MODELS['bedrock']}"
endpoint_url = "{lab_url}"
region = "us-east-1"
{hooks}""", encoding="utf-8")


def run_cli(argv: list[str], capsys, stdin: str | None = None, monkeypatch=None) -> tuple[int, str]:
    if stdin is not None and monkeypatch is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = cli_main(argv)
    out = capsys.readouterr()
    return code, out.out + out.err


async def test_no_key_is_ever_written_down(fresh_lab, isolated_home, tmp_path, monkeypatch, capsys, memory_keyring,
                                           secret_env):
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
    (workspace / "big.txt").write_text("".join(f"row {i:05d} of a file too big for one tool result\n"
                                               for i in range(1200)))

    # The keyring key, stored the way a user stores it (stdin, not a terminal).
    code, out = run_cli(["auth", "set", "openai"], capsys, stdin=OPENAI_KEYRING_KEY + "\n", monkeypatch=monkeypatch)
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
        assert any(r["request_headers"].get(name) == "[redacted]" for r in rows
                   for name in ("x-api-key", "authorization")), \
            f"the key was sent (its header is recorded, redacted): {rows[0]['request_headers']}"
        if route_name == "rock":
            assert any(r["request_headers"].get("x-amz-security-token") == "[redacted]" for r in rows)

    spills = [p for p in isolated_home.rglob("*") if p.is_file() and p.parent.name == "spill"]
    assert spills, "the big read was spilled to a file in the session folder"

    exports = []
    for session_id in session_ids:
        for fmt in ("md", "json", "har"):
            target = tmp_path / "exports" / f"{session_id}.{fmt}"
            target.parent.mkdir(exist_ok=True)
            code, out = run_cli(["sessions", "export", session_id, "--format", fmt, "-o", str(target)], capsys)
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
        print(f"\nsecrets: {len(SECRETS)} fake keys, {len(scanned)} files "
              f"({sum(p.stat().st_size for p in scanned if p.is_file()):,} bytes) + {len(printed)} CLI outputs "
              f"scanned — no key found")


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
