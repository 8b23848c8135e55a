"""What a `web_fetch` call gets from the session: its limits, the providers' CA bundle, and the
`WebFetch(domain:…)` rules it asks again for each redirect hop (`app.tools.web_fetch`).

    ctx = ToolContext(..., **fetch_settings(settings, permissions))
"""

from __future__ import annotations

from typing import Any


def fetch_settings(settings: Any, permissions: Any) -> dict[str, Any]:
    """The `ToolContext` fields of web_fetch. A CA bundle that does not exist is not raised here (the turn
    goes on): the fetch itself answers with the problem."""
    from app.ca_bundle import CaBundleMissing, fetch_verify

    try:
        verify: Any = fetch_verify(settings)
        problem = ""
    except CaBundleMissing as exc:
        verify, problem = True, str(exc)

    def rule(url: str) -> tuple[str | None, str]:
        verdict = permissions.check("web_fetch", {"url": url})
        return verdict.kind, verdict.reason

    return {
        "fetch_max_bytes": settings.web_fetch_max_bytes,
        "fetch_timeout": settings.web_fetch_timeout,
        "fetch_max_redirects": settings.web_fetch_max_redirects,
        "fetch_verify": verify,
        "fetch_problem": problem,
        "fetch_rule": rule,
    }
