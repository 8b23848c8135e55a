"""A chat request predicted over the effective cap: compact until it fits, or say why it is not sent.

The preflight compacts a view past 85% of the cap down to 40%, but a request can still reach the sender
over the cap: the request base was above the preflight target (the boundary does not compact then), a
PreCompact hook blocked the compaction, the cap tightened while a turn ran. The sender refuses it
(`OverCap`); here the history is compacted to a target between the base and the cap, and the rebuilt
request goes only if it fits. Otherwise the turn fails with a sentence that says what to change —
nothing is sent, the conversation is unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.engine.cap_guard import OverCap, cap_label, over_cap
from app.engine.notice_words import notice
from app.engine.payload import describe_floor, reduce_advice
from app.engine.recovery import TurnFailed
from app.model.notice_facts.budget import OverCapCompacting
from app.sizes import format_size

if TYPE_CHECKING:
    from app.engine.host import RequestHost
    from app.providers.base import Request


def _cap_words(over: OverCap) -> str:
    cap = over.cap
    return f"the {cap_label(cap)} ({format_size(cap.bytes or 0)}; {cap.detail})"


async def fit_under_cap(engine: RequestHost, over: OverCap, max_tokens: int) -> Request:
    """A request like `over.request`, rebuilt from a compacted view that fits the cap; TurnFailed if none can."""
    cap_bytes = over.cap.bytes or 0
    predicted = over.request.predicted_bytes
    floor = engine.floor_sizes()
    if floor.total_bytes >= cap_bytes:
        raise TurnFailed(
            f"Not sent: the request base alone ({format_size(floor.total_bytes)}: {describe_floor(floor.parts)}) "
            f"is over {_cap_words(over)}, so no compaction of the history can make the request fit — "
            f"{reduce_advice(floor.parts)}; or raise max_payload if the gateway takes more (`/cap reset` "
            f"forgets a learned cap)."
        )
    settings = engine.settings
    target = max(
        int(cap_bytes * settings.preflight_target), floor.total_bytes + (cap_bytes - floor.total_bytes) // 2
    )
    engine.emit(
        notice(
            OverCapCompacting(
                predicted_bytes=predicted,
                cap_bytes=cap_bytes,
                cap_source=over.cap.source,
                cap_detail=over.cap.detail,
                target_bytes=target,
            )
        )
    )
    result = await engine.compactor.run(trigger="preflight", target_bytes=target)
    if result is None:
        raise TurnFailed(
            f"Not sent: the request ({format_size(predicted)}) is over {_cap_words(over)} and a PreCompact hook "
            f"blocked the compaction that would make it fit — let the hook allow it, or /compact first."
        )
    request = engine.provider.build(
        engine.session.view.messages, engine.system, engine.tools, max_tokens=max_tokens
    )
    cap = engine.cap_info()
    if over_cap(request, cap):
        raise TurnFailed(
            f"Not sent: after compacting, the request ({format_size(request.predicted_bytes)}) is still over "
            f"the {cap_label(cap)} ({format_size(cap.bytes or 0)}) — /compact with instructions to keep less, "
            f"or raise max_payload if the gateway takes more."
        )
    return request
