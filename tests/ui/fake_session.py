"""A scriptable `UiSession` for the TUI's Pilot tests that do not need the engine (issue 43).

    fake = FakeSession(tmp_path, script={"hello": say("hi there")})
    app = BulkheadApp(settings, workspace=tmp_path, open_session=fake.open, cursor_blink=False, keymap={})

The app opens it as it opens a real session (`open_session` in place of `open_ui_session`) and drives it
through the same front door: what the app asks is recorded in `fake.intents` (("submit", prompt),
("approve", call_id, answer, reason), ("compact", instructions) …), every event it emitted in
`fake.emitted`. A prompt plays its script — events (`app.model.events`) and `Ask` steps, which emit
`ApprovalRequested` and wait for `approve(call_id, …)` as the engine does — then ends the turn.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.engine.api import (
    ANSWERS,
    ApprovalRequest,
    CompactResult,
    PermissionsView,
    RewindResult,
    SessionInfo,
    TurnResult,
)
from app.engine.api.records import ArchiveKey
from app.engine.api.ui_session import MemoryReview, OpeningNotices, UiSession
from app.model.costs import Counters
from app.model.events import (
    AnswerFinished,
    ApprovalRequested,
    Event,
    MessageAdded,
    TextDelta,
    ToolApproval,
    ToolCallFinished,
    ToolCallStarted,
    TurnFinished,
    TurnStarted,
)

_ids = itertools.count(1)


@dataclass(frozen=True)
class Hold:
    """The turn waits here, as a slow stream does, until `FakeSession.release()` or a cancel (Esc)."""


@dataclass(frozen=True)
class Ask:
    """A tool call that waits for the user's answer (the `ToolCallStarted` of `call_id` comes first)."""

    call_id: str
    name: str
    args: dict[str, Any] = field(default_factory=dict)
    why: str = "asks"
    remember: str = ""
    why_not: str = ""
    result: str = "done"  # the tool's result when approved


Step = Event | Ask | Hold
Script = Callable[[str], Sequence[Step]]


