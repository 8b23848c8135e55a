"""Issue 38 item 10: `bulkhead gateway export | bulkhead gateway import -` on a second home, the imported
profile shown with its source; an imported cap is a starting point (evidence tightens it, a file never
loosens it without --loosen); a workspace's .bulkhead/gateways.toml is read on trust, asked again when it
changes."""

from __future__ import annotations

import io
import json

import pytest

from app.cli import main
from app.gateway_profile import load_profile, record_hop, record_refused_beta
from app.gateway_share import import_profiles
from app.state import State
from app.workspace_gateways import WORKSPACE_FILE

ENDPOINT = "anthropic https://llm-gw.example.com"


def _home(monkeypatch, tmp_path, name: str):
    home = tmp_path / name
    home.mkdir()
    monkeypatch.setenv("BULKHEAD_HOME", str(home))
    return home


@pytest.fixture
def config(tmp_path, monkeypatch):
    path = tmp_path / "config.toml"
    path.write_text("")
    monkeypatch.setenv("BULKHEAD_CONFIG", str(path))
    return path


def test_export_import_round_trips_on_a_second_home_and_shows_the_source(
    tmp_path, monkeypatch, capsys, config
):
    _home(monkeypatch, tmp_path, "alice")
    state = State()
    state.learn_cap(
        ENDPOINT, 121_856, rejected_bytes=162_475, kind="payload_too_large", reason="413 from nginx"
    )
    record_refused_beta(
        state, ENDPOINT, "context-management-2025-06-27", how="refused", evidence="400 Unexpected"
    )
    record_hop(state, ENDPOINT, name="Squid", kind="forward-proxy", detail="Via: 1.1 proxy (squid/5.7)")
    assert main(["gateway", "export"]) == 0
    exported = capsys.readouterr().out
    assert f'[gateways."{ENDPOINT}"]' in exported and "cap_bytes = 121856" in exported

    _home(monkeypatch, tmp_path, "bob")
    monkeypatch.setattr("sys.stdin", io.StringIO(exported))
    assert main(["gateway", "import", "-"]) == 0
    out = capsys.readouterr().out
    assert f"imported {ENDPOINT}: cap 119.0 KB, 1 refused beta, 1 hop" in out

    profile = load_profile(State(), ENDPOINT)
    assert profile.learned.empty and profile.imported is not None
    assert profile.imported.source.startswith("stdin, exported ") and profile.imported.imported_at
    assert profile.imported.cap.cap_bytes == 121_856 and profile.refused_betas == {
        "context-management-2025-06-27"
    }
    assert main(["gateway", "show"]) == 0
    shown = capsys.readouterr().out
    assert "  imported         20" in shown and "from stdin, exported" in shown
    assert (
        "    body cap       119.0 KB" in shown and "    refused beta   context-management-2025-06-27" in shown
    )
    assert main(["gateway", "show", "llm-gw", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["imported"]["cap_bytes"] == 121_856 and record["learned"] == {}
    assert main(["config", "show"]) == 0
    assert f"  {ENDPOINT}: imported (cap 119.0 KB) from stdin" in capsys.readouterr().out


def test_an_imported_cap_is_a_starting_point_never_loosened_by_a_file(tmp_path, monkeypatch, config, capsys):
    from app.config import Route, Settings
    from app.engine.cap_guard import route_cap

    _home(monkeypatch, tmp_path, "home")
    state = State()
    route = Route(name="gw", provider="anthropic", model="m", base_url="https://llm-gw.example.com")
    file = tmp_path / "gateways.toml"
    file.write_text(
        f'format = "bulkhead-gateways"\nversion = 1\n[gateways."{ENDPOINT}"]\ncap_bytes = 102400\n'
    )
    assert main(["gateway", "import", str(file)]) == 0
    cap = route_cap(Settings(), state, route)
    assert (cap.bytes, cap.source) == (102_400, "imported") and str(file) in cap.detail

    file.write_text(
        f'format = "bulkhead-gateways"\nversion = 1\n[gateways."{ENDPOINT}"]\ncap_bytes = 204800\n'
    )
    assert main(["gateway", "import", str(file)]) == 0
    assert "kept the tighter imported cap 100.0 KB (the file says 200.0 KB; --loosen takes the file's)" in (
        capsys.readouterr().out
    )
    assert route_cap(Settings(), state, route).bytes == 102_400

    state.learn_cap(
        ENDPOINT, 80_000, rejected_bytes=106_667, kind="payload_too_large", reason="413"
    )  # evidence
    assert route_cap(Settings(), state, route).bytes == 80_000  # tightened by evidence here
    assert main(["gateway", "import", str(file), "--loosen"]) == 0
    out = capsys.readouterr().out
    assert "this machine's learned cap 78.1 KB is tighter and stays in force" in out
    assert load_profile(state, ENDPOINT).imported.cap.cap_bytes == 204_800  # the user said so
    assert route_cap(Settings(), state, route).bytes == 80_000  # the learned cap still wins


def test_a_bad_file_is_a_clear_error_and_changes_nothing(tmp_path, monkeypatch, config, capsys):
    _home(monkeypatch, tmp_path, "home")
    bad = tmp_path / "gateways.toml"
    bad.write_text('format = "bulkhead-gateways"\n[gateways."anthropic x"\ncap_bytes = 1\n')
    assert main(["gateway", "import", str(bad)]) == 2
    assert f"gateway import: {bad.resolve()}: not valid TOML" in capsys.readouterr().err
    bad.write_text('[gateways."nowhere"]\ncap_bytes = 5\n[gateways."openai http://x/v1"]\ncap_bytes = 12\n')
    assert main(["gateway", "import", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "skipped  nowhere: the endpoint must read '<provider> <url or region>'" in err
    assert "skipped  openai http://x/v1: cap_bytes = 12 is not a size in bytes" in err
    assert State().read().get("imported") is None


async def test_a_workspace_gateways_file_is_read_on_trust_and_asked_again_when_it_changes(
    make_harness, lab, monkeypatch, capsys
):
    h = make_harness("anthropic")
    workspace, endpoint = h.engine.workspace, h.engine.route.endpoint_id
    (workspace / ".bulkhead").mkdir()
    body = f'format = "bulkhead-gateways"\nversion = 1\n[gateways."{endpoint}"]\ncap_bytes = 65536\n'
    (workspace / WORKSPACE_FILE).write_text(body)

    await h.engine.start()  # never answered: not read, and a notice says how
    notices = [n.text for n in h.of_type("notice") if n.code == "gateways"]
    assert notices and "not read until you trust it (bulkhead asks; `bulkhead gateway trust`" in notices[0]
    assert load_profile(h.engine.state, endpoint).imported is None and h.engine.cap_info().bytes is None

    monkeypatch.chdir(workspace)
    assert main(["gateway", "trust"]) == 0
    assert f"imported {endpoint}: cap 64.0 KB" in capsys.readouterr().out
    imported = load_profile(h.engine.state, endpoint).imported
    assert imported is not None and imported.source == f"workspace {workspace.resolve() / WORKSPACE_FILE}"
    assert (h.engine.cap_info().bytes, h.engine.cap_info().source) == (65_536, "imported")

    h2 = make_harness("anthropic")  # trusted and already read: nothing to say
    await h2.engine.start()
    assert [n for n in h2.of_type("notice") if n.code == "gateways"] == []

    (workspace / WORKSPACE_FILE).write_text(body.replace("65536", "32768"))  # changed: asked again
    h3 = make_harness("anthropic")
    await h3.engine.start()
    assert any("not read until you trust it" in n.text for n in h3.of_type("notice") if n.code == "gateways")
    assert load_profile(h3.engine.state, endpoint).imported.cap.cap_bytes == 65_536

    assert main(["gateway", "trust", "--deny"]) == 0
    h4 = make_harness("anthropic")
    await h4.engine.start()
    assert [n for n in h4.of_type("notice") if n.code == "gateways"] == []  # left alone, as asked


def test_import_keeps_facts_learned_here_apart(tmp_path):
    state = State(tmp_path / "state.toml")
    record_hop(state, ENDPOINT, name="Squid", kind="forward-proxy")
    import_profiles(
        state,
        f'[gateways."{ENDPOINT}"]\ncap_bytes = 4096\n[[gateways."{ENDPOINT}".hops]]\nname = "Zscaler"\n',
        source="f.toml",
    )
    profile = load_profile(state, ENDPOINT)
    assert [h["name"] for h in profile.learned.hops] == ["Squid"]
    assert [h["name"] for h in profile.imported.hops] == ["Zscaler"] and profile.imported.source == "f.toml"


async def test_the_front_ends_question_reads_a_trusted_gateways_file_and_remembers_a_no(make_harness, lab):
    """As for the rule files and `.mcp.json` (app.trust.WorkspaceTrust): the TUI and `-p` ask through
    `confirm_workspace_gateways`; yes reads the file at once, no is remembered, a changed file asks again."""
    h = make_harness("anthropic")
    workspace, endpoint = h.engine.workspace, h.engine.route.endpoint_id
    (workspace / ".bulkhead").mkdir()
    body = f'format = "bulkhead-gateways"\nversion = 1\n[gateways."{endpoint}"]\ncap_bytes = 65536\n'
    (workspace / WORKSPACE_FILE).write_text(body)
    asked = []

    async def answer(found, said):
        asked.append(found.describe())
        return said

    assert await h.engine.confirm_workspace_gateways(ask=lambda f: answer(f, None)) is None  # not now
    assert await h.engine.confirm_workspace_gateways(ask=lambda f: answer(f, "allow")) == "allow"
    assert asked[0] == [f"{endpoint}: cap 64.0 KB"]
    assert (h.engine.cap_info().bytes, h.engine.cap_info().source) == (65_536, "imported")
    assert any("read from .bulkhead/gateways.toml (trusted)" in n.text for n in h.of_type("notice"))
    assert await h.engine.confirm_workspace_gateways(ask=lambda f: answer(f, "deny")) is None  # answered

    (workspace / WORKSPACE_FILE).write_text(body.replace("65536", "32768"))
    assert await h.engine.confirm_workspace_gateways(ask=lambda f: answer(f, "deny")) == "deny"
    assert load_profile(h.engine.state, endpoint).imported.cap.cap_bytes == 65_536  # the no kept it out
    assert await h.engine.confirm_workspace_gateways(ask=lambda f: answer(f, "allow")) is None
    assert len(asked) == 3


def test_p_asks_about_the_gateways_file_on_the_terminal(tmp_path):
    """`bulkhead -p` in a workspace with an untrusted `.bulkhead/gateways.toml` asks on /dev/tty (stdin and
    stdout piped); y reads it. Without a terminal nothing is read."""
    from tests.reliability.helpers.terminal import run_bulkhead

    workspace = tmp_path / "repo"
    (workspace / ".bulkhead").mkdir(parents=True)
    (workspace / WORKSPACE_FILE).write_text(f'[gateways."{ENDPOINT}"]\ncap_bytes = 65536\n')

    unasked = run_bulkhead(["-p", "hello"], cwd=workspace)
    assert unasked.returncode == 0, unasked.err
    assert load_profile(State(), ENDPOINT).imported is None

    asked = run_bulkhead(["-p", "hello"], cwd=workspace, answers=["y"])
    assert asked.returncode == 0, asked.err
    assert b"gateways.toml (gateway profiles, from the repository)" in asked.tty
    assert f"{ENDPOINT}: cap 64.0 KB".encode() in asked.tty and asked.questions == 1
    assert load_profile(State(), ENDPOINT).imported.cap.cap_bytes == 65_536
