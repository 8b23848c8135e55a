"""Distil durable facts from a segment of the conversation: the memory worker's requests to the summarizer route.

The segment is rendered whole (app.engine.compaction.render), cut into parts that fit the summarizer route's window
and its effective cap, and each part is asked for its facts. A part over the cap (not sent) or refused for its size
teaches the cap and is read again in smaller parts, like any request is recovered; a request that fails otherwise
raises `MemoryFailed` (the worker leaves the segment queued for the next try).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from app.engine.cap_guard import OverCap
from app.engine.caps import learned_cap_for
from app.engine.compaction.render import render_segment, summarizer_budget
from app.engine.sender import RequestFailed
from app.model.events import CapLearned
from app.model.memory import MEMORY_SYSTEM, memory_request_text, parse_facts
from app.model.messages import Message
from app.sizes import format_size

if TYPE_CHECKING:
    from app.config import Route, Settings
    from app.engine.payload import CapInfo
    from app.engine.sender import Sender
    from app.engine.session import Session
    from app.model.events import Event
    from app.providers.base import Provider, Request
    from app.state import State

MEMORY_MAX_TOKENS = 2048  # a memory answer is a list of short facts
FIT_MARGIN = 0.9  # JSON escaping makes a request a little bigger than its text
MIN_PART_CHARS = 2_000  # below this a segment is not split further: the request cannot fit at all
MAX_SHRINKS = 8  # refusals of one part before the segment waits for a later try (2⁸: 200 KB → under 1 KB)
NO_CAP_PART_CHARS = 200_000  # without any cap, a part is still bounded (a huge tool output is read in parts)


class MemoryFailed(Exception):
    """The worker could not read a segment now (the segment stays queued, or the progress unmoved)."""


class DistilHost(Protocol):
    """What the distiller uses of the engine: the summarizer route, its window and cap, the learned caps."""

    settings: Settings
    session: Session
    state: State

    def emit(self, event: Event) -> None: ...

    def summarizer(self) -> tuple[Provider, Sender]: ...

    def summarizer_window(self) -> int: ...

    def route_cap(self, route: Route) -> CapInfo: ...

    def _make_sender(self, provider: Provider, route_name: str) -> Sender: ...


class _TooBig(Exception):
    """A memory request over the cap (not sent) or refused for its size: read the part in smaller pieces."""


def split_text(text: str, budget: int) -> list[str]:
    """`text` in parts of at most `budget` chars, cut at line ends where possible (every char kept, in order)."""
    if len(text) <= budget:
        return [text]
    parts: list[str] = []
    current: list[str] = []
    size = 0
    for line in text.splitlines(keepends=True):
        while len(line) > budget:  # a line longer than a part: cut it
            if current:
                parts.append("".join(current))
                current, size = [], 0
            parts.append(line[:budget])
            line = line[budget:]
        if size + len(line) > budget and current:
            parts.append("".join(current))
            current, size = [], 0
        current.append(line)
        size += len(line)
    if current:
        parts.append("".join(current))
    return parts


class Distiller:
    """Asks the summarizer route (`compact_model`, else the session's) for the durable facts of a segment."""

    def __init__(self, host: DistilHost) -> None:
        self.host = host
        self._sender: tuple[Provider, Sender] | None = (
            None  # the summarizer's sender, while its provider holds
        )

    async def distil(self, messages: Sequence[Message]) -> list[str]:
        """Ask the summarizer route for the durable facts of `messages`, in as many parts as its cap needs."""
        text = render_segment(messages, 10**12, self._lookup)
        if not text.strip():
            return []
        facts: list[str] = []
        budget = self._budget()
        attempts = 0
        pending = split_text(text, budget)
        index = 0
        while index < len(pending):
            part = pending[index]
            try:
                answer = await self._ask(part, index + 1, len(pending))
            except _TooBig:
                attempts += 1  # each refusal teaches a smaller cap and halves the part: bounded either way
                if attempts > MAX_SHRINKS or len(part) <= MIN_PART_CHARS:
                    raise MemoryFailed(
                        f"a {format_size(len(part.encode()))} part of the segment does not fit the summarizer "
                        f"route's cap even when split"
                    ) from None
                budget = max(
                    MIN_PART_CHARS, min(self._budget(), len(part) // 2)
                )  # the cap just learned, or half
                pending[index : index + 1] = split_text(part, budget)
                continue
            facts.extend(parse_facts(answer))
            attempts = 0
            index += 1
        return list(dict.fromkeys(facts))

    def _lookup(self, key: str) -> str | None:
        entry = self.host.session.store.archive_get(key, self.host.session.id, strict=True)
        return entry.content if entry else None

    def _route(self) -> tuple[Provider, Sender]:
        provider, _ = self.host.summarizer()
        if self._sender is None or self._sender[0] is not provider:
            self._sender = (provider, self.host._make_sender(provider, provider.route.name))
        return self._sender

    def _budget(self) -> int:
        """Chars of segment a request may carry: half the summarizer's window, and under its cap."""
        provider, _ = self._route()
        budget = summarizer_budget(self.host.summarizer_window(), self.host.settings.summarizer_floor_chars)
        cap = self.host.route_cap(provider.route).bytes
        if cap:
            overhead = self._request(provider, "", 1, 1).predicted_bytes
            budget = min(budget, int((cap - overhead) * FIT_MARGIN))
        else:
            budget = min(budget, NO_CAP_PART_CHARS)
        return max(MIN_PART_CHARS, budget)

    def _request(self, provider: Provider, part: str, index: int, parts: int) -> Request:
        message = Message.create(
            "user", memory_request_text(part, index, parts), turn=self.host.session.turn, origin="notice"
        )
        return provider.build((message,), MEMORY_SYSTEM, (), max_tokens=MEMORY_MAX_TOKENS, purpose="memory")

    async def _ask(self, part: str, index: int, parts: int) -> str:
        provider, sender = self._route()
        request = self._request(provider, part, index, parts)
        try:
            result = await sender.send(request, stream_text=False)
        except OverCap as over:  # never sent: split smaller
            raise _TooBig(over.message) from over
        except RequestFailed as failed:
            failure = failed.failure
            if failure.payload_related or failure.kind == "context_overflow":
                self._learn(provider, failed)
                raise _TooBig(failure.reason) from failed
            raise MemoryFailed(
                f"the memory request on {provider.route.name} failed: {failure.reason}"
            ) from failed
        return result.text

    def _learn(self, provider: Provider, failed: RequestFailed) -> None:
        """A memory request refused for its size: ¾ of it becomes that endpoint's cap (the next part fits)."""
        rejected = (
            failed.failure.rejected_bytes or failed.error.request_bytes or failed.request.predicted_bytes
        )
        if not failed.failure.payload_related or not rejected:
            return
        endpoint = provider.route.endpoint_id
        learned = self.host.state.learn_cap(
            endpoint,
            learned_cap_for(rejected),
            rejected_bytes=rejected,
            kind=failed.failure.kind,
            reason=failed.failure.reason,
        )
        self.host.emit(
            CapLearned(
                cap_bytes=learned.cap_bytes,
                rejected_bytes=rejected,
                endpoint=endpoint,
                reason=failed.failure.reason,
            )
        )
