"""`bulkhead` with no sub-command: the full-screen TUI.

It refuses, clearly, when stdout is not a terminal (a pipe, a file, CI): the one-shot mode
(`bulkhead -p`) is the way to script bulkhead.
"""

from __future__ import annotations

import sys

NOT_A_TERMINAL = "bulkhead needs a terminal for the full-screen UI; use -p for one-shot (bulkhead -p \"…\")"


def run(args) -> int:
    if not sys.stdout.isatty() or not sys.stdin.isatty():
        print(NOT_A_TERMINAL, file=sys.stderr)
        return 2
    from app.commands.oneshot import settings_flags
    from app.config import load_settings

    settings = load_settings(flags=settings_flags(args))
    from app.ui.app import BulkheadApp

    app = BulkheadApp(settings, route_name=args.route, resume=args.resume, continue_=args.continue_,
                      workspace=args.workspace, model=getattr(args, "model", None))
    code = app.run()
    return int(code or 0)
