"""A request record in plain text: why it was rejected and what bulkhead did about it.

    explain_request(record, records, cap_events=events)
    → "Rejected by a WAF (Cloudflare): 403 with an HTML block page and cf-ray header, request
       412.5 KB; bulkhead learned a 309.4 KB cap and recovered at ladder level 2"

`record` is a row of `Store.list_requests` (or the same fields built from events);
`records` are the session's records, oldest first, from which the outcome of the recovery
is read (the attempts that followed, their ladder level and whether one was accepted);
`cap_events` are the session's `cap_learned` events (dicts with `cap_bytes`,
`rejected_bytes`, `created_at`). `request_report` is the whole record as copyable text —
headers redacted again, whatever the caller passed. No Textual here: the CLI may use it too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.engine.api.classify import Failure, explain
from app.model.failure_kinds import PAYLOAD_KINDS, TRANSIENT_KINDS
from app.sizes import format_size
from app.store import redact_header_values

REPORT_TEXT_CHARS = 8_000  # body preview / error body kept in a report


@dataclass(frozen=True)
class RecoveryOutcome:
    """What followed a failed request in the session."""

    recovered_level: int | None = None  # the ladder level whose attempt was accepted
    failed_attempts: int = 0
    retries: int = 0  # transient retries of the same request
    retried_ok: bool = False
    pending: bool = False  # a later attempt is still in flight


def is_accepted(record: Mapping[str, Any]) -> bool:
    outcome = record.get("outcome") or ""
    status = record.get("status")
    if record.get("kind") or outcome in ("sending", "cancelled", "failed"):
        return False
    return status is None or int(status) < 400


def is_failed(record: Mapping[str, Any]) -> bool:
    return bool(record.get("kind")) or record.get("outcome") == "failed"


def _bytes(record: Mapping[str, Any]) -> int | None:
    return record.get("actual_bytes") or record.get("predicted_bytes")


def recovery_after(record: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> RecoveryOutcome:
    """Read the outcome of `record`'s failure from the requests that followed it."""
    ids = [r.get("id") for r in records]
    try:
        start = ids.index(record.get("id"))
    except ValueError:
        return RecoveryOutcome()
    purpose = record.get("purpose") or "chat"
    level, attempt = int(record.get("level") or 0), int(record.get("attempt") or 0)
    transient = record.get("kind") in TRANSIENT_KINDS
    failed = retries = 0
    last_attempt = attempt
    for later in records[start + 1 :]:
        if (later.get("purpose") or "chat") != purpose:
            continue
        later_level, later_attempt = int(later.get("level") or 0), int(later.get("attempt") or 0)
        if transient and later_level == level and later_attempt == attempt:
            if later.get("outcome") == "sending":
                return RecoveryOutcome(retries=retries, pending=True)
            if is_accepted(later):
                return RecoveryOutcome(retries=retries + 1, retried_ok=True)
            retries += 1
            continue
        if later_level == 0 or later_attempt <= last_attempt:
            break  # a new turn, or a new recovery
        last_attempt = later_attempt
        if later.get("outcome") == "sending":
            return RecoveryOutcome(failed_attempts=failed, pending=True)
        if is_accepted(later):
            return RecoveryOutcome(recovered_level=later_level, failed_attempts=failed)
        failed += 1
    return RecoveryOutcome(failed_attempts=failed, retries=retries)


def learned_cap_for(
    record: Mapping[str, Any],
    records: Sequence[Mapping[str, Any]] = (),
    cap_events: Iterable[Mapping[str, Any]] = (),
) -> int | None:
    """The cap bulkhead learned from `record`'s rejection, from the session's cap_learned events."""
    if record.get("kind") not in PAYLOAD_KINDS:
        return None
    events = [e for e in cap_events if e.get("cap_bytes")]
    size = _bytes(record)
    for event in events:
        if size and event.get("rejected_bytes") == size:
            return int(event["cap_bytes"])
    started = record.get("created_at")
    if started is None:
        return None
    ids = [r.get("id") for r in records]
    following = None
    if record.get("id") in ids:
        index = ids.index(record.get("id"))
        following = next(
            (r.get("created_at") for r in records[index + 1 :] if r.get("created_at") is not None), None
        )
    for event in events:
        at = event.get("created_at")
        if at is not None and at >= started and (following is None or at <= following):
            return int(event["cap_bytes"])
    return None


