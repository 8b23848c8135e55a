"""A session that cannot open never hangs the TUI: the chat says why and what to do, `/model` and
`/sessions` are the way out, what was typed stays in the prompt, and quitting exits with code 2 as
`-p` does."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from app.config import Route, load_settings
from app.ui.headless import ready, settle, until
from tests.ui.conftest import lab_settings
from tests.ui.test_app import make_app, submit
from tests.ui.test_typing import burst

SIZE = (160, 45)
ROOT = Path(__file__).resolve().parents[2]


def keyless_settings(lab=None):
    """A default route to Anthropic with no key anywhere (and, when given, a lab route beside it)."""
    routes = {
        "work": Route(
            name="work",
            provider="anthropic",
            model="claude-sonnet-4-5",
            base_url="https://gateway.invalid/anthropic",
        )
    }
    if lab is not None:
        routes["lab"] = Route(name="lab", provider="lab", model="lab-1", base_url=lab.url)
    return load_settings().with_overrides(routes=routes, default_route="work")


async def test_a_route_without_a_key_says_what_to_do_and_model_opens_another_route(
    lab, tmp_path, monkeypatch
):
    app = make_app(keyless_settings(lab), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.chat.notices("session"), "the reason the session did not open")
        text = app.chat.notices("session")[0].text
        assert "routes.work needs an API key" in text and "/model ROUTE" in text and "/sessions" in text
        assert "exit code 2" in text
        topbar = str(app.query_one("#topbar").render())
        assert "opening" not in topbar and "could not open" in topbar
        # a message is not swallowed by a session that is not there
        await submit(pilot, "my question")
        await until(pilot, lambda: len(app.chat.notices("session")) == 2, "the answer to the message")
        assert "no session is open" in app.chat.notices("session")[-1].text
        assert app.prompt.text == "my question"
        # /model to a route that works opens the session there; the question can then be asked
        app.prompt.set_text("")
        await submit(pilot, "/model lab")
        await ready(pilot)
        assert app.session.engine.route.name == "lab" and not app.open_error
        assert "lab" in str(app.query_one("#topbar").render())
        await submit(pilot, "my question")
        await settle(pilot)
        assert app.session.engine.session.master[0].text == "my question"


async def test_resume_of_an_unknown_session_offers_sessions_and_quitting_exits_2(lab, tmp_path):
    app = make_app(lab_settings(lab), tmp_path, resume="s_nope")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.chat.notices("session"), "the reason the session did not open")
        assert "no session 's_nope'" in app.chat.notices("session")[0].text
        await submit(pilot, "/sessions")
        from app.ui.screens.sessions import SessionsScreen

        await until(pilot, lambda: isinstance(app.screen, SessionsScreen), "the sessions screen")
        await pilot.press("escape")
        await pilot.press("ctrl+q")
        await until(pilot, lambda: not app.is_running, "the app to exit")
    assert app.return_code == 2


async def test_model_after_an_unknown_resume_opens_a_new_session(lab, tmp_path):
    app = make_app(lab_settings(lab), tmp_path, resume="s_nope")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.chat.notices("session"), "the reason the session did not open")
        await submit(pilot, "/model lab")
        await ready(pilot)
        assert app.session.engine.session.id != "s_nope" and not app.session.engine.session.master


async def test_messages_typed_while_it_opens_come_back_to_the_prompt_when_it_fails(tmp_path, monkeypatch):
    from app.engine import bootstrap

    release = threading.Event()
    real_open = bootstrap.open_engine

    def slow_open(*args, **kwargs):
        release.wait(60)
        return real_open(*args, **kwargs)

    monkeypatch.setattr(bootstrap, "open_engine", slow_open)
    app = make_app(keyless_settings(), tmp_path)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.focused is app.prompt, "the first frame")
            burst(app, "first question", "enter", "second question", "enter")
            await until(pilot, lambda: "2 messages" in app.prompt_box.waiting, "both messages waiting")
            release.set()
            await until(pilot, lambda: app.chat.notices("session"), "the failure")
            await until(
                pilot, lambda: app.prompt.text == "first question\nsecond question", "the messages back"
            )
            assert not app.prompt_box.waiting
    finally:
        release.set()


def test_print_mode_with_an_unknown_resume_exits_2_with_one_line(tmp_path):
    config = tmp_path / "empty.toml"
    config.write_text("", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(BULKHEAD_HOME=str(tmp_path / "home"), BULKHEAD_CONFIG=str(config), PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-m", "app", "-p", "hi", "--resume", "s_nope"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "bulkhead: no session 's_nope'; `bulkhead sessions list` shows them"
    )
    assert "Traceback" not in done.stderr
