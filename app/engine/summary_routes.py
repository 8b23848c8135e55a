"""The routes a summary may be written on, each bounded by its own byte cap.

The summarizer route (`compact_model`, else the session's) comes first; when it is another route, the
session's follows — a summarizer behind a tighter gateway than the chat's leaves the summary to the chat's
route rather than to L3, and the compaction says so. Each route measures its summary request exactly and
reads its effective cap before every attempt. A summary request refused as too big teaches that route's
endpoint a cap (¾ of the refused bytes, as the recovery ladder does), so the retry is fitted under it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.engine.caps import learned_cap_for
from app.engine.compaction.summarize import SummaryRoute
from app.engine.notice_words import notice
from app.engine.sender import RequestFailed
from app.model.events import CapLearned
from app.model.messages import Message
from app.model.notice_facts.gateways import SummaryCapLearned
from app.providers.base import SUMMARY_PURPOSE

if TYPE_CHECKING:
    from app.engine.host import CompactorHost
    from app.engine.sender import Sender
    from app.providers.base import Provider, Request

SUMMARY_MAX_TOKENS = 4096


def summary_request(provider: Provider, system: str, text: str, turn: int) -> Request:
    message = Message.create("user", text, turn=turn, origin="notice")
    return provider.build((message,), system, (), max_tokens=SUMMARY_MAX_TOKENS, purpose=SUMMARY_PURPOSE)


def _learn_from_refusal(engine: CompactorHost, provider: Provider, failed: RequestFailed) -> None:
    """A summary request refused for its size: remember ¾ of it for that route's endpoint."""
    rejected = failed.failure.rejected_bytes or failed.error.request_bytes or failed.request.predicted_bytes
    if not failed.failure.payload_related or not rejected:
        return
    endpoint = provider.route.endpoint_id
    learned = engine.state.learn_cap(
        endpoint,
        learned_cap_for(rejected),
        rejected_bytes=rejected,
        kind=failed.failure.kind,
        reason=failed.failure.reason,
    )
    engine.emit(
        CapLearned(
            cap_bytes=learned.cap_bytes,
            rejected_bytes=rejected,
            endpoint=endpoint,
            reason=failed.failure.reason,
        )
    )
    engine.emit(
        notice(SummaryCapLearned(rejected_bytes=rejected, cap_bytes=learned.cap_bytes, endpoint=endpoint))
    )


def _route(engine: CompactorHost, provider: Provider, sender: Sender, window_tokens: int) -> SummaryRoute:
    async def ask(system: str, text: str) -> str:
        request = summary_request(provider, system, text, engine.session.turn)
        try:
            result = await sender.send(request, stream_text=False)
        except RequestFailed as failed:
            _learn_from_refusal(engine, provider, failed)
            raise
        return result.text

    return SummaryRoute(
        name=provider.route.name,
        ask=ask,
        request_bytes=lambda system, text: summary_request(provider, system, text, 0).predicted_bytes,
        cap=lambda: engine.route_cap(provider.route).bytes,
        window_tokens=window_tokens,
    )


def summary_routes(engine: CompactorHost) -> list[SummaryRoute]:
    """The summarizer route first, then the session's when the summarizer is another route."""
    provider, sender = engine.summarizer()
    routes = [_route(engine, provider, sender, engine.summarizer_window())]
    if provider is not engine.provider:
        routes.append(_route(engine, engine.provider, engine.sender, engine.context_window))
    return routes
