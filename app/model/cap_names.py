"""How the notices name the cap in force, by where it came from (`CapSource`, app.model.events).

cap_name("learned")        # "learned cap"
"""

from __future__ import annotations

CAP_LABELS = {
    "configured": "configured cap",
    "learned": "learned cap",
    "imported": "imported cap",
    "assumed": "assumed cap",
}


def cap_name(source: str) -> str:
    """`learned cap` / `configured cap` / `assumed cap` — a cap named by its source ("cap" when unknown)."""
    return CAP_LABELS.get(source, "cap")


__all__ = ["CAP_LABELS", "cap_name"]
