"""A request's recorded latency is the network's and the server's time, from when it was sent (issue 40, item 8).

The first request of a session pays bulkhead's own setup — the SDK import, the client, a lazy lab start —
before anything goes out. That used to be counted in its latency (1,950 ms, then 8.7 ms for the second);
here the embedded lab takes SETUP_S to start (a slow `start_lab`: our code, not the SDK) and answers with a
pause between its stream events (the lab's `slow` fault), and the record must hold the server's delay and
not the setup — in the store's row (the Requests panel), the RequestFinished event and the HAR export.
"""

from __future__ import annotations

import time
from pathlib import Path

from app.config import Route, Settings
from app.engine.session import Session
from app.engine.turn import Engine
from app.har import to_har
from app.lab.embedded import start_embedded_lab
from app.providers.lab import LabProvider
from app.state import State
from app.store import Store

SETUP_S = 2.5  # the lab's start: far longer than the server's delay below
PAUSE_S = 0.05  # the lab's pause between two stream events (`slow`)
MIN_EVENTS = 6  # an Anthropic stream has at least message_start … message_stop: 5 pauses or more
SERVER_DELAY_MS = PAUSE_S * (MIN_EVENTS - 1) * 1000


def _engine(tmp_path: Path, starts: list) -> Engine:
    def slow_start(**options):  # the lazy lab start, slowed down
        time.sleep(SETUP_S)
        handle = start_embedded_lab(**options)
        handle.configure(faults="slow:1", slow_pause=PAUSE_S)
        starts.append(handle)
        return handle

    route = Route(name="lab", provider="lab", model="lab-1")
    settings = Settings(routes={"lab": route}, default_route="lab", memory="off", request_timeout=30.0)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = Session.create(Store(), route="lab", provider="lab", model="lab-1", workspace=str(workspace))
    provider = LabProvider(route, settings, start_lab=slow_start)
    return Engine(settings, session, route, provider, state=State(), workspace=workspace)


async def test_the_first_requests_latency_excludes_the_local_setup_and_keeps_the_servers_delay(tmp_path):
    starts: list = []
    engine = _engine(tmp_path, starts)
    finished: list = []
    engine.session.bus.subscribe(lambda e: finished.append(e) if e.type == "request" else None)
    try:
        begun = time.monotonic()
        first = await engine.submit("hello")
        took_ms = (time.monotonic() - begun) * 1000
        second = await engine.submit("hello again")
    finally:
        await engine.close()
    assert first.outcome == second.outcome == "answered" and len(starts) == 1
    assert took_ms >= SETUP_S * 1000  # the turn did wait for the setup…
    rows = engine.session.store.list_requests(engine.session.id)
    assert [r["outcome"] for r in rows] == ["ok", "ok"]
    for latency in (rows[0]["latency_ms"], finished[0].latency_ms):  # …its request's record did not count it
        assert SERVER_DELAY_MS <= latency < SETUP_S * 1000
    assert SERVER_DELAY_MS <= rows[1]["latency_ms"] < SETUP_S * 1000  # the second: the same kind of figure
    entries = to_har(engine.session, body_limit=1024)["log"]["entries"]
    assert [e["time"] for e in entries] == [round(r["latency_ms"], 3) for r in rows]
    assert entries[0]["timings"]["wait"] < SETUP_S * 1000


async def test_a_request_that_never_went_out_is_timed_from_its_start(tmp_path):
    """No sending to time from (the lab could not start): the failure's latency covers the attempt."""

    def broken_start(**options):
        time.sleep(0.3)
        raise OSError("no port free for the lab")

    route = Route(name="lab", provider="lab", model="lab-1")
    settings = Settings(
        routes={"lab": route}, default_route="lab", memory="off", retry_max_attempts=1, request_timeout=30.0
    )
    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = Session.create(Store(), route="lab", provider="lab", model="lab-1", workspace=str(workspace))
    engine = Engine(
        settings,
        session,
        route,
        LabProvider(route, settings, start_lab=broken_start),
        state=State(),
        workspace=workspace,
    )
    try:
        result = await engine.submit("hello")
    finally:
        await engine.close()
    assert result.outcome == "failed"
    rows = session.store.list_requests(session.id)
    assert rows and all(r["outcome"] == "failed" for r in rows)
    assert rows[0]["latency_ms"] >= 300  # the attempt, setup and all: nothing was sent to time from


async def test_a_slow_setup_before_a_burst_of_events_is_no_buffering_gateway(tmp_path):
    """The lab answers at once (a burst of events) after a SETUP_S start: judged from the sending there is no
    long wait before the burst, so the endpoint is not remembered as one that buffers the event stream."""
    from app.gateway_profile import load_profile

    def slow_start(**options):
        time.sleep(SETUP_S)
        return start_embedded_lab(**options)

    route = Route(name="lab", provider="lab", model="lab-1")
    settings = Settings(routes={"lab": route}, default_route="lab", memory="off", request_timeout=30.0)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    session = Session.create(Store(), route="lab", provider="lab", model="lab-1", workspace=str(workspace))
    state = State()
    engine = Engine(
        settings,
        session,
        route,
        LabProvider(route, settings, start_lab=slow_start),
        state=state,
        workspace=workspace,
    )
    try:
        result = await engine.submit("!big 2KB")  # a long answer: many events, well past BUFFERED_MIN_EVENTS
    finally:
        await engine.close()
    assert result.outcome == "answered", result.error
    assert not load_profile(state, route.endpoint_id).learned.streaming
