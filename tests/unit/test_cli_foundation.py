"""The foundation's sub-commands: config init|path|show|check, sessions list|show|export, archive list|search|show."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli import main
from app.config import example_config_path
from app.engine.session import Session
from app.model.archive import make_entry, marker
from app.model.messages import Image, Message, Text, ToolCall, ToolResult
from app.store import Store
from app.textsafe import display

REPO = Path(__file__).resolve().parents[2]
FAKE_KEY = "sk-ant-api03-TESTONLYfakeKEYfakeKEY0123456789"


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --- config -----------------------------------------------------------------------------------------


def test_config_init_writes_the_example_and_refuses_to_overwrite(tmp_path, capsys):
    target = tmp_path / "config.toml"
    code, out, err = run_cli(capsys, "config", "init")
    assert code == 0 and str(target) in out
    assert target.read_bytes() == example_config_path().read_bytes()
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600

    target.write_text("# mine\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "config", "init")
    assert code != 0 and "already exists" in err and err.startswith("bulkhead:")
    assert target.read_text(encoding="utf-8") == "# mine\n"


def test_config_init_creates_the_folder(tmp_path, monkeypatch, capsys):
    target = tmp_path / "deep" / "er" / "config.toml"
    monkeypatch.setenv("BULKHEAD_CONFIG", str(target))
    assert run_cli(capsys, "config", "init")[0] == 0
    assert target.exists()


def test_config_path(tmp_path, isolated_home, capsys):
    code, out, _ = run_cli(capsys, "config", "path")
    assert code == 0
    assert f"config   {tmp_path / 'config.toml'}" in out and "config init" in out
    assert f"state    {isolated_home / 'state.toml'}" in out
    assert f"database {isolated_home / 'bulkhead.db'}" in out
    assert f"sessions {isolated_home / 'sessions'}" in out
    (tmp_path / "config.toml").write_text("# mine\n", encoding="utf-8")
    assert "config init" not in run_cli(capsys, "config", "path")[1]


def test_config_show_marks_each_source(tmp_path, monkeypatch, capsys):
    path = tmp_path / "config.toml"
    path.write_text(
        'default_route = "work"\nmax_recovery_attempts = 5\n\n[routes.work]\nprovider = "lab"\n'
        'max_payload = "128KB"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("BULKHEAD_COMPACT_THRESHOLD", "0.7")
    code, out, _ = run_cli(capsys, "--approval", "ask", "config", "show")
    assert code == 0
    lines = {
        line.split()[0]: line for line in out.splitlines() if line and not line.startswith(("#", "[", " "))
    }
    assert lines["max_recovery_attempts"].endswith(f"[{path}:2]") and " 5 " in lines["max_recovery_attempts"]
    assert lines["compact_threshold"].endswith("[env BULKHEAD_COMPACT_THRESHOLD]")
    assert lines["approval"].endswith("[flag]") and " ask " in lines["approval"]
    assert lines["max_output_tokens"].endswith("[default]")
    assert "[routes.work] (default)" in out and "max_payload = 128.0 KB" in out
    assert f"# config file: {path}" in out


def test_config_show_size_flag(capsys):
    code, out, _ = run_cli(capsys, "--max-payload", "2.5MB", "config", "show")
    line = next(line for line in out.splitlines() if line.startswith("max_payload"))
    assert code == 0 and "2.5 MB (2621440 bytes)" in line and line.endswith("[flag]")


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("# ok\nmax_payload = = 1\n", 2),
        ('theme = "x"\nmax_payload = "5XB"\n', 2),
        ('\n\n[routes.work]\nprovider = "azure"\nmodel = "m"\n', 4),
        ('[[hooks.Stopp]]\ncommand = "x"\n', 1),
    ],
)
def test_broken_config_is_one_line_on_stderr(tmp_path, capsys, text, line):
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    code, out, err = run_cli(capsys, "config", "show")
    assert code == 2 and out == ""
    assert err.startswith(f"bulkhead: {path}:{line}") and err.count("\n") == 1
    assert "Traceback" not in err


def test_broken_config_through_a_real_process(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("max_payload = [\n", encoding="utf-8")
    env = {**os.environ, "BULKHEAD_CONFIG": str(path)}
    result = subprocess.run(
        [sys.executable, "-m", "app", "config", "show"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(f"bulkhead: {path}:") and result.stderr.count("\n") == 1


def test_bad_env_through_the_cli(monkeypatch, capsys):
    monkeypatch.setenv("BULKHEAD_MAX_PAYLOAD", "lots")
    code, _, err = run_cli(capsys, "config", "show")
    assert code == 2 and "BULKHEAD_MAX_PAYLOAD" in err and "'lots'" in err


def test_config_check_says_what_to_run(tmp_path, capsys):
    (tmp_path / "config.toml").write_text(
        'default_route = "work"\n[routes.work]\nprovider = "anthropic"\nmodel = "claude-sonnet-4-5"\n'
        '[routes.local]\nprovider = "openai"\nmodel = "qwen"\nbase_url = "http://localhost:11434/v1"\n'
        '[routes.aws]\nprovider = "bedrock"\nmodel = "m"\nregion = "eu-west-1"\n'
        '[routes.lab]\nprovider = "lab"\n',
        encoding="utf-8",
    )
    code, out, _ = run_cli(capsys, "config", "check")
    assert code == 1
    assert "✖ routes.work" in out and "bulkhead auth set anthropic" in out and "ANTHROPIC_API_KEY" in out
    assert "✓ routes.local: local endpoint" in out and "region eu-west-1" in out and "✓ routes.lab" in out


def test_config_check_passes_with_a_key_and_never_prints_it(tmp_path, monkeypatch, capsys):
    (tmp_path / "config.toml").write_text(
        '[routes.work]\nprovider = "anthropic"\nmodel = "m"\n', encoding="utf-8"
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    code, out, err = run_cli(capsys, "config", "check")
    assert code == 0 and "key from env ANTHROPIC_API_KEY" in out
    assert FAKE_KEY not in out + err


def test_config_check_shows_the_proxy_and_ca_bundle_without_the_password(tmp_path, monkeypatch, capsys):
    bundle = tmp_path / "corp-ca.pem"
    bundle.write_text("-----BEGIN CERTIFICATE-----\n", encoding="utf-8")
    monkeypatch.setenv("HTTPS_PROXY", "http://alice:s3cret-pass@proxy.corp:8080")
    monkeypatch.setenv("no_proxy", "localhost,.corp")
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    code, out, err = run_cli(capsys, "config", "check")
    assert code == 0
    assert "• network: HTTPS_PROXY=http://alice:***@proxy.corp:8080" in out
    assert "• network: NO_PROXY=localhost,.corp" in out
    assert f"• network: SSL_CERT_FILE={bundle} (trusted by Anthropic, OpenAI)" in out
    assert "s3cret-pass" not in out + err


def test_config_check_flags_a_missing_ca_bundle(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("AWS_CA_BUNDLE", str(tmp_path / "gone.pem"))
    code, out, _ = run_cli(capsys, "config", "check")
    assert code == 1
    assert (
        f"✖ network: AWS_CA_BUNDLE={tmp_path / 'gone.pem'}: no such file — Bedrock requests will fail TLS"
        in out
    )


def test_config_check_reports_a_broken_file(tmp_path, capsys):
    path = tmp_path / "config.toml"
    path.write_text("approval = 'sometimes'\n", encoding="utf-8")
    code, out, _ = run_cli(capsys, "config", "check")
    assert code == 2 and f"{path}:1" in out and "'sometimes'" in out


def test_config_check_without_a_file(capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("BULKHEAD_CONFIG")  # the default place, which may not exist: every default
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    code, out, _ = run_cli(capsys, "config", "check")
    assert code == 0 and "no config file" in out


# --- sessions ------------------------------------------------------------------------------------------


@pytest.fixture
def saved_session(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    store = Store()
    session = Session.create(store, route="work", provider="anthropic", model="claude-sonnet-4-5")
    session.append(Message.create("user", "Read the parser 日本 🧪", turn=1))
    session.append(
        Message.create("assistant", [Text("Reading."), ToolCall("c1", "read_file", {"path": "p.py"})], turn=1)
    )
    session.append(Message.create("tool", [ToolResult("c1", "def parse():\n    ```x```\n")], turn=1))
    session.append(Message.create("user", [Text("and this?"), Image("image/png", "aGVsbG8=")], turn=2))
    session.append(Message.create("assistant", "cut sho", turn=2, partial=True))
    store.record_request(
        {
            "id": "r1",
            "session_id": session.id,
            "created_at": 1.0,
            "route": "work",
            "provider": "anthropic",
            "status": 413,
            "kind": "payload_too_large",
            "request_headers": {
                "x-api-key": FAKE_KEY,
                "authorization": f"Bearer {FAKE_KEY}",
                "content-type": "application/json",
            },
            "response_headers": {"server": "nginx"},
        }
    )
    yield session
    store.close()


def test_sessions_list(saved_session, capsys):
    code, out, _ = run_cli(capsys, "sessions", "list")
    assert code == 0 and saved_session.id in out and "5 msgs" in out and "Read the parser" in out


def test_sessions_list_empty(capsys):
    code, out, _ = run_cli(capsys, "sessions", "list")
    assert code == 0 and "no sessions yet" in out


def test_sessions_show(saved_session, capsys):
    code, out, _ = run_cli(capsys, "sessions", "show", saved_session.id[:-3])
    assert code == 0
    assert "# Read the parser 日本 🧪" in out and "**tool call** `read_file`" in out
    assert "````" in out  # a result holding ``` gets a longer fence
    assert "_(partial" in out and "image image/png" in out


def test_sessions_show_unknown(capsys):
    code, _, err = run_cli(capsys, "sessions", "show", "s_nope")
    assert code == 1 and err.startswith("bulkhead: no session")


def test_sessions_export_md(saved_session, tmp_path, capsys):
    code, out, _ = run_cli(capsys, "sessions", "export", saved_session.id, "--format", "md")
    assert code == 0 and out.startswith("# Read the parser") and FAKE_KEY not in out
    target = tmp_path / "out.md"
    code, out, err = run_cli(capsys, "sessions", "export", saved_session.id, "-o", str(target))
    assert code == 0 and out == "" and str(target) in err
    assert target.read_text(encoding="utf-8").startswith("# Read the parser")


def test_sessions_export_to_an_unwritable_place(saved_session, tmp_path, capsys):
    code, out, err = run_cli(
        capsys, "sessions", "export", saved_session.id, "-o", str(tmp_path / "no" / "x.md")
    )
    assert code == 1 and out == "" and err.startswith("bulkhead: cannot write") and "Traceback" not in err


def test_sessions_export_json_holds_no_secret(saved_session, capsys):
    code, out, err = run_cli(capsys, "sessions", "export", saved_session.id, "--format", "json")
    assert code == 0
    assert FAKE_KEY not in out + err and FAKE_KEY[10:30] not in out
    data = json.loads(out)
    assert data["id"] == saved_session.id
    assert [Message.from_dict(m) for m in data["messages"]] == saved_session.master
    assert data["view"] == [m.id for m in saved_session.view.messages]
    assert data["requests"][0]["status"] == 413
    assert data["requests"][0]["request_headers"]["x-api-key"] == "[redacted]"
    assert data["requests"][0]["request_headers"]["content-type"] == "application/json"


def test_json_export_redacts_records_stored_before_redaction(saved_session, capsys):
    """A database written by an older bulkhead may hold a raw header: the export still hides it."""
    saved_session.store.query(
        "UPDATE requests SET request_headers = ?", (json.dumps({"X-Api-Key": FAKE_KEY}),)
    )
    code, out, _ = run_cli(capsys, "sessions", "export", saved_session.id, "--format", "json")
    assert code == 0 and FAKE_KEY not in out


# --- archive ----------------------------------------------------------------------------------------------

EXACT = "line one\r\nline two\ttabbed  \n\n日本語 🧪 \u200f עברית\x1b[0m\nno newline at the end  "


@pytest.fixture
def archived():
    store = Store()
    session = Session.create(store)
    entries = [
        make_entry(EXACT, "microcompact"),
        make_entry("the nginx gateway said 413", "L2"),
        make_entry("cloudflare cf-ray block page", "recovery"),
    ]
    session.archive(entries)
    yield entries
    store.close()


def test_archive_list(archived, capsys):
    code, out, _ = run_cli(capsys, "archive", "list")
    assert code == 0 and all(e.key in out for e in archived) and len(out.splitlines()) == 3


def test_archive_list_empty(capsys):
    code, out, _ = run_cli(capsys, "archive", "list")
    assert code == 0 and "nothing archived yet" in out


def test_archive_search(archived, capsys):
    code, out, _ = run_cli(capsys, "archive", "search", "gate 41")
    assert code == 0 and archived[1].key in out and archived[0].key not in out
    code, out, _ = run_cli(capsys, "archive", "search", 'cf-ray "(*')
    assert code == 0
    code, out, _ = run_cli(capsys, "archive", "search", "zebra")
    assert code == 0 and "no archived segment matches 'zebra'" in out


def test_archive_show_raw_is_byte_for_byte(archived):
    key = archived[0].key
    for encoding in ("utf-8", "latin-1", "ascii"):
        env = {**os.environ, "PYTHONIOENCODING": encoding}
        for spelling in (key, marker(key), f"@recall ccr:{key.upper()}"):
            result = subprocess.run(
                [sys.executable, "-m", "app", "archive", "show", spelling, "--raw"],
                capture_output=True,
                env=env,
                cwd=REPO,
                timeout=120,
            )
            assert result.returncode == 0, result.stderr
            assert result.stdout == EXACT.encode("utf-8")


def test_archive_show_escapes_what_a_terminal_would_interpret(archived):
    result = subprocess.run(
        [sys.executable, "-m", "app", "archive", "show", archived[0].key],
        capture_output=True,
        env={**os.environ, "PYTHONIOENCODING": "ascii"},
        cwd=REPO,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == display(EXACT).encode("utf-8")
    assert b"\x1b" not in result.stdout and b"\\x1b[0m" in result.stdout


def test_archive_show_in_process(archived, capsysbinary):
    assert main(["archive", "show", archived[1].key]) == 0
    assert capsysbinary.readouterr().out == b"the nginx gateway said 413"


def test_archive_show_bad_key(capsys):
    code, out, err = run_cli(capsys, "archive", "show", "not-a-key")
    assert code == 2 and out == ""
    assert err.startswith("bulkhead: 'not-a-key' is not an archive key") and err.count("\n") == 1


def test_archive_show_unknown_key(capsys):
    code, out, err = run_cli(capsys, "archive", "show", "0123456789abcdef")
    assert code == 1 and out == "" and "no archived segment 0123456789abcdef" in err
