"""SVG snapshots of the main states: empty start with the lab notice, an answered turn, an approval
prompt, the help screen, the sessions screen.

Deterministic by construction: a fixed terminal size, the prompt's cursor blink off, a fixed clock
for the app and the inspector (UTC), a fixed config path (the help names it), the inspector on a
tab without latencies, and waits that poll state between frames — never a sleep.
Update with `pytest tests/ui/test_app_snapshots.py --snapshot-update`, then look at the SVGs.
"""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

import pytest

from app.config import load_settings
from app.engine.session import Session
from app.model.messages import Message
from app.store import Store
from app.ui.app import BulkheadApp
from app.ui.headless import ready, settle, until
from app.ui.widgets.inspector import Inspector
from tests.ui.conftest import lab_settings

SIZE = (160, 48)
NOW = 1_767_225_600.0  # 2026-01-01 00:00:00 UTC


def clock() -> float:
    return NOW


@pytest.fixture(autouse=True)
def fixed_config_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The help screen names keys.toml beside config.toml: keep that path the same on every machine."""
    monkeypatch.setattr(
        "app.ui.view_actions.config_path", lambda: Path("/home/you/.config/bulkhead/config.toml")
    )


def make_app(settings, tmp_path, **kwargs) -> BulkheadApp:
    return BulkheadApp(
        settings,
        workspace=tmp_path,
        cursor_blink=False,
        keymap={},
        clock=clock,
        inspector=Inspector(clock=clock, tz=UTC, initial_tab="cost"),
        **kwargs,
    )


def test_empty_start_with_the_lab_notice(snap_compare, tmp_path):
    """Nothing configured: the built-in lab model, said in a distinct notice."""
    app = make_app(load_settings(), tmp_path)
    assert snap_compare(app, terminal_size=SIZE, run_before=ready)


def test_answered_turn(snap_compare, lab, tmp_path):
    app = make_app(lab_settings(lab), tmp_path)

    async def run_before(pilot) -> None:
        await ready(pilot)
        app.prompt.set_text("What did you receive?")
        await pilot.press("enter")
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_approval_prompt(snap_compare, lab, tmp_path):
    app = make_app(lab_settings(lab, approval="auto-read"), tmp_path)

    async def run_before(pilot) -> None:
        await ready(pilot)
        app.prompt.set_text("!shell echo hi")
        await pilot.press("enter")
        await until(pilot, lambda: app.chat.pending_approval() is not None, "the approval prompt")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_help_screen(snap_compare, lab, tmp_path):
    app = make_app(lab_settings(lab), tmp_path)

    async def run_before(pilot) -> None:
        await ready(pilot)
        await pilot.press("f1")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_sessions_screen(snap_compare, lab, tmp_path):
    store = Store()
    seeded = [
        ("s_demo_parser", "fix the failing parser test", 3600 * 2),
        ("s_demo_gateway", "why does the gateway reject big requests?", 3600 * 26),
        ("s_demo_refactor", "refactor the retry policy", 60 * 5),
    ]
    for session_id, title, _age in seeded:
        store.create_session(
            session_id,
            title=title,
            route="lab",
            provider="lab",
            model="lab-1",
            workspace=str(tmp_path),
            initial_view_id=f"v_{session_id}",
        )
        session = Session.load(store, session_id)
        session.append(Message.create("user", title, turn=1, created_at=NOW))
        session.append(
            Message.create("assistant", f"(lab) about: {title}", turn=1, origin="model", created_at=NOW)
        )

    def pin_times() -> None:
        with store.transaction() as conn:
            for session_id, _title, age in seeded:
                conn.execute(
                    "UPDATE sessions SET created_at = ?, updated_at = ? WHERE id = ?",
                    (NOW - age - 60, NOW - age, session_id),
                )

    pin_times()
    app = make_app(lab_settings(lab), tmp_path, resume="s_demo_refactor", store=store)

    async def run_before(pilot) -> None:
        await ready(pilot)
        pin_times()
        await pilot.press("f5")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
