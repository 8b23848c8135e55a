"""state.toml: learned caps per endpoint and preferences — atomic, locked, never touching config.toml."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tomllib
from datetime import UTC, datetime
from pathlib import Path

from app.state import LearnedCap, State, state_path

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
ENDPOINT = "anthropic https://llm-gateway.example.com/anthropic"


def test_state_lives_in_data_home(isolated_home):
    assert state_path() == isolated_home / "state.toml"
    assert State().path == isolated_home / "state.toml"


def test_empty_state():
    state = State()
    assert state.read() == {}
    assert state.learned_cap(ENDPOINT) is None
    assert state.get("theme", "dflt") == "dflt"
    assert not state.path.exists()


def test_learn_cap_round_trip_and_tightens_only():
    state = State()
    first = state.learn_cap(
        ENDPOINT, 96_000, rejected_bytes=128_000, kind="payload_too_large", reason="413 from nginx", now=NOW
    )
    assert first == LearnedCap(96_000, 128_000, "2026-01-02T03:04:05Z", "payload_too_large", "413 from nginx")
    assert State().learned_cap(ENDPOINT) == first

    # A looser cap is ignored: the known one comes back.
    assert state.learn_cap(ENDPOINT, 200_000, rejected_bytes=None, kind="waf_block", reason="403") == first
    assert State().learned_cap(ENDPOINT) == first

    tighter = state.learn_cap(ENDPOINT, 50_000, rejected_bytes=None, kind="waf_block", reason="403", now=NOW)
    assert tighter.cap_bytes == 50_000 and tighter.rejected_bytes is None
    assert State().learned_cap(ENDPOINT) == tighter

    # Endpoints are independent.
    other = state.learn_cap(
        "openai default", 1_000_000, rejected_bytes=1_333_334, kind="x", reason="y", now=NOW
    )
    assert State().learned_cap("openai default") == other
    assert State().learned_cap(ENDPOINT) == tighter

    assert state.forget_cap(ENDPOINT) is True
    assert state.learned_cap(ENDPOINT) is None
    assert state.forget_cap(ENDPOINT) is False
    assert state.learned_cap("openai default") == other


def test_preferences_round_trip():
    state = State()
    state.set("theme", "nord")
    state.set("last_route", "work")
    state.set("theme", "gruvbox")
    assert State().get("theme") == "gruvbox"
    assert State().get("last_route") == "work"
    state.learn_cap(ENDPOINT, 1000, rejected_bytes=None, kind="k", reason="r", now=NOW)
    assert State().get("theme") == "gruvbox"  # caps and prefs live side by side
    state.set("theme", None)  # clearing a preference removes it (TOML has no null)
    assert State().get("theme", "unset") == "unset"


def test_state_never_touches_config_toml(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('# mine\ndefault_route = "work"\n[routes.work]\nprovider = "lab"\n', encoding="utf-8")
    os.utime(config, ns=(1_000_000_000, 1_000_000_000))
    before = (config.read_bytes(), os.stat(config).st_mtime_ns)

    state = State()
    state.learn_cap(ENDPOINT, 1234, rejected_bytes=2000, kind="payload_too_large", reason="413")
    state.set("theme", "nord")
    state.forget_cap(ENDPOINT)
    from app.config import load_settings

    load_settings()
    assert (config.read_bytes(), os.stat(config).st_mtime_ns) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["config.toml"]


def test_file_modes(isolated_home):
    State().set("theme", "nord")
    assert stat.S_IMODE(os.stat(state_path()).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(isolated_home).st_mode) == 0o700
    for lock in isolated_home.glob("*.lock"):
        assert stat.S_IMODE(os.stat(lock).st_mode) == 0o600
    # no temp files left behind
    assert sorted(p.name for p in isolated_home.iterdir() if p.suffix == ".toml") == ["state.toml"]


def test_damaged_state_is_set_aside(isolated_home):
    isolated_home.mkdir(parents=True)
    path = state_path()
    path.write_bytes(b"caps = [[[ not toml\n")
    state = State()
    assert state.learned_cap(ENDPOINT) is None
    assert (isolated_home / "state.toml.damaged").read_bytes() == b"caps = [[[ not toml\n"
    state.learn_cap(ENDPOINT, 1000, rejected_bytes=None, kind="k", reason="r", now=NOW)
    assert tomllib.loads(path.read_text(encoding="utf-8"))["caps"][ENDPOINT]["cap_bytes"] == 1000


def test_damaged_binary_state_is_set_aside(isolated_home):
    isolated_home.mkdir(parents=True)
    state_path().write_bytes(b"\xff\xfe\x00garbage")
    assert State().get("theme") is None
    State().set("theme", "nord")
    assert State().get("theme") == "nord"


def test_state_with_wrong_shapes_is_not_fatal(isolated_home):
    isolated_home.mkdir(parents=True)
    state_path().write_text('caps = 5\ntheme = "nord"\n', encoding="utf-8")
    state = State()
    assert state.learned_cap(ENDPOINT) is None
    assert state.forget_cap(ENDPOINT) is False
    learned = state.learn_cap(ENDPOINT, 1000, rejected_bytes=None, kind="k", reason="r", now=NOW)
    assert State().learned_cap(ENDPOINT) == learned
    assert State().get("theme") == "nord"

    state_path().write_text('[caps."anthropic default"]\nwhat = 1\n', encoding="utf-8")
    assert State().learned_cap("anthropic default") is None
    assert (
        State().learn_cap("anthropic default", 10, rejected_bytes=None, kind="k", reason="r").cap_bytes == 10
    )


_WORKER = """
import sys
from app.state import State
endpoint, start, step, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
sys.stdin.readline()  # start together
state = State()
for i in range(count):
    state.learn_cap(endpoint, start - i * step, rejected_bytes=None, kind="payload_too_large", reason="race")
    state.set("last_writer_" + sys.argv[5], i)
