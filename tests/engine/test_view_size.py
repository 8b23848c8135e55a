"""The view's exact size kept with the session (app.engine.view_size): a reopened session reports it without
translating its messages again — and only when nothing it depends on has changed."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest

from app.engine.session import Session
from app.engine.turn import Engine
from app.engine.view_size import SIZE_FLAG
from app.model.messages import Message
from app.providers.factory import make_provider
from app.state import State

PROVIDERS = ("anthropic", "openai", "bedrock")


def reopen(engine: Engine, *, read_only: bool = False, **changes) -> tuple[Engine, list[int]]:
    """The session opened again, as a new run of bulkhead would (a fresh adapter, nothing cached), and the
    number of messages of every request it builds from then on."""
    settings = replace(engine.settings, **changes.pop("settings", {}))
    route = replace(engine.route, **changes.pop("route", {}))
    session = Session.load(engine.session.store, engine.session.id)
    session.read_only = read_only
    provider = make_provider(route, settings, engine.provider.api_key)
    builds: list[int] = []
    build = provider.build

    def counted(view, *args, **kwargs):
        if view:
            builds.append(len(view))
        return build(view, *args, **kwargs)

    provider.build = counted  # type: ignore[method-assign]
    again = Engine(settings, session, route, provider, state=State(), workspace=engine.workspace, **changes)
    return again, builds


async def closed(h, pairs: int, chars: int) -> dict:
    """The harness's session grown, its view measured (as a turn's ViewChanged does) and closed: the size it kept."""
    h.grow(pairs, chars)
    h.engine.context_report()
    await h.engine.close()
    return h.session.flags[SIZE_FLAG]


def assert_measured(engine: Engine, builds: list[int], predicted: int) -> None:
    """The open measured the view (its first build was of the whole view), and got it right."""
    assert builds and builds[0] == len(engine.session.view)
    assert predicted == engine.measure(engine.session.view.messages)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_closed_session_reopens_with_its_size_unmeasured_and_exact(make_harness, provider):
    h = make_harness(provider)
    result = await h.engine.submit("!read missing.txt")  # a turn with a tool call and its result
    assert result.outcome == "answered", result.error
    kept = await closed(h, 40, 1_500)
    assert kept["bytes"] == h.engine.measure(h.session.view.messages)

    again, builds = reopen(h.engine)
    report = again.context_report()
    await again.start(resumed=True)

    assert builds == []  # no message translated for the route
    exact = again.measure(again.session.view.messages)
    assert report.predicted_bytes == exact == again.view_changed().predicted_bytes
    assert builds == [len(again.session.view)] * 2  # the two measures just made


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_warming_in_a_thread_leaves_the_first_request_nothing_to_translate(make_harness, provider):
    h = make_harness(provider)
    await closed(h, 30, 800)
    again, _builds = reopen(h.engine)
    again.context_report()
    warm = again.warm_sizes()
    assert warm is not None and again.warm_sizes() is None  # once

    thread = threading.Thread(target=warm)
    thread.start()
    thread.join(30)
    translated = again.provider.serialized_messages
    assert translated == len(again.session.view)
    again.measure(again.session.view.messages)
    assert again.provider.serialized_messages == translated  # all from the cache

    measured, _ = reopen(h.engine)
    measured.session.set_flag(SIZE_FLAG, None)
    measured.context_report()
    assert measured.warm_sizes() is None  # the open measured: nothing to warm


async def test_anything_the_size_depends_on_changed_is_measured_again(make_harness):
    h = make_harness()
    kept = await closed(h, 20, 1_000)

    changes = {
        "another max_tokens": {"route": {"max_output_tokens": h.engine.max_tokens - 1}},
        "another model": {"route": {"model": "lab-other"}},
        "other tools": {"tools": ()},
    }
    for what, change in changes.items():
        again, builds = reopen(h.engine, **change)
        assert_measured(again, builds, again.context_report().predicted_bytes)
        assert builds == [len(again.session.view)] * 2, what  # the open's measure, then the check's

    (h.engine.workspace / "AGENTS.md").write_text("Answer in haiku.\n")  # the system prompt grows
    again, builds = reopen(h.engine)
    assert "haiku" in again.system
    assert_measured(again, builds, again.context_report().predicted_bytes)
    (h.engine.workspace / "AGENTS.md").unlink()

    # a message appended after the size was kept (a crash before the turn's end)
    crashed, builds = reopen(h.engine)
    crashed.session.append(Message.create("user", "one more", turn=crashed.session.turn + 1))
    assert_measured(crashed, builds, crashed.context_report().predicted_bytes)

    # a flag that is not a size
    for damaged in ({"key": kept["key"], "bytes": "12"}, {"key": kept["key"], "bytes": -1}, "junk"):
        again, builds = reopen(h.engine)
        again.session.flags[SIZE_FLAG] = damaged
        assert_measured(again, builds, again.context_report().predicted_bytes)


async def test_a_read_only_session_keeps_nothing(make_harness):
    h = make_harness()
    kept = await closed(h, 5, 500)
    viewer, _ = reopen(h.engine, read_only=True)
    viewer.session.flags[SIZE_FLAG] = None
    viewer.context_report()
    viewer.keep_view_size()  # nothing raised, nothing written
    assert Session.load(viewer.session.store, viewer.session.id).flags[SIZE_FLAG] == kept
