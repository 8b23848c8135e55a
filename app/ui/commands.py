"""One action table behind the slash commands, the command palette and the keys.

    /compact focus on the parser   →  app.run_command("compact", "focus on the parser")
    palette "session: compact"     →  app.run_command("compact", "")
    key ctrl+r                     →  app.action_command("retry")

Each action says when it applies (`applies(app)`), so the palette offers only what can run
now and a slash command that cannot run says why instead of failing.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.markup import escape

from app.textsafe import display_line

if TYPE_CHECKING:
    from app.ui.app import BulkheadApp


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
    why_not: Callable[[BulkheadApp], str] = lambda app: ""  # "" when it applies now, else the reason
    needs_arg: bool = False  # the palette opens the prompt pre-filled instead of running it

    @property
    def title(self) -> str:
        return f"{self.area}: {self.verb}"

    def applies(self, app: BulkheadApp) -> bool:
        return not self.why_not(app)


# -- conditions ------------------------------------------------------------------------------------

def _need_engine(app: BulkheadApp) -> str:
    if app.engine is not None:
        return ""
    if app.open_error:
        return "no session is open — /model ROUTE opens one on a route, /sessions another session"
    return "the session is still opening"


def _need_idle(app: BulkheadApp) -> str:
    return _need_engine(app) or ("a turn is running (Esc cancels it)" if app.busy else "")


def _need_busy(app: BulkheadApp) -> str:
    return "" if app.busy else "nothing is running"


def _can_compact(app: BulkheadApp) -> str:
    return _need_idle(app) or ("" if len(app.engine.session.view) else "nothing to compact yet")


def _can_rewind(app: BulkheadApp) -> str:
    return _need_idle(app) or ("" if len(app.engine.session.views) > 1 else "no compaction to undo")


def _can_retry(app: BulkheadApp) -> str:
    reason = _need_idle(app)
    if reason:
        return reason
    from app.engine.turn import retry_point

    view = app.engine.session.view.messages
    if not view:
        return "nothing to retry yet"
    last = view[-1]
    if last.role == "assistant" and not last.meta.partial and retry_point(view) is None:
        return "no prompt of yours in the view to ask again"
    return ""


def _not_busy(app: BulkheadApp) -> str:
    return "a turn is running (Esc cancels it)" if app.busy else ""


def _can_undo(app: BulkheadApp) -> str:
    reason = _need_idle(app)
    if reason:
        return reason
    return "" if app.engine.checkpoints.last_turn() is not None else \
        "no file change to undo (write_file and edit_file changes are checkpointed; shell commands are not)"


def _can_rewind_to(app: BulkheadApp) -> str:
    reason = _need_idle(app)
    if reason:
        return reason
    return "" if any(m.role == "user" and m.meta.origin == "user" for m in app.engine.session.master) else \
        "no prompt to go back to yet"


def _can_reset_cap(app: BulkheadApp) -> str:
    reason = _need_idle(app)
    if reason:
        return reason
    return "" if app.engine.cap_info().source in ("learned", "assumed") else "no learned cap to forget"


def _can_recall(app: BulkheadApp) -> str:
    return _need_engine(app) or ("" if app.archive_count() else "the archive of this session is empty")


def _can_switch_model(app: BulkheadApp) -> str:
    if app.engine is None and app.open_error:
        return ""  # the way out of a session that did not open
    return _need_idle(app)


def _can_probe(app: BulkheadApp) -> str:
    if not module_available("app.probe"):
        return "the probe is not part of this build"
    return _need_idle(app)


def _can_export_har(app: BulkheadApp) -> str:
    if not module_available("app.har"):
        return "HAR export is not part of this build"
    return _need_engine(app)


ACTIONS: tuple[Action, ...] = (
    Action("compact", "session", "compact", "Summarize older history now (optional instructions)",
           "/compact", "/compact [instructions]", _can_compact),
    Action("rewind", "session", "rewind compact", "Restore the view before the last compaction",
           "/rewind", "/rewind compact", _can_rewind),
    Action("rewind_to", "session", "rewind to a prompt",
           "Back to just before one of your prompts — the conversation, and the files if you choose",
           "/rewind", "/rewind", _can_rewind_to),
    Action("undo", "files", "undo the last turn's changes",
           "Restore the files the last turn changed (write_file, edit_file) and say which", "/undo", "/undo",
           _can_undo),
    Action("retry", "turn", "retry", "Ask again for the last answer (failed, partial or complete)",
           "/retry", "/retry", _can_retry),
    Action("new", "session", "new", "Start a fresh session on this route (this one stays resumable: F5)",
           "/new", "/new", _not_busy),
    Action("rename", "session", "rename", "Give this session a title, e.g. /rename parser bug",
           "/rename", "/rename TITLE", _need_engine, needs_arg=True),
    Action("cancel", "turn", "cancel", "Cancel the running turn or compaction (Esc)", "", "", _need_busy),
    Action("cost", "cost", "show", "Tokens, cost, compactions and rejections of this session",
           "/cost", "/cost", _need_engine),
    Action("context", "context", "show", "Messages, bytes, the cap in force and the context window",
           "/context", "/context", _need_engine),
    Action("cap_reset", "cap", "reset learned cap", "Forget the cap learned for this endpoint",
           "/cap", "/cap reset", _can_reset_cap),
    Action("cap_set", "cap", "set for this session", "Set a request body cap for this session, e.g. /cap 256KB",
           "/cap", "/cap SIZE", _need_idle, needs_arg=True),
    Action("recall", "archive", "recall segment", "Put an archived segment back into the conversation",
           "/recall", "/recall KEY", _can_recall, needs_arg=True),
    Action("model", "model", "choose", "Pick a route and model (each route's models, window and output cap)",
           "/model", "/model [ROUTE]", _can_switch_model),
    Action("mcp", "mcp", "servers", "MCP servers: state, tools and the bytes their definitions add; /mcp restart NAME",
           "/mcp", "/mcp [restart NAME]", _need_engine),
    Action("sessions", "sessions", "open", "Browse sessions and resume one", "/sessions", "/sessions",
           lambda app: "a turn is running (Esc cancels it)" if app.busy else ""),
    Action("export", "session", "export", "Write the session as Markdown (and HAR) to its folder",
           "/export", "/export", _need_engine),
    Action("init", "project", "write AGENTS.md", "Ask the model to write a starter AGENTS.md for this project",
           "/init", "/init", _need_idle),
    Action("memory", "project", "remember a line", "Add a line to the project's AGENTS.md (no text: list the "
           "instruction files in the system prompt)", "/memory", "/memory [TEXT]", _need_idle),
    Action("permissions", "permissions", "show rules",
           "Every permission rule in force (allow, ask, deny) and the file it comes from", "/permissions",
           "/permissions", _need_engine),
    Action("help", "help", "show", "Keys, slash commands and the lab grammar", "/help", "/help"),
    Action("quit", "app", "quit", "Quit bulkhead (the session stays resumable: bulkhead -c)", "/quit", "/quit"),
    Action("probe", "gateway", "probe this route", "Find the largest request body this route's gateway accepts",
           "", "", _can_probe),
    Action("export_har", "requests", "export as HAR", "Write this session's requests as a HAR file",
           "", "", _can_export_har),
    Action("panel", "panel", "show", "Show an inspector panel and give it the keyboard (Alt+1…7, Ctrl+T)", "", ""),
    Action("toggle_inspector", "inspector", "hide / show", "Hide or show the inspector (F2)", "", ""),
    Action("widen_inspector", "inspector", "widen / narrow", "Give the inspector more room (F3)", "", ""),
    Action("jump_latest", "chat", "jump to latest", "Scroll to the newest output and follow it (End)", "", ""),
    Action("find", "chat", "find", "Find text anywhere in the conversation, on screen or not (Ctrl+F)",
           "/find", "/find TEXT", needs_arg=True),
    Action("copy_last", "chat", "copy last answer", "Copy the last answer (OSC 52 + system clipboard)", "", "",
           lambda app: "" if app.chat_last_answer() else "no answer yet"),
)
BY_ID = {action.id: action for action in ACTIONS}

SLASH_COMPLETIONS: tuple[tuple[str, str], ...] = (
    ("/compact", "summarize older history now — /compact [instructions]"),
    ("/rewind", "back to before one of your prompts (optionally the files too)"),
    ("/rewind compact", "restore the view before the last compaction"),
    ("/undo", "restore the files the last turn changed"),
    ("/retry", "ask again for the last answer (partial or complete)"),
    ("/new", "start a fresh session; this one stays resumable (F5)"),
    ("/clear", "the same as /new: a fresh session, this one kept"),
    ("/rename", "give this session a title — /rename TITLE"),
    ("/cost", "tokens, cost, compactions, rejections"),
    ("/context", "bytes, cap and window of the next request"),
    ("/cap reset", "forget the learned cap for this endpoint"),
    ("/cap", "set a request body cap for this session — /cap SIZE"),
    ("/recall", "put an archived segment back — /recall KEY"),
    ("/model", "pick a route and model (the list of each route's models) — /model [ROUTE]"),
    ("/mcp", "MCP servers: state, tools, definition bytes — /mcp restart NAME"),
    ("/sessions", "browse and resume sessions"),
    ("/export", "write the session as Markdown (and HAR)"),
    ("/init", "ask the model to write a starter AGENTS.md"),
    ("/memory", "add a line to AGENTS.md — /memory TEXT (or start a prompt with #)"),
    ("/permissions", "the permission rules in force and where they come from"),
    ("/find", "find text anywhere in the conversation — /find TEXT (Ctrl+F; again: the next older match)"),
    ("/help", "keys, commands and the lab grammar"),
    ("/exit", "quit bulkhead (also /quit, Ctrl+Q)"),
    ("/quit", "quit bulkhead"),
)


ARGUMENT_COMMANDS = ("/model", "/recall", "/mcp")  # commands whose argument the prompt completes
MAX_ARGUMENT_COMPLETIONS = 8


def complete_slash(text: str, arguments: Callable[[str], list[tuple[str, str]]] | None = None,
                   extra: Sequence[tuple[str, str]] = ()) -> list[tuple[str, str]]:
    """Completions for what the prompt holds: `/co` → /compact, /cost, /context; with `arguments`
    (command → its values and help), `/model w` → /model work and `/recall 3f` → /recall 3f2a…;
    `extra` adds more commands (the custom ones from Markdown files)."""
    if not text.startswith("/") or "\n" in text:
        return []
    lowered = text.lower()
    command, space, typed = text.partition(" ")
    if space and arguments is not None and command.lower() in ARGUMENT_COMMANDS:
        matches = [(f"{command.lower()} {value}", help_) for value, help_ in arguments(command.lower())
                   if value.lower().startswith(typed.lower()) and value != typed]
        return matches[:MAX_ARGUMENT_COMPLETIONS]
    words = (*SLASH_COMPLETIONS, *extra)
    longer = [(word, help_) for word, help_ in words
              if word.lower().startswith(lowered) and word.lower() != lowered.rstrip()]
    # `/rewind` is a command of its own besides `/rewind compact`: offered first, so Enter runs it
    exact = [(word, help_) for word, help_ in words if word.lower() == lowered]
    return exact[:1] + longer if longer and exact else longer


class SlashError(ValueError):
    """A slash command that does not parse; the message is shown to the user."""


def parse_slash(text: str) -> tuple[str, str]:
    """`/cap 256KB` → ("cap_set", "256KB"). Raises SlashError with a usage line."""
    word, _, rest = text.strip().partition(" ")
    word, rest = word.lower(), rest.strip()
    if word == "/compact":
        return "compact", rest
    if word == "/rewind":
        if rest.lower() not in ("compact", ""):
            raise SlashError("usage: /rewind (choose a prompt) or /rewind compact")
        return ("rewind", "") if rest else ("rewind_to", "")
    if word == "/cap":
        if not rest:
            return "context", ""
        return ("cap_reset", "") if rest.lower() == "reset" else ("cap_set", rest)
    if word == "/recall":
        if not rest:
            raise SlashError("usage: /recall KEY (16 hex digits, or a <<ccr:KEY>> marker)")
        return "recall", rest
    if word == "/model":
        return "model", rest
    if word in ("/new", "/clear"):
        return "new", ""
    if word in ("/exit", "/quit"):
        return "quit", ""
    if word == "/rename":
        if not rest:
            raise SlashError("usage: /rename TITLE")
        return "rename", rest
    for action in ACTIONS:
        if action.slash == word and action.id not in ("cap_reset", "cap_set"):
            return action.id, rest
    known = " ".join(sorted({a.slash for a in ACTIONS if a.slash}))
    raise SlashError(f"unknown command {word} — known: {known}")


class BulkheadCommands(Provider):
    """The palette's bulkhead commands: only those that apply now, titled "area: verb"."""

    def _hits(self) -> list[tuple[str, str, Callable[[], Any]]]:
        app: BulkheadApp = self.app  # type: ignore[assignment]
        hits: list[tuple[str, str, Callable[[], Any]]] = []
        for action in ACTIONS:
            if not action.applies(app):
                continue
            if action.id == "model":
                hits.append((action.title, action.help, partial(app.run_command, "model", "")))
                current = app.engine.route.name if app.engine else ""
                for name in sorted(app.settings.routes):
                    if name != current:
                        hits.append((f"model: switch to {name}", f"Continue this session on route {name}",
                                     partial(app.run_command, "model", name)))
                continue
            if action.id == "panel":
                for number, name in enumerate(app.panel_names(), start=1):
                    hits.append((f"panel: {name}", f"Show the {name} panel and give it the keyboard (Alt+{number})",
                                 partial(app.run_command, "panel", name)))
                continue
            if action.needs_arg:
                hits.append((action.title, action.help, partial(app.prefill_prompt, action.usage.split()[0] + " ")))
            else:
                hits.append((action.title, action.help, partial(app.run_command, action.id, "")))
        if app.engine is not None and not app.busy:
            for command in app.custom_commands:
                takes_arguments = command.argument_hint or "$ARGUMENTS" in command.body or "$1" in command.body
                run = (partial(app.prefill_prompt, command.slash + " ") if takes_arguments
                       else partial(app.run_custom, command, ""))
                # the palette reads help as markup: a description from a file is escaped (names cannot hold "[")
                hits.append((f"command: {command.slash}", escape(display_line(command.description)), run))
        return hits

    async def discover(self) -> Hits:
        for title, help_, callback in self._hits():
            yield DiscoveryHit(title, callback, help=help_)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help_, callback in self._hits():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), callback, help=help_)


def applicable_titles(app: BulkheadApp) -> list[str]:
    """The palette's titles right now (for tests and the help screen)."""
    return [title for title, _help, _cb in BulkheadCommands._hits(_Shim(app))]


class _Shim:
    def __init__(self, app: BulkheadApp) -> None:
        self.app = app
