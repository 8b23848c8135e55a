"""The client's request body as the proxy reads it: streamed upstream piece by piece, counted, hashed, and
kept whole only while it is small (for the record) — or held whole when --shrink or --early-reject must see it."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator

from app.proxy import httpio
from app.proxy.wire import sniff_model

FIRST_BYTES = 65536  # the start of a body, kept for the model name when the body is not kept whole


class ClientBody:
    """The client's body as it streams upstream: counted, hashed, and kept while it is small. One reader
    of the connection: what httpx did not take (an upstream that answered early) `rest()` still can."""

    def __init__(self, head: httpio.Head, reader: asyncio.StreamReader, keep: int, idle: float) -> None:
        self.keep_limit, self.idle = keep, idle
        self._stream = httpio.body_pieces(head, reader)
        self.size = 0
        self.sha = hashlib.sha256()
        self.kept: bytearray | None = bytearray()
        self.first = bytearray()
        self.done = not head.has_body

    async def pieces(self) -> AsyncIterator[bytes]:
        while not self.done:
            try:
                piece = await asyncio.wait_for(anext(self._stream), self.idle)
            except StopAsyncIteration:
                self.done = True
                return
            self._take(piece)
            yield piece

    async def whole(self) -> bytes:
        """Everything (still) to come, held in memory (for --shrink and --early-reject)."""
        return b"".join([piece async for piece in self.pieces()])

    async def rest(self) -> None:
        """Read what the client is still sending, so its connection can carry the answer."""
        async for _ in self.pieces():
            pass

    def _take(self, piece: bytes) -> None:
        self.size += len(piece)
        self.sha.update(piece)
        if len(self.first) < FIRST_BYTES:
            self.first += piece[: FIRST_BYTES - len(self.first)]
        if self.kept is not None:
            if self.size <= self.keep_limit:
                self.kept += piece
            else:
                self.kept = None


def model_of(body: bytes | None, first: bytes) -> str:
    if body is not None:
        try:
            data = json.loads(body)
            if isinstance(data, dict) and isinstance(data.get("model"), str):
                return str(data["model"])[:120]
        except (ValueError, UnicodeDecodeError):
            pass
    return sniff_model(first)
