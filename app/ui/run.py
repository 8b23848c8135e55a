"""`bulkhead` with no sub-command: the full-screen TUI.

It refuses, clearly, when stdout is not a terminal (a pipe, a file, CI): the one-shot mode
(`bulkhead -p`) is the way to script bulkhead.
"""

from __future__ import annotations

import sys

from app.textsafe import display_line

NOT_A_TERMINAL = 'bulkhead needs a terminal for the full-screen UI; use -p for one-shot (bulkhead -p "…")'


def build_app(args, **options):
    """The TUI for the parsed command line `args` (the same app `run` runs; tests drive it with Pilot).
    `options`: more keywords for `BulkheadApp` (tests: cursor_blink, keymap)."""
    from app.commands import settings_flags
    from app.config import load_settings

    settings = load_settings(flags=settings_flags(args))
    from app.ui.app import BulkheadApp

    return BulkheadApp(
        settings,
        route_name=args.route,
        resume=args.resume,
        continue_=args.continue_,
        workspace=args.workspace,
        fork=getattr(args, "fork", False),
        read_only=getattr(args, "read_only", False),
        model=getattr(args, "model", None),
        ask_workspace=not args.workspace,
        initial_prompt=getattr(args, "initial_prompt", "") or "",
        **options,
    )


def run(args) -> int:
    if not sys.stdout.isatty() or not sys.stdin.isatty():
        print(NOT_A_TERMINAL, file=sys.stderr)
        return 2
    app = build_app(args)
    code = app.run()
    if app.open_error and app.session is None:  # quit without a session: say why on the terminal too
        print(f"bulkhead: {app.open_error}", file=sys.stderr)
    if app.exit_error:
        print(f"bulkhead: {display_line(app.exit_error)}", file=sys.stderr)
    hint = exit_hint(app.exit_session)
    if hint:
        print(hint)
    return int(code or 0)


def exit_hint(session: tuple[str, int] | None) -> str:
    """What the terminal shows after the TUI: how to pick the session up again (if it has anything)."""
    if not session or not session[1]:
        return ""
    session_id, messages = session
    return (
        f"bulkhead: session {session_id} kept ({messages:,} messages) — resume with bulkhead -c "
        f"(or bulkhead --resume {session_id})"
    )
