"""Pilot tests of the app shell, the chat and the prompt.

Where the subject is the UI (how the chat shows things, keys, the prompt, dialogs) the app runs on a
scripted session (`tests/ui/fake_session.py`): the test asserts on what the chat shows and on the intents
the app posted (`fake.intents`). Where it is the integration (a turn, a tool, compaction, export, resume,
a lease reaching the screen) it runs on the engine and the embedded lab. Every test asserts on state (the
chat's raw texts, the session, state.toml), never on pixels, and waits by polling (`until`) or on
workers — never a bare sleep.
"""

from __future__ import annotations

import io
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from textual import events
from textual.widgets import Static

from app.config import Route, load_settings
from app.lab.model import filler
from app.model.archive import ArchiveEntry, archive_key
from app.model.events import AnswerFinished, Compaction, Notice, TextDelta
from app.state import State
from app.ui.app import SDK_MODULES, BulkheadApp
from app.ui.chat_items import AssistantItem, ReportItem, ToolBlock, UserItem, code_blocks
from app.ui.headless import ready, settle, until
from app.ui.messages import EngineEvent
from app.ui.palette import applicable_titles
from app.ui.prompt import PromptHistory, history_path
from app.ui.slash import complete_slash, parse_slash
from tests.ui.conftest import lab_settings
from tests.ui.fake_session import FakeSession, Hold, app_on, say, tool_call

SIZE = (160, 48)
WAIT_S = 60.0


# -- helpers --------------------------------------------------------------------------------------------
async def submit(pilot, text: str) -> None:
    """Type `text` into the prompt and press Enter (without waiting for the turn)."""
    pilot.app.prompt.set_text(text)
    await pilot.press("enter")


async def send(pilot, text: str) -> None:
    """Submit `text` and wait for the turn to end and be drawn."""
    await submit(pilot, text)
    await settle(pilot)


async def approval_for(pilot, text: str) -> ToolBlock:
    """Submit `text` and wait for the tool call it makes to ask for approval: its block."""
    app = pilot.app
    await submit(pilot, text)
    await until(pilot, lambda: app.chat.pending_approval() is not None, "the approval prompt")
    return app.chat.pending_approval()


def markdown_answer(steps: int) -> str:
    """Block-rich Markdown like a coding answer (headings, paragraphs, lists, code blocks, a table)."""
    blocks: list[str] = []
    for n in range(1, steps + 1):
        blocks.append(f"## Step {n}: refactor the `payload_{n}` module")
        blocks.append(
            f"The request builder in step {n} measures every message **once** and caches the size, "
            f"so the *incremental* cost stays flat — see `app/engine/payload.py` line {n * 7}."
        )
        blocks.append("\n".join(f"- item {n}.{i}: keep `head` under {i * 128} bytes" for i in range(1, 4)))
        blocks.append(
            "```python\n"
            + "\n".join(f"def handler_{n}_{i}(request):\n    return process(request)" for i in range(3))
            + "\n```"
        )
        if n % 10 == 0:
            blocks.append("| step | bytes |\n|---|---|\n" + f"| {n} | {n * 1024} |")
    return "\n\n".join(blocks) + "\n"


def make_app(settings, tmp_path: Path, **kwargs) -> BulkheadApp:
    kwargs.setdefault("keymap", {})
    return BulkheadApp(settings, workspace=tmp_path, cursor_blink=False, **kwargs)


# -- chat -------------------------------------------------------------------------------------------------
async def test_message_streams_answer(lab, tmp_path):
    app = make_app(lab_settings(lab), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "hello there")
        answers = app.chat.answers()
        assert len(answers) == 1
        answer = answers[0]
        assert "You said: “hello there”" in answer.raw
        assert not answer.streaming and not answer.partial
        # the raw text kept beside the Markdown is exactly what the engine committed
        assert answer.raw == app.session.engine.session.master[-1].text
        users = [item for item in app.chat.items if isinstance(item, UserItem)]
        assert [u.text for u in users] == ["hello there"]


async def test_lab_notice_when_nothing_is_configured(tmp_path):
    app = make_app(load_settings(), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        notices = app.chat.notices("lab")
        assert len(notices) == 1 and "built-in lab model" in notices[0].text
        assert notices[0].has_class("-code-lab")
        assert app.session.engine.route.provider == "lab"
        await app.action_quit()


@pytest.mark.parametrize("key", ["escape", "ctrl+c"])
async def test_escape_or_ctrl_c_cancels_a_slow_stream_and_marks_it_partial(tmp_path, key):
    first = filler(2048)
    fake = FakeSession(tmp_path, script={"!big 8KB": [TextDelta(first), Hold(), *say(filler(8192))]})
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "!big 8KB")
        await until(
            pilot,
            lambda: app.chat.last_answer() is not None and app.chat.last_answer().raw,
            "the first streamed text",
        )
        assert app.busy
        await pilot.press(key)
        await settle(pilot)
        assert not app.busy and app.is_running  # cancelled, not quit
        answer = app.chat.last_answer()
        assert answer.partial and answer.has_class("-partial")
        await settle(pilot)  # the mark is mounted when the answer is marked (a whole answer has none)
        mark = answer.query_one(".partial-mark", Static)
        assert mark.display and "cut short; /retry asks again" in str(mark.render())
        assert 0 < len(answer.raw) < 8 * 1024
        assert "what arrived is kept" in app.chat.notices("cancelled")[-1].text
        assert answer.raw == first  # what arrived, and nothing after the cancel
        assert ("interrupt_tools",) in fake.intents  # the running tools are told to stop too


