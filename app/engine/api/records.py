"""A session's stored records, read only, for a front end's panels: what the inspector shows besides events.

    records = session.records()                          # SessionRecords (UiSession), or over any store:
    records = SessionRecords(store, session_id)          # the proxy's session, a test's
    rows = await asyncio.to_thread(records.requests)     # every method reads SQLite: call it from a worker thread

Each method is one read of the store and returns frozen records (or `app.model` values): a request's whole
record (`RequestRecord`), the session's requests and their sizes, the caps it learned, its compactions and hook
runs as the events they were (`Stored`), a page of its archive and its archive's keys. A row that no longer
parses (a damaged database, an older version's event) is left out, never raised. Nothing here writes, and
nothing is made safe to show: the panels do that where they show it (`app.textsafe`), as for live events.

Importing this module brings in no engine internals and not the store (the TUI's first frame).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from app.model.archive import ArchiveEntry
from app.model.events import CapLearned, Compaction, Event, HookRun
from app.redact import redact_known

if TYPE_CHECKING:
    from app.store import Store

__all__ = ["ArchiveKey", "ArchiveKeys", "RequestRecord", "RequestSize", "SessionRecords", "Stored"]

E = TypeVar("E", bound=Event)
T = TypeVar("T")
R = TypeVar("R")

ARCHIVE_KEYS_MAX = 200  # the archive keys `/recall` completes (the newest)


@dataclass(frozen=True)
class RequestRecord:
    """One request as the store keeps it (`app.store.REQUEST_FIELDS`): sizes, outcome, the classifier's
    kind, reason, evidence and decision, the headers (redacted when stored), the error body and a preview of
    what was sent. `row()` is the same as a dict, the shape the explanations read (`app.ui.explain`)."""

    id: str
    session_id: str | None = None
    created_at: float = 0.0
    route: str = ""
    provider: str = ""
    model: str = ""
    url: str = ""
    purpose: str = "chat"
    attempt: int = 0
    level: int = 0
    predicted_bytes: int | None = None
    actual_bytes: int | None = None
    status: int | None = None
    latency_ms: float | None = None
    kind: str | None = None
    reason: str = ""
    evidence: tuple[str, ...] = ()
    request_headers: Mapping[str, str] = field(default_factory=dict)
    response_headers: Mapping[str, str] = field(default_factory=dict)
    body_preview: str = ""
    error_body: str = ""
    usage: Mapping[str, Any] = field(default_factory=dict)
    outcome: str = ""  # "sending" until it ends, then "ok" or "failed"
    decision: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> RequestRecord:
        """From the store's decoded row (`Store.list_requests`); columns this version does not know are left
        out."""
        known = {f.name for f in dataclasses.fields(cls)}
        values = {key: value for key, value in row.items() if key in known}
        values["evidence"] = tuple(str(item) for item in values.get("evidence") or ())
        for key in ("request_headers", "response_headers", "usage", "decision"):
            values[key] = dict(values.get(key) or {})
        return cls(**values)

    def row(self) -> dict[str, Any]:
        """The record as a new dict (evidence a list), to merge with what events said and to explain."""
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        data["evidence"] = list(self.evidence)
        for key in ("request_headers", "response_headers", "usage", "decision"):
            data[key] = dict(data[key])
        return data


@dataclass(frozen=True)
class RequestSize:
    """What the size sparkline needs of a stored request: its bytes (sent, else predicted), failure kind
    (None when accepted), purpose and whether it is still being sent."""

    id: str
    bytes: int
    kind: str | None
    purpose: str
    sending: bool


@dataclass(frozen=True)
class Stored(Generic[E]):
    """An event as the session stored it, with when (`created_at` of its row)."""

    at: float
    event: E


@dataclass(frozen=True)
class ArchiveKey:
    """One archived segment, read light for a completion list: its key, reason, size and first characters."""

    key: str
    reason: str
    bytes: int
    head: str


class SessionRecords:
    """One session's records in `store`, read only. Every method reads SQLite: call it from a worker thread
    (`asyncio.to_thread`, `@work(thread=True)`), never on a UI's event loop."""

    def __init__(self, store: Store, session_id: str) -> None:
        self.store = store  # the store read (a front end opens its next session on the same one)
        self.session_id = session_id

    # -- requests -----------------------------------------------------------------------------------------
    def request(self, request_id: str) -> RequestRecord | None:
        """The whole record of one request of this session (None: not stored, or not this session's)."""
        row = self.store.get_request(request_id)
        if row is None or row.get("session_id") != self.session_id:
            return None
        return _parsed(RequestRecord.from_row, row)

    def requests(self, limit: int = 500) -> tuple[RequestRecord, ...]:
        """The session's newest `limit` requests, oldest first."""
        rows = self.store.list_requests(self.session_id)[-limit:]
        return tuple(record for row in rows if (record := _parsed(RequestRecord.from_row, row)) is not None)

    def request_sizes(self, limit: int = 240) -> tuple[RequestSize, ...]:
        """The sizes of the session's newest `limit` requests, oldest first (no headers, no bodies)."""
        rows = self.store.request_sizes(self.session_id, limit)
        return tuple(
            RequestSize(
                str(row["id"]),
                int(row["actual_bytes"] or row["predicted_bytes"] or 0),
                row["kind"] or None,
                row["purpose"] or "chat",
                row["outcome"] == "sending",
            )
            for row in rows
        )

    def caps_learned(self) -> tuple[Stored[CapLearned], ...]:
        """Every cap the session learned (or assumed) from a rejection, oldest first."""
        return self._events("cap_learned", CapLearned)

    # -- compactions and hooks ----------------------------------------------------------------------------
    def compactions(self, limit: int = 20) -> tuple[Stored[Compaction], ...]:
        """The session's newest `limit` compactions, oldest first."""
        return self._events("compaction", Compaction)[-limit:]

    def hook_runs(self, limit: int = 500) -> tuple[Stored[HookRun], ...]:
        """The session's newest `limit` hook runs, oldest first."""
        return self._events("hook", HookRun)[-limit:]

    # -- the archive --------------------------------------------------------------------------------------
    def archive(self, query: str = "", limit: int = 500) -> tuple[ArchiveEntry, ...]:
        """The session's archive, newest first; with `query`, the entries matching it (full text, every word
        the start of a word), best first."""
        if query.strip():
            return tuple(self.store.archive_search(query, self.session_id, limit))
        return tuple(self.store.archive_list(self.session_id, limit))

    def archive_keys(self, limit: int = ARCHIVE_KEYS_MAX) -> tuple[ArchiveKey, ...]:
        """The newest `limit` archive keys, newest first, with the first 60 characters (not the content)."""
        return tuple(ArchiveKey(*row) for row in self.store.archive_keys(self.session_id, limit))

    def _events(self, type_: str, kind: type[E]) -> tuple[Stored[E], ...]:
        found: list[Stored[E]] = []
        for row in self.store.list_events(self.session_id, type_):
            event = _parsed(lambda data: _event_of(kind, data), row.get("data") or {})
            if event is not None:
                found.append(Stored(float(row.get("created_at") or 0), event))
        return tuple(found)


