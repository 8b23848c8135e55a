"""One action table behind the slash commands, the command palette and the keys, and the handlers behind it.

    /compact focus on the parser   →  app.run_command("compact", "focus on the parser")
    palette "session: compact"     →  app.run_command("compact", "")
    key ctrl+r                     →  app.action_command("retry")

Each action says when it applies (`applies(host)`), so the palette offers only what can run now
and a slash command that cannot run says why instead of failing. Each action id has one handler,
registered with `@handles(id)` by the module that carries it out (`app.ui.session_actions`,
`app.ui.turn_actions`, `app.ui.view_actions`); `handler(id)` finds it. No textual here: the
table is data, the host is duck-typed (the app).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

Host = Any  # app.ui.app.BulkheadApp: session, busy, open_error, has_archive(), chat_last_answer()
Handler = Callable[[Host, str], "Awaitable[None] | None"]
Registered = TypeVar("Registered", bound=Callable[..., Any])  # a handler keeps its own signature


def module_available(name: str) -> bool:
    """Whether an optional part of bulkhead (e.g. `app.probe`, `app.har`) is installed."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


@dataclass(frozen=True)
class Action:
    id: str
    area: str
    verb: str
    help: str
    slash: str = ""  # the slash word, e.g. "/compact"; "" when there is none
    usage: str = ""  # e.g. "/compact [instructions]"
    why_not: Callable[[Host], str] = lambda app: ""  # "" when it applies now, else the reason
    needs_arg: bool = False  # the palette opens the prompt pre-filled instead of running it

    @property
    def title(self) -> str:
        return f"{self.area}: {self.verb}"

    def applies(self, app: Host) -> bool:
        return not self.why_not(app)


# -- conditions ------------------------------------------------------------------------------------


def _need_engine(app: Host) -> str:
    if app.session is not None:
        return ""
    if app.open_error:
        return "no session is open — /model ROUTE opens one on a route, /sessions another session"
    return "the session is still opening"


def _need_idle(app: Host) -> str:
    return _need_engine(app) or ("a turn is running (Esc cancels it)" if app.busy else "")


def _need_busy(app: Host) -> str:
    return "" if app.busy else "nothing is running"


def _can_compact(app: Host) -> str:
    return _need_idle(app) or app.session.why_not("compact")


def _can_rewind(app: Host) -> str:
    return _need_idle(app) or app.session.why_not("rewind")


def _can_retry(app: Host) -> str:
    return _need_idle(app) or app.session.why_not("retry")


def _not_busy(app: Host) -> str:
    return "a turn is running (Esc cancels it)" if app.busy else ""


def _can_undo(app: Host) -> str:
    return _need_idle(app) or app.session.why_not("undo")


def _can_rewind_to(app: Host) -> str:
    return _need_idle(app) or app.session.why_not("rewind_to")


def _can_reset_cap(app: Host) -> str:
    return _need_idle(app) or app.session.why_not("cap_reset")


def _can_recall(app: Host) -> str:
    return _need_engine(app) or ("" if app.has_archive() else "the archive of this session is empty")


def _can_switch_model(app: Host) -> str:
    if app.session is None and app.open_error:
        return ""  # the way out of a session that did not open
    return _need_idle(app)


def _can_probe(app: Host) -> str:
    if not module_available("app.probe"):
        return "the probe is not part of this build"
    return _need_idle(app)


def _can_export_har(app: Host) -> str:
    if not module_available("app.har"):
        return "HAR export is not part of this build"
    return _need_engine(app)


