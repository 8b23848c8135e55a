"""`bulkhead -p PROMPT [--json]`: one turn, the answer on stdout, notices on stderr.

Piped stdin is appended to the prompt. With `--json`, stdout carries one JSON object per
engine event and finally `{"type": "result", "text", "session_id", "outcome"}`. Tools that
need approval are asked about on the terminal when there is one, denied otherwise
(unless `--yes`). The exit code is 0 for an answer, 1 for a failure or a partial answer.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from app.config import load_settings
from app.engine.events import (
    CapLearned,
    Compaction,
    CompactionPhase,
    Event,
    HookRun,
    Notice,
    RecoveryStep,
    Rejection,
    Retry,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from app.sizes import format_size

_LEVEL_MARK = {"info": "ℹ", "warn": "⚠", "error": "✖"}


def settings_flags(args) -> dict:
    return {"max_payload": args.max_payload, "context_window": args.context_window, "approval": args.approval,
            "workspace": args.workspace}


_stdout_midline = False  # the answer's last line on stdout is not finished yet


def _stderr(line: str) -> None:
    """A notice line; when both streams are this terminal, start it on a line of its own."""
    global _stdout_midline
    if _stdout_midline and sys.stdout.isatty() and sys.stderr.isatty():
        sys.stdout.write("\n")
        sys.stdout.flush()
        _stdout_midline = False
    print(line, file=sys.stderr, flush=True)


def text_printer(event: Event) -> None:
    """Human output: answer text on stdout, everything else as one line on stderr."""
    global _stdout_midline
    if isinstance(event, TextDelta):
        sys.stdout.write(event.text)
        sys.stdout.flush()
        _stdout_midline = not event.text.endswith("\n")
    elif isinstance(event, Notice):
        _stderr(f"{_LEVEL_MARK.get(event.level, 'ℹ')} {event.text}")
    elif isinstance(event, Rejection):
        verb = "rejected" if event.status is not None else "failed"  # no status: no answer came back
        _stderr(f"⚠ {verb} ({event.kind}, {format_size(event.bytes)}): {event.reason}")
    elif isinstance(event, Retry):
        _stderr(f"↻ {event.kind}: retry {event.attempt}/{event.max_attempts} in {event.delay_s:.1f}s")
    elif isinstance(event, RecoveryStep):
        _stderr(f"⛑ recovery L{event.level} attempt {event.attempt}/{event.max_attempts}: {event.outcome} — "
                f"{event.reason}")
    elif isinstance(event, CapLearned) and event.assumed:
        pass  # the notice says it
    elif isinstance(event, CompactionPhase):
        _stderr(f"  {event.text}")
    elif isinstance(event, Compaction) and event.outcome != "applied":
        _stderr(f"  compaction ({event.trigger}): {event.outcome}")
    elif isinstance(event, ToolCallStarted):
        _stderr(f"→ {event.name} {json.dumps(event.args, ensure_ascii=False)[:160]}")
    elif isinstance(event, ToolCallFinished):
        mark = "✖" if event.is_error else "✓"
        _stderr(f"  {mark} {event.name}: {event.chars:,} chars")
    elif isinstance(event, HookRun) and event.decision != "ok":
        _stderr(f"⚓ hook {event.event} ({event.command}): {event.decision} {event.output[:200]}")


def json_printer(event: Event) -> None:
    sys.stdout.write(json.dumps(event.to_json(), ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def _terminal_approver():
    """Ask on the controlling terminal (stdin may be a pipe); None when there is no terminal."""
    try:
        tty = open("/dev/tty", "r+", encoding="utf-8")  # noqa: SIM115 - kept open for the session
    except OSError:
        return None
    if not os.isatty(tty.fileno()):
        return None

    async def approve(name: str, args: dict, why: str) -> bool:
        def ask() -> bool:
            tty.write(f"\n? {why}\n  allow? [y/N] ")
            tty.flush()
            return tty.readline().strip().lower() in ("y", "yes")

        return await asyncio.to_thread(ask)

    return approve


def read_prompt(args) -> str:
    prompt = args.prompt or ""
    if not sys.stdin.isatty():
        piped = sys.stdin.read()
        if piped.strip():
            prompt = f"{prompt}\n\n{piped}" if prompt else piped
    return prompt


def run(args) -> int:
    from app.engine.bootstrap import open_engine

    settings = load_settings(flags=settings_flags(args))
    prompt = read_prompt(args)
    if not prompt.strip():
        _stderr("bulkhead: nothing to ask — give a prompt: bulkhead -p \"…\" (or pipe text in)")
        return 2
    if args.yes:
        async def approver(name: str, tool_args: dict, why: str) -> bool:
            return True
    else:
        approver = _terminal_approver()
    engine, choice, resumed = open_engine(settings, route_name=args.route, resume=args.resume,
                                          continue_=args.continue_, approver=approver)
    if prompt.startswith("/"):  # a custom command from .bulkhead/commands, .claude/commands or the config folder
        from app.engine.custom_commands import expand_slash

        prompt = expand_slash(prompt, engine.workspace) or prompt
    printer = json_printer if args.json else text_printer
    engine.session.bus.subscribe(printer)
    for note in choice.notices:
        printer(Notice(note, code="lab" if choice.lab else "route"))

    async def main() -> int:
        await engine.start(resumed=resumed)
        try:
            result = await engine.submit(prompt)
        finally:
            await engine.close("exit")
        if args.json:
            json_printer_result = {"type": "result", "text": result.text, "session_id": engine.session.id,
                                   "outcome": result.outcome, "error": result.error}
            sys.stdout.write(json.dumps(json_printer_result, ensure_ascii=False) + "\n")
        else:
            if result.text and not result.text.endswith("\n"):
                sys.stdout.write("\n")
            if result.outcome in ("failed", "partial"):  # the advice names TUI commands: say where they are
                _stderr(f"  the session is kept: `bulkhead --resume {engine.session.id}` opens it (/retry, "
                        f"/compact, /model work there); `bulkhead -c -p …` continues it here")
        sys.stdout.flush()
        return 0 if result.outcome == "answered" else 1

    return asyncio.run(main())
