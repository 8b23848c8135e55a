"""The small things of issue 16: archive ages that keep up, "1 call", /context without a cap, a shell
stopped by Esc not shown as done, command feedback kept in the transcript, F2 where the inspector
cannot fit says why. What is the UI's alone (command feedback, F2, a screenshot) runs on a scripted session
(`tests/ui/fake_session.py`); what the engine decides (cost, context, a shell, a content block) on the lab."""

from __future__ import annotations

from app.config import Route
from app.model.archive import ArchiveEntry, archive_key
from app.model.events import Compaction
from app.ui.chat_items import ReportItem
from app.ui.headless import ready, settle, until
from tests.ui.conftest import lab_settings
from tests.ui.fake_session import FakeSession, app_on
from tests.ui.test_app import approval_for, make_app, send, submit

SIZE = (160, 45)
NOW = 1_767_225_600.0


async def test_archive_ages_keep_up_with_the_clock(lab, tmp_path, monkeypatch):
    from app.ui.widgets import archive as archive_module
    from app.ui.widgets.inspector import Inspector

    monkeypatch.setattr(archive_module, "AGE_REFRESH_S", 0.05)
    now = [NOW]
    app = make_app(
        lab_settings(lab),
        tmp_path,
        clock=lambda: now[0],
        inspector=Inspector(clock=lambda: now[0], initial_tab="archive"),
    )
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        session = app.session.engine.session
        entry = ArchiveEntry(
            archive_key("an old tool result"), "an old tool result", "microcompact", ("m1",), created_at=NOW
        )
        session.store.archive_put(session.id, [entry])
        app.inspector.dispatch(
            Compaction("auto", "microcompact", "applied", 2000, 1000, 3, 3, archive_keys=(entry.key,))
        )
        panel = app.inspector.archive
        await until(pilot, lambda: entry.key in panel.row_keys, "the archived row")
        assert panel.table.get_cell(entry.key, "age") == "0s"
        now[0] += 74
        await until(pilot, lambda: panel.table.get_cell(entry.key, "age") == "1m", "the age to keep up")


