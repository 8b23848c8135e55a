"""`bulkhead -p PROMPT [--json]`: one turn, the answer on stdout, notices on stderr.

Piped stdin is appended to the prompt, as data: only the argument's `@paths` are attached. With no
prompt (`-p` alone, or `-p -`) stdin is the prompt. The text of several assistant messages (before and
after tool calls) is separated by a blank line. With `--json`, stdout carries one JSON object per
engine event and finally `{"type": "result", "text", "session_id", "outcome", "denied"}`. Tools that
need approval are asked about on the controlling terminal (/dev/tty, even when stdin and stdout are
pipes) when there is one, denied otherwise (unless `--yes`); every denial is said on stderr. The exit
code is 0 for an answer, 1 for a failure, a partial answer, or an answer given without a tool call
that was denied. Everything printed goes through `app/textsafe.py` (the CLI wraps stdout and stderr).
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading

from app.commands import settings_flags
from app.config import load_settings
from app.console import json_text
from app.engine.api.describe import describe
from app.model.events import (
    CapLearned,
    Compaction,
    Event,
    FallbackMoved,
    McpServerChanged,
    MessageAdded,
    Notice,
    TextDelta,
    ToolApproval,
)
from app.redact import StreamRedactor, redact_text, redact_value
from app.textsafe import display

_stdout_midline = False  # the answer's last line on stdout is not finished yet
_answer_started = False  # an assistant message of this turn has been printed
_next_message = False  # the next text delta starts another assistant message (after tool calls)


def _stderr(line: str) -> None:
    """A notice line; when both streams are this terminal, start it on a line of its own."""
    global _stdout_midline
    if _stdout_midline and sys.stdout.isatty() and sys.stderr.isatty():
        sys.stdout.write("\n")
        sys.stdout.flush()
        _stdout_midline = False
    print(redact_text(outside_the_tui(line)), file=sys.stderr, flush=True)


_quiet = False  # --quiet: only errors on stderr (the answer on stdout as always)
ESC_HINTS = ("; Esc cancels", " (Esc cancels)", ", Esc cancels")  # the TUI's key: Ctrl+C stops -p


def outside_the_tui(line: str) -> str:
    """A notice's line as -p prints it: without the TUI's "Esc cancels" (Esc does nothing on a terminal)."""
    for hint in ESC_HINTS:
        line = line.replace(hint, "")
    return line


_answer = StreamRedactor()  # a known key split across two streamed chunks is still caught


def text_printer(event: Event) -> None:
    """Human output: answer text on stdout, everything else as one line on stderr."""
    global _stdout_midline, _answer_started, _next_message
    if isinstance(event, TextDelta):
        shown = _answer.feed(event.text)
        if not shown:
            return
        if _next_message and _answer_started:  # another message of the same answer: a blank line between
            sys.stdout.write("\n" if not _stdout_midline else "\n\n")
        _next_message = False
        _answer_started = True
        sys.stdout.write(shown)
        sys.stdout.flush()
        _stdout_midline = not shown.endswith("\n")
        return
    if rest := _answer.flush():
        sys.stdout.write(rest)
        sys.stdout.flush()
        _stdout_midline = not rest.endswith("\n")
    if isinstance(event, MessageAdded):
        if event.role == "assistant":
            _next_message = True
        return
    if (isinstance(event, Notice) and event.code == "escalation") or (
        isinstance(event, FallbackMoved) and event.after_partial
    ):  # the answer continues where the token limit (or a failed route) cut it
        _next_message = False
    if not _told_on_stderr(event):
        return
    description = describe(event)
    if description is not None and (not _quiet or description.level == "error"):
        _stderr(description.line)


def _told_on_stderr(event: Event) -> bool:
    """What -p tells on stderr besides notices: failures, retries, recovery, tools, a server ready; a learned
    cap has its own notice and an applied compaction its own phase lines."""
    if isinstance(event, CapLearned):
        return False
    if isinstance(event, Compaction):
        return event.outcome != "applied"
    if isinstance(event, McpServerChanged):
        return event.state == "ready"
    return True


def json_printer(event: Event) -> None:
    data = event.to_json()
    if isinstance(event, TextDelta):
        data["text"] = _answer.feed(event.text)
        if not data["text"]:
            return
    elif rest := _answer.flush():
        sys.stdout.write(json_text(TextDelta(rest).to_json(), default=str) + "\n")
    sys.stdout.write(json_text(redact_value(data, urls=False), default=str) + "\n")
    sys.stdout.flush()


def _settle(future: asyncio.Future, value: object) -> None:
    if not future.done():
        future.set_result(value)


def _open_terminal():
    """(reader, writer) on the controlling terminal (stdin and stdout may be pipes); None without one.

    /dev/tty is opened twice, to read and to write: one text stream opened "r+" needs a seekable
    file, and a terminal is not one (io.UnsupportedOperation).
    """
    try:
        reader = open("/dev/tty", encoding="utf-8", errors="replace")  # closed by the caller
    except OSError:
        return None
    try:
        writer = open("/dev/tty", "w", encoding="utf-8", errors="replace")
    except OSError:
        reader.close()
        return None
    if not os.isatty(reader.fileno()):
        reader.close()
        writer.close()
        return None
    return reader, writer


def _terminal_approver(workspace, preview_lines: int = 40):
    """Ask on the controlling terminal about tool calls (an edit shows its diff first); None when there is
    no terminal. y allows; Enter or n denies; anything else denies and is what the model is told."""
    from app.tools.approval import Denial
    from app.tools.change_preview import preview_change

    tty = _open_terminal()
    if tty is None:
        return None
    reader, writer = tty
    lock = threading.Lock()  # one question at a time

    def ask(name: str, args: dict, why: str) -> bool | Denial:
        preview = preview_change(name, args, workspace, max_lines=preview_lines)
        with lock:  # the whole text of what is approved (the terminal wraps it): nothing is cut
            writer.write(f"\n? {display(why)}\n")
            if preview is not None:
                writer.write(f"  {display(preview.summary)}\n")
                if preview.problem and preview.problem not in preview.summary:
                    writer.write(f"  {display(preview.problem)}\n")
                for line in display(preview.text).splitlines():
                    writer.write(f"  {line}\n")
                if preview.more_lines:
                    writer.write(f"  … {preview.more_lines:,} more lines\n")
            writer.write("  allow? [y/N, or type why not — the model is told] ")
            writer.flush()
            answer = reader.readline().strip()
            if answer.lower() in ("y", "yes"):
                return True
            if answer.lower() in ("", "n", "no"):
                return False
            return Denial(answer)

    async def approve(name: str, args: dict, why: str) -> bool | Denial:
        # A daemon thread, not asyncio.to_thread: Ctrl+C while it waits must not wait for a line.
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[bool | Denial] = loop.create_future()

        def run() -> None:
            result: bool | Denial
            try:
                result = ask(name, args, why)
            except (OSError, ValueError):  # the terminal went away: no
                result = False
            loop.call_soon_threadsafe(_settle, answer, result)

        threading.Thread(target=run, name="ask on the terminal", daemon=True).start()
        return await answer

    return approve


def _terminal_question(intro) -> object:
    """An async question on the controlling terminal: `intro(items)` gives the lines to show, the answer is
    "allow" (y), "deny" (n) or None (Enter: not now). None when there is no terminal."""
    tty = _open_terminal()
    if tty is None:
        return None
    reader, writer = tty

    async def ask(items) -> str | None:
        def question() -> str | None:
            try:
                writer.write("\n" + "\n".join(intro(items)) + "\n")
                writer.write("  [y] yes, remember · [n] no, remember · [Enter] not now: ")
                writer.flush()
                answer = reader.readline().strip().lower()
            finally:
                reader.close()
                writer.close()
            return {"y": "allow", "yes": "allow", "n": "deny", "no": "deny"}.get(answer)

        return await asyncio.to_thread(question)

    return ask


def terminal_mcp_ask():
    """Ask on the controlling terminal whether a workspace's `.mcp.json` servers may start; None without one."""
    from app.textsafe import display_line

    return _terminal_question(
        lambda specs: [
            "? This workspace's .mcp.json names MCP servers that have not been allowed yet:",
            *(
                line
                for spec in specs
                for line in (
                    f"    {display_line(spec.name)}  {display_line(spec.describe())}",
                    *([f"        {display_line(spec.reads())}"] if spec.reads() else []),
                )
            ),
            "  Start them?",
        ]
    )


