"""`bulkhead classify --batch FILE --score`: how many labelled cases the classifier gets right.

Each line needs an `expected` kind (the other batch fields as for `--batch`); `family` groups the
figures. The worst mistake is a false payload verdict — a case that is not about the request's size
classified as payload-related: it compacts a healthy conversation or learns a cap that does not exist —
so those are counted apart from the other misses.

    bulkhead classify --batch tests/fixtures/failures/heldout-vectors.jsonl --score
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from app.model.failure_kinds import PAYLOAD_KINDS


@dataclass
class Score:
    total: int = 0
    right: int = 0
    false_payload: list[str] = field(default_factory=list)
    misses: list[tuple[str, str, str, str]] = field(default_factory=list)  # id, expected, got, rule
    by_family: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    unlabelled: int = 0
    errors: int = 0

    def add(self, case: dict[str, Any], verdict: dict[str, Any]) -> None:
        if "error" in verdict:
            self.errors += 1
            return
        expected = case.get("expected")
        if not isinstance(expected, str):
            self.unlabelled += 1
            return
        family = str(case.get("family") or "(none)")
        self.total += 1
        tally = self.by_family[family]
        tally[1] += 1
        ident = str(case.get("id") or f"line {verdict.get('line', '?')}")
        if verdict["kind"] == expected:
            self.right += 1
            tally[0] += 1
            return
        self.misses.append((ident, expected, verdict["kind"], verdict.get("rule_id", "")))
        if verdict["payload_related"] and expected not in PAYLOAD_KINDS:
            self.false_payload.append(ident)

    @property
    def accuracy(self) -> float:
        return self.right / self.total if self.total else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "right": self.right,
            "accuracy": round(self.accuracy, 4),
            "false_payload": self.false_payload,
            "misses": [
                {"id": ident, "expected": expected, "got": got, "rule_id": rule}
                for ident, expected, got, rule in self.misses
            ],
            "by_family": {name: {"right": r, "total": t} for name, (r, t) in sorted(self.by_family.items())},
            "unlabelled": self.unlabelled,
            "errors": self.errors,
        }

    def render(self) -> str:
        lines = [
            f"accuracy        {self.right}/{self.total} = {self.accuracy:.1%}",
            f"false payload   {len(self.false_payload)}"
            + (f"  ({', '.join(self.false_payload)})" if self.false_payload else ""),
        ]
        for name, (right, total) in sorted(self.by_family.items()):
            lines.append(f"  {name:<22} {right}/{total}")
        for ident, expected, got, rule in self.misses:
            lines.append(f"miss  {ident}: expected {expected}, got {got} ({rule})")
        if self.unlabelled:
            lines.append(f"({self.unlabelled} line(s) without an expected kind were not scored)")
        if self.errors:
            lines.append(f"({self.errors} unusable line(s))")
        return "\n".join(lines)
