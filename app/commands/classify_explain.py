"""`bulkhead classify --explain`: which rule decided, the generalising signal behind it, and what lost.

decided by  meaning.overflow — token/context noun × limit
  - meaning: input noun "inputs" × limit "must have less" — "input validation error: `inputs` must…"
also matched  overflow.pairing (400, context_overflow)
read        meaning: input noun "inputs" × limit "must have less"  [provider JSON]
vendor      (none)    hop  (none)
"""

from __future__ import annotations

from collections.abc import Sequence

from app.engine.failure_hops import hop_of
from app.engine.failure_input import Case
from app.engine.failure_meaning import describe, read
from app.engine.failure_rules import BUILT_IN_RULES, Rule, evaluate, means_of
from app.engine.failure_vendors import find_vendor


def explain_lines(case: Case, user_rules: Sequence[Rule] = ()) -> list[str]:
    rules = (*BUILT_IN_RULES, *user_rules)
    verdict = evaluate(case, rules)
    lines: list[str] = []
    if verdict is None:
        lines.append("decided by  no rule matched: the fallback (status and wording alone)")
    else:
        rule = verdict.rule
        means = means_of(rule)
        lines.append(f"decided by  {rule.id} — {means}")
        for hit in verdict.hits:
            lines.extend(f"  - {line}" for line in hit.lines)
        by_id = {r.id: r for r in rules}
        for other in verdict.matched[1:]:
            loser = by_id[other]
            lines.append(f"also matched  {other} ({loser.priority}, {loser.kind}) — lower priority")
    lines.extend(f"read        {line}" for line in describe(read(case)))
    mark = find_vendor(case)
    hop = hop_of(case)
    lines.append(f"vendor      {mark.line if mark else '(none)'}")
    if hop is not None:
        where = f", at {hop.address}" if hop.address else ""
        setting = f", named by {hop.setting}" if hop.setting else ""
        error = f", its error {hop.error}" if hop.error else ""
        lines.append(f"hop         {hop.kind.value}: {hop.name}{where}{setting}{error}")
    else:
        lines.append("hop         (none named: the provider's own answer, or nothing says)")
    return lines