async def test_cost_says_1_call_and_context_says_what_no_cap_means(lab, tmp_path):
    app = make_app(lab_settings(lab), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        for _ in range(4):
            await send(pilot, "!big 12KB")
        await send(pilot, "/compact")
        assert app.session.engine.session.counters.summarizer_calls == 1
        await send(pilot, "/cost")
        await send(pilot, "/context")
        cost, context = (dict(item.rows) for item in app.chat.items if isinstance(item, ReportItem))
        assert cost["summarizer"].startswith("1 call · ")
        assert context["cap"].startswith("none known — a request over 2.5 MB warns once")
        assert "none: no cap known" not in context["cap"]


async def test_a_shell_stopped_by_escape_is_not_shown_as_done(lab, tmp_path):
    app = make_app(lab_settings(lab, approval="auto-read"), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        block = await approval_for(pilot, "!shell sleep 30")
        await pilot.press("y")
        await until(pilot, lambda: "running" in block._header().plain, "the shell to run")
        assert "✓" not in block._header().plain
        await pilot.press("escape")
        await settle(pilot)
        header = block._header().plain
        assert "✖ shell sleep 30" in header and "stopped before it finished" in header and "✓" not in header
        assert block.has_class("-failed")


async def test_command_feedback_stays_in_the_transcript(tmp_path):
    app = app_on(FakeSession(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await submit(pilot, "/nope")
        await until(pilot, lambda: app.chat.notices("command"), "the unknown command's notice")
        assert app.chat.notices("command")[-1].text.startswith("unknown command /nope — known: ")
        assert app.prompt.text == "/nope"  # back in the prompt to fix
        app.prompt.set_text("")
        await send(pilot, "hello")
        await submit(pilot, "/undo-all")
        await until(pilot, lambda: len(app.chat.notices("command")) == 2, "the second notice")
        first, second = app.chat.notices("command")
        assert first.text.startswith("unknown command /nope") and second.text.startswith(
            "unknown command /undo-all"
        )


async def test_model_switch_is_said_in_the_transcript(lab, tmp_path):
    other = Route(name="other", provider="lab", model="lab-1", base_url=lab.url)
    settings = lab_settings(lab)
    settings = settings.with_overrides(routes={**settings.routes, "other": other}, default_route="lab")
    app = make_app(settings, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "/model other")
        await until(pilot, lambda: app.session.engine.route.name == "other", "the switch")
        assert any("other" in n.text for n in app.chat.notices())
        await send(pilot, "/model nowhere")
        await until(pilot, lambda: app.chat.notices("model"), "the error, in the chat")
        assert "nowhere" in app.chat.notices("model")[-1].text


async def test_f2_in_a_tiny_terminal_says_why_nothing_shows(tmp_path):
    app = app_on(FakeSession(tmp_path))
    notes: list[str] = []
    async with app.run_test(size=(40, 12)) as pilot:
        await ready(pilot)
        original = app.notify
        app.notify = lambda message, **kw: (notes.append(message), original(message, **kw))[1]
        await pilot.press("f2")
        assert app.has_class("-hide-inspector")
        assert any("40×12" in n and "needs 80 columns" in n for n in notes)
        notes.clear()
        await pilot.press("ctrl+t")
        assert app.has_class("-hide-inspector") and notes


async def test_a_content_block_names_one_key_that_starts_finding_the_refused_text(lab, tmp_path):
    """Issue 36: the notice of a content block says F8; the key (shown in the footer only then) opens the
    /blocked question — how many probes, what they carry — and a turn that answers takes it away again."""
    from app.engine.offline_waf import offline_unavailable
    from app.ui.screens.confirm import ConfirmScreen

    lab.configure(gateway="modsecurity")
    (tmp_path / "db.py").write_text(
        "query = \"SELECT * FROM users WHERE name = '\" + name + \"' OR '1'='1'\"\n"
    )
    app = make_app(lab_settings(lab), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "hello")
        assert app.check_action("command", ("blocked",)) is False  # nothing blocked yet: no key
        await send(pilot, "!read db.py")
        await until(pilot, lambda: app.content_blocked, "the content block")
        notices = [n.text for n in app.chat.notices("rejection")]
        assert any("F8 (or /blocked) finds the refused text" in text for text in notices), notices
        assert app.check_action("command", ("blocked",)) is True
        await pilot.press("f8")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the /blocked question")
        question = str(app.screen.query_one("#confirm-question").render())
        # with the offline-waf extra the local CRS finds it first (nothing sent): the question is to withhold it
        assert ("Withhold it from the model?" if not offline_unavailable() else "probe requests") in question
        await pilot.press("escape")
        lab.configure(gateway="none")  # the gateway goes away: the next turn answers, the key goes with it
        await send(pilot, "hello again")
        assert app.check_action("command", ("blocked",)) is False


async def test_a_refused_prompt_is_taken_back_into_the_box_and_the_next_prompt_goes_through(lab, tmp_path):
    """Issue 36: the refused text is in the prompt just sent. F8 finds it; the answer takes the prompt out
    of the conversation and back into the box — the next prompt no longer carries it, so it is answered."""
    from app.engine.offline_waf import offline_unavailable
    from app.ui.screens.confirm import ConfirmScreen

    lab.configure(gateway="modsecurity")
    app = make_app(lab_settings(lab), tmp_path)
    refused = "why is this slow? query = \"SELECT * FROM users WHERE name = '\" + name + \"' OR '1'='1'\""
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "hello")
        await send(pilot, refused)
        await until(pilot, lambda: app.content_blocked, "the content block")
        await pilot.press("f8")
        if offline_unavailable():  # the live probes are asked for first
            await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the probe question")
            await pilot.press("y")
        await until(
            pilot,
            lambda: (
                isinstance(app.screen, ConfirmScreen)
                and "Take the prompt back" in str(app.screen.query_one("#confirm-question").render())
            ),
            "the take-back question",
        )
        await pilot.press("y")
        await until(pilot, lambda: app.prompt.text == refused, "the prompt back in the box")
        app.prompt.set_text("")
        await send(pilot, "hello again")
        await until(pilot, lambda: "You said: “hello again”" in (app.chat_last_answer() or ""), "the answer")


async def test_a_screenshot_without_a_downloads_folder_goes_to_the_working_folder(tmp_path, monkeypatch):
    """The palette's Screenshot failed ("Failed to save screenshot") where ~/Downloads does not exist."""
    monkeypatch.setattr("platformdirs.user_downloads_path", lambda: tmp_path / "no-such-Downloads")
    app = app_on(FakeSession(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        app.action_screenshot()
        await until(pilot, lambda: list(tmp_path.glob("*.svg")), "the screenshot in the working folder")
        assert not (tmp_path / "no-such-Downloads").exists()


async def test_context_names_a_learned_cap_once(lab, tmp_path):
    """`/context` said "learned: learned … from a 413 rejection" (issue 40): the source is said once."""
    lab.configure(gateway="nginx", cap="48KB")
    app = make_app(lab_settings(lab), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "!big 60KB")
        await send(pilot, "and again")  # over the cap: refused, the cap learned, the ladder recovers
        assert app.session.engine.cap_info().source == "learned"
        await send(pilot, "/context")
        context = dict([i for i in app.chat.items if isinstance(i, ReportItem)][-1].rows)
        assert " — learned " in context["cap"] and "learned: learned" not in context["cap"]
        assert "rejection" in context["cap"]
