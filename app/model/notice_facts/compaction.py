"""The facts of the compaction notices: a compaction blocked, without room for a summary, not saved; the
provider's own compaction falling back to the local one (worded by app.engine.notice_words.compaction)."""

from __future__ import annotations

from dataclasses import dataclass

from app.model.notice_facts import NoticeFact


@dataclass(frozen=True)
class CompactionHookBlocked(NoticeFact):
    """A PreCompact hook blocked a planned compaction."""

    kind = "compaction_hook_blocked"
    code = "hook_block"
    reason: str  # the hook's reason, as it gave it


@dataclass(frozen=True)
class SummaryNoRoom(NoticeFact):
    """No summary route has room for the summary input: the view is cut to its last messages instead."""

    kind = "summary_no_room"
    code = "summary_no_room"
    keep_messages: int  # nuclear_keep_messages
    explanation: str  # each route's lack of room, in app.engine.compaction.summarize's words


@dataclass(frozen=True)
class CompactionNotSaved(NoticeFact):
    """The store refused a compacted view: the history is unchanged."""

    kind = "compaction_not_saved"
    code = "compaction"
    by_provider: bool  # the provider's compaction (context_engine = "provider"), else bulkhead's own
    error: str  # the exception's message


@dataclass(frozen=True)
class ProviderEditsNotMirrored(NoticeFact):
    """The tool results the provider cleared (its context edits) could not be mirrored in the view."""

    kind = "provider_edits_not_mirrored"
    code = "compaction"
    error: str  # the exception's message


@dataclass(frozen=True)
class NativeCompactionOverCap(NoticeFact):
    """The provider's compaction request would be over the cap in force: not sent, compacted locally."""

    kind = "native_compaction_over_cap"
    code = "compaction"
    request_bytes: int
    cap_bytes: int
    cap_source: str  # configured | learned | imported | assumed (CapSource)


@dataclass(frozen=True)
class NativeCompactionFailed(NoticeFact):
    """The provider's compaction request failed: compacted locally."""

    kind = "native_compaction_failed"
    code = "compaction"
    reason: str  # the failure's reason, in the classifier's words (app.engine.failures)


@dataclass(frozen=True)
class NativeCompactionEmpty(NoticeFact):
    """The provider's compaction returned no compaction block: compacted locally."""

    kind = "native_compaction_empty"
    code = "compaction"


@dataclass(frozen=True)
class NativeCompactionSavedNothing(NoticeFact):
    """The provider's compaction was not smaller than the view: compacted locally."""

    kind = "native_compaction_saved_nothing"
    code = "compaction"


__all__ = [
    "CompactionHookBlocked",
    "CompactionNotSaved",
    "NativeCompactionEmpty",
    "NativeCompactionFailed",
    "NativeCompactionOverCap",
    "NativeCompactionSavedNothing",
    "ProviderEditsNotMirrored",
    "SummaryNoRoom",
]
