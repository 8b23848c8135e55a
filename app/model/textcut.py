"""Cutting text for previews: keep a head and a tail, say how much was left out."""

from __future__ import annotations


def head_tail(text: str, max_chars: int, head_ratio: float = 0.75, note: str = "") -> tuple[str, int]:
    """Return (`text` cut to about `max_chars`, characters removed). Unchanged if it fits.

    The head keeps `head_ratio` of the allowance, the tail the rest; the gap is marked
    with a line saying how many characters are not shown (and `note`, e.g. a spill path).
    """
    if max_chars <= 0 or len(text) <= max_chars:
        return text, 0
    head = int(max_chars * head_ratio)
    tail = max_chars - head
    removed = len(text) - head - tail
    gap = f"\n[… {removed:,} chars not shown{'; ' + note if note else ''} …]\n"
    return text[:head] + gap + (text[-tail:] if tail else ""), removed


def line_count(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)
