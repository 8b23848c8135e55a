"""`[[classifier.rules]]` from config.toml as classifier rules: a corporate gateway's own pages.

    [[classifier.rules]]
    id = "acme-proxy"                    # optional; shown as config:acme-proxy
    kind = "waf_block"
    status = 403                         # or a list: [403, 502]
    header = "X-Acme-Proxy"              # "Name" or "Name: value substring"
    phrase = "blocked by acme (web)?gateway"   # a regular expression, case-insensitive
    priority = 1000                      # built-in rules use 0–999, so by default yours wins
    reason = "ACME's proxy refused the request"

Every field given must match. The rule is evaluated with the built-in ones; `bulkhead classify`
says when it decided (`rule config:acme-proxy (your rule, config.toml:12)`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from app.config import ClassifierRuleSpec
from app.engine.failure_rules import Rule
from app.engine.failure_signals import Header, Signal, phrase, status


def build_rule(spec: ClassifierRuleSpec) -> Rule:
    signals: list[Signal] = []
    if spec.status:
        signals.append(status(*spec.status))
    if spec.header:
        name, _, value = spec.header.partition(":")
        signals.append(Header(name.strip(), value.strip()))
    if spec.phrase:
        signals.append(phrase(re.compile(spec.phrase, re.IGNORECASE)))
    reason = spec.reason or f"matched your classifier rule {spec.id.removeprefix('config:')} ({spec.where})"
    return Rule(spec.id, spec.kind, spec.priority, tuple(signals), detail=reason, origin=spec.where)


def build_rules(specs: Iterable[ClassifierRuleSpec]) -> tuple[Rule, ...]:
    return tuple(build_rule(spec) for spec in specs)
