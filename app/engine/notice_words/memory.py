"""The words of the memory notices (facts in app.model.notice_facts.memory)."""

from __future__ import annotations

from app.engine.describe import Description, describe
from app.model.notice_facts.memory import (
    MemoryFileFull,
    MemoryFileUnwritable,
    MemoryOff,
    MemoryStillQueued,
    MemoryStopped,
)
from app.sizes import format_size


@describe.register
def _memory_off(fact: MemoryOff) -> Description:
    return Description(f"memory worker off for this session: {fact.error}", level="warn", code=fact.code)


@describe.register
def _memory_stopped(fact: MemoryStopped) -> Description:
    return Description(f"memory worker stopped for now: {fact.error}", level="warn", code=fact.code)


@describe.register
def _memory_still_queued(fact: MemoryStillQueued) -> Description:
    return Description(
        f"memory: a queued segment stays queued for the next session — {fact.error}",
        level="warn",
        code=fact.code,
    )


@describe.register
def _memory_file_unwritable(fact: MemoryFileUnwritable) -> Description:
    return Description(
        f"could not write the memory file {fact.path}: {fact.error}", level="warn", code=fact.code
    )


@describe.register
def _memory_file_full(fact: MemoryFileFull) -> Description:
    return Description(
        f"the memory file is at memory_max_bytes ({format_size(fact.max_bytes)}): "
        f"{fact.dropped} older fact{'s' if fact.dropped != 1 else ''} left it",
        code=fact.code,
    )
