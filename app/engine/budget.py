"""The budget: the context window, the byte cap in force and where it came from, the request's measured size
(kept with the session between opens), the non-compactable floor, calibration of bytes per token from usage,
and the reports the panels read (`ViewChanged`, `ContextReport`).

It sees the engine only through `BudgetHost` (app.engine.host).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from app.engine.cap_guard import configured_cap, route_cap
from app.engine.compaction.context import PassContext
from app.engine.context_report import ContextReport
from app.engine.instructions import join_system
from app.engine.native import edit_totals
from app.engine.notice_words import notice
from app.engine.payload import CapInfo, FloorSizes, calibrate, floor_breakdown
from app.engine.profile_evidence import endpoint_lines
from app.engine.view_size import SIZE_FLAG, size_key, stored_size
from app.model.events import ViewChanged
from app.model.notice_facts.budget import CapReset

if TYPE_CHECKING:
    from app.config import Route
    from app.engine.host import BudgetHost
    from app.engine.sender import StreamResult
    from app.model.messages import Message
    from app.model.tools import ToolSpec


class Budget:
    def __init__(self, host: BudgetHost) -> None:
        self.host = host
        self._view_bytes: tuple[tuple[object, ...], int] | None = None  # last known size, and what it was of
        self._size_was_kept = False  # the report took the view's size kept with the session (warm_sizes)
        self._started = False
        self._cap_detail_memo: tuple[tuple[object, ...], str] | None = None  # (endpoint, cap) → its words
        self._floor_cache: tuple[tuple[ToolSpec, ...], str, FloorSizes] | None = None

    def pass_context(self, turn: int, max_tokens: int, *, target_bytes: int | None) -> PassContext:
        """What a compaction pass measures with (app.engine.compaction): this budget's `measure`, the target, the
        archive to restore stubs from, and the MCP tools whose repeated reads may be deduplicated."""
        store, session = self.host.session.store, self.host.session

        def lookup(key: str) -> str | None:
            entry = store.archive_get(key, session.id, strict=True)
            return entry.content if entry else None

        return PassContext(
            settings=self.host.settings,
            turn=turn,
            budget_scale=float(session.flags.get("budget_scale", 1.0)),
            session_folder=session.folder,
            archive_lookup=lookup,
            measure=lambda messages: self.measure(messages, max_tokens),
            target_bytes=target_bytes,
            is_master=session.is_master,
            repeatable_tools=self.host.mcp.read_only_tools() if self.host.mcp is not None else frozenset(),
        )

    def forget_floor(self) -> None:
        """The system prompt, the tools or the route changed: the floor is measured again."""
        self._floor_cache = None

    @property
    def context_window(self) -> int:
        learned = self.host.session.flags.get("learned_window")
        return min(self.host.catalog_window, int(learned)) if learned else self.host.catalog_window

    def usable_window_tokens(self) -> int:
        return max(1024, self.context_window - self.host.max_tokens)

    @property
    def bytes_per_token(self) -> float:
        return float(self.host.session.flags.get("bytes_per_token", 4.0))

    def configured_cap(self) -> tuple[int | None, str]:
        return configured_cap(self.host.settings, self.host.route)

    def cap_info(self) -> CapInfo:
        return self.route_cap(self.host.route)

    def route_cap(self, route: Route) -> CapInfo:
        """The effective byte cap of `route` (the session's, or the summarizer's); the cap assumed after a
        rejection of unknown size belongs to the session's route."""
        assumed = self.host.session.flags.get("assumed_cap") if route.name == self.host.route.name else None
        return route_cap(self.host.settings, self.host.state, route, assumed=assumed)

    def cap_detail(self, cap: CapInfo | None = None) -> str:
        """Where the cap in force came from, in words; a learned cap adds the rejection's reason.

        Reads state.toml only when the cap changes (the answer is kept per cap)."""
        cap = cap or self.cap_info()
        key = (self.host.route.endpoint_id, cap.bytes, cap.source, cap.detail)
        if self._cap_detail_memo is not None and self._cap_detail_memo[0] == key:
            return self._cap_detail_memo[1]
        detail = cap.detail
        if cap.source == "learned" and detail:
            learned = self.host.state.learned_cap(self.host.route.endpoint_id)
            if learned is not None and learned.reason:
                detail += f" ({learned.reason.split(':')[0].strip()})"
        self._cap_detail_memo = (key, detail)
        return detail

    def measure(self, messages: Sequence[Message], max_tokens: int | None = None) -> int:
        size = self.host.provider.measure(
            tuple(messages), self.host.system, self.host.tools, max_tokens=max_tokens or self.host.max_tokens
        )
        if messages is self.host.session.view.messages and max_tokens in (None, self.host.max_tokens):
            self._view_bytes = (self._measured(), size)
        return size

    def _size_key(self) -> str:
        return size_key(
            self.host.provider,
            self.host.system,
            self.host.tools,
            self.host.max_tokens,
            self.host.session.view_ids(),
        )

    def known_view_bytes(self) -> int | None:
        """The view's last measured (or kept) size, if nothing it was measured from has changed since."""
        if self._view_bytes is None:
            return None
        made_of, size = self._view_bytes
        return size if all(a is b for a, b in zip(made_of, self._measured(), strict=True)) else None

    def keep_view_size(self) -> None:
        """Keep the view's last exact size with the session (app.engine.view_size), if it is still the
        view's: the next resume reports it without measuring every message again."""
        size = self.known_view_bytes()
        if size is None or self.host.session.read_only:
            return  # the view, the prompt, the tools or the route changed since: the next open measures
        kept = {"key": self._size_key(), "bytes": size}
        if self.host.session.flags.get(SIZE_FLAG) != kept:
            self.host.session.set_flag(SIZE_FLAG, kept)

    def warm_sizes(self) -> Callable[[], None] | None:
        """Measuring the view, to run in a thread once the start is drawn — when the session
        opened with its kept size (`keep_view_size`), its messages were never translated for the route, and
        the first request would do it on the event loop (the adapters' caches take concurrent measures).
        None when the open measured the view (nothing to warm)."""
        if not self._size_was_kept:
            return None
        self._size_was_kept = False
        session, provider, system, tools, max_tokens = (
            self.host.session,
            self.host.provider,
            self.host.system,
            self.host.tools,
            self.host.max_tokens,
        )

        def warm() -> None:
            with contextlib.suppress(Exception):  # the first request measures again, and says what is wrong
                # (a session opened from its end decodes its head here, if nothing did before)
                provider.measure(session.view.messages, system, tools, max_tokens=max_tokens)

        return warm

    def floor_sizes(self) -> FloorSizes:
        """The non-compactable base — system prompt, project instructions, tool definitions (built-in and
        MCP) — in exact request bytes: requests with no messages, built with and without each part."""
        tools, system = self.host.tools, self.host.system
        cached = self._floor_cache
        if cached is None or cached[0] is not tools or cached[1] != system:
            measure, max_tokens = self.host.provider.measure, self.host.max_tokens
            empty = measure((), "", (), max_tokens=max_tokens)
            base = measure((), self.host.base_system, (), max_tokens=max_tokens)
            instructed = measure(
                (), join_system(self.host.base_system, self.host.instructions.text), (), max_tokens=max_tokens
            )
            bare = measure((), system, (), max_tokens=max_tokens)
            builtin = measure((), system, self.host.builtin_tools, max_tokens=max_tokens)
            total = measure((), system, tools, max_tokens=max_tokens)
            plan = self.host.mcp_plan()
            servers = tuple(plan.per_server.items()) if plan is not None else ()
            parts = floor_breakdown(
                system_bytes=base - empty,
                instructions_bytes=max(0, instructed - base),
                memory_bytes=max(0, bare - instructed),
                builtin_tools_bytes=builtin - bare,
                mcp_tools_bytes=total - builtin,
                mcp_servers=dict(servers),
            )
            sizes = FloorSizes(
                system_bytes=base - empty,
                instructions_bytes=max(0, instructed - base),
                tools_bytes=total - bare,
                total_bytes=total,
                mcp_bytes=total - builtin,
                parts=tuple(parts),
                mcp_servers=servers,
            )
            cached = self._floor_cache = (tools, system, sizes)
        return cached[2]

    def view_changed(self, reason: str = "", *, predicted: int | None = None) -> ViewChanged:
        """Tell the panels about the next request; `predicted`: its size, when just measured."""
        self.host.budget_epoch += 1
        cap = self.cap_info()
        if predicted is None:
            predicted = self.measure(self.host.session.view.messages)
        floor = self.floor_sizes()
        plan = self.host.mcp_plan()
        settings = self.host.settings
        event = ViewChanged(
            view_id=self.host.session.view_id(),
            messages=self.host.session.view_len(),
            predicted_bytes=predicted,
            effective_cap=cap.bytes,
            cap_source=cap.source,
            context_tokens=int(predicted / self.bytes_per_token),
            context_window=self.context_window,
            reason=reason,
            floor=floor.parts,
            floor_bytes=floor.total_bytes,
            cap_detail=self.cap_detail(cap),
            preflight_ratio=settings.preflight_ratio,
            compact_threshold=settings.compact_threshold,
            no_cap_warn_bytes=settings.no_cap_warn_bytes,
            mcp_deferred_from=plan.full_bytes if plan is not None and plan.deferred else None,
            gateway_profile=endpoint_lines(self.host.state, self.host.route.endpoint_id),
        )
        self.host.emit(event)
        return event

    def calibrate(self, result: StreamResult) -> None:
        if self.host.native.skip_calibration(result):
            return  # the provider read less than was sent: usage says nothing about bytes per token
        if result.usage and result.request.purpose == "chat":
            updated = calibrate(
                self.bytes_per_token, result.request.predicted_bytes, result.usage.input_tokens
            )
            if abs(updated - self.bytes_per_token) > 0.01:
                self.host.session.set_flag("bytes_per_token", round(updated, 3))

    def reset_cap(self) -> bool:
        forgotten = self.host.state.forget_cap(self.host.route.endpoint_id)
        if self.host.session.flags.get("assumed_cap"):
            self.host.session.set_flag("assumed_cap", None)
            forgotten = True
        self.host.emit(notice(CapReset(forgotten=forgotten)))
        self.host.view_changed("cap")
        return forgotten

    def _measured(self) -> tuple[object, ...]:
        """What a measure of the view depends on, as objects (compared by identity)."""
        return (
            self.host.session.view_ref(),
            self.host.system,
            self.host.tools,
            self.host.provider,
            self.host.max_tokens,
        )

    def start_bytes(self) -> int | None:
        """The report's figure when the session opened, if nothing it was measured from has changed since:
        opening a session reports (off the event loop), then starts — a long view is measured once."""
        self._started = True
        return self.known_view_bytes()

    def context_report(self) -> ContextReport:
        """What `/context` and the Payload panel show about the next request."""
        cap = self.cap_info()
        session = self.host.session
        predicted = None
        if not self._started:  # opening: the size kept with the session, if it is this view's
            predicted = stored_size(session.flags, self._size_key())
            self._size_was_kept = predicted is not None
        if predicted is None:
            predicted = self.measure(session.view.messages)
        else:
            self._view_bytes = (self._measured(), predicted)
        floor = self.floor_sizes()
        return ContextReport(
            messages_in_view=session.view_len(),
            messages_in_master=session.master_len(),
            predicted_bytes=predicted,
            effective_cap=cap.bytes,
            cap_source=cap.source,
            cap_detail=self.cap_detail(cap),
            context_window=self.context_window,
            estimated_tokens=int(predicted / self.bytes_per_token),
            bytes_per_token=self.bytes_per_token,
            views_stacked=session.views_len(),
            floor_bytes=floor.total_bytes,
            floor_parts=tuple(floor.parts),
            context_engine=self.host.settings.context_engine,
            native_compaction=getattr(self.host.provider, "native_compaction", "")
            if self.host.native.enabled
            else "",
            compact_threshold=self.host.native.threshold() or 0,
            provider_edits=edit_totals(self.host.session.flags),
            gateway_profile=endpoint_lines(self.host.state, self.host.route.endpoint_id),
        )
