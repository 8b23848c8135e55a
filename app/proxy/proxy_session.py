"""A proxy run's memory: its session in the store (records, archived originals), the caps it learns and
shares with bulkhead's own routes (state.toml), what each endpoint has accepted, and running counts.

A proxy session is a row of `sessions` with provider `proxy`: `bulkhead sessions list` shows it,
`bulkhead sessions export ID --format har` exports its requests, `bulkhead -c` never continues it as a
chat. The proxy holds its lease while it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.engine.caps import learned_cap_for
from app.engine.failures import Failure
from app.engine.payload import CapInfo, effective_cap
from app.engine.resets import SizeEvidence
from app.lease import this_process
from app.model.archive import ArchiveEntry
from app.model.messages import new_id
from app.proxy.records import ProxyRecord
from app.state import LearnedCap, State
from app.store import Store, StoreError

PROXY_PROVIDER = "proxy"


@dataclass
class Counts:
    requests: int = 0
    bytes_in: int = 0  # what clients sent
    bytes_up: int = 0  # what went upstream
    by_action: Counter[str] = field(default_factory=Counter)
    by_kind: Counter[str] = field(default_factory=Counter)
    by_client: Counter[str] = field(default_factory=Counter)

    def add(self, record: ProxyRecord) -> None:
        self.requests += 1
        self.bytes_in += record.request_bytes or 0
        self.bytes_up += record.sent_bytes or 0
        self.by_action[str(record.action)] += 1
        if record.kind:
            self.by_kind[record.kind] += 1
        self.by_client[record.client] += 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "bytes_in": self.bytes_in,
            "bytes_up": self.bytes_up,
            "by_action": dict(self.by_action),
            "by_kind": dict(self.by_kind),
            "by_client": dict(self.by_client),
        }


class ProxySession:
    """Store and state for one proxy run. Store writes go through a thread, never blocking the proxy."""

    def __init__(
        self,
        store: Store | None,
        state: State,
        *,
        label: str,
        configured_cap: int | None = None,
        workspace: str = "",
    ) -> None:
        self.store, self.state, self.label = store, state, label
        self.configured_cap = configured_cap
        self.counts = Counts()
        self.started_at = time.time()
        self._evidence: dict[str, SizeEvidence] = {}
        self.write_errors = 0
        self.id = new_id("s")
        if store is not None:
            store.create_session(
                self.id,
                title=f"proxy → {label}",
                route=label,
                provider=PROXY_PROVIDER,
                workspace=workspace or os.getcwd(),
                initial_view_id=new_id("v"),
            )
            store.acquire_lease(self.id, this_process("bulkhead proxy"))

    # -- caps ------------------------------------------------------------------------------------
    def cap(self, endpoint: str) -> CapInfo:
        """The cap in force for `endpoint`: the smaller of `--cap` and the learned one (state.toml, read
        each time: a bulkhead session on the same endpoint may have just learned one)."""
        return effective_cap(self.configured_cap, self.state.learned_cap(endpoint), None, "--cap")

    def learn(self, endpoint: str, rejected_bytes: int, failure: Failure) -> LearnedCap:
        return self.state.learn_cap(
            endpoint,
            learned_cap_for(rejected_bytes),
            rejected_bytes=rejected_bytes,
            kind=failure.kind,
            reason=failure.reason,
        )

    def evidence(self, endpoint: str) -> SizeEvidence:
        """What `endpoint` has shown about body sizes in this run: the largest body it answered, the
        smallest it refused for its size, the last reset (`app.engine.resets`, as the engine keeps)."""
        return self._evidence.setdefault(endpoint, SizeEvidence())

    def accepted(self, endpoint: str, nbytes: int | None) -> None:
        self.evidence(endpoint).accepted(nbytes)

    # -- the store -------------------------------------------------------------------------------
    async def record(self, record: ProxyRecord) -> None:
        self.counts.add(record)
        if self.store is not None:
            store = self.store
            await self._write(lambda: store.record_request(record.to_store()))  # the preview parses the body

    async def archive(self, entries: Sequence[ArchiveEntry]) -> None:
        if self.store is not None and entries:
            store, kept = self.store, list(entries)
            await self._write(lambda: store.archive_put(self.id, kept))

    async def _write(self, write: Callable[[], None]) -> None:
        try:
            await asyncio.to_thread(write)
        except (StoreError, OSError):  # a full disk never stops the traffic; status says so
            self.write_errors += 1

    def close(self) -> None:
        if self.store is not None:
            with contextlib.suppress(StoreError, OSError):
                self.store.release_lease(self.id, this_process("bulkhead proxy"))
