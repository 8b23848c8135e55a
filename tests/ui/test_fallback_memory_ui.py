"""Issue 41 in the TUI: the fallback chain's question after a partial answer, the chat line that says who
answered, each route in the Cost panel, and `/memory review` (accept into AGENTS.md, edit, reject).

Pilot drives the real app against two embedded labs: route `first` (faults injected) falls back to `second`.
"""

from __future__ import annotations

import functools
from datetime import UTC

from app.config import Route, load_settings
from app.lab.embedded import start_embedded_lab
from app.lab.model import filler
from app.ui import headless
from app.ui.app import BulkheadApp
from app.ui.chat_items import NoticeItem
from app.ui.screens.confirm import ConfirmScreen
from app.ui.screens.memory_review import MemoryReviewScreen
from app.ui.widgets.inspector import Inspector

SIZE = (160, 48)
WAIT_S = 90.0
until = functools.partial(headless.until, timeout=WAIT_S)
settle = functools.partial(headless.settle, timeout=WAIT_S)


def _app(tmp_path, first_url: str, second_url: str, **settings) -> BulkheadApp:
    routes = {
        "first": Route(name="first", provider="lab", model="lab-1", base_url=first_url, fallback=("second",)),
        "second": Route(name="second", provider="lab", model="lab-1", base_url=second_url),
    }
    settings.setdefault("memory", "off")
    config = load_settings().with_overrides(
        routes=routes, default_route="first", retry_max_attempts=0, **settings
    )
    return BulkheadApp(
        config,
        workspace=tmp_path,
        cursor_blink=False,
        keymap={},
        inspector=Inspector(clock=lambda: 0.0, tz=UTC),
    )


def _notices(app) -> list[str]:
    return [str(item.text) for item in app.chat.query(NoticeItem)]


async def test_a_partial_answer_moves_on_only_when_the_user_says_so(tmp_path):
    with start_embedded_lab(faults="stream-error:1") as first, start_embedded_lab() as second:
        app = _app(tmp_path, first.url, second.url)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, app.engine_ready.is_set, "the engine")
            app.prompt.set_text("!big 3KB")
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the fallback question")
            question = app.screen.question
            assert "first: overloaded mid-answer" in question and "Continue it on second" in question
            await pilot.press("y")
            await settle(pilot)

            engine = app.session.engine
            answers = [m for m in engine.session.view.messages if m.role == "assistant"]
            assert answers[0].meta.partial and "".join(m.text for m in answers) == filler(3 * 1024)
            assert engine.route.name == "second"
            assert "first: overloaded mid-answer → answered by second" in _notices(app)
            answered = [e for e in engine.session.store.list_events(engine.session.id, "fallback_answered")]
            assert answered and answered[-1]["data"]["route"] == "second"
            cost = app.inspector.cost
            app.inspector.show_panel("cost")
            await pilot.pause()
            assert cost.values["first"].startswith("1 req (1 failed)") and cost.values["second"].startswith(
                "1 req"
            )
            assert cost.values["fallbacks"].startswith("1 turn")
            assert second.requests() and second.requests()[-1]["verdict"] == "passed"

            # the next turn starts on the first route again (fallback_sticky = false)
            first.configure(faults=None)
            app.prompt.focus()  # the Cost panel had the keyboard
            await pilot.pause()
            app.prompt.set_text("hello again")
            await pilot.press("enter")
            await settle(pilot)
            assert engine.session.turn == 2 and engine.route.name == "first"
            assert first.requests()[-1]["verdict"] == "passed"


async def test_no_keeps_the_partial_answer_and_sends_nothing_more(tmp_path):
    with start_embedded_lab(faults="stream-error:1") as first, start_embedded_lab() as second:
        app = _app(tmp_path, first.url, second.url)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, app.engine_ready.is_set, "the engine")
            app.prompt.set_text("!big 3KB")
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the fallback question")
            await pilot.press("n")
            await settle(pilot)

            view = app.session.engine.session.view.messages
            assert view[-1].role == "assistant" and view[-1].meta.partial
            assert second.requests() == []


async def test_memory_review_accepts_edits_and_rejects(tmp_path):
    with start_embedded_lab() as lab:
        app = _app(tmp_path, lab.url, lab.url, memory="suggest")
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, app.engine_ready.is_set, "the engine")
            worker = app.session.engine.memory
            worker.journal.distilled(
                app.session.engine.session.id,
                worker.project,
                ["tests run with make check", "the api lives in src/api", "tabs everywhere"],
                source="queue 1",
                state="pending",
            )
            app.prompt.set_text("/memory review")
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, MemoryReviewScreen), "the review screen")
            await pilot.press("a")  # accept the first
            await pilot.pause()
            await pilot.press("e")  # edit the second
            await pilot.pause()
            editor = app.screen.query_one("#memory-edit")
            editor.value = "the HTTP API lives in src/api/"
            await pilot.press("enter")
            await pilot.pause()
            await pilot.press("r")  # reject the third
            await pilot.pause()
            assert app.screen.facts == []
            await pilot.press("escape")
            await pilot.pause()

            text = (tmp_path / "AGENTS.md").read_text()
            assert "- tests run with make check" in text and "- the HTTP API lives in src/api/" in text
            assert "tabs" not in text
            assert worker.pending() == []
