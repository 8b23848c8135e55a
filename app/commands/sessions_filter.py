"""Which sessions `bulkhead sessions list` and `sessions prune` mean: of a folder, older or newer than an age.

parse_age("30d") → 2_592_000.0   (s, m, h, d, w: seconds, minutes, hours, days, weeks)
chosen(args, now) → {"workspace": "/home/you/proj", "updated_before": now - 2_592_000.0}
"""

from __future__ import annotations

import os
import re

UNITS = {"s": 1, "m": 60, "h": 3_600, "d": 86_400, "w": 604_800}
AGE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", re.IGNORECASE)


class AgeError(ValueError):
    """An age that does not parse: the message says what to write."""


def parse_age(text: str) -> float:
    """`30d`, `12h`, `2w`, `90m`, `45s` → seconds."""
    match = AGE.fullmatch(text or "")
    if match is None:
        raise AgeError(f"{text!r} is not an age — write a number and a unit: 30d, 12h, 2w, 90m, 45s")
    return float(match.group(1)) * UNITS[match.group(2).lower()]


def chosen(args, now: float) -> dict[str, object]:
    """`Store.list_sessions` keywords for the flags --here / --folder DIR, --older-than / --newer-than AGE."""
    from app.model.session_folders import folder_key

    filters: dict[str, object] = {}
    folder = getattr(args, "folder", None) or (os.getcwd() if getattr(args, "here", False) else None)
    if folder:
        filters["workspace"] = folder_key(folder)
    if getattr(args, "older_than", None):
        filters["updated_before"] = now - parse_age(args.older_than)
    if getattr(args, "newer_than", None):
        filters["updated_after"] = now - parse_age(args.newer_than)
    return filters
