"""The facts of the history notices: `/rewind`, `/undo`, `/memory` and `#`, `/recall`
(worded by app.engine.notice_words.history)."""

from __future__ import annotations

from dataclasses import dataclass

from app.model.notice_facts import NoticeFact


@dataclass(frozen=True)
class RewindNothing(NoticeFact):
    """`/rewind compact` with no compaction in the session."""

    kind = "rewind_nothing"
    code = "rewind"


@dataclass(frozen=True)
class RewindRestored(NoticeFact):
    """`/rewind compact`: the view before the last compaction is back."""

    kind = "rewind_restored"
    code = "rewind"
    messages: int


@dataclass(frozen=True)
class RewoundToPrompt(NoticeFact):
    """`/rewind` to a prompt: the view just before it, and what became of the files."""

    kind = "rewound_to_prompt"
    code = "rewind"
    turn: int
    messages: int
    files_asked: bool  # whether the user asked for the files back too
    files_restored: str  # what was restored, in the checkpoints' words ("" : nothing had changed)


@dataclass(frozen=True)
class UndoNothing(NoticeFact):
    """`/undo` with no checkpointed file change in the session."""

    kind = "undo_nothing"
    code = "undo"


@dataclass(frozen=True)
class UndoDone(NoticeFact):
    """`/undo`: the files of one turn are back."""

    kind = "undo_done"
    code = "undo"
    turn: int
    restored: str  # what was restored, in the checkpoints' words


@dataclass(frozen=True)
class Remembered(NoticeFact):
    """`/memory TEXT` or a `#` line, appended to the project's instructions file."""

    kind = "remembered"
    code = "memory"
    path: str
    text: str


@dataclass(frozen=True)
class RecallNoKey(NoticeFact):
    """`/recall` with words that hold no archive key."""

    kind = "recall_no_key"
    code = "recall"
    given: str


@dataclass(frozen=True)
class RecallNotFound(NoticeFact):
    """`/recall` of keys this session's archive does not hold."""

    kind = "recall_not_found"
    code = "recall"
    keys: tuple[str, ...]


__all__ = [
    "RecallNoKey",
    "RecallNotFound",
    "Remembered",
    "RewindNothing",
    "RewindRestored",
    "RewoundToPrompt",
    "UndoDone",
    "UndoNothing",
]
