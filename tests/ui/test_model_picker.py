"""/model: a picker of every route's models (listed by each endpoint, in workers, with window and output
cap), the choice remembered per route in state.toml; --model overrides for one run (TUI and -p)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from textual.widgets import Input

from app.config import Route
from app.state import State
from app.ui.headless import ready, until
from app.ui.screens.models import ModelScreen
from tests.ui.conftest import lab_settings
from tests.ui.test_app import SIZE, make_app, send

REPO = Path(__file__).resolve().parents[2]


def two_routes(lab):
    settings = lab_settings(lab)
    compat = Route(name="compat", provider="openai", model="lab-1", base_url=f"{lab.url}/v1")
    broken = Route(name="broken", provider="openai", model="qwen2.5-coder", base_url="http://127.0.0.1:9/v1")
    return settings.with_overrides(
        routes={**settings.routes, "compat": compat, "broken": broken}, default_route="lab"
    )


async def open_picker(pilot) -> ModelScreen:
    """/model in a ready app, once every route's list is in."""
    app = pilot.app
    await ready(pilot)
    await send(pilot, "/model")
    await until(pilot, lambda: isinstance(app.screen, ModelScreen), "the model picker")
    picker = app.screen
    await until(pilot, lambda: not picker.pending, "every route's list")
    return picker


async def test_the_picker_lists_each_routes_models_and_remembers_the_choice(lab, tmp_path):
    settings = two_routes(lab)
    app = make_app(settings, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        picker = await open_picker(pilot)
        rows = {(r["route"], r["model"]): r for r in picker.rows if not r["error"]}
        assert {
            ("lab", "lab-1"),
            ("lab", "lab-1-mini"),
            ("compat", "lab-1"),
            ("compat", "lab-1-mini"),
            ("broken", "qwen2.5-coder"),
        } <= set(rows)
        assert rows[("lab", "lab-1-mini")]["window"] == 200_000  # the catalog's
        assert (
            rows[("compat", "lab-1-mini")]["window"] == lab.config.effective_window
        )  # what the endpoint said
        assert "could not list" in next(
            r["note"] for r in picker.rows if r["error"] and r["route"] == "broken"
        )
        assert "could not list theirs" in str(picker.query_one("#models-title").render())
        await pilot.press(*"1-mini")  # filter ("mini" alone is in "deterministic" too)
        assert {r["model"] for r in picker.shown if not r["error"]} == {"lab-1-mini"}
        picker.table.move_cursor(
            row=[(r["route"], r["model"]) for r in picker.shown].index(("lab", "lab-1-mini"))
        )
        await pilot.press("enter")
        await until(pilot, lambda: app.session.engine.route.model == "lab-1-mini", "the new model")
        assert State().chosen_model("lab") == "lab-1-mini"
        await send(pilot, "hello")
        assert lab.requests()[-1]["model"] == "lab-1-mini"
        await app.action_quit()
    again = make_app(settings, tmp_path)
    async with again.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert again.session.engine.route.model == "lab-1-mini"
        assert any("chosen with /model" in n.text for n in again.chat.notices())
        await again.action_quit()


async def test_typing_on_the_list_goes_on_filtering(lab, tmp_path):
    """Once ↑ / ↓ has moved to the list, typed letters go on filtering (they went nowhere)."""
    app = make_app(two_routes(lab), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        picker = await open_picker(pilot)
        await pilot.press(*"lab-1", "down")
        assert picker.focused is picker.table
        await pilot.press(*"-mini")
        assert picker.query_one("#models-filter", Input).value == "lab-1-mini"
        assert {r["model"] for r in picker.shown if not r["error"]} == {"lab-1-mini"}
        await app.action_quit()


async def test_model_flag_overrides_for_one_run(lab, tmp_path):
    app = make_app(lab_settings(lab), tmp_path, model="lab-1-mini")
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert (
            app.session.engine.route.model == "lab-1-mini"
            and app.session.engine.session.model == "lab-1-mini"
        )
        assert any("for this run (--model" in n.text for n in app.chat.notices())
        await send(pilot, "hello")
        assert lab.requests()[-1]["model"] == "lab-1-mini"
        assert State().chosen_model("lab") is None  # not remembered


def test_print_mode_takes_model(tmp_path):
    """`bulkhead -p hello -m lab-1-mini` on the built-in lab: the session records that model."""
    (tmp_path / "c.toml").write_text("")
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    env.update(
        PYTHONPATH=str(REPO), BULKHEAD_HOME=str(tmp_path / "home"), BULKHEAD_CONFIG=str(tmp_path / "c.toml")
    )
    done = subprocess.run(
        [sys.executable, "-m", "app", "-p", "hello", "-m", "lab-1-mini", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert "lab-1-mini for this run" in done.stdout
    listed = subprocess.run(
        [sys.executable, "-m", "app", "sessions", "list", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert json.loads(listed.stdout)[0]["model"] == "lab-1-mini"
