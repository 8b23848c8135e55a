"""`bulkhead "prompt"` opens the TUI with the prompt sent (issue 40 item 6), from the parsed command line."""

from __future__ import annotations

from app.cli import build_parser, split_prompt
from app.ui.headless import ready, settle, until
from app.ui.run import build_app


def app_for(*argv: str):
    parser = build_parser()
    rest, prompt = split_prompt(parser, list(argv))
    args = parser.parse_args(rest)
    args.initial_prompt = prompt
    return build_app(args, cursor_blink=False, keymap={})


async def test_a_prompt_on_the_command_line_is_sent_when_the_tui_opens(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = app_for("fix the failing test", "--approval", "never-ask")
    async with app.run_test(size=(160, 45)) as pilot:
        await ready(pilot)
        await until(pilot, lambda: bool(app.chat.answers()), "the answer")
        await settle(pilot)
        assert "fix the failing test" in app.chat.answers()[-1].raw  # the lab repeats what it received
        assert app.prompt.text == "" and app.focused is app.prompt


async def test_a_slash_command_on_the_command_line_runs_as_typed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    app = app_for("/approval auto-edit")
    async with app.run_test(size=(160, 45)) as pilot:
        await ready(pilot)
        await until(
            pilot,
            lambda: app.session is not None and app.session.engine.settings.approval == "auto-edit",
            "the mode",
        )
        assert not app.chat.answers()  # a command, not a message to the model
