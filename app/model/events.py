"""The events front ends render. The engine emits them; the TUI and `bulkhead -p` subscribe.

Each event is a small frozen dataclass with a `type` tag; `to_json()` gives the
one-line JSON `bulkhead -p --json` prints. Events are facts about what happened, never
instructions to a widget.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Literal

from app.model.notice_facts import NoticeFact

# The closed sets events carry (values as stored in the database, receipts and `--json`).
NoticeLevel = Literal["info", "warn", "error"]
RequestPurpose = Literal[
    "chat", "summary", "probe", "compact", "memory"
]  # compact: a provider-side compaction request; memory: the memory worker distilling facts
ApprovalDecision = Literal["approved", "denied", "auto"]
RecoveryOutcome = Literal["sending", "not_smaller", "over_cap", "succeeded", "failed", "exhausted", "refused"]
CompactionStage = Literal[
    "start",
    "trim",
    "summarize",
    "engine_fallback",
    "summary_applied",
    "summary_rejected",
    "nuclear",
    "done",
    "cancelled",
]
# provider: a compaction the provider made in its answer; provider-edit: its context editing cleared tool results
CompactionTrigger = Literal["auto", "manual", "preflight", "recovery", "provider", "provider-edit"]
CompactionOutcome = Literal["applied", "skipped", "failed"]
CapSource = Literal["configured", "learned", "imported", "assumed", "none"]
HookDecision = Literal["ok", "block", "error", "timeout", "cancelled"]
TurnOutcome = Literal["answered", "failed", "cancelled", "partial"]


@dataclass(frozen=True)
class Event:
    type: ClassVar[str] = "event"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["type"] = self.type
        return data


@dataclass(frozen=True)
class SessionStarted(Event):
    type: ClassVar[str] = "session"
    session_id: str
    route: str
    provider: str
    model: str
    resumed: bool = False
    lab: bool = False


@dataclass(frozen=True)
class Notice(Event):
    """Something the user should read: info, warning or error, one sentence with what to do."""

    type: ClassVar[str] = "notice"
    text: str
    level: NoticeLevel = "info"
    code: str = ""  # e.g. "lab", "payload_notice", "preflight", "no_cap_warning", "floor"
    fact: NoticeFact | None = None  # what it tells, typed (app.model.notice_facts); its words are `text`

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"text": self.text, "level": self.level, "code": self.code, "type": self.type}
        if self.fact is not None:
            data["fact"] = self.fact.to_json()
        return data


@dataclass(frozen=True)
class TurnStarted(Event):
    type: ClassVar[str] = "turn_started"
    turn: int
    prompt: str


@dataclass(frozen=True)
class MessageAdded(Event):
    """A message joined the master log (user prompt, answer, tool results, notice)."""

    type: ClassVar[str] = "message"
    message_id: str
    role: str
    origin: str
    text: str
    partial: bool = False


@dataclass(frozen=True)
class RequestStarted(Event):
    type: ClassVar[str] = "request_started"
    request_id: str
    route: str
    purpose: RequestPurpose
    predicted_bytes: int
    attempt: int = 0
    level: int = 0
    started_at: float | None = None  # wall clock (epoch seconds) when it was sent, as stored


@dataclass(frozen=True)
class RequestFinished(Event):
    """One request's record: sizes, status, latency, classification."""

    type: ClassVar[str] = "request"
    request_id: str
    route: str
    purpose: str
    predicted_bytes: int
    bytes: int | None
    status: int | None
    latency_ms: float
    kind: str | None = None  # failure kind, None on success
    reason: str = ""
    level: int = 0
    started_at: float | None = None  # wall clock (epoch seconds) when it was sent, as stored


@dataclass(frozen=True)
class TextDelta(Event):
    type: ClassVar[str] = "text"
    text: str


@dataclass(frozen=True)
class ToolCallStarted(Event):
    type: ClassVar[str] = "tool_call"
    call_id: str
    name: str
    args: dict[str, Any]


@dataclass(frozen=True)
class ToolApproval(Event):
    type: ClassVar[str] = "tool_approval"
    call_id: str
    name: str
    decision: ApprovalDecision
    reason: str = ""


