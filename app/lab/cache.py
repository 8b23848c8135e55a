"""A prompt-cache simulation, so usage reports carry cache reads and writes as the real providers do.

- **Breakpoints** (Anthropic `cache_control`, Bedrock `cachePoint`): the prefix up to the last breakpoint
  is written to the cache; a later request reads the longest prefix, at any block boundary up to its last
  breakpoint, that an earlier request wrote. So a conversation that moves its breakpoint forward each turn
  reads the previous turn's prefix and writes only the new part, as with the real API.
- **Automatic** (OpenAI): every message boundary of every request is remembered; a later request reads
  the longest remembered prefix if it is at least 1,024 tokens, rounded down to 128-token steps.

Prefix tokens are floor(prefix bytes / 4), so cached tokens never exceed the request's input tokens.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from app.lab.conversation import Segment

OPENAI_MIN_CACHED_TOKENS = 1024
OPENAI_CACHE_STEP_TOKENS = 128


@dataclass(frozen=True)
class CacheResult:
    read_tokens: int = 0
    write_tokens: int = 0


def _prefixes(segments: Sequence[Segment]) -> list[tuple[bytes, int]]:
    """(chained digest, prefix tokens) after each segment."""
    out: list[tuple[bytes, int]] = []
    digest, nbytes = b"", 0
    for seg in segments:
        digest = hashlib.sha256(digest + seg.digest).digest()
        nbytes += seg.nbytes
        out.append((digest, nbytes // 4))
    return out


class PromptCache:
    """Remembers prefix digests (bounded, least recently used first out)."""

    def __init__(self, max_entries: int = 50_000) -> None:
        self._seen: OrderedDict[bytes, None] = OrderedDict()
        self._max = max_entries

    def clear(self) -> None:
        self._seen.clear()

    def _remember(self, digest: bytes) -> None:
        self._seen[digest] = None
        self._seen.move_to_end(digest)
        while len(self._seen) > self._max:
            self._seen.popitem(last=False)

    def _longest_seen(self, prefixes: list[tuple[bytes, int]], last: int) -> int:
        for index in range(last, -1, -1):
            digest, tokens = prefixes[index]
            if digest in self._seen:
                self._seen.move_to_end(digest)
                return tokens
        return 0

    def breakpoints(self, segments: Sequence[Segment]) -> CacheResult:
        marks = [i for i, seg in enumerate(segments) if seg.breakpoint]
        if not marks:
            return CacheResult()
        prefixes = _prefixes(segments)
        last = marks[-1]
        read = self._longest_seen(prefixes, last)
        write = max(0, prefixes[last][1] - read)
        for index in marks:
            self._remember(prefixes[index][0])
        return CacheResult(read_tokens=read, write_tokens=write)

    def automatic(self, segments: Sequence[Segment]) -> CacheResult:
        prefixes = _prefixes(segments)
        marks = [i for i, seg in enumerate(segments) if seg.breakpoint]
        if not marks:
            return CacheResult()
        read = self._longest_seen(prefixes, marks[-1])
        for index in marks:
            self._remember(prefixes[index][0])
        if read < OPENAI_MIN_CACHED_TOKENS:
            return CacheResult()
        return CacheResult(read_tokens=read - read % OPENAI_CACHE_STEP_TOKENS)
