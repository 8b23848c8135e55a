"""A session's lifecycle in the engine: the start (a crash's half-written answer kept, marked partial; a stale
cap forgotten; SessionStart; what the instructions, rules and gateways say) and the close (SessionEnd, MCP,
memory, the providers and every queued write, then the lease).

It sees the engine only through `LifecycleHost` (app.engine.host).
"""

from __future__ import annotations

import contextlib
import functools
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from app.engine.notice_words import notice
from app.engine.profile_evidence import workspace_gateway_notices
from app.engine.sender import leftover_drafts
from app.engine.workspace_rules import start_notices as rule_start_notices
from app.model.messages import Message
from app.model.notice_facts.session import (
    CrashPartialKept,
    InstructionsLoaded,
    InstructionsProblem,
    PermissionsProblem,
    StaleCapForgotten,
    StateFileSetAside,
    WorkspaceGatewaysRead,
)

if TYPE_CHECKING:
    from app.engine.host import LifecycleHost


class Lifecycle:
    def __init__(self, host: LifecycleHost) -> None:
        self.host = host

    async def start(self, *, resumed: bool = False) -> None:
        """Fire SessionStart and keep any answer a crash left half-written (marked partial)."""
        with contextlib.suppress(OSError):
            self.host.state.migrate()  # e.g. forget caps an older bulkhead learned from a 431
        self._purge_content_cap()
        from app.state import take_damage_notices

        for sentence in take_damage_notices():  # a damaged state.toml was put aside: said once
            self.host.emit(notice(StateFileSetAside(explanation=sentence)))
        drafts = [] if self.host.session.read_only else leftover_drafts(self.host.session.folder)
        for message_id, path in drafts:
            with contextlib.suppress(OSError):
                text = path.read_text(encoding="utf-8")
                # A crash between committing an answer and deleting its draft leaves a draft already kept.
                if text.strip() and not self.host.session.is_master_id(message_id):
                    self.host.session.append(
                        Message.create(
                            "assistant",
                            text,
                            message_id=message_id,
                            turn=self.host.session.turn,
                            partial=True,
                        )
                    )
                    self.host.emit(notice(CrashPartialKept()))
                # after the partial answer is committed: in order, on the session's writer
                self.host.session.writer.submit(
                    functools.partial(_unlink_quietly, path), what="draft", required=False
                )
        await self.host.session.drain()
        await self.host.hooks.session_start("resume" if resumed else "startup")
        self.announce_instructions()
        for problem in self.host.permissions.problems:
            self.host.emit(notice(PermissionsProblem(problem=problem)))
        for level, text in workspace_gateway_notices(self.host):  # a team's .bulkhead/gateways.toml, on trust
            self.host.emit(notice(WorkspaceGatewaysRead(problem=level == "warn", explanation=text)))
        for said in rule_start_notices(self.host.permissions):
            self.host.emit(said)
        self.host.view_changed("start", predicted=self.host.start_bytes())
        self.host.memory.after_turn()  # a segment a crash left queued is read now, in the background (the TUI)

    def _purge_content_cap(self) -> None:
        """Forget this endpoint's cap when an older bulkhead learned it from a content block (issue 36)."""
        from app.engine.cap_purge import purge_stale_cap

        route = self.host.route
        try:
            said = purge_stale_cap(
                self.host.state,
                self.host.session.store,
                route.endpoint_id,
                url_prefix=route.endpoint_url if route.provider == "bedrock" else route.base_url,
                floor_bytes=self.host.floor_sizes().total_bytes,
            )
        except (OSError, sqlite3.Error):
            return
        if said:
            self.host.emit(notice(StaleCapForgotten(endpoint=route.endpoint_id, explanation=said)))

    async def close(self, reason: str = "exit") -> None:
        """End the session here: SessionEnd, MCP and the provider closed, every queued write on disk (a held
        failure is raised, after the lease is released), the lease released."""
        try:
            with contextlib.suppress(Exception):  # a size not kept is measured at the next open
                self.host.keep_view_size()
            await self.host.hooks.session_end(reason)
            self.host.closing = True
            if self.host.mcp is not None:
                with contextlib.suppress(Exception):
                    await self.host.mcp.close()
            with contextlib.suppress(Exception):
                await self.host.memory.close()
            with contextlib.suppress(Exception):
                await self.host.fallback.aclose()
            with contextlib.suppress(Exception):
                await self.host.provider.aclose()
        finally:
            try:
                await self.host.session.stop_writer()  # nothing queued is dropped; writes go inline from here
            finally:
                self.host.session.release_lease()  # another bulkhead may write it now
                if reason in ("exit", "clear", "resume") and not self.host.session.read_only:
                    from app.engine.empty_sessions import forget_if_empty

                    forget_if_empty(self.host.session)  # nothing in it: not kept (issue 40)

    def announce_instructions(self) -> None:
        """One notice naming the instruction files in the system prompt, and one per problem (a refused
        import, the size cut)."""
        loaded = self.host.instructions
        if loaded.files:
            in_request = dict((p.label, p.bytes) for p in self.host.floor_sizes().parts).get(
                "instructions", loaded.bytes
            )
            self.host.emit(
                notice(
                    InstructionsLoaded(
                        files=tuple(f.shown or f.path.name for f in loaded.files),
                        scopes=tuple(f.scope for f in loaded.files),
                        file_bytes=tuple(f.bytes for f in loaded.files),
                        request_bytes=in_request,
                    )
                )
            )
        for problem in loaded.problems:
            self.host.emit(notice(InstructionsProblem(problem=problem)))


def _unlink_quietly(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()
