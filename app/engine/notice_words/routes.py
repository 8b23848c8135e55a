"""The words of the routes notices (facts in app.model.notice_facts.routes)."""

from __future__ import annotations

from app.engine.describe import Description, describe
from app.model.notice_facts.routes import FallbackBackOnFirst, FallbackRouteSkipped, RouteSwitched
from app.textsafe import display_line


@describe.register
def _route_switched(fact: RouteSwitched) -> Description:
    return Description(f"now using route {fact.route} ({fact.provider} · {fact.model})", code=fact.code)


@describe.register
def _back_on_first(fact: FallbackBackOnFirst) -> Description:
    return Description(
        f"back on {fact.route} for this turn (fallback_sticky = false: each turn starts on the "
        f"chain's first route)",
        code=fact.code,
    )


@describe.register
def _route_skipped(fact: FallbackRouteSkipped) -> Description:
    return Description(
        f"{fact.reason}; fallback route {fact.route} skipped: {display_line(fact.error)}",
        level="warn",
        code=fact.code,
    )
