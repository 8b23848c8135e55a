"""The summary's input bounded by bytes (issue 38 item 1): `fit_rendering` against an exact byte measure,
multi-byte text included, and the minimum below which there is no room."""

from __future__ import annotations

import json

from app.engine.compaction.render import fit_rendering, render_segment
from app.engine.compaction.summarize import summary_request
from app.model.messages import Message


def _segment(text: str, count: int = 12) -> list[Message]:
    return [
        Message.create("user" if i % 2 == 0 else "assistant", f"{i}: {text}", turn=i) for i in range(count)
    ]


def _bytes(text: str) -> int:  # what a JSON body carrying the text weighs, escapes and UTF-8 included
    return len(
        json.dumps({"system": "summarize", "messages": [{"content": text}]}, ensure_ascii=False).encode()
    )


def test_a_rendering_is_fitted_under_the_cap_in_bytes_not_chars():
    messages = _segment("naïve 🦫 ünïcødé — " * 400)  # about 2–3 bytes a char
    full = render_segment(messages, 1_000_000, lambda _key: None)
    assert _bytes(summary_request(full, 12, None)) > 120_000

    fitted = fit_rendering(
        messages,
        1_000_000,
        lambda _key: None,
        request_text=lambda rendered: summary_request(rendered, 12, None),
        request_bytes=_bytes,
        cap=64 * 1024,
        min_chars=5_000,
    )

    assert fitted is not None
    size = _bytes(summary_request(fitted, 12, None))
    assert 0.8 * 64 * 1024 < size <= 64 * 1024  # as much as fits, no more
    assert all(f"[{role}" in fitted for role in ("User", "Assistant"))  # every message keeps its share


def test_no_cap_keeps_the_window_budget_and_a_cap_under_the_minimum_gives_none():
    messages = _segment("lorem ipsum " * 500)
    args = {"request_text": lambda r: summary_request(r, 12, None), "request_bytes": _bytes}
    assert fit_rendering(
        messages, 30_000, lambda _k: None, cap=None, min_chars=20_000, **args
    ) == render_segment(messages, 30_000, lambda _k: None)
    assert (
        fit_rendering(messages, 1_000_000, lambda _k: None, cap=16 * 1024, min_chars=20_000, **args) is None
    )
    assert (
        fit_rendering(messages, 1_000_000, lambda _k: None, cap=100, min_chars=10, **args) is None
    )  # no room at all
