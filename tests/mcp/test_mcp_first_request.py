"""The first request and MCP servers still starting (issue 40, item 8): the servers start while the session
opens and the request is built; a turn waits for them at most `mcp_tools_wait` seconds (0: not at all), and a
server still starting then is said — its tools join from the next request. Real stdio servers (the demo
server, held back by a gate file the test opens), the engine on the embedded lab, and `-p` as a process.

Everything is judged by the order of events and by what the lab received, never by the clock."""

from __future__ import annotations

import asyncio
import json
import sys

from tests.mcp.conftest import DEMO, demo_spec
from tests.mcp.test_mcp_cli import run

WRITE = '!call write_file {"path": "note.txt", "content": "okapi"}'  # asks first: a moment between requests


def _model_requests(lab) -> list[dict]:
    return [r for r in lab.requests() if "tools" in r]


def _index(events: list, test) -> int:
    return next(i for i, e in enumerate(events) if test(e))


async def test_without_waiting_the_first_request_goes_before_a_slow_server_and_its_tools_join_the_next(
    make_engine, lab, tmp_path
):
    gate = tmp_path / "gate"
    holder: dict = {}

    async def approver(name, args, why):  # between the first request and the second: the server gets ready
        gate.touch()
        await holder["h"].engine.mcp.connections["slow"].wait_settled()
        return True

    h = make_engine(demo_spec("slow", "--wait-for", str(gate)), approver=approver, mcp_tools_wait=0)
    holder["h"] = h
    await h.engine.start()
    await h.engine.start_mcp(wait=False)
    result = await h.engine.submit(WRITE)
    assert result.outcome == "answered", result.error
    events = h.events
    first_request = _index(events, lambda e: e.type == "request_started")
    ready = _index(events, lambda e: e.type == "mcp_server" and e.state == "ready")
    assert first_request < ready  # the prompt did not wait for the server
    told = next(t for t in h.notices("mcp_wait") if "slow" in t)
    assert "still starting" in told and "join from the next request" in told and "mcp_tools_wait" in told
    first, second = _model_requests(lab)[:2]
    mcp_tools = [t for t in h.engine.tools if t.name.startswith("mcp__slow__")]
    assert mcp_tools and second["tools"] == first["tools"] + len(mcp_tools)  # offered from the next request


async def test_a_waiting_first_request_goes_once_a_starting_server_is_ready_and_carries_its_tools(
    make_engine, lab, tmp_path
):
    gate = tmp_path / "gate"
    h = make_engine(demo_spec("slow", "--wait-for", str(gate)), mcp_tools_wait=600)
    h.session.bus.subscribe(  # the server may answer once the turn says it waits for it
        lambda e: gate.touch() if e.type == "notice" and e.code == "mcp_wait" else None
    )
    await h.engine.start()
    await h.engine.start_mcp(wait=False)
    async with asyncio.timeout(120):  # a hang guard: the wait must end when the server is ready, not at 600 s
        result = await h.engine.submit('!call mcp__slow__echo {"text": "okapi"}')
    assert result.outcome == "answered" and "okapi" in result.text
    events = h.events
    waiting = _index(events, lambda e: e.type == "notice" and e.code == "mcp_wait")
    ready = _index(events, lambda e: e.type == "mcp_server" and e.state == "ready")
    first_request = _index(events, lambda e: e.type == "request_started")
    assert waiting < ready < first_request
    assert "at most 600 s, mcp_tools_wait" in events[waiting].text
    assert _model_requests(lab)[0]["tools"] == len(h.engine.tools)  # the first request had the server's tools
    assert not [t for t in h.notices("mcp_wait") if "still starting" in t]


async def test_a_server_that_never_answers_or_crashes_does_not_hold_the_turn_or_the_exit(make_engine, lab):
    h = make_engine(
        demo_spec("stuck", "--hang"),
        demo_spec("broken", "--crash"),
        mcp_tools_wait=0.5,
        mcp_startup_timeout=120,
    )
    await h.engine.start()
    await h.engine.start_mcp(wait=False)
    result = await h.engine.submit("hello")
    assert result.outcome == "answered", result.error
    events = h.events
    crashed = _index(events, lambda e: e.type == "notice" and "MCP server broken did not start" in e.text)
    bounded = _index(events, lambda e: e.type == "notice" and "MCP server stuck is still starting" in e.text)
    first_request = _index(events, lambda e: e.type == "request_started")
    assert crashed < first_request and bounded < first_request
    assert (
        "after 0.5 s (mcp_tools_wait)" in events[bounded].text
        and "raise mcp_tools_wait" in events[bounded].text
    )
    stuck = h.engine.mcp.connections["stuck"]
    assert stuck.state == "starting"  # still within its mcp_startup_timeout: only the request stopped waiting
    # At exit a server still starting is cancelled, not given the polite stop's 10 s to finish (a hang guard
    # below that, not a timing: the cancellation is immediate).
    async with asyncio.timeout(8):
        await h.engine.close()
    assert stuck.state == "stopped"


def test_one_shot_with_a_hung_server_answers_within_mcp_tools_wait_and_says_so(tmp_path):
    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"stuck": {"command": sys.executable, "args": [str(DEMO), "--hang"]}}})
    )
    done = run(workspace, "-p", "hello", "--yes", BULKHEAD_MCP_TOOLS_WAIT="0.5")
    assert done.returncode == 0, done.stderr
    assert "Lab model" in done.stdout
    assert "MCP server stuck is still starting after 0.5 s (mcp_tools_wait)" in done.stderr
    assert "Esc" not in done.stderr and "Traceback" not in done.stderr
    quiet = run(workspace, "-p", "hello", "--yes", "--quiet", BULKHEAD_MCP_TOOLS_WAIT="0")
    assert quiet.returncode == 0 and "Lab model" in quiet.stdout
    assert "MCP" not in quiet.stderr  # --quiet: the notice is not printed