def decision(record: Mapping[str, Any]) -> Mapping[str, Any]:
    """What the engine decided when the request was refused (the store's `decision`; {} for records from
    before it was kept)."""
    value = record.get("decision")
    return value if isinstance(value, Mapping) else {}


def failure_of(record: Mapping[str, Any]) -> Failure:
    kind = record.get("kind") or "other"
    evidence = tuple(record.get("evidence") or ())
    decided = decision(record)
    # The judged cause (app.engine.block_cause) — the decision's, or for an older record its evidence line
    # "cause content: …": a content block is not payload-related, so no cap is said to be learned from it.
    cause = str(decided.get("cause") or "") or next(
        (line[6:].split(":", 1)[0] for line in evidence if line.startswith("cause ")), ""
    )
    content = cause == "content"
    return Failure(
        kind=kind,
        cause=cause,
        incident_id=str(decided.get("incident_id") or "") or None,
        rule_id=str(decided.get("rule_id") or "") or "fallback",
        payload_related=kind in PAYLOAD_KINDS and not content,
        recoverable=(kind in PAYLOAD_KINDS and not content) or kind == "context_overflow",
        transient=kind in TRANSIENT_KINDS,
        rejected_bytes=_bytes(record),
        reason=record.get("reason") or "",
        evidence=tuple(record.get("evidence") or ()),
        status=record.get("status"),
    )


def explain_request(
    record: Mapping[str, Any],
    records: Sequence[Mapping[str, Any]] = (),
    *,
    learned_cap: int | None = None,
    cap_events: Iterable[Mapping[str, Any]] = (),
) -> str:
    """One copyable sentence about `record`: accepted, in flight, cancelled, or why it was rejected."""
    outcome = record.get("outcome") or ""
    size = _bytes(record)
    if outcome == "sending" and not record.get("status"):
        return (
            f"In flight: a request of {format_size(record.get('predicted_bytes'))} (predicted) is being sent."
        )
    if outcome == "cancelled":
        return f"Cancelled before an answer arrived; request {format_size(size)}."
    if not is_failed(record):
        return _accepted_text(record)
    return _refused_text(record, records, learned_cap, cap_events) + _decided_facts(record)


def _decided_facts(record: Mapping[str, Any]) -> str:
    """The judged cause, the hop that answered and the block page's incident ID, as decided then."""
    decided = decision(record)
    facts = []
    if decided.get("cause"):
        facts.append(f"Cause: {decided['cause']}.")
    hop = decided.get("hop")
    if isinstance(hop, Mapping) and hop.get("name"):
        facts.append(f"Hop: {hop['name']} ({hop.get('kind') or 'hop'}).")
    if decided.get("incident_id"):
        facts.append(f"Incident: {decided['incident_id']} (quote it to your network team).")
    return (" " + " ".join(facts)) if facts else ""


