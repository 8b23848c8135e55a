"""The facts of the memory worker's notices: why it stopped, what it could not write or keep
(worded by app.engine.notice_words.memory)."""

from __future__ import annotations

from dataclasses import dataclass

from app.model.notice_facts import NoticeFact


@dataclass(frozen=True)
class MemoryOff(NoticeFact):
    """The memory journal could not be opened (a full disk): no memory for this session."""

    kind = "memory_off"
    code = "memory"
    error: str  # the exception's message


@dataclass(frozen=True)
class MemoryStopped(NoticeFact):
    """A background read failed: the worker stops until the next prompt (what it had not read stays queued)."""

    kind = "memory_stopped"
    code = "memory"
    error: str  # the exception's message


@dataclass(frozen=True)
class MemoryStillQueued(NoticeFact):
    """`-p`'s read of the queued segments failed: they stay queued for the next session."""

    kind = "memory_still_queued"
    code = "memory"
    error: str  # the exception's message


@dataclass(frozen=True)
class MemoryFileUnwritable(NoticeFact):
    """The memory file (memory = "auto") could not be written."""

    kind = "memory_file_unwritable"
    code = "memory"
    path: str
    error: str  # the exception's message


@dataclass(frozen=True)
class MemoryFileFull(NoticeFact):
    """The memory file reached memory_max_bytes: the oldest facts left it."""

    kind = "memory_file_full"
    code = "memory"
    max_bytes: int  # memory_max_bytes
    dropped: int  # how many older facts left the file


__all__ = ["MemoryFileFull", "MemoryFileUnwritable", "MemoryOff", "MemoryStillQueued", "MemoryStopped"]
