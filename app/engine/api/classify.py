"""The classifier through the front door: why a provider call failed, in words (`bulkhead classify`, the
inspector's Requests panel, `-p`'s report).

    from app.engine.api.classify import classify_fields, describe_action, user_rules

    failure = classify_fields(status=403, body=page, request_bytes=422_200, user_rules=user_rules(settings))
    failure.kind, failure.reason, failure.evidence, describe_action(failure)
    explain(failure)                                 # one copyable sentence: what refused it, what bulkhead did
    decision(status=403, body=page).lines()          # the decision spelled out (`classify --explain`)

The kinds and their sets (`PAYLOAD_KINDS`, `TRANSIENT_KINDS`) are vocabulary: `app.model.failure_kinds`.
Importing this module loads the rule tables (`app.engine.failure_rules`): a front end that shows its first
frame before it classifies anything imports it where it classifies, not at the top.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from app.engine.caps import DEFAULT_FALLBACK_CAP
from app.engine.failure_hops import Hop, HopKind, hop_of
from app.engine.failure_input import make_case
from app.engine.failure_meaning import describe, read
from app.engine.failure_rules import BUILT_IN_RULES, Rule, evaluate, means_of
from app.engine.failure_vendors import find_vendor
from app.engine.failures import (
    DEFAULT_DROP_THRESHOLD,
    FALLBACK_RULE_ID,
    GATEWAY_NAMES,
    Failure,
    classify_fields,
    describe_action,
    explain,
)

if TYPE_CHECKING:
    from app.config import Settings

__all__ = [
    "DEFAULT_DROP_THRESHOLD",
    "DEFAULT_FALLBACK_CAP",
    "FALLBACK_RULE_ID",
    "GATEWAY_NAMES",
    "Decision",
    "Failure",
    "Hop",
    "HopKind",
    "Rule",
    "RuleMatch",
    "classify_fields",
    "decision",
    "describe_action",
    "explain",
    "user_rules",
]


def user_rules(settings: Settings) -> tuple[Rule, ...]:
    """The user's `[[classifier.rules]]` (checked when the config was loaded), ready to classify with."""
    from app.engine.user_rules import build_rules

    return build_rules(settings.classifier_rules)


@dataclass(frozen=True)
class RuleMatch:
    """A rule that matched the case: its id, kind and priority, and the signal it generalises."""

    rule_id: str
    kind: str
    priority: int
    means: str
    lines: tuple[str, ...] = ()  # what it saw, one line a signal (the winning rule's only)


@dataclass(frozen=True)
class Decision:
    """How the classifier decided a case: the winning rule (None: the fallback), the rules it beat, how
    it read the words, the vendor whose marks the answer carries and the hop that answered."""

    winner: RuleMatch | None
    also_matched: tuple[RuleMatch, ...]
    reading: tuple[str, ...]
    vendor: str | None  # the evidence line of the vendor's mark
    hop: Hop | None


def decision(
    status: Any = None,
    message: Any = "",
    body: Any = None,
    headers: Any = None,
    request_bytes: Any = None,
    *,
    transport: Any = None,
    error_type: Any = None,
    provider: Any = None,
    request_header_bytes: Any = None,
    drop_threshold: Any = DEFAULT_DROP_THRESHOLD,
    user_rules: Sequence[Rule] = (),
) -> Decision:
    """The same case `classify_fields` reads, evaluated again with every step kept."""
    case = make_case(
        status=status,
        message=message,
        body=body,
        headers=headers,
        request_bytes=request_bytes,
        transport=transport,
        error_type=error_type,
        provider=provider,
        request_header_bytes=request_header_bytes,
        drop_threshold=drop_threshold,
    )
    rules = (*BUILT_IN_RULES, *user_rules)
    verdict = evaluate(case, rules)
    winner: RuleMatch | None = None
    others: tuple[RuleMatch, ...] = ()
    if verdict is not None:
        rule = verdict.rule
        winner = RuleMatch(
            rule.id,
            rule.kind,
            rule.priority,
            means_of(rule),
            tuple(line for hit in verdict.hits for line in hit.lines),
        )
        by_id = {r.id: r for r in rules}
        others = tuple(
            RuleMatch(other, by_id[other].kind, by_id[other].priority, means_of(by_id[other]))
            for other in verdict.matched[1:]
        )
    mark = find_vendor(case)
    return Decision(
        winner=winner,
        also_matched=others,
        reading=tuple(describe(read(case))),
        vendor=mark.line if mark else None,
        hop=hop_of(case),
    )