ACTIONS: tuple[Action, ...] = (
    Action(
        "compact",
        "session",
        "compact",
        "Summarize older history now (optional instructions)",
        "/compact",
        "/compact [instructions]",
        _can_compact,
    ),
    Action(
        "rewind",
        "session",
        "rewind compact",
        "Restore the view before the last compaction",
        "/rewind",
        "/rewind compact",
        _can_rewind,
    ),
    Action(
        "rewind_to",
        "session",
        "rewind to a prompt",
        "Back to just before one of your prompts — the conversation, and the files if you choose",
        "/rewind",
        "/rewind",
        _can_rewind_to,
    ),
    Action(
        "undo",
        "files",
        "undo the last turn's changes",
        "Restore the files the last turn changed (write_file, edit_file) and say which",
        "/undo",
        "/undo",
        _can_undo,
    ),
    Action(
        "blocked",
        "gateway",
        "find blocked text",
        "Find the text the gateway refuses (the local Core Rule Set first when installed; probes ask first), "
        "then withhold it from the model",
        "/blocked",
        "/blocked [live]",
        _need_idle,
    ),
    Action(
        "retry",
        "turn",
        "retry",
        "Ask again for the last answer (failed, partial or complete)",
        "/retry",
        "/retry",
        _can_retry,
    ),
    Action(
        "new",
        "session",
        "new",
        "Start a fresh session on this route (this one stays resumable: F5)",
        "/new",
        "/new",
        _not_busy,
    ),
    Action(
        "rename",
        "session",
        "rename",
        "Give this session a title, e.g. /rename parser bug",
        "/rename",
        "/rename TITLE",
        _need_engine,
        needs_arg=True,
    ),
    Action("cancel", "turn", "cancel", "Cancel the running turn or compaction (Esc)", "", "", _need_busy),
    Action(
        "cost",
        "cost",
        "show",
        "Tokens, cost, compactions and rejections of this session",
        "/cost",
        "/cost",
        _need_engine,
    ),
    Action(
        "context",
        "context",
        "show",
        "Messages, bytes, the cap in force and the context window",
        "/context",
        "/context",
        _need_engine,
    ),
    Action(
        "cap_reset",
        "cap",
        "reset learned cap",
        "Forget the cap learned for this endpoint",
        "/cap",
        "/cap reset",
        _can_reset_cap,
    ),
    Action(
        "cap_set",
        "cap",
        "set for this session",
        "Set a request body cap for this session, e.g. /cap 256KB",
        "/cap",
        "/cap SIZE",
        _need_idle,
        needs_arg=True,
    ),
    Action(
        "recall",
        "archive",
        "recall segment",
        "Put an archived segment back into the conversation",
        "/recall",
        "/recall KEY",
        _can_recall,
        needs_arg=True,
    ),
    Action(
        "model",
        "model",
        "choose",
        "Pick a route and model (each route's models, window and output cap)",
        "/model",
        "/model [ROUTE]",
        _can_switch_model,
    ),
    Action(
        "mcp",
        "mcp",
        "servers",
        "MCP servers: state, tools and the bytes their definitions add; /mcp restart NAME",
        "/mcp",
        "/mcp [restart NAME]",
        _need_engine,
    ),
    Action(
        "sessions",
        "sessions",
        "open",
        "Browse sessions and resume one",
        "/sessions",
        "/sessions",
        lambda app: "a turn is running (Esc cancels it)" if app.busy else "",
    ),
    Action(
        "export",
        "session",
        "export",
        "Write the session as Markdown (and HAR) into the project folder, or to PATH",
        "/export",
        "/export [PATH]",
        _need_engine,
    ),
    Action(
        "init",
        "project",
        "write AGENTS.md",
        "Ask the model to write a starter AGENTS.md for this project",
        "/init",
        "/init",
        _need_idle,
    ),
    Action(
        "memory",
        "project",
        "remember a line",
        "Add a line to the project's instruction file, AGENTS.md or CLAUDE.md (no text: list the instruction files)",
        "/memory",
        "/memory [TEXT]",
        _need_idle,
    ),
    Action(
        "approval",
        "approval",
        "change mode",
        "Which tool calls ask first: ask, auto-read, auto-edit or never-ask (Shift+Tab steps through the first three)",
        "/approval",
        "/approval [ask|auto-read|auto-edit|never-ask]",
        _need_engine,
    ),
    Action(
        "permissions",
        "permissions",
        "show rules",
        "Every permission rule in force (allow, ask, deny) and the file it comes from",
        "/permissions",
        "/permissions",
        _need_engine,
    ),
    Action("help", "help", "show", "Keys, slash commands and the lab grammar", "/help", "/help"),
    Action(
        "quit", "app", "quit", "Quit bulkhead (the session stays resumable: bulkhead -c)", "/quit", "/quit"
    ),
    Action(
        "probe",
        "gateway",
        "probe this route",
        "Find the largest request body this route's gateway accepts",
        "",
        "",
        _can_probe,
    ),
    Action(
        "export_har",
        "requests",
        "export as HAR",
        "Write this session's requests as a HAR file",
        "",
        "",
        _can_export_har,
    ),
    Action(
        "panel", "panel", "show", "Show an inspector panel and give it the keyboard (Alt+1…7, Ctrl+T)", "", ""
    ),
    Action("toggle_inspector", "inspector", "hide / show", "Hide or show the inspector (F2)", "", ""),
    Action("widen_inspector", "inspector", "widen / narrow", "Give the inspector more room (F3)", "", ""),
    Action(
        "jump_latest", "chat", "jump to latest", "Scroll to the newest output and follow it (End)", "", ""
    ),
    Action(
        "find",
        "chat",
        "find",
        "Find text anywhere in the conversation, on screen or not (Ctrl+F)",
        "/find",
        "/find TEXT",
        needs_arg=True,
    ),
    Action(
        "copy_last",
        "chat",
        "copy last answer",
        "Copy the last answer (OSC 52 + system clipboard)",
        "",
        "",
        lambda app: "" if app.chat_last_answer() else "no answer yet",
    ),
)
BY_ID = {action.id: action for action in ACTIONS}


HANDLERS: dict[str, Handler] = {}


def handles(*action_ids: str) -> Callable[[Registered], Registered]:
    """Register the function below as the handler of `action_ids` (each id has one)."""

    def register(function: Registered) -> Registered:
        for action_id in action_ids:
            if action_id not in BY_ID:
                raise KeyError(f"no action {action_id!r} in the table")
            if action_id in HANDLERS:
                raise KeyError(
                    f"action {action_id!r} has a handler already: {HANDLERS[action_id].__qualname__}"
                )
            HANDLERS[action_id] = function
        return function

    return register


def handler(action_id: str) -> Handler:
    """The handler of `action_id` (the handler modules are imported by then: `app.ui.app` does it)."""
    return HANDLERS[action_id]
