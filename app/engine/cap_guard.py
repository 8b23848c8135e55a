"""Nothing predicted over the effective byte cap is sent.

Every request bulkhead makes — chat, continuation, recovery attempt, summary, native compaction — is built to
fit its route's effective cap (the smallest of the configured `max_payload`, the cap learned for the route's
endpoint and, on the session's route, the one assumed after a rejection of unknown size). The sender checks
once more before anything goes out: a request predicted over the cap raises `OverCap` and is never sent; its
caller makes a smaller one, or says why it cannot.

    cap = route_cap(settings, state, route)           # CapInfo: bytes, source, detail
    check_fits(request, cap)                          # raises OverCap when request.predicted_bytes > cap.bytes
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.engine.payload import CapInfo, effective_cap
from app.model.cap_names import cap_name
from app.sizes import format_size

if TYPE_CHECKING:
    from app.config import Route, Settings
    from app.providers.base import Request
    from app.state import State


def configured_cap(settings: Settings, route: Route) -> tuple[int | None, str]:
    """The smallest `max_payload` that applies to `route` (its own, the global one) and where it is set."""
    caps = [
        (cap, where)
        for cap, where in (
            (route.max_payload, f"routes.{route.name}"),
            (settings.max_payload, settings.sources.get("max_payload", "config")),
        )
        if cap
    ]
    return min(caps) if caps else (None, "")


def route_cap(settings: Settings, state: State, route: Route, *, assumed: int | None = None) -> CapInfo:
    """The effective byte cap of `route`: configured, learned for its endpoint, or `assumed` (smallest wins)."""
    from app.gateway_profile import profile_from

    configured, where = configured_cap(settings, route)
    profile = profile_from(state.read(), route.endpoint_id)  # one read of state.toml: learned and imported
    imported = profile.imported
    return effective_cap(
        configured,
        profile.learned.cap,
        assumed,
        where,
        imported=imported.cap if imported is not None else None,
        imported_from=f"{imported.source} on {imported.imported_at[:10]}" if imported is not None else "",
    )


def cap_label(cap: CapInfo) -> str:
    """`learned cap` / `configured cap` / `assumed cap` — how the notices name the cap in force."""
    return cap_name(cap.source)


class OverCap(Exception):
    """A request predicted over its route's effective cap: it was not sent."""

    def __init__(self, request: Request, cap: CapInfo) -> None:
        self.request = request
        self.cap = cap
        super().__init__(
            f"the {request.purpose} request ({format_size(request.predicted_bytes)}) is over the "
            f"{cap_label(cap)} of route {request.route} ({format_size(cap.bytes or 0)}; {cap.detail}) — not sent"
        )

    @property
    def message(self) -> str:
        return str(self)


def over_cap(request: Request, cap: CapInfo | None) -> bool:
    return bool(cap is not None and cap.bytes and request.predicted_bytes > cap.bytes)


def check_fits(request: Request, cap: CapInfo | None) -> None:
    """Raise OverCap when `request` is predicted over `cap` (no cap known: everything fits)."""
    if cap is not None and over_cap(request, cap):
        raise OverCap(request, cap)
