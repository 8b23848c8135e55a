"""Builders for compaction tests and the invariants every pass must keep."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterable, Sequence

from app.config import Settings
from app.engine.compaction.context import PassContext, part_strings
from app.engine.compaction.pairing import pairing_problems, starts_with_user
from app.model.archive import MARKER_RE, REASONS, ArchiveEntry, archive_key, defang_markers, markers_in
from app.model.messages import Image, Message, Text, ToolCall, ToolResult

_ids = itertools.count(1)


def big_text(size: int, seed: str = "x") -> str:
    """Realistic multi-line text of exactly `size` chars (with some unicode)."""
    line = f"{seed} line ✓ ünïcødé 数据 — value {{n}}\n"
    chunks = []
    total = 0
    n = 0
    while total < size:
        piece = line.format(n=n)
        chunks.append(piece)
        total += len(piece)
        n += 1
    return "".join(chunks)[:size]


class Builder:
    """Build a master log turn by turn."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.turn = 0

    def system(self, text: str = "You are a test assistant.") -> Message:
        return self._add(Message.create("system", text, turn=0))

    def user(self, text: str = "please help", *, new_turn: bool = True) -> Message:
        if new_turn:
            self.turn += 1
        return self._add(Message.create("user", text, turn=self.turn))

    def assistant(self, text: str = "ok", calls: Sequence[ToolCall] = ()) -> Message:
        parts = ([Text(text)] if text else []) + list(calls)
        return self._add(Message.create("assistant", parts, turn=self.turn))

    def result(
        self, call_id: str, content: str, *, is_error: bool = False, verbatim: bool = False
    ) -> Message:
        origin = "recall" if verbatim else "tool"
        return self._add(
            Message.create(
                "tool",
                [ToolResult(call_id, content, is_error)],
                turn=self.turn,
                origin=origin,
                preserve_verbatim=verbatim,
            )
        )

    def tool(
        self,
        name: str,
        args: dict,
        content: str,
        *,
        text: str = "",
        is_error: bool = False,
        verbatim: bool = False,
    ) -> tuple[Message, Message]:
        call = ToolCall(f"call_{next(_ids)}", name, args)
        a = self.assistant(text, [call])
        r = self.result(call.id, content, is_error=is_error, verbatim=verbatim)
        return a, r

    def read(
        self,
        path: str,
        content: str,
        offset: int | None = None,
        limit: int | None = None,
        is_error: bool = False,
    ) -> tuple[Message, Message]:
        args: dict = {"path": path}
        if offset is not None:
            args["offset"] = offset
        if limit is not None:
            args["limit"] = limit
        return self.tool("read_file", args, content, is_error=is_error)

    def _add(self, message: Message) -> Message:
        self.messages.append(message)
        return message

    @property
    def view(self) -> tuple[Message, ...]:
        return tuple(self.messages)


def ctx_for(
    messages: Sequence[Message],
    *,
    settings: Settings | None = None,
    turn: int | None = None,
    prior: dict[str, str] | None = None,
    target: int | None = None,
    **kw,
) -> PassContext:
    master = {m.id for m in messages}
    prior = dict(prior or {})
    return PassContext(
        settings=settings or Settings(),
        turn=turn if turn is not None else max((m.meta.turn for m in messages), default=0),
        archive_lookup=prior.get,
        target_bytes=target,
        is_master=lambda m: m.id in master,
        **kw,
    )


def run(coro):
    return asyncio.run(coro)


def fake_summarizer(
    answer: str = "The user and the assistant worked on the parser; tests now pass. "
    "Next: document the change.",
    calls: list | None = None,
):
    async def summarize(system: str, text: str) -> str:
        if calls is not None:
            calls.append((system, text))
        return answer

    return summarize


# -- invariants ---------------------------------------------------------------------------------------


def all_markers(view: Iterable[Message]) -> set[str]:
    keys: set[str] = set()
    for m in view:
        for s in part_strings(m):
            keys.update(markers_in(s))
    return keys


def check_entries(entries: Iterable[ArchiveEntry], master_ids: set[str]) -> None:
    for e in entries:
        assert not MARKER_RE.search(e.content), f"entry {e.key} holds a marker"
        assert e.reason in REASONS, e.reason
        assert e.key == archive_key(e.content)
        assert set(e.source_ids) <= master_ids, (e.reason, set(e.source_ids) - master_ids)


def check_view(
    master: Sequence[Message],
    before: Sequence[Message],
    after: Sequence[Message],
    entries: Sequence[ArchiveEntry],
    prior: dict[str, str],
    *,
    verbatim_may_move: bool = False,
) -> None:
    """Every invariant a pass (or chain of passes) must keep. Raises AssertionError."""
    master_ids = {m.id for m in master}
    known = set(prior) | {e.key for e in entries}
    check_entries(entries, master_ids)

    # markers resolve; derived messages list every key they name; markers carried forward
    in_after = all_markers(after)
    assert in_after <= known, f"dangling markers: {in_after - known}"
    for m in after:
        if m.id not in master_ids:
            named = set()
            for s in part_strings(m):
                named.update(markers_in(s))
            assert named <= set(m.meta.archive_keys), (m.meta.origin, named - set(m.meta.archive_keys))
            assert set(m.meta.source_ids) <= master_ids
    assert all_markers(before) <= in_after, f"markers lost: {all_markers(before) - in_after}"

    # pairing and user-first
    assert pairing_problems(tuple(after)) == [], pairing_problems(tuple(after))
    assert starts_with_user(tuple(after))

    # system messages untouched, first, in order
    systems = [m for m in before if m.role == "system"]
    assert [m.id for m in after if m.role == "system"] == [m.id for m in systems]
    assert [m.id for m in after[: len(systems)]] == [m.id for m in systems]

    # losslessness: every original string is in the view or in the archive
    view_strings = {s for m in after for s in part_strings(m)}
    archived = "\x00".join([e.content for e in entries] + list(prior.values()))
    for m in master:
        if any(v.id == m.id for v in after):
            continue
        for s in part_strings(m):
            if not s or s in view_strings:
                continue
            if "<<ccr:" in s or "[[ccr:" in s:
                s = defang_markers(s)
            assert s in archived, f"lost content of {m.role} {m.id}: {s[:80]!r}"

    # verbatim content intact (unless the quarter rule moved it to the archive)
    for m in master:
        if m.meta.preserve_verbatim:
            for s in part_strings(m):
                kept = any(v.meta.preserve_verbatim and s in part_strings(v) for v in after)
                if not kept:
                    assert verbatim_may_move, "verbatim content touched"
                    assert s in archived


def as_json(view: Sequence[Message]) -> str:
    return json.dumps([m.to_dict() for m in view], ensure_ascii=False)


__all__ = ["Builder", "Image", "big_text", "ctx_for", "check_view", "fake_summarizer", "run", "all_markers"]
