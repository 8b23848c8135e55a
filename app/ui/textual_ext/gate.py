"""Whether a patch on private Textual code may go on: what it relies on, checked against the Textual installed.

    if gate.holds("strip_caches", missing):   # missing: what the patch found absent or changed ([] = holds)
        ...install...
    gate.report()   # {"strip_caches": "on", "frames": "off: Screen._update_timer is gone", ...}

A patch that does not hold is left off — the stock behaviour, slower or hungrier but correct — and one log
line (logger `bulkhead.textual_ext`) names the patch, what is missing, and the Textual version it was tested
with. Nothing raises: a Textual upgrade costs speed, never a crash.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from importlib.metadata import PackageNotFoundError, version

TESTED_TEXTUAL = "8.2.8"  # what the patches were written and measured against (constraints.txt pins it)

log = logging.getLogger("bulkhead.textual_ext")
_state: dict[str, str] = {}


def textual_version() -> str:
    try:
        return version("textual")
    except PackageNotFoundError:  # pragma: no cover - Textual is a dependency
        return "unknown"


def missing_attributes(owner: object, names: Iterable[str]) -> list[str]:
    """`Owner.name` for each of `names` that `owner` lacks."""
    label = getattr(owner, "__name__", type(owner).__name__)
    return [f"{label}.{name}" for name in names if not hasattr(owner, name)]


def holds(patch: str, missing: Iterable[str]) -> bool:
    """True when nothing is missing; otherwise the patch is recorded as off and logged once."""
    missing = list(missing)
    if not missing:
        _state[patch] = "on"
        return True
    reason = "; ".join(missing)
    if _state.get(patch) != f"off: {reason}":
        log.warning(
            "textual_ext: %s is off (stock Textual behaviour): %s — Textual %s, the patch was tested with %s",
            patch,
            reason,
            textual_version(),
            TESTED_TEXTUAL,
        )
    _state[patch] = f"off: {reason}"
    return False


def report() -> dict[str, str]:
    """Each patch checked so far: "on", or "off: what is missing"."""
    return dict(_state)
