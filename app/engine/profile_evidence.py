"""What a session's requests teach the endpoint's profile (`app.gateway_profile`), and what the profile changes.

- `apply_profile(provider, state)`: a route's provider stops sending the betas its endpoint refused;
- `on_failure(...)`: a refused request — its header limit (headers_too_large), a content block (with the
  judged cause: `judged_cause`), the proxy hop the failure named (`failure_hop`);
- `StreamQuirks`: the Sender's stream timings — buffered SSE, idle cuts — remembered once per session.

`judged_cause` and `failure_hop` are the two places where other modules' judgements come in (the content
finder's cause, the classifier's structured hop): each reads an attribute of the Failure when it has one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from app.engine.stream_watch import StreamObservation, buffered, idle_cut
from app.gateway_profile import (
    load_profile,
    profile_lines,
    record_content_block,
    record_header_limit,
    record_hop,
    record_stream_quirk,
)
from app.sizes import format_size

if TYPE_CHECKING:
    from app.engine.failures import Failure
    from app.engine.resets import SizeEvidence
    from app.providers.base import Provider
    from app.state import State

CONTENT_KINDS = frozenset({"waf_block"})


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
    except Exception:  # noqa: BLE001 - an unreadable state file: nothing to show
        return ()


def judged_cause(failure: Failure, request_bytes: int | None, sizes: SizeEvidence | None) -> str | None:
    """Why a refusal is about the content, or None when it is not judged to be.

    A judgement carried by the failure (`content_cause`, from the content finder) wins; otherwise a WAF
    refusal of a body no bigger than one this endpoint accepted is about what it says, not its size."""
    cause = getattr(failure, "content_cause", None)
    if cause:
        return str(cause)
    if failure.kind not in CONTENT_KINDS or not request_bytes or sizes is None or sizes.accepted_max is None:
        return None
    if request_bytes <= sizes.accepted_max:
        return (
            f"content: a {format_size(request_bytes)} request was refused where {format_size(sizes.accepted_max)} "
            f"passed (not its size)"
        )
    return None


def failure_hop(failure: Failure) -> Mapping[str, Any] | None:
    """The proxy hop a failure names (the classifier's structured hop), as a mapping with at least `name`."""
    hop = getattr(failure, "hop", None)
    if hop is None:
        return None
    if isinstance(hop, Mapping):
        return hop
    fields = getattr(hop, "__dict__", None) or {
        name: getattr(hop, name) for name in getattr(hop, "__slots__", ()) if hasattr(hop, name)
    }
    return {k: v for k, v in dict(fields).items() if isinstance(v, str | int | float | bool)} or None


def on_failure(
    state: State,
    endpoint: str,
    failure: Failure,
    *,
    request_bytes: int | None,
    header_bytes: int | None,
    sizes: SizeEvidence | None,
) -> None:
    """Remember what a refused request showed about `endpoint` (never raises)."""
    with contextlib.suppress(Exception):
        if failure.kind == "headers_too_large" and (header_bytes or failure.request_header_bytes):
            record_header_limit(
                state,
                endpoint,
                header_bytes=int(header_bytes or failure.request_header_bytes or 0),
                reason=failure.reason,
            )
        cause = judged_cause(failure, request_bytes, sizes)
        if cause:
            record_content_block(
                state,
                endpoint,
                cause=cause,
                kind=failure.kind,
                status=failure.status,
                evidence="; ".join(failure.evidence)[:300],
            )
        hop = failure_hop(failure)
        if hop:
            record_hop(state, endpoint, hop)


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


def workspace_gateway_notices(engine: Any) -> list[tuple[Any, str]]:
    """At a session's start: the workspace's shared gateways file (read when trusted); the profile it brings
    applies at once (refused betas). Never raises."""
    from app.workspace_gateways import sync_workspace_gateways

    try:
        notices = sync_workspace_gateways(engine.state, engine.workspace)
    except Exception as exc:  # noqa: BLE001 - a broken file costs its profiles, never the session
        return [("warn", f"could not read the workspace's gateway profiles: {exc}")]
    if notices:
        apply_profile(engine.provider, engine.state)
    return notices
