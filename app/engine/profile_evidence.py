"""What a session's requests teach the endpoint's profile (`app.gateway_profile`), and what the profile changes.

- `apply_profile(provider, state)`: a route's provider stops sending the betas its endpoint refused;
- `on_failure(...)`: a refused request — its header limit (headers_too_large), a content block (judged by
  `app.engine.block_cause`: `record_judged_block`), the hop the classifier named (`Failure.hop`);
- `StreamQuirks`: the Sender's stream timings — buffered SSE, idle cuts — remembered once per session.

The engine's sender and `bulkhead proxy` both feed it, so one endpoint has one profile whoever sent.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from app.engine.failure_hops import Hop, HopKind
from app.engine.notice_words import notice
from app.engine.stream_watch import StreamObservation, buffered, idle_cut
from app.gateway_profile import (
    load_profile,
    profile_lines,
    record_content_block,
    record_header_limit,
    record_hop,
    record_stream_quirk,
)
from app.model.notice_facts.gateways import GatewaysFileLeftAlone, GatewaysFileTrusted, GatewaysFileUnreadable

if TYPE_CHECKING:
    from app.engine.failures import Failure
    from app.providers.base import Provider
    from app.state import State


def apply_profile(provider: Provider, state: State) -> None:
    """What the endpoint's profile changes in how requests are built: the betas it refuses are not sent."""
    with contextlib.suppress(Exception):  # an unreadable state file costs the memory, never the route
        provider.refused_betas = (
            provider.refused_betas | load_profile(state, provider.route.endpoint_id).refused_betas
        )


def endpoint_lines(state: State, endpoint: str) -> tuple[str, ...]:
    """The endpoint's profile in short lines for the Payload panel (none when nothing is known)."""
    try:
        return tuple(profile_lines(load_profile(state, endpoint)))
    except Exception:  # an unreadable state file: nothing to show
        return ()


def record_judged_block(state: State, endpoint: str, failure: Failure) -> None:
    """A failure judged content (`app.engine.block_cause`, at once or after the recovery's smaller resends
    were refused too) into the endpoint's profile: why, the gateway, the incident ID. Never raises."""
    if failure.cause != "content":
        return
    from app.engine.block_cause import refused_by

    why = next(
        (e.removeprefix("cause content: ") for e in failure.evidence if e.startswith("cause content: ")), ""
    )
    with contextlib.suppress(Exception):
        record_content_block(
            state,
            endpoint,
            kind=failure.kind,
            why=why or failure.reason,
            status=failure.status,
            gateway=refused_by(failure),
            incident_id=failure.incident_id,
            rejected_bytes=failure.rejected_bytes,
        )


def record_failure_hop(state: State, endpoint: str, hop: Hop | None) -> None:
    """The hop a failure named (`Failure.hop`), when it is one between bulkhead and the provider — a
    forward proxy or a gateway; the endpoint itself (nothing listening, a reset) is no hop to remember."""
    if hop is None or hop.kind is HopKind.ENDPOINT or not hop.name:
        return
    record_hop(
        state,
        endpoint,
        name=hop.name,
        kind=hop.kind.value,
        vendor=hop.vendor,
        address=hop.address,
        setting=hop.setting,
        error=hop.error,
        detail=hop.evidence[0] if hop.evidence else None,
    )


def on_failure(
    state: State,
    endpoint: str,
    failure: Failure,
    *,
    header_bytes: int | None = None,
) -> None:
    """Remember what a refused request showed about `endpoint` (never raises): its header limit, a content
    block (judged by `app.engine.block_cause`), the hop that answered."""
    with contextlib.suppress(Exception):
        if failure.kind == "headers_too_large" and (header_bytes or failure.request_header_bytes):
            record_header_limit(
                state,
                endpoint,
                header_bytes=int(header_bytes or failure.request_header_bytes or 0),
                reason=failure.reason,
            )
        record_judged_block(state, endpoint, failure)
        record_failure_hop(state, endpoint, failure.hop)


class StreamQuirks:
    """The Sender's `on_stream` for one route: each quirk is written to the profile once per session."""

    def __init__(self, state: State, endpoint: str) -> None:
        self.state = state
        self.endpoint = endpoint
        self.seen: set[str] = set()

    def __call__(self, observation: StreamObservation) -> None:
        detail = buffered(observation)
        if detail and "buffered_sse" not in self.seen:
            self.seen.add("buffered_sse")
            record_stream_quirk(self.state, self.endpoint, "buffered_sse", detail=detail)
        silence = idle_cut(observation)
        if silence is not None and "idle_cut" not in self.seen:
            self.seen.add("idle_cut")
            record_stream_quirk(
                self.state,
                self.endpoint,
                "idle_cut",
                detail=f"the stream was cut after {silence:.1f} s without an event (an idle timeout on the way)",
                idle_seconds=silence,
            )


AskGateways = Callable[[Any], Awaitable[str | None]]  # (GatewaysFile) -> "allow" | "deny" | None (not now)


async def confirm_workspace_gateways(engine: Any, ask: AskGateways | None) -> str | None:
    """Ask about the workspace's `.bulkhead/gateways.toml` when it waits for an answer (as the rule files and
    `.mcp.json` are asked about); the answer is remembered, and an allowed file is read at once and applies
    (its refused betas). Returns "allow", "deny" or None (nothing asked, or "not now")."""
    from app.workspace_gateways import WORKSPACE_FILE, answer_gateways_file, pending_gateways_file

    pending = pending_gateways_file(engine.state, engine.workspace)
    if pending is None or ask is None:
        return None
    try:
        answer = await ask(pending)
    except Exception:  # a broken question is "not now"
        answer = None
    if answer not in ("allow", "deny"):
        return None
    try:
        lines = answer_gateways_file(engine.state, pending, "allow" if answer == "allow" else "deny")
    except Exception as exc:  # a broken file costs its profiles, never the session
        engine.emit(notice(GatewaysFileUnreadable(file=WORKSPACE_FILE, error=str(exc))))
        return answer
    if answer == "allow":
        apply_profile(engine.provider, engine.state)
        engine.emit(notice(GatewaysFileTrusted(file=WORKSPACE_FILE, profiles=tuple(lines))))
    else:
        engine.emit(notice(GatewaysFileLeftAlone(file=WORKSPACE_FILE)))
    return answer


def workspace_gateway_notices(engine: Any) -> list[tuple[Any, str]]:
    """At a session's start: the workspace's shared gateways file (read when trusted); the profile it brings
    applies at once (refused betas). Never raises."""
    from app.workspace_gateways import sync_workspace_gateways

    try:
        notices = sync_workspace_gateways(engine.state, engine.workspace)
    except Exception as exc:  # a broken file costs its profiles, never the session
        return [("warn", f"could not read the workspace's gateway profiles: {exc}")]
    if notices:
        apply_profile(engine.provider, engine.state)
    return notices
