"""The words of the recovery notices (facts in app.model.notice_facts.recovery)."""

from __future__ import annotations

from app.engine.describe import Description, describe
from app.model.notice_facts.recovery import (
    CapAssumed,
    CapLearnedFromRejection,
    FloorNearLimit,
    FloorTooBig,
    WindowLearned,
)
from app.sizes import format_size


@describe.register
def _window_learned(fact: WindowLearned) -> Description:
    what = "its tokens-per-minute limit" if fact.per_minute else "the model's context window"
    return Description(
        f"the provider takes at most {fact.tokens:,} tokens per request ({what}, from its "
        f"error); bulkhead will keep requests under it",
        code=fact.code,
    )


@describe.register
def _cap_learned(fact: CapLearnedFromRejection) -> Description:
    return Description(
        f"Gateway rejected a {format_size(fact.rejected_bytes)} request — payload cap set to "
        f"{format_size(fact.cap_bytes)} for {fact.endpoint} (set max_payload to override; "
        f"/cap reset forgets it)",
        level="warn",
        code=fact.code,
    )


@describe.register
def _cap_assumed(fact: CapAssumed) -> Description:
    return Description(
        f"Assuming a {format_size(fact.cap_bytes)} payload cap — set max_payload (e.g. 5MB, 512KB) to adjust",
        level="warn",
        code=fact.code,
    )


@describe.register
def _floor_near_limit(fact: FloorNearLimit) -> Description:
    return Description(fact.diagnosis, level="warn", code=fact.code)


@describe.register
def _floor_too_big(fact: FloorTooBig) -> Description:
    return Description(fact.diagnosis, level="error", code=fact.code)
