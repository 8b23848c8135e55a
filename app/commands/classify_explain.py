"""`bulkhead classify --explain`: which rule decided, the generalising signal behind it, and what lost.

decided by  meaning.overflow — token/context noun × limit
  - meaning: input noun "inputs" × limit "must have less" — "input validation error: `inputs` must…"
also matched  overflow.pairing (400, context_overflow)
read        meaning: input noun "inputs" × limit "must have less"  [provider JSON]
vendor      (none)    hop  (none)
"""

from __future__ import annotations

from app.engine.api.classify import Decision


def explain_lines(decision: Decision) -> list[str]:
    lines: list[str] = []
    winner = decision.winner
    if winner is None:
        lines.append("decided by  no rule matched: the fallback (status and wording alone)")
    else:
        lines.append(f"decided by  {winner.rule_id} — {winner.means}")
        lines.extend(f"  - {line}" for line in winner.lines)
        for loser in decision.also_matched:
            lines.append(f"also matched  {loser.rule_id} ({loser.priority}, {loser.kind}) — lower priority")
    lines.extend(f"read        {line}" for line in decision.reading)
    hop = decision.hop
    lines.append(f"vendor      {decision.vendor or '(none)'}")
    if hop is not None:
        where = f", at {hop.address}" if hop.address else ""
        setting = f", named by {hop.setting}" if hop.setting else ""
        error = f", its error {hop.error}" if hop.error else ""
        lines.append(f"hop         {hop.kind.value}: {hop.name}{where}{setting}{error}")
    else:
        lines.append("hop         (none named: the provider's own answer, or nothing says)")
    return lines
