"""How long ago, said one way everywhere (one unit, rounded down).

age(300)                  # "5 min"      lists: the sessions picker, /rewind
age(300, compact=True)    # "5m"         a narrow table cell: the Archive panel
age(300, words=True)      # "5 minutes"  a sentence: a lease held by another bulkhead
"""

from __future__ import annotations

_UNITS = (  # (seconds in the unit, short, compact, word)
    (86_400, "d", "d", "day"),
    (3_600, "h", "h", "hour"),
    (60, "min", "m", "minute"),
    (1, "s", "s", "second"),
)


def age(seconds: float, *, compact: bool = False, words: bool = False) -> str:
    """`seconds` (negative counts as 0) in its largest whole unit."""
    seconds = max(0.0, seconds)
    size, short, narrow, word = next((unit for unit in _UNITS if seconds >= unit[0]), _UNITS[-1])
    count = int(seconds // size)
    if compact:
        return f"{count}{narrow}"
    if words:
        return f"{count} {word}{'' if count == 1 else 's'}"
    return f"{count} {short}"