def _refused_text(
    record: Mapping[str, Any],
    records: Sequence[Mapping[str, Any]],
    learned_cap: int | None,
    cap_events: Iterable[Mapping[str, Any]],
) -> str:
    failure = failure_of(record)
    action = str(decision(record).get("action") or "") or None  # the rule's own action, as decided
    if learned_cap is None:
        learned_cap = learned_cap_for(record, records, cap_events)
    after = recovery_after(record, records) if records else RecoveryOutcome()
    attempt_note = ""
    if int(record.get("level") or 0) > 0:
        attempt_note = (
            f" (recovery attempt {record.get('attempt') or '?'} at ladder level {record.get('level')})"
        )
    if after.recovered_level is not None or learned_cap is not None:
        text = explain(failure, learned_cap=learned_cap, level=after.recovered_level, action=action)
        if after.recovered_level is None and after.failed_attempts and not after.pending:
            text += _failed_attempts(after.failed_attempts)
        elif after.recovered_level is None and after.pending:
            text += "; recovery is in progress"
        return text + attempt_note
    head = failure.reason or failure.kind
    if failure.rejected_bytes is not None and format_size(failure.rejected_bytes) not in head:
        head += f", request {format_size(failure.rejected_bytes)}"
    if after.retried_ok:
        times = "once" if after.retries == 1 else f"{after.retries} times"
        return f"{head}; bulkhead retried {times} and the request went through{attempt_note}"
    if after.pending:
        return f"{head}; {'a retry' if failure.transient else 'recovery'} is in progress{attempt_note}"
    if after.failed_attempts:
        return head + _failed_attempts(after.failed_attempts) + attempt_note
    if attempt_note:
        return head + attempt_note
    return explain(failure, action=action)


def _failed_attempts(count: int) -> str:
    return (
        f"; recovery failed after {count} attempt{'s' if count != 1 else ''} — the conversation is unchanged"
    )


def _accepted_text(record: Mapping[str, Any]) -> str:
    status = record.get("status")
    actual, predicted = record.get("actual_bytes"), record.get("predicted_bytes")
    text = f"Accepted{f' (HTTP {status})' if status else ''}: request {format_size(actual or predicted)}"
    if actual and predicted and abs(actual - predicted) > 0.01 * max(actual, predicted):
        text += f" (predicted {format_size(predicted)})"
    latency = record.get("latency_ms")
    if latency is not None:
        text += f" in {latency / 1000:.2f} s" if latency >= 1000 else f" in {latency:.0f} ms"
    level = int(record.get("level") or 0)
    if level:
        text += f"; recovery attempt {record.get('attempt') or '?'} at ladder level {level} succeeded"
    return text


def header_lines(headers: Any) -> list[str]:
    """`name: value` lines, secret values redacted (again — never trust the caller)."""
    if not isinstance(headers, Mapping) or not headers:
        return []
    safe = redact_header_values(headers)
    return [f"{name}: {value}" for name, value in sorted(safe.items(), key=lambda kv: str(kv[0]).lower())]


def _clip(text: str, limit: int = REPORT_TEXT_CHARS) -> str:
    text = str(text or "")
    return text if len(text) <= limit else f"{text[:limit]}\n… [{len(text) - limit:,} more characters]"


def request_report(record: Mapping[str, Any], explanation: str = "") -> str:
    """The whole record as plain text, for the clipboard or a bug report to the network team."""
    lines = [
        f"Request {record.get('id', '?')} · route {record.get('route') or '—'} · "
        f"{record.get('purpose') or 'chat'} · attempt {record.get('attempt') or 0} · "
        f"L{record.get('level') or 0}"
    ]
    if record.get("url"):
        lines.append(f"URL: {record['url']}")
    lines.append(
        f"Size: predicted {format_size(record.get('predicted_bytes'))}, "
        f"actual {format_size(record.get('actual_bytes'))}"
    )
    latency = record.get("latency_ms")
    lines.append(
        f"Status: {record.get('status') or '—'} · latency "
        f"{'—' if latency is None else f'{latency:.0f} ms'} · kind {record.get('kind') or '—'}"
    )
    if explanation:
        lines += ["", f"Why: {explanation}"]
    evidence = list(record.get("evidence") or ())
    if evidence:
        lines += ["", "Evidence:"] + [f"  - {item}" for item in evidence]
    for title, key in (("Request headers", "request_headers"), ("Response headers", "response_headers")):
        found = header_lines(record.get(key))
        if found:
            lines += ["", f"{title}:"] + [f"  {line}" for line in found]
    if record.get("error_body"):
        lines += ["", "Error body:", _clip(record["error_body"])]
    if record.get("body_preview"):
        lines += ["", "Body preview:", _clip(record["body_preview"])]
    return "\n".join(lines)