def terminal_rules_ask():
    """Ask on the controlling terminal whether the allow rules of the workspace's rule files may be in force;
    None without one."""
    from app.textsafe import display_line

    def intro(files) -> list[str]:
        lines = ["? This workspace's files allow tool calls without asking (they came with the repository):"]
        for file in files:
            lines.append(f"    {display_line(file.relative)}:")
            lines += [f"        allow {display_line(rule)}" for rule in file.allow]
        lines.append("  Their deny and ask rules are in force either way. Put these allow rules in force?")
        return lines

    return _terminal_question(intro)


def terminal_gateways_ask():
    """Ask on the controlling terminal whether the workspace's `.bulkhead/gateways.toml` may be read; None
    without one."""
    from app.textsafe import display_line

    def intro(found) -> list[str]:
        return [
            f"? This workspace has {display_line(str(found.path))} (gateway profiles, from the repository):",
            *(f"    {display_line(line)}" for line in found.describe()),
            "  Read them? (a cap from the file only tightens what bulkhead sends; a change asks again)",
        ]

    return _terminal_question(intro)


STDIN = "-"  # `-p -`: the prompt is stdin; `-p` with no prompt and stdin piped means the same


def read_prompt(args) -> str:
    """The prompt: `-p TEXT` (with piped stdin appended), or stdin itself for `-p -` / a bare `-p`."""
    given = args.prompt or ""
    if given == STDIN or (not given and not sys.stdin.isatty()):
        return sys.stdin.read()  # `-p -` on a terminal reads what is typed up to Ctrl+D
    prompt = given
    if not sys.stdin.isatty():
        piped = sys.stdin.read()
        if piped.strip():
            prompt = f"{prompt}\n\n{piped}" if prompt else piped
    return prompt