class ArchiveKeys:
    """A session's newest archive keys, kept up to date in memory: loaded once (`load`, in a thread), then told
    of every entry the session archives (`app.engine.session.Session.archive_watchers`). What `/recall`
    completes and whether the archive is empty are then answered without reading the database, from any
    thread; entries stay archived through `/rewind` and `/undo`, so nothing is ever taken out."""

    def __init__(self, limit: int = ARCHIVE_KEYS_MAX) -> None:
        self.limit = limit
        self._keys: list[ArchiveKey] = []  # newest first
        self._lock = threading.Lock()

    def load(self, records: SessionRecords) -> None:
        """Read the stored keys (blocking: call it in a thread); keys archived meanwhile stay first."""
        stored = records.archive_keys(self.limit)
        with self._lock:
            known = {item.key for item in self._keys}
            self._keys += [item for item in stored if item.key not in known]
            del self._keys[self.limit :]

    def add(self, entries: Iterable[ArchiveEntry]) -> None:
        """Entries just archived (the store keeps the first of a key: so does this)."""
        with self._lock:
            known = {item.key for item in self._keys}
            new = []
            for entry in entries:
                if entry.key not in known:
                    known.add(entry.key)
                    new.append(
                        ArchiveKey(entry.key, entry.reason, entry.bytes, redact_known(entry.content)[:60])
                    )
            self._keys[:0] = reversed(new)
            del self._keys[self.limit :]

    def __call__(self) -> tuple[ArchiveKey, ...]:
        with self._lock:
            return tuple(self._keys)


def _event_of(kind: type[E], data: Mapping[str, Any]) -> E:
    values = {key: value for key, value in data.items() if key != "type"}
    if "archive_keys" in values:
        values["archive_keys"] = tuple(values["archive_keys"] or ())
    return kind(**values)


def _parsed(make: Callable[[T], R], data: T) -> R | None:
    """`make(data)`, or None when the stored data no longer fits (another version wrote it, or it is damaged)."""
    try:
        return make(data)
    except (TypeError, ValueError, AttributeError):
        return None
