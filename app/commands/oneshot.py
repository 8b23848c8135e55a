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
from collections.abc import Callable
from typing import TYPE_CHECKING

from app.commands import settings_flags
from app.config import load_settings
from app.console import json_text
from app.engine.api.describe import describe
from app.model.events import (
    ApprovalRequested,
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

if TYPE_CHECKING:
    from app.config import Settings
    from app.engine.api import SessionApi

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


Asked = tuple[bool, str]  # the terminal's answer: allowed, and what the user told the model when not


def _terminal_approver(workspace, preview_lines: int = 40) -> Callable[[ApprovalRequested], Asked] | None:
    """Ask on the controlling terminal about tool calls (an edit shows its diff first); None when there is
    no terminal. y allows; Enter or n denies; anything else denies and is what the model is told. It blocks:
    `_answerer` runs it in a thread."""
    from app.tools.change_preview import preview_change

    tty = _open_terminal()
    if tty is None:
        return None
    reader, writer = tty
    lock = threading.Lock()  # one question at a time

    def ask(request: ApprovalRequested) -> Asked:
        preview = preview_change(request.name, request.args, workspace, max_lines=preview_lines)
        with lock:  # the whole text of what is approved (the terminal wraps it): nothing is cut
            writer.write(f"\n? {display(request.why)}\n")
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
                return True, ""
            if answer.lower() in ("", "n", "no"):
                return False, ""
            return False, answer

    return ask


def _answerer(
    session: SessionApi, *, yes: bool, ask: Callable[[ApprovalRequested], Asked] | None
) -> Callable[[ApprovalRequested], None]:
    """What -p does with an `ApprovalRequested`: ask on the terminal and answer the session by the call's id;
    with no terminal, allow it with `--yes` (a session opened without either asks nobody: it never comes).
    The terminal is asked in a daemon thread, not asyncio.to_thread: Ctrl+C while it waits must not wait
    for a line."""
    if ask is None:

        def without_asking(request: ApprovalRequested) -> None:
            session.approve(request.call_id, yes)

        return without_asking
    loop = asyncio.get_running_loop()

    def on_request(request: ApprovalRequested) -> None:
        def run() -> None:
            try:
                allowed, reason = ask(request)
            except (OSError, ValueError):  # the terminal went away: no
                allowed, reason = False, ""
            loop.call_soon_threadsafe(lambda: session.approve(request.call_id, allowed, reason=reason))

        threading.Thread(target=run, name="ask on the terminal", daemon=True).start()

    return on_request


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


def _settings(args) -> Settings:
    """config.toml with this run's flags (`--fallback-after-partial`: a partial answer goes on on the next
    route of the chain)."""
    flags = settings_flags(args)
    if getattr(args, "fallback_after_partial", False):
        flags["fallback_after_partial"] = "continue"
    return load_settings(flags=flags)


def run(args) -> int:
    settings = _settings(args)
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
    ask = None if args.yes else _terminal_approver(workspace, settings.approval_preview_lines)
    if getattr(args, "read_only", False):
        _stderr(
            "bulkhead: --read-only opens a session to read it (the TUI, or `bulkhead sessions show ID`); "
            "-p adds a turn — use --fork to go on in a copy of the session instead"
        )
        return 2
    global _quiet
    _quiet = bool(getattr(args, "quiet", False))
    printer = json_printer if args.json else text_printer
    denied: list[ToolApproval] = []

    async def main() -> int:
        from app.engine.api import open_session

        session = await open_session(
            settings,
            route_name=args.route,
            resume=args.resume,
            continue_=args.continue_,
            fork=getattr(args, "fork", False),
            what="bulkhead -p",
            model=getattr(args, "model", None),
            start=False,
            answers_approvals=args.yes or ask is not None,  # else a call that needs an answer is denied
            background_memory=False,  # -p reads what compactions queued before it exits, nothing behind
        )
        answer = _answerer(session, yes=args.yes, ask=ask)

        def on_event(event: Event) -> None:
            if isinstance(
                event, ApprovalRequested
            ):  # asked on the terminal (allowed with --yes), not printed
                answer(event)
                return
            printer(event)
            if isinstance(event, ToolApproval) and event.decision == "denied":
                denied.append(event)

        session.subscribe(on_event)
        return await _run_session(session, prompt)

    async def _run_session(session: SessionApi, prompt: str) -> int:
        info = session.info()
        if prompt.startswith(
            "/"
        ):  # a custom command from .bulkhead/commands, .claude/commands or the config folder
            prompt = expand_slash(prompt, Path(info.workspace)) or prompt
        if prompt.startswith("//"):  # `//text`: sent as `/text`, as in the TUI
            prompt = prompt[1:]
        opened = session.opening_notices()
        for note in opened.route:
            printer(Notice(note, code="lab" if opened.lab else "route"))
        for note in opened.session:
            printer(Notice(note, code="session"))
        await session.start()
        await session.confirm_workspace_files(terminal_rules_ask(), terminal_gateways_ask())
        if session.has_mcp():  # starting while the request is built; waited for within mcp_tools_wait
            await session.start_mcp(
                None if args.yes else terminal_mcp_ask(), allow_project=args.yes, wait=False
            )
        if slash.action:
            try:
                return await run_slash(session, slash, _stderr)
            finally:
                await session.close("exit")
        try:
            result = await session.submit(prompt, typed=args.prompt or "")
            await session.read_queued_memory()  # a compaction's queued segment is read now, not left behind
        finally:
            await session.close("exit")
        if rest := _answer.flush():
            if args.json:
                sys.stdout.write(json_text(TextDelta(rest).to_json()) + "\n")
            else:
                sys.stdout.write(rest)
        if args.json:
            json_printer_result = {
                "type": "result",
                "text": result.text,
                "session_id": info.id,
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
                    f"  the session is kept: `bulkhead --resume {info.id}` opens it (/retry, "
                    f"/compact, /model work there); `bulkhead -c -p …` continues it here"
                )
            if denied:
                names = ", ".join(dict.fromkeys(d.name for d in denied))
                one = len(denied) == 1
                why = (
                    ""
                    if args.yes or ask is not None
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