def say(text: str, *, pieces: int = 3) -> list[Step]:
    """An answer streamed in `pieces` deltas, then kept (as the engine does)."""
    size = max(1, -(-len(text) // pieces))
    message_id = f"m_fake{next(_ids)}"
    deltas: list[Step] = [TextDelta(text[i : i + size]) for i in range(0, len(text), size)]
    return [
        *deltas,
        MessageAdded(message_id, "assistant", "model", text),
        AnswerFinished(message_id, "end"),
    ]


def tool_call(call_id: str, name: str, args: dict[str, Any], **ask: Any) -> list[Step]:
    """A tool call that asks first: its block, then the question."""
    return [ToolCallStarted(call_id, name, args), Ask(call_id, name, args, **ask)]


def echo(prompt: str) -> list[Step]:
    return say(f"You said: “{prompt}”")


class FakeSession:
    """`UiSession` without an engine: a script per prompt, every intent recorded."""

    def __init__(
        self,
        workspace: Path,
        *,
        script: Script | dict[str, Sequence[Step]] | None = None,
        route: str = "fake",
        provider: str = "fake",
        model: str = "fake-1",
        session_id: str = "s_fake",
    ) -> None:
        self.workspace = Path(workspace)
        self.script: Script = (
            (lambda prompt: script.get(prompt, echo(prompt))) if isinstance(script, dict) else script or echo
        )
        self.route_name, self.provider, self.model, self.id = route, provider, model, session_id
        self.intents: list[tuple[Any, ...]] = []
        self.emitted: list[Event] = []
        self.opened_with: dict[str, Any] = {}
        self._settings: Any = None
        self._subscribers: list[Callable[[Event], None]] = []
        self._waiting: dict[str, tuple[ApprovalRequest, asyncio.Future[tuple[str, str]]]] = {}
        self._turn = 0
        self._messages: list[Any] = []
        self.approval = "auto-read"
        self.closed = ""
        self._released = asyncio.Event()
        self.refusals: dict[str, str] = {}  # why_not(command): why the session would not run it now

    async def open(self, settings: Any, **options: Any) -> FakeSession:
        """What the app calls in place of `open_ui_session`."""
        self._settings = settings
        self.opened_with = options
        self.approval = settings.approval
        return self

    def emit(self, event: Event) -> None:
        self.emitted.append(event)
        for callback in list(self._subscribers):
            callback(event)

    def answered(self, call_id: str) -> tuple[str, str] | None:
        """The (answer, reason) the app gave about `call_id`, if it did."""
        for intent in self.intents:
            if intent[:2] == ("approve", call_id):
                return intent[2], intent[3]
        return None

    # -- SessionApi: commands -----------------------------------------------------------------------------
    async def start(self) -> None:
        self.intents.append(("start",))

    async def submit(
        self, prompt: str, images: Sequence[Any] = (), *, typed: str | None = None
    ) -> TurnResult:
        self.intents.append(("submit", prompt))
        self._turn += 1
        user = f"m_fake{next(_ids)}"
        self._messages.append(prompt)
        self.emit(MessageAdded(user, "user", "user", prompt))
        self.emit(TurnStarted(self._turn, prompt))
        text, streamed = "", ""
        try:
            for step in self.script(prompt):
                if isinstance(step, Ask):
                    await self._ask(step)
                elif isinstance(step, Hold):
                    await self._released.wait()
                else:
                    if isinstance(step, MessageAdded) and step.role == "assistant":
                        text, streamed = step.text, ""
                    elif isinstance(step, TextDelta):
                        streamed += step.text
                    self.emit(step)
                await asyncio.sleep(0)
        except asyncio.CancelledError:  # Esc: what streamed is kept, marked partial, as the engine does
            if streamed:
                self.emit(MessageAdded(f"m_fake{next(_ids)}", "assistant", "model", streamed, partial=True))
            self.emit(TurnFinished(self._turn, "cancelled"))
            raise
        self.emit(TurnFinished(self._turn, "answered"))
        return TurnResult("answered", text)

    def release(self) -> None:
        """Let every turn waiting at a `Hold` go on."""
        self._released.set()

    async def _ask(self, step: Ask) -> None:
        future: asyncio.Future[tuple[str, str]] = asyncio.get_running_loop().create_future()
        request = ApprovalRequest(
            step.call_id, step.name, dict(step.args), step.why, step.remember, step.why_not
        )
        self._waiting[step.call_id] = (request, future)
        try:
            self.emit(
                ApprovalRequested(
                    step.call_id, step.name, dict(step.args), step.why, step.remember, step.why_not
                )
            )
            answer, reason = await future
        finally:
            self._waiting.pop(step.call_id, None)
        if answer == "deny":
            self.emit(ToolApproval(step.call_id, step.name, "denied", reason or "denied"))
            self.emit(ToolCallFinished(step.call_id, step.name, True, f"denied: {reason}", 8))
        else:
            self.emit(ToolApproval(step.call_id, step.name, "approved", step.why))
            self.emit(ToolCallFinished(step.call_id, step.name, False, step.result, len(step.result)))

    async def retry(self) -> TurnResult:
        self.intents.append(("retry",))
        return TurnResult("failed", error="nothing to retry (fake)")

    def cancel(self) -> bool:
        self.intents.append(("cancel",))
        return False

    async def compact(self, instructions: str | None = None, *, cancel: Any = None) -> CompactResult:
        self.intents.append(("compact", instructions))
        return CompactResult(ran=True)

    async def rewind_to(self, message_id: str, *, files: bool) -> RewindResult:
        self.intents.append(("rewind_to", message_id, files))
        return RewindResult(message_id, "")

    async def undo(self) -> tuple[Any, ...]:
        self.intents.append(("undo",))
        return ()

    def recall(self, key_text: str) -> bool:
        self.intents.append(("recall", key_text))
        return True

    def remember(self, text: str) -> str:
        self.intents.append(("remember", text))
        return str(self.workspace / "BULKHEAD.md")

    async def switch_route(self, route_name: str, *, model: str | None = None) -> SessionInfo:
        self.intents.append(("switch_route", route_name, model))
        self.route_name = route_name
        return self.info()

    def approve(self, call_id: str, answer: Any, *, reason: str = "") -> bool:
        word = "once" if answer is True else "deny" if answer is False else answer
        assert word in ANSWERS, answer
        self.intents.append(("approve", call_id, word, reason))
        waiting = self._waiting.get(call_id)
        if waiting is None or waiting[1].done():
            return False
        waiting[1].set_result((word, reason))
        return True

    async def read_queued_memory(self) -> None:
        self.intents.append(("read_queued_memory",))

    async def close(self, reason: str = "exit") -> None:
        self.intents.append(("close", reason))
        self.closed = reason
        for _request, future in self._waiting.values():
            if not future.done():
                future.set_result(("deny", ""))

    # -- SessionApi: queries ------------------------------------------------------------------------------
    def report(self) -> Any:
        raise RuntimeError("no report in the fake (the panels keep their empty state)")

    async def rewind_points(self) -> tuple[Any, ...]:
        return ()

    def permissions(self) -> PermissionsView:
        return PermissionsView(approval=self.approval, rules=())

    async def archive_page(self, query: str = "", limit: int = 100) -> Any:
        raise NotImplementedError

    async def custom_commands(self, reserved: Iterable[str] = ()) -> tuple[Any, ...]:
        return ()

    async def models(self) -> tuple[Any, ...]:
        return ()

    def info(self) -> SessionInfo:
        return SessionInfo(
            id=self.id,
            title="",
            route=self.route_name,
            provider=self.provider,
            model=self.model,
            workspace=str(self.workspace),
            read_only=False,
            turn=self._turn,
            messages=len(self._messages),
        )

    def pending_approvals(self) -> tuple[ApprovalRequest, ...]:
        return tuple(request for request, future in self._waiting.values() if not future.done())

    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback) if callback in self._subscribers else None

    # -- what the TUI needs besides -----------------------------------------------------------------------
    def opening_notices(self) -> OpeningNotices:
        return OpeningNotices()

    def warm_sizes(self) -> None:
        return None

    def settings(self) -> Any:
        return self._settings

    def history(self) -> list[Any]:
        return []

    def head_waiting(self) -> bool:
        return False

    def load_head(self) -> list[Any]:
        return []

    def prompt_committed(self, prompt: str) -> bool:
        return prompt in self._messages

    def view_before(self, message_id: str) -> list[Any]:
        return []

    def rewind_choices(self) -> list[Any]:
        return []

    def undo_compaction(self) -> bool:
        self.intents.append(("undo_compaction",))
        return True

    def interrupt_tools(self) -> None:
        self.intents.append(("interrupt_tools",))

    def why_not(self, command: str) -> str:
        return self.refusals.get(command, "")

    def records(self) -> None:
        return None  # no store: the panels show only what events tell them

    def counters(self) -> Counters:
        return Counters()

    def has_archive(self) -> bool:
        return False

    def recall_keys(self) -> tuple[ArchiveKey, ...]:
        return ()

    def rename(self, title: str) -> str:
        self.intents.append(("rename", title))
        return title

    def transcript(self) -> Any:
        raise NotImplementedError("the fake keeps no transcript")

    def memory_report(self) -> tuple[Any, str]:
        raise NotImplementedError

    def memory_review(self) -> MemoryReview:
        return MemoryReview("no facts wait for review (fake)")

    def accept_fact(self, fact: Any, text: str | None) -> str:
        return ""

    def reject_fact(self, fact: Any) -> None:
        return None

    def fallback_chain(self) -> str:
        return ""

    def set_fallback_asker(self, ask: Any) -> None:
        self.intents.append(("set_fallback_asker",))

    def route(self) -> Any:
        raise NotImplementedError

    async def remember_model(self, route_name: str, model: str) -> None:
        self.intents.append(("remember_model", route_name, model))

    async def route_models(self, route: Any) -> Any:
        raise NotImplementedError

    def approval_mode(self) -> str:
        return self.approval

    def set_approval(self, mode: str) -> None:
        self.intents.append(("set_approval", mode))
        self.approval = mode

    def reset_cap(self) -> bool:
        self.intents.append(("reset_cap",))
        return True

    def set_cap(self, cap: int) -> None:
        self.intents.append(("set_cap", cap))

    def view_changed(self, reason: str) -> None:
        self.intents.append(("view_changed", reason))

    def has_mcp(self) -> bool:
        return False

    async def start_mcp(self, ask: Any = None) -> None:
        return None

    async def confirm_workspace_files(self, ask_rules: Any, ask_gateways: Any) -> None:
        self.intents.append(("confirm_workspace_files",))

    def mcp_servers(self) -> tuple[str, ...]:
        return ()

    def mcp_statuses(self) -> list[Any]:
        return []

    async def restart_mcp(self, name: str) -> Any:
        raise ValueError(name)

    def mcp_report(self) -> tuple[str, list[tuple[str, str]]]:
        return "MCP servers — none configured", []

    def probe_target(self) -> Any:
        raise NotImplementedError

    def blocked_plan(self) -> Any:
        raise NotImplementedError

    async def find_offline(self) -> Any:
        raise NotImplementedError

    async def find_blocked(self, on_probe: Any) -> Any:
        raise NotImplementedError

    def withhold(self, finding: Any) -> Any:
        raise NotImplementedError


def _is_ui_session(session: FakeSession) -> UiSession:
    return session  # mypy checks the fake against the protocol the app holds


def app_on(fake: FakeSession, settings: Any = None, **options: Any) -> Any:
    """The TUI on `fake` in its workspace, as the Pilot tests build it (no cursor blink, the default keys)."""
    from app.config import load_settings
    from app.ui.app import BulkheadApp

    options.setdefault("keymap", {})
    options.setdefault("cursor_blink", False)
    options.setdefault("open_session", fake.open)  # a test may open it its own way (later, say)
    return BulkheadApp(
        settings if settings is not None else load_settings(), workspace=fake.workspace, **options
    )