@dataclass(frozen=True)
class ApprovalRequested(Event):
    """A tool call waits for the user's answer (`SessionApi.approve(call_id, answer)`); `remember`: the
    allow rule an "always" answer keeps. Only front ends on `app.engine.api` get it (a legacy approver
    callback is asked directly)."""

    type: ClassVar[str] = "approval_requested"
    call_id: str
    name: str
    args: dict[str, Any] = field(default_factory=dict)
    why: str = ""
    remember: str = ""
    why_not: str = ""  # why "always" is not offered


@dataclass(frozen=True)
class ToolCallFinished(Event):
    type: ClassVar[str] = "tool_result"
    call_id: str
    name: str
    is_error: bool
    preview: str
    chars: int
    spill_path: str | None = None


@dataclass(frozen=True)
class UsageRecorded(Event):
    type: ClassVar[str] = "usage"
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None
    purpose: str = "chat"
    route: str = ""  # the route that answered (a fallback chain counts each route apart)


@dataclass(frozen=True)
class AnswerFinished(Event):
    type: ClassVar[str] = "answer"
    message_id: str
    stop_reason: str
    partial: bool = False


@dataclass(frozen=True)
class Rejection(Event):
    type: ClassVar[str] = "rejection"
    kind: str
    bytes: int | None
    reason: str
    status: int | None = None
    evidence: tuple[str, ...] = ()
    payload_related: bool = False
    recoverable: bool = False
    cause: str = ""  # a gateway refusal's judged cause: size | content | unknown ("" for other failures)
    incident_id: str | None = None  # the block page's reference, for the network team


@dataclass(frozen=True)
class CapLearned(Event):
    type: ClassVar[str] = "cap_learned"
    cap_bytes: int
    rejected_bytes: int | None
    endpoint: str
    reason: str
    assumed: bool = False  # True when the size was unknown and the fallback cap was assumed


@dataclass(frozen=True)
class RecoveryStep(Event):
    type: ClassVar[str] = "recovery"
    level: int
    attempt: int
    max_attempts: int
    bytes_before: int | None
    bytes_after: int | None
    outcome: RecoveryOutcome
    kind: str = ""
    reason: str = ""


@dataclass(frozen=True)
class Retry(Event):
    type: ClassVar[str] = "retry"
    kind: str
    attempt: int
    max_attempts: int
    delay_s: float
    reason: str = ""


@dataclass(frozen=True)
class CompactionPhase(Event):
    """Live status of a running compaction, in the seed's wording."""

    type: ClassVar[str] = "compaction_phase"
    trigger: str
    phase: CompactionStage
    text: str


@dataclass(frozen=True)
class Compaction(Event):
    type: ClassVar[str] = "compaction"
    trigger: CompactionTrigger
    method: str
    outcome: CompactionOutcome
    bytes_before: int
    bytes_after: int
    messages_before: int
    messages_after: int
    level: int = 0
    archive_keys: tuple[str, ...] = ()
    view_id: str | None = None
    engine: str = ""  # who wrote the summary: "local", "mcp:NAME", "local (fallback: …)"; "" without one


@dataclass(frozen=True)
class McpServerChanged(Event):
    """An MCP server changed state (starting, ready, failed, crashed, …). Texts come from the server:
    untrusted, shown through app.textsafe."""

    type: ClassVar[str] = "mcp_server"
    name: str
    state: str
    reason: str = ""
    stderr_tail: tuple[str, ...] = ()
    tools: int = 0
    transport: str = ""
    source: str = ""  # config | project
    log_path: str = ""


@dataclass(frozen=True)
class ProviderEdits(Event):
    """The provider applied context edits to a request (Anthropic clear_tool_uses): what this one
    cleared, how many tool results bulkhead stubbed to match, and the session's totals."""

    type: ClassVar[str] = "provider_edits"
    edits: int
    cleared_tool_uses: int
    cleared_input_tokens: int
    stubbed: int = 0
    total_edits: int = 0
    total_tool_results: int = 0
    total_tokens: int = 0


