"""The session as the TUI drives it (`app.ui`): `SessionApi` and what only a full-screen front end needs
besides — the chat's history and its older half, the inspector's source, the conditions of its commands, MCP
servers' statuses and restarts, what the probe sends through, memory review. (Starting after the first
frame, the opening notices, trust questions, starting MCP and `/blocked` are every front end's:
`app.engine.api.session`.)

    session = await open_ui_session(settings, workspace=..., store=store, state=state)   # not started
    ...the history is on screen...
    await session.start()

`UiSession` is a Protocol (a test drives the TUI with a fake, `tests/ui/fake_session.py`); `EngineUiSession`
implements it over `app.engine.turn.Engine`. Like `app.engine.api.session`, importing this module brings in
no engine internals: each method imports what it uses.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from app.engine.api.records import ArchiveKey, ArchiveKeys, SessionRecords
from app.engine.api.session import EngineSession, SessionApi, open_session
from app.engine.api.session import OpeningNotices as OpeningNotices  # where the TUI's tests found it

if TYPE_CHECKING:
    from app.config import Route, Settings
    from app.engine.api.memory import Fact, Instructions
    from app.engine.api.sessions import Session
    from app.mcp.connection import ServerStatus
    from app.model.costs import Counters
    from app.model.messages import Message
    from app.providers.models import RouteModels

log = logging.getLogger(__name__)

Command = str  # an action of the TUI's table whose condition the session knows (`why_not`)


@dataclass(frozen=True)
class MemoryReview:
    """`/memory review`: the facts the memory worker suggests (`pending`), or why there are none to show."""

    said: str = ""  # a sentence instead of the screen ("" when there are facts)
    facts: tuple[Fact, ...] = ()  # answered with accept_fact/reject_fact
    target: str = ""  # the memory file an accepted fact goes to


@dataclass(frozen=True)
class ProbeTarget:
    """What `/probe` sends through (`app.probe`, `app.probe_floor`): the route's provider and the floor every
    probe carries."""

    route: str
    provider: Any  # app.providers.base.Provider
    base_system: str
    system: str
    tools: tuple[Any, ...]
    max_tokens: int


@runtime_checkable
class UiSession(SessionApi, Protocol):
    """`SessionApi` plus what the TUI needs."""

    def warm_sizes(self) -> Callable[[], None] | None: ...

    def settings(self) -> Settings: ...

    # the conversation
    def history(self) -> Sequence[Message]: ...

    def head_waiting(self) -> bool: ...

    def load_head(self) -> list[Message]: ...

    def prompt_committed(self, prompt: str) -> bool: ...

    def view_before(self, message_id: str) -> list[Message]: ...

    def rewind_choices(self) -> list[tuple[Message, int]]: ...

    def interrupt_tools(self) -> None: ...

    def why_not(self, command: Command) -> str: ...

    # the inspector, reports and exports
    def records(self) -> SessionRecords | None: ...

    def counters(self) -> Counters: ...

    def has_archive(self) -> bool: ...

    def recall_keys(self) -> tuple[ArchiveKey, ...]: ...

    def transcript(self) -> Session: ...

    def memory_report(self) -> tuple[Instructions, str]: ...

    def memory_review(self) -> MemoryReview: ...

    def accept_fact(self, fact: Fact, text: str | None) -> str: ...

    def reject_fact(self, fact: Fact) -> None: ...

    # routes, approvals, caps
    def fallback_chain(self) -> str: ...

    def set_fallback_asker(self, ask: Callable[[str], Awaitable[bool]]) -> None: ...

    def route(self) -> Route: ...

    async def remember_model(self, route_name: str, model: str) -> None: ...

    async def route_models(self, route: Route) -> RouteModels: ...

    def approval_mode(self) -> str: ...

    def set_approval(self, mode: str) -> None: ...

    def reset_cap(self) -> bool: ...

    def set_cap(self, cap: int) -> None: ...

    def view_changed(self, reason: str) -> None: ...

    # MCP servers
    def mcp_servers(self) -> tuple[str, ...]: ...

    def mcp_statuses(self) -> list[ServerStatus]: ...

    async def restart_mcp(self, name: str) -> ServerStatus: ...

    def mcp_report(self) -> tuple[str, list[tuple[str, str]]]: ...

    # the probe
    def probe_target(self) -> ProbeTarget: ...


class EngineUiSession(EngineSession):
    """`UiSession` over an `Engine`."""

    _records: SessionRecords | None = None
    _archive_keys: ArchiveKeys | None = None

    def warm_sizes(self) -> Callable[[], None] | None:
        return self.engine.warm_sizes()

    def settings(self) -> Settings:
        """The settings in force for this session (config.toml, the project's, this run's `/cap`)."""
        return self.engine.settings

    # -- the conversation ---------------------------------------------------------------------------------
    def history(self) -> Sequence[Message]:
        """The conversation as decoded so far (a long session opened from its end: its last messages)."""
        return self.engine.session.decoded()

    def head_waiting(self) -> bool:
        return bool(self.engine.session.head_waiting)

    def load_head(self) -> list[Message]:
        """A long session's older messages, decoded (blocking: call it in a thread)."""
        session = self.engine.session
        session.complete()
        return list(session.master[: session.head_count])

    def prompt_committed(self, prompt: str) -> bool:
        """Is `prompt` in the conversation (Esc came after it was committed)?"""
        tail = self.engine.session.decoded()[-4:]
        return any(m.role == "user" and m.meta.origin == "user" and m.text == prompt for m in tail)

    def view_before(self, message_id: str) -> list[Message]:
        return self.engine.view_before(message_id)

    def rewind_choices(self) -> list[tuple[Message, int]]:
        return self.engine.rewind_points()

    def interrupt_tools(self) -> None:
        """Stop a running tool or hook (the turn itself is cancelled by whoever runs it)."""
        self.engine.tool_cancel.set()

    def why_not(self, command: Command) -> str:
        """Why `command` cannot run on this session now ("" when it can): compact, rewind (the last
        compaction), retry, undo, rewind_to, cap_reset."""
        engine, session = self.engine, self.engine.session
        if command == "compact":
            return "" if session.view_len() else "nothing to compact yet"
        if command == "rewind":
            return "" if session.views_len() > 1 else "no compaction to undo"
        if command == "retry":
            from app.engine.turn import retry_point

            view = session.view_end()
            if not view:
                return "nothing to retry yet"
            last = view[-1]
            if last.role == "assistant" and not last.meta.partial and retry_point(view) is None:
                return "no prompt of yours in the view to ask again"
            return ""
        if command == "undo":
            if engine.checkpoints.last_turn() is not None:
                return ""
            return "no file change to undo (write_file and edit_file changes are checkpointed; shell commands are not)"
        if command == "rewind_to":
            if any(m.role == "user" and m.meta.origin == "user" for m in session.decoded()):
                return ""
            return "no prompt to go back to yet"
        if command == "cap_reset":
            return "" if engine.cap_info().source in ("learned", "assumed") else "no learned cap to forget"
        raise ValueError(f"no condition named {command!r}")

    # -- the inspector, reports and exports ----------------------------------------------------------------
    def records(self) -> SessionRecords:
        """The session's stored records, read only, for the inspector's panels to read in their workers —
        never on the UI loop (one reader per session: a panel knows a rebinding by it)."""
        session = self.engine.session
        records = self._records
        if records is None or records.session_id != session.id or records.store is not session.store:
            records = self._records = SessionRecords(session.store, session.id)
        return records

    def follow_archive(self) -> None:
        """Keep the archive's keys in memory from now on: read once (blocking: `open_ui_session` calls it in a
        thread), then told of each entry the session archives. `has_archive` and `recall_keys` read only this."""
        keys = self._archive_keys = ArchiveKeys()
        self.engine.session.archive_watchers.append(keys.add)
        try:
            keys.load(self.records())
        except Exception as exc:  # a damaged archive: /recall completes what is archived from now on
            log.warning("could not read the archive's keys of %s: %s", self.engine.session.id, exc)

    def counters(self) -> Counters:
        return self.engine.session.counters

    def has_archive(self) -> bool:
        """Whether this session's archive holds anything (from memory: no database read)."""
        return bool(self.recall_keys())

    def recall_keys(self) -> tuple[ArchiveKey, ...]:
        """The newest archived entries, newest first, for `/recall`'s completion (from memory: no database
        read, so it may be asked on every keystroke)."""
        keys = self._archive_keys
        return keys() if keys is not None else ()

    def transcript(self) -> Session:
        """The open session's conversation and records, read only, for `app.export` and `app.har` to write
        out — in a thread: it reads the store."""
        return self.engine.session

    def memory_report(self) -> tuple[Instructions, str]:
        """The instruction files in the system prompt, and the memory file `/memory TEXT` appends to."""
        from app.engine.instructions import memory_file

        return self.engine.instructions, str(memory_file(self.engine.workspace))

    def memory_review(self) -> MemoryReview:
        from app.engine.instructions import memory_file

        worker = self.engine.memory
        if worker.mode == "off":
            return MemoryReview(
                'the memory worker is off (memory = "off" in config.toml); /memory TEXT still adds a line'
            )
        if worker.mode == "auto":
            return MemoryReview(
                f'memory = "auto": facts are kept in {worker.path} (part of every request), not reviewed; '
                f'memory = "suggest" offers them here instead'
            )
        facts = tuple(worker.pending())
        if not facts:
            return MemoryReview(
                "no facts wait for review — the memory worker suggests them as the conversation goes on"
            )
        return MemoryReview(facts=facts, target=str(memory_file(self.engine.workspace)))

    def accept_fact(self, fact: Fact, text: str | None) -> str:
        return str(self.engine.memory.accept(fact, text))

    def reject_fact(self, fact: Fact) -> None:
        self.engine.memory.reject(fact)

    # -- routes, approvals, caps ---------------------------------------------------------------------------
    def fallback_chain(self) -> str:
        """The fallback chain the route starts, in words ("" when there is none)."""
        fallback = self.engine.fallback
        return fallback.describe() if len(fallback.chain()) > 1 else ""

    def set_fallback_asker(self, ask: Callable[[str], Awaitable[bool]]) -> None:
        """Who is asked whether a partial answer goes on on the next route of the chain."""
        self.engine.fallback.asker = ask

    def route(self) -> Route:
        """The route in use (an implicit one — the lab, a provider from the environment — has no config
        name)."""
        return self.engine.route

    async def remember_model(self, route_name: str, model: str) -> None:
        """The model /model chose for `route_name`, kept in state.toml for the next switch and start (the
        configured one: forgotten). Raises ConfigError for a route that does not exist, OSError when
        state.toml cannot be written."""
        from app.engine.bootstrap import choose_route

        choice = await asyncio.to_thread(choose_route, self.engine.settings, route_name)
        configured = choice.route.model
        self.engine.state.choose_model(choice.route.name, None if model == configured else model)

    async def route_models(self, route: Route) -> RouteModels:
        """The models `route`'s endpoint offers (`app.config.Route`), for the model picker."""
        from app.engine.model_list import list_route_models
        from app.secrets import get_api_key

        settings = self.engine.settings
        key = None
        if route.provider in ("anthropic", "openai"):
            key = (await asyncio.to_thread(get_api_key, route.provider, route.api_key_env)).value
        if route.name == self.engine.route.name and self.choice is not None:
            key = key or self.choice.api_key
        return await list_route_models(route, settings, key, timeout=settings.model_list_timeout)

    def approval_mode(self) -> str:
        return str(self.engine.settings.approval)

    def set_approval(self, mode: str) -> None:
        self.engine.set_approval(mode)

    def reset_cap(self) -> bool:
        return self.engine.reset_cap()

    def set_cap(self, cap: int) -> None:
        """`/cap SIZE`: the request body cap for this session (not saved)."""
        engine = self.engine
        sources = {**engine.settings.sources, "max_payload": "/cap (this session only)"}
        engine.settings = engine.settings.with_overrides(max_payload=cap, sources=sources)

    def view_changed(self, reason: str) -> None:
        """Say the view changed (the inspector measures it again): after `/cap`, a withholding."""
        self.engine.view_changed(reason)

    # -- MCP servers ---------------------------------------------------------------------------------------
    def mcp_servers(self) -> tuple[str, ...]:
        mcp = self.engine.mcp
        return tuple(mcp.connections) if mcp is not None else ()

    def mcp_statuses(self) -> list[ServerStatus]:
        mcp = self.engine.mcp
        return list(mcp.statuses()) if mcp is not None and mcp.connections else []

    async def restart_mcp(self, name: str) -> ServerStatus:
        mcp = self.engine.mcp
        if mcp is None or name not in mcp.connections:
            raise ValueError(f"no MCP server named {name!r}")
        if not mcp.started:
            await self.engine.start_mcp()
        return await mcp.restart(name)

    def mcp_report(self) -> tuple[str, list[tuple[str, str]]]:
        from app.mcp.report import engine_report

        return engine_report(self.engine)

    # -- the probe -----------------------------------------------------------------------------------------
    def probe_target(self) -> ProbeTarget:
        """What `/probe` sends through: the route's provider and the session's floor (system prompt,
        instructions, tools with MCP) every probe carries."""
        engine = self.engine
        return ProbeTarget(
            engine.route.name,
            engine.provider,
            engine.base_system,
            engine.system,
            engine.tools,
            engine.max_tokens,
        )


async def open_ui_session(settings: Settings, **options: Any) -> EngineUiSession:
    """`open_session(..., start=False)` for the TUI: opened off the event loop, started by `start()`."""
    session = await open_session(settings, start=False, factory=EngineUiSession, **options)
    assert isinstance(session, EngineUiSession)
    await asyncio.to_thread(session.follow_archive)
    return session
