"""Human sizes: parse `5MB`, `512KB`, `2.5MB`, `128k`, `1 MiB`; format bytes for people.

Binary units throughout (KB = 1024). A bare number means MB, as in ChatCLI's
CHATCLI_MAX_PAYLOAD (`5` = 5 MiB).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from fractions import Fraction

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB
MAX_SIZE = 2**63 - 1  # the largest byte count SQLite (and any gateway) can hold

_UNITS = {
    "b": 1,
    "k": KIB,
    "kb": KIB,
    "kib": KIB,
    "m": MIB,
    "mb": MIB,
    "mib": MIB,
    "g": GIB,
    "gb": GIB,
    "gib": GIB,
}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?|\.\d+)\s*([a-zA-Z]*)\s*$")


class SizeError(ValueError):
    """A size string that cannot be read; the message names the value."""


def parse_size(value: str | int | float) -> int:
    """Return the number of bytes `value` names.

    >>> parse_size("512KB"), parse_size("2.5MB"), parse_size(5), parse_size("128k")
    (524288, 2621440, 5242880, 131072)
    """
    if isinstance(value, bool):
        raise SizeError(f"{value!r} is not a size (use e.g. 5MB, 512KB, 2.5MB, 128k)")
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            raise SizeError(f"{value!r} is not a positive size")
        number, unit = Fraction(value), "mb"
    else:
        match = _SIZE_RE.match(str(value))
        if not match:
            raise SizeError(f"{value!r} is not a size (use e.g. 5MB, 512KB, 2.5MB, 128k)")
        try:
            number = Fraction(match.group(1))
        except (ValueError, ZeroDivisionError):
            raise SizeError(f"{value!r} is not a size (use e.g. 5MB, 512KB, 2.5MB, 128k)") from None
        unit = match.group(2).lower() or "mb"
    if unit not in _UNITS:
        raise SizeError(f"{value!r} has an unknown unit {unit!r} (use B, KB, MB or GB; KB = 1024 bytes)")
    if number <= 0:
        raise SizeError(f"{value!r} is not a positive size")
    exact = number * _UNITS[unit]  # exact arithmetic: `2.5MB` and huge byte counts stay exact
    if exact > MAX_SIZE:
        raise SizeError(f"{value!r} is too large to be a size")
    result = int(exact)
    if result < 1:
        raise SizeError(f"{value!r} is less than one byte")
    return result


def format_size(n: int | float | None) -> str:
    """`126.4 KB`, `4.2 MB`, `512 B` — binary units, one decimal above bytes."""
    if n is None:
        return "—"
    n = float(n)
    sign = "-" if n < 0 else ""
    n = abs(n)
    if n < KIB:
        return f"{sign}{int(n)} B"
    if n < MIB:
        return f"{sign}{n / KIB:.1f} KB"
    if n < GIB:
        return f"{sign}{n / MIB:.1f} MB"
    return f"{sign}{n / GIB:.1f} GB"


def sized_list(items: Iterable[tuple[str, int]]) -> str:
    """`system prompt 1.1 KB, tools (built-in) 6.0 KB` — each name with its size, the empty ones left out."""
    return ", ".join(f"{name} {format_size(size)}" for name, size in items if size > 0)


def heaviest(items: Iterable[tuple[str, int]], limit: int) -> str:
    """`big 200.0 KB, demo 1.2 KB and 2 more` — the `limit` heaviest, the heaviest first ("" for none)."""
    ranked = sorted(items, key=lambda item: -item[1])
    shown = ", ".join(f"{name} {format_size(size)}" for name, size in ranked[:limit])
    more = len(ranked) - limit
    return shown + (f" and {more} more" if more > 0 and shown else "")
