"""The facts of the routes notices: `/model ROUTE` and the fallback chain (worded by
app.engine.notice_words.routes)."""

from __future__ import annotations

from dataclasses import dataclass

from app.model.notice_facts import NoticeFact


@dataclass(frozen=True)
class RouteSwitched(NoticeFact):
    """`/model ROUTE`: the session continues on another route."""

    kind = "route_switched"
    code = "route"
    route: str
    provider: str
    model: str


@dataclass(frozen=True)
class FallbackBackOnFirst(NoticeFact):
    """A new turn starts on the chain's first route again (fallback_sticky = false)."""

    kind = "fallback_back_on_first"
    code = "fallback"
    route: str  # the chain's first route


@dataclass(frozen=True)
class FallbackRouteSkipped(NoticeFact):
    """A fallback route could not be built (no key, a bad config): the chain goes on past it."""

    kind = "fallback_route_skipped"
    code = "fallback"
    route: str  # the route skipped
    reason: str  # why the route before gave the turn up, in app.engine.fallback's words (move_reason)
    error: str  # why it could not be built: the exception's message


__all__ = ["FallbackBackOnFirst", "FallbackRouteSkipped", "RouteSwitched"]
