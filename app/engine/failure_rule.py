"""The classifier's rule machinery: the kinds, `Rule(id, kind, priority, signals, unless)`, and `evaluate`.

Every rule is evaluated against the normalised `Case`; a rule matches when each of its `signals` matches and
none of its `unless` signals does; the matching rule with the highest priority wins. The built-in tables are
`failure_rules.py` (the first rules: statuses, codes, phrases, connections) and `failure_rules_read.py`
(the rules that read meaning and hops, issues 38–39); user rules come from `[[classifier.rules]]`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from app.engine.failure_case import Case
from app.engine.failure_signals import Hit, Signal

# -- rules ----------------------------------------------------------------------------------------------
Detail = str | Callable[[Case, Sequence[Hit]], str]


@dataclass(frozen=True)
class Rule:
    """One way of recognising a failure. Matches when every signal does and no `unless` signal does."""

    id: str
    kind: str
    priority: int
    signals: tuple[Signal, ...]
    unless: tuple[Signal, ...] = ()
    notes: tuple[Signal, ...] = ()  # evidence worth showing when the rule wins; never decides
    detail: Detail = ""
    transient: bool | None = None  # None: the kind's default
    headline: str | None = None
    origin: str = "built-in"  # or "config.toml:12" for a user rule
    states_window: bool = False  # a token limit in the evidence is the largest request the provider takes
    means: str = ""  # the generalising signal this rule embodies (`classify --explain` shows it)
    recoverable: bool | None = None  # None: the kind's default (payload-related or context overflow)
    ladder_limit: int | None = None  # a recoverable rule's attempts (None: max_recovery_attempts)
    ladder_start: int = 1  # and the level it starts at (2: fewer messages at once)

    def match(self, case: Case) -> list[Hit] | None:
        hits: list[Hit] = []
        for signal in self.signals:
            hit = signal(case)
            if hit is None:
                return None
            hits.append(hit)
        if any(signal(case) is not None for signal in self.unless):
            return None
        return hits

    def describe(self, case: Case, hits: Sequence[Hit]) -> str:
        if callable(self.detail):
            return self.detail(case, hits)
        return self.detail or "matched"


@dataclass(frozen=True)
class Verdict:
    """The winning rule and what it saw; `matched` lists every rule that matched, best first."""

    rule: Rule
    hits: tuple[Hit, ...]
    notes: tuple[Hit, ...]
    matched: tuple[str, ...] = field(default=())


def evaluate(case: Case, rules: Sequence[Rule]) -> Verdict | None:
    """Evaluate every rule; the highest priority wins (a user rule wins a tie with a built-in one)."""
    matched: list[tuple[Rule, list[Hit]]] = []
    for rule in rules:
        hits = rule.match(case)
        if hits is not None:
            matched.append((rule, hits))
    if not matched:
        return None
    matched.sort(key=lambda item: (item[0].priority, item[0].origin != "built-in"), reverse=True)
    rule, hits = matched[0]
    notes = tuple(hit for hit in (note(case) for note in rule.notes) if hit is not None)
    return Verdict(rule, tuple(hits), notes, tuple(r.id for r, _ in matched))


def means_of(rule: Rule) -> str:
    """The generalising signal behind `rule`: its own `means`, else the family of signal its id says."""
    if rule.means:
        return rule.means
    family = rule.id.split(".", 1)[0]
    return {
        "waf": "block-page phrases and headers",
        "overflow": "the providers' own context-length wording (phrase table)",
        "payload": "status 413 and the payload phrases",
        "headers": "header-size status and phrases",
        "net": "no HTTP answer: how the connection failed",
        "timeout": "timeout status, class or wording",
        "rate": "status 429 and rate-limit codes",
        "overloaded": "overload status and codes",
        "server": "status family 5xx",
        "auth": "auth status, codes and wording",
        "quota": "quota wording and codes",
        "config": "your rule from config.toml",
    }.get(family, "phrase table")