@dataclass(frozen=True)
class ViewChanged(Event):
    """The active view changed (message appended, compaction, rewind): sizes for the gauge."""

    type: ClassVar[str] = "view"
    view_id: str
    messages: int
    predicted_bytes: int
    effective_cap: int | None
    cap_source: CapSource
    context_tokens: int
    context_window: int | None
    reason: str = ""
    floor: tuple[Any, ...] = ()  # app.engine.payload.FloorPart: the non-compactable base, by part
    floor_bytes: int | None = None  # a request with no messages, exactly
    cap_detail: str = ""  # where the cap came from, e.g. "max_payload from config.toml" ("" unknown)
    preflight_ratio: float | None = (
        None  # the share of the cap that compacts first (Settings.preflight_ratio)
    )
    compact_threshold: float | None = (
        None  # the share of the window that compacts (Settings.compact_threshold)
    )
    no_cap_warn_bytes: int | None = None  # with no cap, the size that warns (Settings.no_cap_warn_bytes)
    mcp_deferred_from: int | None = None  # MCP definitions deferred: the bytes they would add in full
    gateway_profile: tuple[str, ...] = ()  # what the endpoint has shown beyond its cap (app.gateway_profile)


@dataclass(frozen=True)
class HookRun(Event):
    type: ClassVar[str] = "hook"
    event: str
    matcher: str
    command: str
    duration_ms: float
    exit_code: int | None
    decision: HookDecision
    output: str = ""


@dataclass(frozen=True)
class HookStarted(Event):
    """A hook began to run (its HookRun follows when it ends): the status line and the Hooks panel show it
    meanwhile, so a slow hook is never an unexplained "thinking"."""

    type: ClassVar[str] = "hook_started"
    event: str
    matcher: str
    command: str


@dataclass(frozen=True)
class CountersChanged(Event):
    type: ClassVar[str] = "counters"
    counters: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TurnFinished(Event):
    type: ClassVar[str] = "turn_finished"
    turn: int
    outcome: TurnOutcome
    error: str = ""


@dataclass(frozen=True)
class FallbackMoved(Event):
    """A route could not answer (after its own retries): the turn goes on through the next route of its chain."""

    type: ClassVar[str] = "fallback"
    from_route: str
    to_route: str
    kind: str  # app.model.fallback.FallbackKind
    reason: str  # "anthropic: 529 overloaded after 2 retries"
    status: int | None = None
    retries: int = 0
    after_partial: bool = False  # the first route's partial answer is kept; the next one continues it


@dataclass(frozen=True)
class FallbackAnswered(Event):
    """The turn was answered by a route of the chain other than the one it started on, and why it moved."""

    type: ClassVar[str] = "fallback_answered"
    route: str
    started_on: str
    moves: tuple[str, ...]  # each move's reason, in order

    @property
    def text(self) -> str:
        return " → ".join((*self.moves, f"answered by {self.route}"))

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "text": self.text}


@dataclass(frozen=True)
class MemoryQueued(Event):
    """A compaction is about to rewrite the view: the segment the memory worker had not read yet is in its
    durable queue first (app.engine.memory)."""

    type: ClassVar[str] = "memory_queued"
    queue_id: int
    messages: int
    bytes: int
    reason: str  # the view change that follows: "auto:summary", "recovery:L2", "manual:provider", …


@dataclass(frozen=True)
class MemoryDistilled(Event):
    """The memory worker read a segment and found durable facts: suggested (memory = "suggest") or kept in the
    memory file (memory = "auto")."""

    type: ClassVar[str] = "memory_distilled"
    facts: tuple[str, ...]
    mode: str  # suggest | auto
    source: str  # "queue 3" (a segment compaction pushed out) or "conversation" (read a few turns behind)
    pending: int = 0  # facts waiting for /memory review
    path: str = ""  # the memory file written (auto)


Subscriber = Callable[[Event], None]


class EventBus:
    """Synchronous fan-out. A subscriber that raises is removed from nothing and breaks nothing."""

    MAX_ERRORS = 100

    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []
        self.errors: list[BaseException] = []

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            if subscriber in self._subscribers:
                self._subscribers.remove(subscriber)

        return unsubscribe

    def emit(self, event: Event) -> None:
        for subscriber in list(self._subscribers):
            try:
                subscriber(event)
            except Exception as exc:  # a broken front end must not break the engine
                self.errors.append(exc)
                del self.errors[: -self.MAX_ERRORS]  # a subscriber failing on every event: keep the latest
