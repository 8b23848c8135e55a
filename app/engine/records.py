"""The records `app.engine.api` returns (frozen dataclasses): what a front end gets back from a session.

Kept apart from the API so the engine's parts can build them without importing the API (which knows the
engine). Front ends import them from `app.engine.api`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from app.engine.failures import Failure

Answer = Literal["once", "session", "project", "deny"]  # once/session/project allow (the last two remember)
ANSWERS: frozenset[str] = frozenset({"once", "session", "project", "deny"})


# -- records ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TurnResult:
    outcome: str  # answered | failed | partial | blocked | cancelled
    text: str = ""
    error: str = ""
    failure: Failure | None = None


@dataclass(frozen=True)
class ApprovalRequest:
    """A tool call waiting for the user: its call id (the `ToolCallStarted` it belongs to), the tool, its
    input, why it asks, and the allow rule an "always" answer keeps."""

    call_id: str
    name: str
    args: dict[str, Any]
    why: str
    remember: str = ""
    why_not: str = ""  # why "always" is not offered ("" when it is, or when nothing was asked about)


@dataclass(frozen=True)
class SessionInfo:
    id: str
    title: str
    route: str
    provider: str
    model: str
    workspace: str
    read_only: bool
    turn: int
    notices: tuple[str, ...] = ()  # what choosing the route said (a lab fallback, a --model override)
    resumed: bool = False
    messages: int = 0  # in the conversation (all of it, not only the view)
    in_view: int = 0  # in the view: what the next request carries (0: nothing to compact yet)


@dataclass(frozen=True)
class OpeningNotices:
    """What opening the session said, for a front end to show before the session starts: about the route
    (`lab`: no provider is configured, the built-in lab model answers) and the session (a fork, a moved
    folder, a session held by another bulkhead)."""

    route: tuple[str, ...] = ()
    session: tuple[str, ...] = ()
    lab: bool = False


@dataclass(frozen=True)
class RewindPoint:
    """A prompt of the user's `/rewind` can go back to, and how many files changed since it."""

    message_id: str
    turn: int
    prompt: str
    files_changed: int


@dataclass(frozen=True)
class RestoredFile:
    path: str
    action: str  # restored | removed | unchanged | skipped
    detail: str = ""


@dataclass(frozen=True)
class RewindResult:
    message_id: str
    prompt: str  # the prompt's text, to edit and send again
    restored: tuple[RestoredFile, ...] = ()


@dataclass(frozen=True)
class CompactResult:
    """What `/compact` did: None-like (`ran` False) when a PreCompact hook blocked it."""

    ran: bool
    changed: bool = False
    method: str = ""  # none | trim | summary | L3
    bytes_before: int = 0
    bytes_after: int = 0
    cancelled: bool = False


@dataclass(frozen=True)
class PermissionRule:
    kind: str  # deny | ask | allow | held (an allow rule waiting for approval)
    rule: str
    source: str


@dataclass(frozen=True)
class PermissionsView:
    approval: str  # the approval mode in force
    rules: tuple[PermissionRule, ...]
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class ArchiveItem:
    key: str
    reason: str
    bytes: int
    created_at: float
    content: str


@dataclass(frozen=True)
class ArchivePage:
    items: tuple[ArchiveItem, ...]
    query: str = ""
    limit: int = 0

    @property
    def full(self) -> bool:
        """The page holds as many items as asked for: there may be more."""
        return bool(self.limit) and len(self.items) >= self.limit


@dataclass(frozen=True)
class CustomCommandInfo:
    name: str  # what follows the "/"
    source: str  # .bulkhead/commands | .claude/commands | global
    description: str
    argument_hint: str = ""


@dataclass(frozen=True)
class RouteModelsView:
    route: str
    provider: str
    current: str  # the route's model now
    models: tuple[str, ...] = ()  # ids the endpoint offers (the configured one first)
    error: str = ""  # why the list could not be read