print("done", flush=True)
"""


def test_concurrent_learn_cap_keeps_the_tighter_cap(isolated_home):
    env = dict(os.environ)
    count = 40
    # Two processes race: one walks down from 1,000,000 in steps of 7, the other from 999,999 in steps of 11.
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, ENDPOINT, str(start), str(step), str(count), tag],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        for start, step, tag in ((1_000_000, 7, "a"), (999_999, 11, "b"))
    ]
    for proc in procs:
        proc.stdin.write("go\n")
        proc.stdin.flush()
    for proc in procs:
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0 and out.strip() == "done"
    data = tomllib.loads(state_path().read_text(encoding="utf-8"))  # a valid file
    expected = min(1_000_000 - (count - 1) * 7, 999_999 - (count - 1) * 11)
    assert data["caps"][ENDPOINT]["cap_bytes"] == expected
    # Neither process lost the other's preference writes.
    assert data["last_writer_a"] == count - 1 and data["last_writer_b"] == count - 1
    assert stat.S_IMODE(os.stat(state_path()).st_mode) == 0o600


def test_explicit_path(tmp_path):
    path = Path(tmp_path / "elsewhere" / "s.toml")
    state = State(path)
    state.set("theme", "x")
    assert path.exists() and State(path).get("theme") == "x"


def test_a_good_file_written_meanwhile_is_not_set_aside(isolated_home, monkeypatch):
    """Reader saw a damaged file; before it sets it aside, another process writes a good one."""
    isolated_home.mkdir(parents=True)
    path = state_path()
    path.write_text("broken = [\n", encoding="utf-8")
    real_loads = tomllib.loads
    raced = []

    def loads_then_other_process_writes(text):
        try:
            return real_loads(text)
        finally:
            if not raced:  # the other process: replaces the file with a good one
                raced.append(True)
                path.with_name("other.toml").write_text('theme = "nord"\n', encoding="utf-8")
                os.replace(path.with_name("other.toml"), path)

    with monkeypatch.context() as patch:
        patch.setattr("app.state.tomllib.loads", loads_then_other_process_writes)
        assert State().read() == {}
    assert raced and State().get("theme") == "nord"
    assert not path.with_suffix(".toml.damaged").exists()


def test_unreadable_state_is_not_fatal(isolated_home):
    state_path().mkdir(parents=True)  # a folder where the file should be
    assert State().get("theme") is None
    assert State().learned_cap(ENDPOINT) is None


# -- the upgrade to state version 2 (issue 15 item 2) --------------------------------------------------
OLD_STATE = """\
last_route = "work"

[caps."openai https://gw.example.com/v1"]
cap_bytes = 4701
rejected_bytes = 6268
learned_at = "2026-11-20T10:00:00Z"
kind = "payload_too_large"
reason = "Request body too large: 431 Request Header Fields Too Large"

[caps."anthropic https://llm.corp.example"]
cap_bytes = 96000
rejected_bytes = 128000
learned_at = "2026-11-20T10:00:00Z"
kind = "payload_too_large"
reason = "Request body too large (nginx): 413 Payload Too Large (HTML page)"
"""


def test_caps_learned_from_a_431_do_not_survive_the_upgrade(tmp_path):
    from app.state import STATE_VERSION, State

    path = tmp_path / "state.toml"
    path.write_text(OLD_STATE)
    state = State(path)
    assert state.learned_cap("openai https://gw.example.com/v1") is None  # gone at once, even before a write
    assert state.learned_cap("anthropic https://llm.corp.example").cap_bytes == 96000  # a real 413 stays

    assert state.migrate() is True
    text = path.read_text()
    assert "431" not in text and "gw.example.com" not in text and f"version = {STATE_VERSION}" in text
    assert 'last_route = "work"' in text
    assert state.migrate() is False  # idempotent


def test_content_blocks_kept_apart_move_into_the_endpoints_profile(tmp_path):
    """state.toml version 3: the `[content_blocks]` table an early bulkhead wrote becomes the profile's
    one record of content blocks (what `bulkhead gateway show` and the Payload panel show)."""
    from app.gateway_profile import load_profile
    from app.state import State

    path = tmp_path / "state.toml"
    path.write_text(
        'version = 2\n[content_blocks."anthropic http://gw"]\nseen_at = "2026-12-02T10:00:00Z"\nstatus = 403\n'
        'gateway = ""\nincident_id = "reference 18.2d35"\nrejected_bytes = 4600\n'
    )
    state = State(path)
    assert state.migrate() is True
    assert "[content_blocks" not in path.read_text()
    (block,) = load_profile(state, "anthropic http://gw").learned.content_blocks
    assert block["status"] == 403 and block["incident_id"] == "reference 18.2d35" and block["count"] == 1
    assert block["at"] == "2026-12-02T10:00:00Z" and "gateway" not in block
