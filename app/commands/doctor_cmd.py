"""`bulkhead doctor` (placeholder until item 11)."""

from __future__ import annotations


def add_parser(sub, make) -> None:
    make(sub, "doctor", help="walk the request path", description="Walk the request path.")


def run(args) -> int:
    return 0
