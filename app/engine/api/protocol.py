"""What a front end may do with a session (`SessionApi`, a Protocol) and the shapes of what it hands in: the
trust questions about the workspace's files, a content probe seen, an event subscriber. `EngineSession`
(`app.engine.api.session`) implements it over the engine; a test hands a front end a fake. Front ends import
it from `app.engine.api`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from app.engine.context_report import ContextReport
from app.engine.records import (
    Answer,
    ApprovalRequest,
    ArchivePage,
    CompactResult,
    CustomCommandInfo,
    OpeningNotices,
    PermissionsView,
    RestoredFile,
    RewindPoint,
    RewindResult,
    RouteModelsView,
    SessionInfo,
    TurnResult,
)
from app.model.events import Event

if TYPE_CHECKING:
    from app.config_mcp import McpServerSpec
    from app.engine.blocked import BlockedPlan, BlockedReport
    from app.engine.content_finder import Finding
    from app.engine.permissions import RuleFile
    from app.engine.withhold import WithholdOutcome
    from app.model.messages import Image
    from app.workspace_gateways import GatewaysFile

Subscriber = Callable[[Event], None]
# A trust question about what came with the workspace: "allow" or "deny" (remembered), None (not now).
AskRules = Callable[[list["RuleFile"]], Awaitable[str | None]]  # rule files whose allow rules wait
AskGateways = Callable[["GatewaysFile"], Awaitable[str | None]]  # `.bulkhead/gateways.toml`
AskMcp = Callable[[list["McpServerSpec"]], Awaitable[str | None]]  # `.mcp.json` servers not allowed yet
ProbeSeen = Callable[[int, str, str], None]  # a content probe sent: (number, what it carried, verdict)


@runtime_checkable
class SessionApi(Protocol):
    """A session as every front end drives it: commands, queries and one event stream."""

    # opening
    async def start(self) -> None: ...

    def opening_notices(self) -> OpeningNotices: ...

    async def confirm_workspace_files(
        self, ask_rules: AskRules | None, ask_gateways: AskGateways | None
    ) -> None: ...

    def has_mcp(self) -> bool: ...

    async def start_mcp(
        self, ask: AskMcp | None = None, *, allow_project: bool = False, wait: bool = True
    ) -> None: ...

    # commands
    async def submit(
        self, prompt: str, images: Sequence[Image] = (), *, typed: str | None = None
    ) -> TurnResult: ...

    async def retry(self) -> TurnResult: ...

    def cancel(self) -> bool: ...

    async def compact(
        self, instructions: str | None = None, *, cancel: asyncio.Event | None = None
    ) -> CompactResult: ...

    async def rewind_to(self, message_id: str, *, files: bool) -> RewindResult: ...

    async def undo(self) -> tuple[RestoredFile, ...]: ...

    def recall(self, key_text: str) -> bool: ...

    def remember(self, text: str) -> str: ...

    async def switch_route(self, route_name: str, *, model: str | None = None) -> SessionInfo: ...

    def undo_compaction(self) -> bool: ...

    def rename(self, title: str) -> str: ...

    def approve(self, call_id: str, answer: Answer | bool, *, reason: str = "") -> bool: ...

    async def read_queued_memory(self) -> None: ...

    async def close(self, reason: str = "exit") -> None: ...

    # refused content (`/blocked`, `bulkhead probe --content`)
    def blocked_plan(self) -> BlockedPlan: ...

    async def find_offline(self, *, paranoia: int | None = None) -> BlockedReport: ...

    async def find_blocked(self, on_probe: ProbeSeen) -> BlockedReport: ...

    def withhold(self, finding: Finding) -> WithholdOutcome: ...

    # queries
    def report(self) -> ContextReport: ...

    async def rewind_points(self) -> tuple[RewindPoint, ...]: ...

    def permissions(self) -> PermissionsView: ...

    async def archive_page(self, query: str = "", limit: int = 100) -> ArchivePage: ...

    async def custom_commands(self, reserved: Iterable[str] = ()) -> tuple[CustomCommandInfo, ...]: ...

    async def models(self) -> tuple[RouteModelsView, ...]: ...

    def info(self) -> SessionInfo: ...

    def pending_approvals(self) -> tuple[ApprovalRequest, ...]: ...

    # the event stream
    def subscribe(self, callback: Subscriber) -> Callable[[], None]: ...