def run(args) -> int:
    from app.engine.api.setup import open_engine

    settings = load_settings(flags=settings_flags(args))
    prompt = read_prompt(args)
    if not prompt.strip():
        _stderr(
            'bulkhead: nothing to ask — give a prompt: bulkhead -p "…", or pipe it in: '
            'echo "…" | bulkhead -p (`-p -` reads stdin)'
        )
        return 2
    from pathlib import Path

    from app.commands.oneshot_slash import plan_slash, run_slash
    from app.engine.api.custom_commands import expand_slash

    workspace = Path(settings.workspace or os.getcwd()).expanduser()
    slash = plan_slash(prompt, lambda text: expand_slash(text, workspace) is not None)
    if slash.error:  # nothing is opened or sent: a TUI command or a typo is not a message to the model
        _stderr(f"bulkhead: {slash.error}")
        return 2
    if args.yes:

        async def approver(name: str, tool_args: dict, why: str) -> bool:
            return True
    else:
        approver = _terminal_approver(workspace, settings.approval_preview_lines)
    if getattr(args, "read_only", False):
        _stderr(
            "bulkhead: --read-only opens a session to read it (the TUI, or `bulkhead sessions show ID`); "
            "-p adds a turn — use --fork to go on in a copy of the session instead"
        )
        return 2
    engine, choice, resumed = open_engine(
        settings,
        route_name=args.route,
        resume=args.resume,
        continue_=args.continue_,
        approver=approver,
        fork=getattr(args, "fork", False),
        what="bulkhead -p",
        model=getattr(args, "model", None),
    )
    if prompt.startswith(
        "/"
    ):  # a custom command from .bulkhead/commands, .claude/commands or the config folder
        from app.engine.api.custom_commands import expand_slash

        prompt = expand_slash(prompt, engine.workspace) or prompt
    if prompt.startswith("//"):  # `//text`: sent as `/text`, as in the TUI
        prompt = prompt[1:]
    if getattr(args, "fallback_after_partial", False):  # a route that failed mid-answer: go on elsewhere
        engine.fallback.after_partial = "continue"
    engine.memory.background = False  # -p reads what compactions queued before it exits, nothing behind
    global _quiet
    _quiet = bool(getattr(args, "quiet", False))
    printer = json_printer if args.json else text_printer
    engine.session.bus.subscribe(printer)
    denied: list[ToolApproval] = []
    engine.session.bus.subscribe(
        lambda event: (
            denied.append(event) if isinstance(event, ToolApproval) and event.decision == "denied" else None
        )
    )
    for note in choice.notices:
        printer(Notice(note, code="lab" if choice.lab else "route"))
    for note in choice.session_notices:
        printer(Notice(note, code="session"))

    async def main() -> int:
        await engine.start(resumed=resumed)
        await engine.confirm_workspace_rules(ask=terminal_rules_ask())
        await engine.confirm_workspace_gateways(ask=terminal_gateways_ask())
        if engine.mcp is not None:  # starting while the request is built; waited for within mcp_tools_wait
            await engine.start_mcp(
                ask=None if args.yes else terminal_mcp_ask(), allow_project=args.yes, wait=False
            )
        if slash.action:
            try:
                return await run_slash(engine, slash, _stderr)
            finally:
                await engine.close("exit")
        try:
            result = await engine.submit(prompt, typed=args.prompt or "")
            await engine.memory.drain_queue()  # a compaction's queued segment is read now, not left behind
        finally:
            await engine.close("exit")
        if rest := _answer.flush():
            if args.json:
                sys.stdout.write(json_text(TextDelta(rest).to_json()) + "\n")
            else:
                sys.stdout.write(rest)
        if args.json:
            json_printer_result = {
                "type": "result",
                "text": result.text,
                "session_id": engine.session.id,
                "outcome": result.outcome,
                "error": result.error,
                "denied": [{"name": d.name, "reason": d.reason} for d in denied],
            }
            sys.stdout.write(json_text(redact_value(json_printer_result, urls=False)) + "\n")
        else:
            if result.text and not result.text.endswith("\n"):
                sys.stdout.write("\n")
            if result.outcome in ("failed", "partial"):  # the advice names TUI commands: say where they are
                _stderr(
                    f"  the session is kept: `bulkhead --resume {engine.session.id}` opens it (/retry, "
                    f"/compact, /model work there); `bulkhead -c -p …` continues it here"
                )
            if denied:
                names = ", ".join(dict.fromkeys(d.name for d in denied))
                one = len(denied) == 1
                why = (
                    ""
                    if approver is not None
                    else " — there was no terminal to ask: run it in a terminal to be "
                    "asked, or pass --yes to allow tool calls"
                )
                _stderr(
                    f"bulkhead: {len(denied)} tool call{'' if one else 's'} denied ({names}); the answer was "
                    f"given without {'it' if one else 'them'} (exit status 1){why}"
                )
        sys.stdout.flush()
        return 0 if result.outcome == "answered" and not denied else 1

    return asyncio.run(main())
