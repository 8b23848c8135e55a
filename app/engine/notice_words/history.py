"""The words of the history notices (facts in app.model.notice_facts.history)."""

from __future__ import annotations

from app.engine.describe import Description, describe
from app.model.notice_facts.history import (
    RecallNoKey,
    RecallNotFound,
    Remembered,
    RewindNothing,
    RewindRestored,
    RewoundToPrompt,
    UndoDone,
    UndoNothing,
)
from app.textsafe import display_line


@describe.register
def _rewind_nothing(fact: RewindNothing) -> Description:
    return Description("nothing to rewind: no compaction in this session", code=fact.code)


@describe.register
def _rewind_restored(fact: RewindRestored) -> Description:
    return Description(
        f"restored the view before the last compaction ({fact.messages} messages)", code=fact.code
    )


@describe.register
def _rewound(fact: RewoundToPrompt) -> Description:
    if fact.files_restored:
        files = f"; files: {display_line(fact.files_restored)}"
    else:
        files = "; no file had changed since" if fact.files_asked else "; files left as they are"
    return Description(
        f"rewound the conversation to just before your prompt of turn {fact.turn} ({fact.messages} messages "
        f"in view; the full log is kept — /rewind compact goes back){files}",
        code=fact.code,
    )


@describe.register
def _undo_nothing(fact: UndoNothing) -> Description:
    return Description(
        "nothing to undo: no file was changed by write_file or edit_file in this session "
        "(shell commands are not checkpointed)",
        code=fact.code,
    )


@describe.register
def _undo_done(fact: UndoDone) -> Description:
    return Description(
        f"undid the file changes of turn {fact.turn}: {display_line(fact.restored)}", code=fact.code
    )


@describe.register
def _remembered(fact: Remembered) -> Description:
    return Description(
        f"remembered in {display_line(fact.path)}: {display_line(' '.join(fact.text.split()))}",
        code=fact.code,
    )


@describe.register
def _recall_no_key(fact: RecallNoKey) -> Description:
    return Description(
        f"{fact.given!r} names no archive key (16 hex digits, e.g. <<ccr:3f2a9c0d1e4b5a67>>)",
        level="warn",
        code=fact.code,
    )


@describe.register
def _recall_not_found(fact: RecallNotFound) -> Description:
    return Description(f"no archived segment {', '.join(fact.keys)}", level="warn", code=fact.code)
