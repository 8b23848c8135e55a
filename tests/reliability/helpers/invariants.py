"""The promises a session keeps after every turn, checked from the outside.

`TurnAudit` reads what one turn emitted (the session's events) and what the store holds
afterwards (a fresh `Session.load`), and reports every broken promise:

- **nothing lost** — every message the turn committed is in the stored master log; the
  prompt is there; every answer the client received (its streamed text) is stored, as a
  complete answer or as a partial one;
- **a sound view** — after the system messages it starts with a user message, tool pairing
  is valid, and every `<<ccr:KEY>>` marker resolves in this session's archive;
- **no retry after visible output** — once a request that streamed text has failed, no
  further request starts in that turn (only a new turn, e.g. `/retry`, may ask again);
- **honest counters** — `counters.requests` equals the request rows, and rejections by kind
  equal the failed rows by kind;
- **exact sizes** — a sent request's predicted size agrees with the bytes that crossed the wire
  within 1% (DESIGN.md §4), and the payload notice is in the view at most once.

`lost` counts the first kind (a committed message missing from the master log, or an answer
the client received that is not stored); `problems` holds every broken promise, in words.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from app.engine.compaction.pairing import pairing_problems, starts_with_user
from app.engine.session import Session
from app.model.archive import markers_in
from app.model.events import MessageAdded, RequestFinished, RequestStarted, TextDelta, TurnStarted
from app.model.messages import Text
from app.model.prompts import PAYLOAD_NOTICE_PREFIX
from app.store import Store

ALL_ROWS = 10**9
SIZE_TOLERANCE = 0.01  # predicted vs actual request bytes (DESIGN.md §4)


@dataclass
class RequestSpan:
    request_id: str
    purpose: str
    text: str = ""
    kind: str | None = None
    finished: bool = False

    @property
    def failed(self) -> bool:
        return self.finished and self.kind is not None


@dataclass
class TurnAudit:
    lost: int = 0
    problems: list[str] = field(default_factory=list)
    spans: list[RequestSpan] = field(default_factory=list)
    committed: list[MessageAdded] = field(default_factory=list)

    @property
    def had_failure(self) -> bool:
        return any(s.failed for s in self.spans)

    def lose(self, what: str) -> None:
        self.lost += 1
        self.problems.append(f"LOST: {what}")


def request_spans(events: Iterable[object]) -> list[RequestSpan]:
    """One span per request: its purpose, the text it streamed, how it ended."""
    spans: list[RequestSpan] = []
    by_id: dict[str, RequestSpan] = {}
    current: RequestSpan | None = None
    for event in events:
        if isinstance(event, RequestStarted):
            current = RequestSpan(event.request_id, event.purpose)
            spans.append(current)
            by_id[event.request_id] = current
        elif isinstance(event, TextDelta) and current is not None:
            current.text += event.text
        elif isinstance(event, RequestFinished):
            span = by_id.get(event.request_id)
            if span is not None:
                span.kind = event.kind
                span.finished = True
    return spans


def retries_after_visible_output(events: Iterable[object]) -> list[str]:
    """Requests started in a turn after a request of that turn failed with text already shown."""
    problems: list[str] = []
    dead_since: str | None = None
    current: RequestSpan | None = None
    for event in events:
        if isinstance(event, TurnStarted):
            dead_since = None
        elif isinstance(event, RequestStarted):
            if dead_since is not None:
                problems.append(
                    f"request {event.request_id} started after {dead_since} failed with visible output"
                )
            current = RequestSpan(event.request_id, event.purpose)
        elif isinstance(event, TextDelta) and current is not None:
            current.text += event.text
        elif (
            isinstance(event, RequestFinished)
            and current is not None
            and event.request_id == current.request_id
        ):
            if event.kind is not None and current.text:
                dead_since = event.request_id
    return problems


def view_problems(session: Session, store: Store) -> list[str]:
    """What is wrong with the active view: its start, its tool pairing, its markers."""
    problems: list[str] = []
    messages = session.view.messages
    if not starts_with_user(messages):
        first = next((m for m in messages if m.role != "system"), None)
        problems.append(f"view starts with an {first.role if first else '?'!r} message, not a user message")
    problems += [f"pairing: {p}" for p in pairing_problems(messages)]
    for message in messages:
        for key in markers_in(message.all_text()):
            entry = store.archive_get(key, session.id)
            if entry is None or entry.session_id != session.id:
                problems.append(
                    f"marker <<ccr:{key}>> in {message.id} ({message.meta.origin}) does not resolve "
                    f"in this session's archive"
                )
    return problems


def counter_problems(session: Session, store: Store) -> list[str]:
    rows = store.list_requests(session.id, limit=ALL_ROWS)
    problems: list[str] = []
    if session.counters.requests != len(rows):
        problems.append(f"counters.requests = {session.counters.requests} but {len(rows)} request rows")
    failed = Counter(r["kind"] for r in rows if r["outcome"] == "failed")
    rejections = Counter({k: v for k, v in session.counters.rejections.items() if v})
    if failed != rejections:
        problems.append(f"rejections by kind {dict(rejections)} != failed rows by kind {dict(failed)}")
    if session.counters.failed_requests != sum(failed.values()):
        problems.append(
            f"counters.failed_requests = {session.counters.failed_requests} but "
            f"{sum(failed.values())} failed rows"
        )
    unfinished = [r["id"] for r in rows if r["outcome"] == "sending"]
    if unfinished:
        problems.append(f"request rows never finished: {unfinished[:3]}")
    return problems


def size_problems(rows: Sequence[dict]) -> list[str]:
    """Sent requests whose predicted size is more than 1% off the bytes that crossed the wire."""
    problems = []
    for row in rows:
        predicted, actual = row.get("predicted_bytes"), row.get("actual_bytes")
        if (
            row.get("outcome") == "ok"
            and predicted
            and actual
            and abs(predicted - actual) > SIZE_TOLERANCE * actual
        ):
            problems.append(
                f"request {row['id']} ({row['provider']}, {row['purpose']}): predicted {predicted:,} "
                f"bytes, sent {actual:,}"
            )
    return problems


def notice_problems(session: Session) -> list[str]:
    notices = [
        m.id
        for m in session.view.messages
        if m.role == "user" and m.meta.origin == "notice" and PAYLOAD_NOTICE_PREFIX in m.text
    ]
    return [f"the payload notice is in the view {len(notices)} times"] if len(notices) > 1 else []


def audit_turn(
    session: Session, events: Sequence[object], *, prompt: str | None, committed_before: set[str]
) -> tuple[TurnAudit, Session]:
    """Check one turn. `committed_before`: ids of every message committed earlier (updated in place)."""
    store = session.store
    audit = TurnAudit(
        spans=request_spans(events), committed=[e for e in events if isinstance(e, MessageAdded)]
    )
    fresh = Session.load(store, session.id)
    stored = {m.id: m for m in fresh.master}

    # Nothing committed is lost: this turn's messages, and every earlier one.
    if [m.id for m in fresh.master] != [m.id for m in session.master]:
        audit.problems.append("the stored master log differs from the session's in memory")
    for added in audit.committed:
        if added.message_id not in stored:
            audit.lose(f"committed {added.role} message {added.message_id} is not in the stored master log")
    for message_id in committed_before - stored.keys():
        audit.lose(f"earlier message {message_id} vanished from the master log")
    committed_before.update(e.message_id for e in audit.committed)

    # The prompt is stored.
    if prompt is not None:
        users = [stored.get(e.message_id) for e in audit.committed if e.role == "user" and e.origin == "user"]
        if not any(
            m is not None and m.parts and isinstance(m.parts[0], Text) and m.parts[0].text == prompt
            for m in users
        ):
            audit.lose(f"the prompt {prompt[:60]!r} is not in the master log")

    # Every answer the client received is stored (complete, or partial when its request failed).
    received = [s for s in audit.spans if s.purpose == "chat" and (not s.failed or s.text)]
    answers = [e for e in audit.committed if e.role == "assistant" and e.origin == "model"]
    kept = [stored.get(e.message_id) for e in answers]
    if [s.text for s in received] != [m.text if m else None for m in kept]:
        audit.lose(
            f"answers received {[_short(s.text) for s in received]} != answers stored "
            f"{[_short(m.text if m else None) for m in kept]}"
        )
    else:
        for span, message in zip(received, kept, strict=True):
            if span.failed and not message.meta.partial:
                audit.problems.append(f"the answer cut off in {span.request_id} is not marked partial")

    audit.problems += view_problems(fresh, store)
    if [m.id for m in fresh.view.messages] != [m.id for m in session.view.messages]:
        audit.problems.append("the stored active view differs from the session's in memory")
    audit.problems += retries_after_visible_output(events)
    audit.problems += counter_problems(fresh, store)
    turn_ids = {s.request_id for s in audit.spans}
    audit.problems += size_problems(
        [r for r in store.list_requests(session.id, limit=ALL_ROWS) if r["id"] in turn_ids]
    )
    audit.problems += notice_problems(fresh)
    return audit, fresh


def _short(text: str | None, limit: int = 40) -> str:
    if text is None:
        return "<missing>"
    return text if len(text) <= limit else f"{text[:limit]}…({len(text)} chars)"
