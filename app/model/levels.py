"""Names for the two ways a conversation is made smaller, so that neither borrows the other's numbers.

The **recovery ladder** runs after a gateway refused a request: L0 as sent, L1 repair, L2 last 10, L3
last 4. Outside the Recovery ladder panel a step is named with the ladder and what it keeps:
`ladder L2 (last 10)`. **Planned compaction** (near the cap or the window, and `/compact`) is named by
what it did — `trim`, `summary`, `last 4` — never by a number: its summary is not the ladder's L2.

    ladder_label(2)          # "ladder L2 (last 10)"
    compaction_label(2)      # "summary"
    step_label("recovery", 2), step_label("preflight", 2)   # the one a Compaction event means
"""

from __future__ import annotations

LADDER_STEPS: tuple[tuple[str, str], ...] = (
    ("L0", "as sent"),
    ("L1", "repair"),
    ("L2", "last 10"),
    ("L3", "last 4"),
)
COMPACTION_STEPS: dict[int, str] = {0: "trim", 2: "summary", 3: "last 4"}


def ladder_label(level: int) -> str:
    """A recovery ladder step, named for a reader who is not looking at the ladder."""
    if 0 <= level < len(LADDER_STEPS):
        name, what = LADDER_STEPS[level]
        return f"ladder {name} ({what})"
    return f"ladder L{level}"


def compaction_label(level: int) -> str:
    """What a planned compaction of `level` did (app.engine.compaction.pipeline: 0 trim, 2 summary, 3 last 4)."""
    return COMPACTION_STEPS.get(level, f"level {level}")


def step_label(trigger: str, level: int) -> str:
    """The step a compaction of `trigger` at `level` was: the ladder's after a rejection, else planned."""
    return ladder_label(level) if trigger == "recovery" else compaction_label(level)


def method_label(trigger: str, method: str) -> str:
    """A Compaction event's method for a reader: `summary`, `trim`, `last 4`, `ladder L2 (last 10)`, …
    (the engine names a ladder step, and a planned compaction's last step, `L<n>`)."""
    if len(method) == 2 and method[0] == "L" and method[1].isdigit():
        return step_label(trigger, int(method[1]))
    return method


_ARCHIVE_REASONS = {"L1": "ladder L1", "L2": "ladder L2", "L3": "last 4"}


def archive_reason_label(reason: str) -> str:
    """An archive entry's reason for a reader: the ladder's steps by name (`L2` was the ladder's last 10,
    not a summary; `L3`, the last 4 messages, is the same step in both)."""
    return _ARCHIVE_REASONS.get(reason, reason)
