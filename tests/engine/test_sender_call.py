"""A request that is not a stream (native compaction: `Sender.call`) fails the way a streamed one does: classified
with the user's `[[classifier.rules]]`, what it shows about body sizes learned, counted and shown."""

from __future__ import annotations

import pytest

from app.config import ClassifierRuleSpec
from app.engine.sender import RequestFailed
from app.model.events import RequestFinished
from app.providers.base import ProviderError, Request

GATEWAY_PHRASE = "corporate gateway: body over the inspection limit"


def compaction_request() -> Request:
    return Request(
        provider="anthropic",
        route="t",
        model="m",
        url="http://127.0.0.1:1/v1/messages",
        body={},
        predicted_bytes=300_000,
        max_tokens=1000,
        purpose="summary",
        actual_bytes=300_000,
    )


async def test_a_failed_native_call_is_classified_like_a_stream_with_the_users_rules(make_harness):
    rule = ClassifierRuleSpec(kind="payload_too_large", where="config.toml:1", phrase="inspection limit")
    h = make_harness(classifier_rules=(rule,))
    sender = h.engine.sender
    request = compaction_request()
    finished: list[RequestFinished] = []
    h.session.bus.subscribe(lambda e: finished.append(e) if isinstance(e, RequestFinished) else None)

    async def refused() -> None:
        raise ProviderError(f"400 {GATEWAY_PHRASE}", provider="anthropic", status=400, body=GATEWAY_PHRASE)

    with pytest.raises(RequestFailed) as failed:
        await sender.call(request, refused)

    assert failed.value.failure.kind == "payload_too_large"  # the user's rule, as a stream's failure gets it
    assert finished and finished[-1].kind == "payload_too_large" and finished[-1].status == 400
    assert h.session.counters.failed_requests == 1
    assert sender.size_evidence.refused_min == 300_000  # what it shows about body sizes is learned
