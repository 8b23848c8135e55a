"""Caps an older bulkhead learned from a content block are forgotten (issue 36).

Before bulkhead judged size against content, any HTML 403 taught a body cap. A cap learned from a
`waf_block` is wrong when:

- it is at or below the request floor (system prompt + tools): no request could pass it, so the 403 was
  about something else; or
- this endpoint has since accepted a body at least as large as the one it refused (the store's requests).

Such a cap would shrink every later session to fit a limit that does not exist, so it is forgotten when a
session starts, and a notice says so. Caps learned from a 413 or a reset are left alone: those are size.

A content block itself is recorded once, in the endpoint's gateway profile (`app.engine.profile_evidence`).
"""

from __future__ import annotations

from app.engine.failures import WAF_BLOCK
from app.sizes import format_size
from app.state import LearnedCap, State
from app.store import Store


def _from_waf(cap: LearnedCap) -> bool:
    return cap.kind == WAF_BLOCK or (not cap.kind and "waf" in cap.reason.lower())


def largest_accepted_since(store: Store, url_prefix: str | None, since_iso: str) -> int | None:
    """The largest body an answered request to `url_prefix…` carried after `since_iso` (state.toml's time)."""
    if not url_prefix:
        return None
    from datetime import UTC, datetime

    try:
        since = datetime.strptime(since_iso, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return None
    rows = store.query(
        "SELECT MAX(COALESCE(actual_bytes, predicted_bytes)) AS largest FROM requests "
        "WHERE outcome = 'ok' AND created_at > ? AND substr(url, 1, ?) = ?",
        (since, len(url_prefix), url_prefix),
    )
    value = rows[0]["largest"] if rows else None
    return int(value) if value else None


def stale_content_cap(cap: LearnedCap | None, *, floor_bytes: int | None, accepted_since: int | None) -> str:
    """Why `cap` was learned from a content block and must go ("" to keep it)."""
    if cap is None or not _from_waf(cap):
        return ""
    if floor_bytes and cap.cap_bytes <= floor_bytes:
        return (
            f"it is at or below the request floor ({format_size(floor_bytes)}), so the 403 it came from "
            f"was about the content, not the size"
        )
    if accepted_since and cap.rejected_bytes and accepted_since >= cap.rejected_bytes:
        return (
            f"the endpoint has since accepted {format_size(accepted_since)}, more than the "
            f"{format_size(cap.rejected_bytes)} it refused"
        )
    return ""


def purge_stale_cap(
    state: State, store: Store, endpoint: str, *, url_prefix: str | None, floor_bytes: int | None
) -> str:
    """Forget `endpoint`'s cap when it came from a content block; the notice to show ("" when kept)."""
    cap = state.learned_cap(endpoint)
    if cap is None or not _from_waf(cap):
        return ""
    why = stale_content_cap(
        cap,
        floor_bytes=floor_bytes,
        accepted_since=largest_accepted_since(store, url_prefix, cap.learned_at),
    )
    if not why or not state.forget_cap(endpoint):
        return ""
    return f"forgot the {format_size(cap.cap_bytes)} cap learned for {endpoint} from a 403: {why}"