async def test_ctrl_c_clears_the_prompt_then_twice_on_an_empty_prompt_quits(tmp_path):
    app = app_on(FakeSession(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        app.prompt.set_text("a long prompt I did not mean to lose")
        await pilot.press("ctrl+c")
        assert app.prompt.text == ""
        await pilot.press("up")  # it went to the history
        assert app.prompt.text == "a long prompt I did not mean to lose"
        app.prompt.set_text("")
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.is_running  # one press on an empty prompt only says how to quit
        await pilot.press("ctrl+c")
        await until(pilot, lambda: not app.is_running, "the app to exit")
    assert app.return_code == 0


async def test_ctrl_q_during_a_turn_quits_cleanly(lab, tmp_path):
    lab.configure(faults="slow:1", slow_pause=0.2)
    app = make_app(lab_settings(lab), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "!big 8KB")
        await until(pilot, lambda: app.chat.streaming, "the stream")
        session = app.session.engine.session
        await pilot.press("ctrl+q")
        await until(pilot, lambda: not app.is_running, "the app to exit")
    assert app.return_code == 0
    assert session.master[-1].meta.partial  # what had arrived is kept


async def test_approval_yes_runs_the_tool(lab, tmp_path):
    app = make_app(lab_settings(lab, approval="auto-read"), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        block = await approval_for(pilot, "!shell echo hi")
        assert block.tool_name == "shell" and block.args == {"command": "echo hi"}
        assert app.focused is app.chat and block.has_class("-pending")
        await pilot.press("y")
        await settle(pilot)
        assert block.decision == "approved" and block.done and not block.is_error
        assert block.result.strip() == "hi"
        assert "shell (2 B): “hi”" in app.chat.last_answer().raw
        assert app.focused is app.prompt


async def test_approval_no_denies_the_tool(lab, tmp_path):
    app = make_app(lab_settings(lab, approval="auto-read"), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        block = await approval_for(pilot, "!shell echo hi")
        await pilot.press("n")
        await settle(pilot)
        assert block.decision == "denied" and block.is_error
        assert "hi" not in block.result.splitlines()
        assert not (tmp_path / "hi").exists()


async def test_approval_buttons_work_too(tmp_path):
    fake = FakeSession(tmp_path, script={"!ls": tool_call("c-ls", "list_dir", {"path": "."})})
    app = app_on(fake, load_settings().with_overrides(approval="ask"))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        block = await approval_for(pilot, "!ls")
        await pilot.click(block.query_one(".approve"))
        await settle(pilot)
        assert block.decision == "approved" and block.done
        assert fake.answered("c-ls") == ("once", "")


async def test_long_streamed_answer_ends_fully_rendered(tmp_path):
    """200 KB streamed fast: the raw text is the answer kept, all of it drawn, in one widget."""
    text = filler(200 * 1024)
    app = app_on(FakeSession(tmp_path, script={"!big 200KB": say(text, pieces=50)}))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "!big 200KB")
        answer = app.chat.last_answer()
        assert answer.raw == text and len(answer.raw) == 200 * 1024
        assert not answer.partial and answer.rendered
        assert answer.view.text == answer.raw and "".join(answer.view.block_sources) == answer.raw
        # what is drawn is the whole answer (one paragraph: its lines re-wrapped to the width)
        assert answer.view.rendered_text().split() == answer.raw.split()
        # one widget however long the answer: the view (its first row the label, no child widgets); no partial mark
        assert list(answer.children) == [answer.view] and not answer.view.children


async def test_streamed_markdown_is_drawn_like_the_whole_document(tmp_path):
    """Block by block while streaming, then one whole-document parse: the same as drawing it at once."""
    app = app_on(FakeSession(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        chat = app.chat
        text = markdown_answer(30)
        for start in range(0, len(text), 16):  # 16-char deltas, as real APIs send them
            await chat.handle(TextDelta(text[start : start + 16]))
            if start % 800 == 0:
                await pilot.pause()  # let the coalesced appends land mid-answer
        await chat.handle(AnswerFinished(message_id="m1", stop_reason="end_turn"))
        await until(pilot, lambda: not chat.streaming, "the streamed answer to be drawn")
        streamed = chat.last_answer()
        assert streamed.raw == text and streamed.rendered and not streamed.streaming
        whole = AssistantItem(text)
        await chat.add(whole)
        await until(pilot, lambda: not chat.streaming, "the same answer drawn at once")
        assert streamed.view.block_sources == whole.view.block_sources
        assert len(streamed.view.block_sources) > 100
        drawn = streamed.view.rendered_text()
        assert drawn == whole.view.rendered_text()
        assert "def handler_30_2(request):" in drawn and "• item 30.3: keep head under 384 bytes" in drawn
        assert "```" not in drawn and "## Step" not in drawn  # Markdown, not its source


async def test_a_reference_link_defined_after_its_use_is_resolved_when_the_stream_ends(tmp_path):
    app = app_on(FakeSession(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        chat = app.chat
        for part in (
            "See [the parser][1] for details.\n\n",
            "More text.\n\n",
            "[1]: https://example.org/parser\n",
        ):
            await chat.handle(TextDelta(part))
            await until(pilot, lambda part=part: chat.last_answer().view.text.endswith(part), "the append")
        await chat.handle(AnswerFinished(message_id="m1", stop_reason="end_turn"))
        await until(pilot, lambda: not chat.streaming, "the answer to be drawn")
        drawn = chat.last_answer().view.rendered_text()
        assert "See the parser for details." in drawn and "[1]" not in drawn


async def test_keys_typed_while_an_answer_streams_land_in_the_prompt(tmp_path):
    first = filler(4096)  # then the stream waits (Hold) until Esc: far longer than the typing
    fake = FakeSession(tmp_path, script={"!big 64KB": [TextDelta(first), Hold(), *say(filler(64 * 1024))]})
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "!big 64KB")
        await until(
            pilot, lambda: app.chat.streaming and app.chat.last_answer().raw, "the first streamed text"
        )
        await pilot.press(*"next one")
        assert app.prompt.text == "next one"
        assert app.busy and app.chat.streaming  # typed while the answer was still streaming
        await pilot.press("escape")  # done typing: end the stream
        await settle(pilot)
        assert app.prompt.text == "next one"  # kept; Enter would send it
        answer = app.chat.last_answer()
        assert answer.partial and answer.raw == first
        assert fake.intents.count(("submit", "!big 64KB")) == 1  # nothing typed was sent


async def test_quit_during_a_fast_stream_drops_what_is_still_queued(lab, tmp_path):
    """Quit with a backlog of engine events and keys still queued (a fast stream, a typing user): the
    app shuts down while its queue drains; what arrives then is dropped, nothing raises, exit code 0."""
    lab.configure(faults="slow:1", slow_pause=0.05)  # 4 KB a delta, 20 a second
    app = make_app(lab_settings(lab, max_output_tokens=64_000), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "!big 256KB")
        await until(pilot, lambda: app.chat.streaming and app.chat.last_answer().raw, "the stream")
        session = app.session.engine.session
        await app.action_quit()
        for n in range(300):  # what a fast stream and a typing user leave queued behind the quit
            app.post_message(EngineEvent(TextDelta(f"- item {n}\n\n```\ncode {n}\n```\n")))
            app.post_message(EngineEvent(Notice(f"late {n}", code="late")))
            app.post_message(events.Key("x", "x"))
        # leaving the block shuts the app down while its queue still drains
    assert app.return_code == 0
    assert session.master[-1].role == "assistant"  # what had arrived is kept


async def test_quit_does_not_wait_for_the_sdk_import(lab, tmp_path, monkeypatch):
    """The provider SDK is imported (≈1 s) in a daemon thread: Ctrl+Q during that import exits at once."""
    started, release = threading.Event(), threading.Event()
    seen: dict[str, bool] = {}

    def slow_import(provider: str, then=None, first=None) -> None:
        seen["daemon"] = threading.current_thread().daemon
        started.set()
        release.wait(WAIT_S)

    monkeypatch.setattr("app.ui.startup.prewarm_sdk", slow_import)
    monkeypatch.setitem(SDK_MODULES, "lab", "bulkhead_sdk_not_imported_yet")
    app = make_app(lab_settings(lab), tmp_path)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, started.is_set, "the SDK import to start")
            await pilot.press("ctrl+q")
            await until(pilot, lambda: not app.is_running, "the app to exit")
        assert app.return_code == 0
        assert seen["daemon"] and not release.is_set()  # exited while the import was still running
    finally:
        release.set()


async def test_follow_bottom_hint_when_scrolled_up(tmp_path):
    app = app_on(FakeSession(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        chat = app.chat
        for n in range(60):
            await chat.add_notice(f"line {n}")
        await pilot.pause()
        assert chat.follow and chat.at_bottom()
        chat.focus()
        await pilot.press("home")  # the user goes back to the top to read
        await until(
            pilot, lambda: not chat.follow and chat.scroll_y == 0, "follow to turn off when scrolled up"
        )
        await chat.handle(TextDelta("new output while you read"))
        await until(
            pilot, lambda: chat.new_below and app.query_one("#new-output").display, "the new-output hint"
        )
        assert chat.scroll_y == 0  # the view stayed where the reader was
        await pilot.press("ctrl+end")
        await pilot.pause()
        await until(
            pilot,
            lambda: chat.at_bottom() and not app.query_one("#new-output").display,
            "the jump to the end",
        )
        assert chat.follow and not chat.new_below
        await chat.handle(Notice("done"))


# -- slash commands ------------------------------------------------------------------------------------
async def test_cost_and_context_render_tables(lab, tmp_path):
    app = make_app(lab_settings(lab), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "hello")
        await send(pilot, "/cost")
        await send(pilot, "/context")
        reports = [item for item in app.chat.items if isinstance(item, ReportItem)]
        assert [r.title.split(" ")[0] for r in reports] == ["cost", "context"]
        cost = dict(reports[0].rows)
        assert cost["requests"].startswith("1 ")
        context = dict(reports[1].rows)
        assert "in the view" in context["messages"] and context["messages"].startswith("2 ")


async def test_compact_rewind_and_recall(lab, tmp_path):
    app = make_app(lab_settings(lab), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        for _ in range(4):
            await send(pilot, "!big 12KB")
        views_before = len(app.session.engine.session.views)
        await send(pilot, "/compact keep the numbers")
        assert len(app.session.engine.session.views) == views_before + 1
        assert any("compacted (manual)" in n.copy_text() for n in app.chat.notices("compaction"))
        keys = [e.key for e in app.session.engine.session.store.archive_list(app.session.engine.session.id)]
        assert keys, "the compaction archived what it dropped"
        # /recall KEY puts the segment back, as the recall tool would
        await send(pilot, f"/recall {keys[0]}")
        recalled = [i for i in app.chat.items if isinstance(i, UserItem) and i.origin == "recall"]
        entry = app.session.engine.session.store.archive_get(keys[0], app.session.engine.session.id)
        assert recalled and entry.content.strip()[:200] in recalled[-1].text
        assert app.session.engine.session.master[-1].meta.origin == "recall"
        # /rewind compact pops the view
        await send(pilot, "/rewind compact")
        assert len(app.session.engine.session.views) == views_before
        assert app.chat.notices("rewind")


@pytest.mark.parametrize(
    ("method", "level", "shown"),
    [
        ("summary", 2, "summary: 400.0 KB → 100.0 KB"),
        ("L3", 3, "last 4: 400.0 KB → 100.0 KB"),
    ],
)
async def test_a_compaction_notice_names_its_method_once(tmp_path, method, level, shown):
    """By what it did, never by a number the recovery ladder also uses ("summary L2" read as the ladder's
    L2, which keeps the last 10 messages; issue 40)."""
    app = app_on(FakeSession(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        app.post_message(
            EngineEvent(Compaction("manual", method, "applied", 409_600, 102_400, 9, 6, level=level))
        )
        await until(pilot, lambda: app.chat.notices("compaction"), "the compaction notice")
        assert (
            app.chat.notices("compaction")[0].copy_text().startswith(f"compacted (manual): {shown}, 9 → 6 ")
        )


async def test_escape_cancels_a_running_compact(lab, tmp_path):
    app = make_app(lab_settings(lab), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        for _ in range(4):
            await send(pilot, "!big 12KB")
        views = len(app.session.engine.session.views)
        lab.configure(
            faults="slow:1", slow_pause=2.0
        )  # the summary request waits 8 s: time to change one's mind
        await submit(pilot, "/compact")
        await until(
            pilot, lambda: app.busy and "Summarizing" in app.prompt_box.busy_text, "the summary phase"
        )
        await pilot.press("escape")
        await settle(pilot)
        assert len(app.session.engine.session.views) == views
        assert any("compaction cancelled" in n.text for n in app.chat.notices("compaction"))


async def test_cap_set_and_reset(lab, tmp_path):
    app = make_app(lab_settings(lab), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        engine = app.session.engine
        await send(pilot, "/cap 256KB")
        assert engine.cap_info().bytes == 256 * 1024
        engine.state.learn_cap(
            engine.route.endpoint_id,
            96 * 1024,
            rejected_bytes=128 * 1024,
            kind="payload_too_large",
            reason="413 from nginx",
        )
        assert engine.cap_info().source == "learned"
        await send(pilot, "/cap reset")
        assert engine.state.learned_cap(engine.route.endpoint_id) is None
        assert any("learned cap forgotten" in n.text for n in app.chat.notices("cap"))


async def test_cap_reset_without_a_learned_cap_says_why(tmp_path):
    fake = FakeSession(tmp_path)
    # what the engine says here (tests/engine/test_session_api.py pins it)
    fake.refusals["cap_reset"] = "no learned cap to forget"
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "/cap reset")
        await until(pilot, lambda: app.chat.notices("command"), "the reason, in the chat")
        assert "/cap reset: no learned cap to forget" in app.chat.notices("command")[-1].text
        assert app.prompt.text == "/cap reset"  # what could not run is back in the prompt
        assert ("reset_cap",) not in fake.intents


async def test_help_opens_and_closes(tmp_path):
    app = app_on(FakeSession(tmp_path, provider="lab"))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "/help")
        from app.ui.screens.help import HelpScreen

        assert isinstance(app.screen, HelpScreen)
        assert "/rewind compact" in app.screen.markdown and "app.inspector" in app.screen.markdown
        assert "!big SIZE" in app.screen.markdown  # the lab grammar, since the lab is in use
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        assert "## Prompt" in app.screen.markdown  # the focused widget's HELP comes first
        # engine events that arrive while a screen is on top still reach the chat
        app.post_message(EngineEvent(Notice("arrived while help was open", code="while-help")))
        await until(pilot, lambda: app.chat.notices("while-help"), "the notice behind the help screen")


async def test_retry_and_export(lab, tmp_path):
    app = make_app(lab_settings(lab), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "hello")
        await send(pilot, "/export")
        exports = list(tmp_path.glob("bulkhead-export-*.md"))  # the project folder, not the data folder
        assert len(exports) == 1 and "hello" in exports[0].read_text()
        assert str(exports[0]) in app.chat.notices("export")[-1].text  # says the path
        await send(pilot, "/export notes/today")  # PATH, relative to the project folder
        await until(pilot, lambda: (tmp_path / "notes" / "today.md").exists(), "the export at PATH")
        assert "hello" in (tmp_path / "notes" / "today.md").read_text()


async def test_export_writes_har_and_probe_finds_the_gateway_cap(lab, tmp_path):
    import json

    lab.configure(gateway="nginx", cap="128KB")
    app = make_app(lab_settings(lab), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "hello")
        titles = applicable_titles(app)
        assert "gateway: probe this route" in titles and "requests: export as HAR" in titles
        app.run_command("export_har")
        await until(
            pilot, lambda: list(app.session.engine.session.folder.glob("requests-*.har")), "the HAR file"
        )
        har = json.loads(next(app.session.engine.session.folder.glob("requests-*.har")).read_text())
        assert har["log"]["version"] == "1.2" and len(har["log"]["entries"]) == 1
        app.run_command("probe")
        await settle(pilot)
        report = [i for i in app.chat.items if isinstance(i, ReportItem)][-1]
        rows = dict(report.rows)
        assert report.title.startswith("probe")
        assert rows["cap"] != "none found"
        cap = int(float(rows["cap"].split()[0]) * (1024 if "KB" in rows["cap"] else 1))
        assert 120 * 1024 <= cap <= 128 * 1024


async def test_a_failure_to_open_is_a_notice_not_a_traceback(tmp_path):
    route = Route(name="work", provider="anthropic", model="claude-sonnet-4-5")
    app = make_app(load_settings().with_overrides(routes={"work": route}), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.chat.notices("session"), "the error notice")
        text = app.chat.notices("session")[0].text
        assert "needs an API key" in text and "Traceback" not in text
        assert app.is_running and app.session is None
        await send(pilot, "/cost")  # a command that needs the engine says why instead of failing
        assert not [i for i in app.chat.items if isinstance(i, ReportItem)]


async def test_long_sessions_prune_rendered_items(tmp_path, monkeypatch):
    monkeypatch.setattr("app.ui.chat.RENDER_BUDGET", 30)
    monkeypatch.setattr("app.ui.chat.PRUNE_TO", 20)
    app = app_on(FakeSession(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        for n in range(45):
            await app.chat.add_notice(f"note {n}", code="bulk")
        notes = app.chat.notices("bulk")
        assert len(app.chat.items) <= 30 and notes[-1].text == "note 44"
        assert app.chat.pruned >= 15 and "earlier items are not shown" in str(
            app.chat._pruned_marker.render()
        )


async def test_model_switches_route_keeping_the_session(lab, tmp_path):
    other = Route(name="other", provider="lab", model="lab-1", base_url=lab.url, max_payload=512 * 1024)
    settings = lab_settings(lab)
    settings = settings.with_overrides(routes={**settings.routes, "other": other}, default_route="lab")
    app = make_app(settings, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "hello")
        session_id = app.session.engine.session.id
        assert "model: switch to other" in applicable_titles(app)
        await send(pilot, "/model other")
        assert app.session.engine.route.name == "other" and app.session.engine.session.id == session_id
        assert app.session.engine.session.route == "other"
        await send(pilot, "again")
        assert "turn 2" in app.chat.last_answer().raw


# -- the prompt -------------------------------------------------------------------------------------------
async def test_model_and_recall_complete_their_argument(lab, tmp_path):
    other = Route(name="other", provider="lab", model="lab-1", base_url=lab.url)
    settings = lab_settings(lab)
    settings = settings.with_overrides(routes={**settings.routes, "other": other}, default_route="lab")
    app = make_app(settings, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press(*"/model o")
        assert app.prompt.completions == [("/model other", "lab · lab-1")]
        await pilot.press("tab")
        assert app.prompt.text == "/model other "
        app.prompt.set_text("")
        session = app.session.engine.session
        entry = ArchiveEntry(archive_key("an old tool result"), "an old tool result", "microcompact", ("m1",))
        session.archive([entry])  # as the engine archives: the session is told, the database not read again
        await pilot.press(*f"/recall {entry.key[:3]}")
        assert app.prompt.completions == [
            (f"/recall {entry.key}", "microcompact · 18 B · an old tool result")
        ]
        await pilot.press("enter")  # completes first
        assert app.prompt.text == f"/recall {entry.key} "
        # a compaction (a new view with its archive entries) adds its keys, newest first
        app.prompt.set_text("")
        newer = ArchiveEntry(archive_key("a newer segment"), "a newer segment", "L3", ("m2",))
        session.commit_view(session.view.messages, [newer], reason="compaction")
        await pilot.press(*"/recall ")
        assert [word for word, _ in app.prompt.completions] == [
            f"/recall {newer.key}",
            f"/recall {entry.key}",
        ]


async def test_completion_offers_compact_for_co(tmp_path):
    assert "/compact" in [w for w, _ in complete_slash("/co")]
    app = app_on(FakeSession(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("/", "c", "o")
        words = [w for w, _ in app.prompt.completions]
        assert words[0] == "/compact" and "/cost" in words and "/context" in words
        assert app.query_one("#completions").display
        await pilot.press("tab")
        assert app.prompt.text == "/compact "
        assert not app.query_one("#completions").display


async def test_at_completes_workspace_paths_and_the_mention_is_attached(lab, tmp_path):
    ws = tmp_path / "ws"  # not tmp_path itself: the test's data folder lives there
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "parser.py").write_text("def parse():\n    return 42\n")
    app = make_app(lab_settings(lab), ws)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press(*"explain @")
        await until(pilot, lambda: app.prompt.file_matcher is not None, "the workspace's files")
        await pilot.press("s")
        assert [w for w, _ in app.prompt.completions] == ["@src/", "@src/parser.py"]
        await pilot.press("tab")  # a folder: completion goes on inside it
        assert app.prompt.text == "explain @src/"
        assert [w for w, _ in app.prompt.completions] == ["@src/parser.py"]
        await pilot.press("enter")  # Enter takes the highlighted path first
        assert app.prompt.text == "explain @src/parser.py " and not app.prompt.completions
        await pilot.press(*"please", "enter")
        await until(pilot, lambda: not app.busy and app.chat.last_answer() is not None, "the answer")
        master = app.session.engine.session.master
        assert master[1].meta.origin == "mention"
        assert "return 42" in master[2].tool_results[0].content
        block = app.chat._tools[master[1].tool_calls[0].id]
        assert block.tool_name == "read_file" and block.done and not block.is_error
        assert block.reason == "attached by you with @"


async def test_a_mention_outside_the_workspace_asks_in_the_chat(lab, tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    outside = tmp_path / "private.txt"
    outside.write_text("not for the model\n")
    app = make_app(lab_settings(lab), workspace)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, f"summarize @{outside}")
        await until(pilot, lambda: app.chat.pending_approval() is not None, "the approval prompt")
        block = app.chat.pending_approval()
        asked = str(block.query_one(".approval-why", Static).render())
        assert block.tool_name == "read_file" and f"@{outside} is outside the workspace" in asked
        await pilot.press("n")
        await settle(pilot)
        assert block.decision == "denied"
        result = app.session.engine.session.master[2].tool_results[0]
        assert result.is_error and "not for the model" not in result.content


async def test_a_pasted_log_is_shown_folded_but_sent_and_copied_whole(tmp_path):
    log = "\n".join(f'Traceback line {n}: File "x.py", line {n}, in f' for n in range(2000))
    fake = FakeSession(tmp_path, script=lambda prompt: say("read it"))
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        app.post_message(events.Paste(log))  # as the terminal driver delivers a bracketed paste
        await until(pilot, lambda: app.prompt.text == log, "the paste")
        await pilot.press("enter")
        await until(pilot, lambda: not app.busy and app.chat.last_answer() is not None, "the answer")
        item = next(i for i in app.chat.items if isinstance(i, UserItem))
        shown = item.body
        assert shown.startswith("Traceback line 0:") and "Traceback line 1999" not in shown
        assert shown.endswith(
            f"… (1,976 more lines, {len(log):,} characters in all; Ctrl+O, then Alt+C copies them)"
        )
        assert item.copy_text() == log
        assert fake.intents[-1] == ("submit", log)  # the model gets all of it


async def test_history_recalls_the_previous_prompt(tmp_path):
    app = app_on(FakeSession(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "first prompt")
        await send(pilot, "second prompt")
        assert app.prompt.text == ""
        await pilot.press("up")
        assert app.prompt.text == "second prompt"
        await pilot.press("up")
        assert app.prompt.text == "first prompt"
        await pilot.press("down")
        assert app.prompt.text == "second prompt"
        await pilot.press("down")
        assert app.prompt.text == ""
    # persisted per workspace in the data folder
    assert PromptHistory(history_path(tmp_path)).entries[-2:] == ["first prompt", "second prompt"]


async def test_newline_chord_and_enter_sends(tmp_path):
    fake = FakeSession(tmp_path)
    app = app_on(fake)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("a", "ctrl+j", "b")
        assert app.prompt.text == "a\nb"
        await pilot.press("enter")
        await settle(pilot)
        assert fake.intents[-1] == ("submit", "a\nb")


# -- keys, palette, themes, copy ------------------------------------------------------------------------------
async def test_palette_lists_only_applicable_commands(lab, tmp_path):
    app = make_app(lab_settings(lab), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        titles = applicable_titles(app)
        assert "cost: show" in titles and "help: show" in titles
        for absent in (
            "session: rewind compact",
            "turn: cancel",
            "cap: reset learned cap",
            "session: compact",
            "archive: recall segment",
            "model: switch route",
        ):
            assert absent not in titles, absent
        await send(pilot, "hello")
        titles = applicable_titles(app)
        assert "session: compact" in titles and "session: rewind compact" not in titles
        # the real palette shows the same list
        await pilot.press("ctrl+p")
        from textual.command import CommandList, CommandPalette

        palette = app.screen
        assert isinstance(palette, CommandPalette)
        listing = palette.query_one(CommandList)
        await until(pilot, lambda: listing.option_count > 0, "the palette's commands")
        shown = {
            str(listing.get_option_at_index(i).prompt).split("\n")[0] for i in range(listing.option_count)
        }
        assert "session: compact" in " ".join(shown)
        assert "rewind compact" not in " ".join(shown)
        await pilot.press("escape")


async def test_theme_is_persisted_and_applied(tmp_path):
    app = app_on(FakeSession(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        app.theme = "nord"
        await pilot.pause()
    assert State().get("theme") == "nord"
    again = app_on(FakeSession(tmp_path))
    async with again.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert again.theme == "nord"
    configured = app_on(FakeSession(tmp_path), load_settings().with_overrides(theme="gruvbox"))
    async with configured.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert configured.theme == "gruvbox"  # config wins over state


async def test_inspector_toggle_and_widen(tmp_path):
    app = app_on(FakeSession(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("f2")
        assert app.has_class("-hide-inspector") and not app.inspector.display
        await pilot.press("f2")
        await pilot.press("f3")
        assert app.has_class("-wide-inspector") and app.inspector.display


async def test_a_narrow_terminal_starts_with_the_inspector_hidden(tmp_path):
    app = app_on(FakeSession(tmp_path))
    async with app.run_test(size=(90, 30)) as pilot:
        await ready(pilot)
        assert app.has_class("-hide-inspector")
        assert app.chat.size.width > 80  # the chat has the room
        await pilot.press("f2")  # the user's choice wins
        await pilot.pause()
        assert not app.has_class("-hide-inspector")
        await pilot.resize_terminal(160, 48)  # wide again: shown
        await pilot.pause()
        assert not app.has_class("-hide-inspector")
        await pilot.resize_terminal(100, 48)  # narrow again: hidden again
        await pilot.pause()
        assert app.has_class("-hide-inspector")


async def test_copy_message_and_code_block(tmp_path, monkeypatch):
    monkeypatch.setattr("app.ui.copying.system_copy", lambda text: (None, ""))
    app = app_on(FakeSession(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "hello")
        await app.chat.add(AssistantItem("look:\n\n```python\nprint('hi')\n```\n"))
        await pilot.press("ctrl+o")
        assert app.focused is app.chat
        await pilot.press("alt+c")
        await until(pilot, lambda: app.last_copy is not None, "the copy")
        assert app.clipboard.startswith("look:")
        await pilot.press("alt+k")
        await until(pilot, lambda: app.clipboard == "print('hi')", "the code block copy")
        assert not app.last_copy.system_tool
        assert "OSC 52" in app.last_copy.describe("x") or "Could not copy" in app.last_copy.describe("x")
        await pilot.press("escape")
        assert app.focused is app.prompt


async def test_keymap_overrides_from_the_config_keys_table_apply(tmp_path):
    from app.config import load_settings

    config = tmp_path / "keys-config.toml"
    config.write_text('[keys]\n"app.inspector" = "f4"\n')
    settings = load_settings(config, env={})
    assert dict(settings.keys) == {"app.inspector": "f4"}
    app = app_on(FakeSession(tmp_path), settings, keymap=None)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("f4")
        assert app.has_class("-hide-inspector")


async def test_inspector_requests_reach_the_engine_and_the_clipboard(lab, tmp_path, monkeypatch):
    from app.ui.widgets.archive import RewindRequested
    from app.ui.widgets.common import CopyRequested
    from app.ui.widgets.inspector import Inspector

    monkeypatch.setattr("app.ui.copying.system_copy", lambda text: (None, ""))
    app = make_app(lab_settings(lab), tmp_path, inspector=Inspector(clock=lambda: 0.0))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        for _ in range(3):
            await send(pilot, "!big 12KB")
        await send(pilot, "/compact")
        views = len(app.session.engine.session.views)
        assert views > 1
        app.inspector.archive.post_message(RewindRequested())
        await until(pilot, lambda: len(app.session.engine.session.views) == views - 1, "the rewind")
        app.inspector.requests.post_message(CopyRequested("why it was rejected", what="request explanation"))
        await until(pilot, lambda: app.clipboard == "why it was rejected", "the copy")
        await pilot.press("alt+4")  # panel 4: the archive tab, with the keyboard
        await until(pilot, lambda: app.inspector.active_tab == "archive", "the archive tab")
        await until(pilot, lambda: app.focused is app.inspector.archive.table, "the archive's focus")
        await pilot.press("ctrl+o")
        assert app.focused is app.chat


async def test_archive_recall_goes_through_the_apps_busy_guard(lab, tmp_path):
    """The Archive panel only asks; the app refuses while something runs and recalls once idle."""
    from app.ui.widgets.archive import ArchiveRecallRequested

    app = make_app(lab_settings(lab), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        for _ in range(3):
            await send(pilot, "!big 12KB")
        await send(pilot, "/compact")
        session = app.session.engine.session
        key = session.store.archive_list(session.id, limit=1)[0].key
        before = len(session.master)
        app.activity = "turn"  # as while a turn streams
        assert app.busy and app.running == "turn"
        app.inspector.archive.post_message(ArchiveRecallRequested(key))
        await pilot.pause()
        assert len(session.master) == before  # refused: the conversation is not changed under a running turn
        app.activity = ""
        app.inspector.archive.post_message(ArchiveRecallRequested(key))
        await until(pilot, lambda: len(session.master) == before + 1, "the recall")
        assert session.master[-1].meta.origin == "recall"


def test_every_action_has_one_handler():
    from app.ui.actions import ACTIONS, HANDLERS, handles

    assert {action.id for action in ACTIONS} == set(HANDLERS)
    with pytest.raises(KeyError, match="has a handler already"):
        handles("compact")(lambda app, arg: None)


# -- sessions ------------------------------------------------------------------------------------------
async def test_resume_renders_the_master_log_and_sessions_screen_switches(lab, tmp_path):
    settings = lab_settings(lab)
    first = make_app(settings, tmp_path)
    async with first.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "remember the parser")
        first_id = first.session.engine.session.id
        await first.action_quit()
    app = make_app(settings, tmp_path, resume=first_id)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert app.session.engine.session.id == first_id
        assert [i.text for i in app.chat.items if isinstance(i, UserItem)] == ["remember the parser"]
        assert app.chat.notices("resume")
    fresh = make_app(settings, tmp_path)
    async with fresh.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert fresh.session.engine.session.id != first_id
        await send(pilot, "/sessions")
        from app.ui.screens.sessions import SessionsScreen

        assert isinstance(fresh.screen, SessionsScreen)
        ids = [row["id"] for row in fresh.screen.sessions]
        assert first_id in ids
        for _ in range(ids.index(first_id)):
            await pilot.press("down")
        await pilot.press("enter")
        await until(
            pilot,
            lambda: fresh.session is not None and fresh.session.engine.session.id == first_id,
            "the resume",
        )
        await until(pilot, fresh.engine_ready.is_set, "the resumed engine")
        await until(pilot, lambda: any(isinstance(i, UserItem) for i in fresh.chat.items), "the history")


# -- pure parts ----------------------------------------------------------------------------------------
def test_parse_slash():
    assert parse_slash("/compact focus on x") == ("compact", "focus on x")
    assert parse_slash("/rewind compact") == ("rewind", "")
    assert parse_slash("/cap reset") == ("cap_reset", "")
    assert parse_slash("/cap 128KB") == ("cap_set", "128KB")
    assert parse_slash("/recall <<ccr:0123456789abcdef>>") == ("recall", "<<ccr:0123456789abcdef>>")
    with pytest.raises(ValueError):
        parse_slash("/nope")


def test_the_shared_slash_words_are_the_tui_s_actions():
    """`-p` and the TUI read a slash line with one parser (app.model.slash); its table of words must
    be the TUI's action table's, or a command added to one would be unknown to the other."""
    from app.model.slash import SLASH_ACTIONS
    from app.ui.actions import ACTIONS

    assert SLASH_ACTIONS == {action.slash: action.id for action in ACTIONS if action.slash}


def test_code_blocks():
    assert code_blocks("a\n```py\nx = 1\n```\nb\n~~~\ny\n~~~\n") == ["x = 1", "y"]


def test_tool_block_without_app_keeps_its_state():
    block = ToolBlock("c1", "shell", {"command": "ls"})
    block.set_result(is_error=False, preview="a\nb", chars=3, spill_path=None)
    assert "result (3 chars)" in block.copy_text()


def test_a_tool_block_shows_a_change_of_state_in_one_restyle(monkeypatch):
    """Unfolded and failed at once: both classes change, the block (and all in it) is restyled once."""
    block = ToolBlock("c1", "shell", {"command": "ls"})
    restyles: list[bool] = []
    monkeypatch.setattr(block, "update_node_styles", lambda animate=True: restyles.append(animate))
    block.collapsed, block.decision = False, "denied"
    block.set_state_classes()
    assert restyles == [True]
    assert (
        block.has_class("-failed") and not block.has_class("-collapsed") and not block.has_class("-pending")
    )
    block.set_state_classes(update=False)  # nothing changed, and before mounting: no restyle either way
    assert restyles == [True]


def test_run_refuses_without_a_terminal(capsys, monkeypatch):
    from app.ui import run as run_module

    monkeypatch.setattr("sys.stdout", io.StringIO())
    args = SimpleNamespace(
        route=None,
        resume=None,
        continue_=False,
        max_payload=None,
        context_window=None,
        approval=None,
        workspace=None,
    )
    assert run_module.run(args) == 2
    assert "needs a terminal for the full-screen UI; use -p for one-shot" in capsys.readouterr().err


# -- one writer per session (issue 14, item 5) ------------------------------------------------------------
@pytest.fixture
def session_held_elsewhere():
    """A session whose lease a live other process holds (a `sleep` stands in for the other bulkhead)."""
    import subprocess

    from app.engine.session import Session
    from app.lease import Holder, process_start, this_process
    from app.model.messages import Message
    from app.store import Store

    store = Store()
    session = Session.create(store, route="lab", provider="lab", model="lab-1")
    session.append(Message.create("user", "the other bulkhead's question", turn=1))
    session.append(Message.create("assistant", "its answer", turn=1))
    other = subprocess.Popen(["sleep", "300"])
    store.acquire_lease(
        session.id,
        Holder(
            pid=other.pid,
            started=process_start(other.pid),
            host=this_process().host,
            acquired_at=0,
            what="the TUI",
        ),
    )
    try:
        yield store, session
    finally:
        other.kill()
        other.wait()
        store.close()


@pytest.mark.parametrize("choice", ["r", "f", "n"])
async def test_a_held_session_offers_read_only_fork_or_new(lab, tmp_path, session_held_elsewhere, choice):
    from app.engine.session import Session
    from app.ui.screens.lease import LeaseScreen

    store, held = session_held_elsewhere
    app = make_app(lab_settings(lab), tmp_path, resume=held.id)
    async with app.run_test(size=SIZE) as pilot:
        await until(
            pilot,
            lambda: isinstance(app.screen, LeaseScreen) and app.screen.query("#lease-body"),
            "the lease choice",
        )
        assert f"pid {held_pid(store, held.id)}" in str(app.screen.query_one("#lease-body").render())
        await pilot.press(choice)
        await ready(pilot)
        session = app.session.engine.session
        if choice == "r":
            assert session.id == held.id and session.read_only
            assert "READ-ONLY" in str(app.query_one("#topbar").render())
            await submit(pilot, "may I write?")
            await pilot.pause()
            assert not app.busy and len(Session.load(store, held.id).master) == 2
            assert app.chat.notices("read_only") and "--fork" in app.chat.notices("read_only")[-1].text
        elif choice == "f":
            assert session.id != held.id and not session.read_only
            assert [m.text for m in session.master] == ["the other bulkhead's question", "its answer"]
            await send(pilot, "in the fork")
            assert len(Session.load(store, held.id).master) == 2
        else:
            assert session.id != held.id and session.master == []


async def test_a_lease_left_on_another_machine_long_ago_can_be_taken_over_with_u(lab, tmp_path):
    """Issue 37: a lease from another host older than `lease_foreign_max_age` (a day) is offered for
    take-over; `u` breaks it and opens the session itself, writable, the lease now this process's."""
    import os
    import time

    from app.engine.session import Session
    from app.lease import Holder
    from app.model.messages import Message
    from app.store import Store
    from app.ui.screens.lease import LeaseScreen

    store = Store()
    session = Session.create(store, route="lab", provider="lab", model="lab-1")
    session.append(Message.create("user", "asked on the laptop", turn=1))
    session.append(Message.create("assistant", "answered there", turn=1))
    session.flush()
    gone = Holder(
        pid=4242, started="x:1", host="other-laptop", acquired_at=time.time() - 3 * 86400, what="the TUI"
    )
    assert store.acquire_lease(session.id, gone) is None
    try:
        app = make_app(lab_settings(lab), tmp_path, resume=session.id)
        async with app.run_test(size=SIZE) as pilot:
            await until(
                pilot,
                lambda: isinstance(app.screen, LeaseScreen) and app.screen.query("#take-over"),
                "the take-over offer",
            )
            assert "other-laptop" in str(app.screen.query_one("#lease-body").render())
            await pilot.press("u")
            await ready(pilot)
            assert app.session.engine.session.id == session.id and not app.session.engine.session.read_only
            assert store.lease_holder(session.id).pid == os.getpid()
            await send(pilot, "and now here")
            assert [m.text for m in app.session.engine.session.master][:2] == [
                "asked on the laptop",
                "answered there",
            ]
    finally:
        store.close()


def held_pid(store, session_id: str) -> int:
    return store.lease_holder(session_id).pid


async def test_a_full_disk_during_a_turn_is_a_sentence_in_the_chat(lab, tmp_path):
    app = make_app(lab_settings(lab), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        store = app.session.engine.session.store
        pages = store.query("PRAGMA page_count")[0][0]
        store.query(f"PRAGMA max_page_count = {pages + 1}")  # SQLite's own "database or disk is full"
        await submit(pilot, "a long prompt " * 20_000)
        await until(pilot, lambda: app.chat.notices("error"), "the error notice")
        text = app.chat.notices("error")[0].text
        assert "is full" in text and "Free some space" in text
        assert "OperationalError" not in text and "Traceback" not in text and "sqlite3" not in text
        assert not app.busy
