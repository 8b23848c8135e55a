"""The words of the compaction notices (facts in app.model.notice_facts.compaction)."""

from __future__ import annotations

from app.engine.describe import Description, describe
from app.model.cap_names import cap_name
from app.model.notice_facts.compaction import (
    CompactionHookBlocked,
    CompactionNotSaved,
    NativeCompactionEmpty,
    NativeCompactionFailed,
    NativeCompactionOverCap,
    NativeCompactionSavedNothing,
    ProviderEditsNotMirrored,
    SummaryNoRoom,
)
from app.sizes import format_size


@describe.register
def _hook_blocked(fact: CompactionHookBlocked) -> Description:
    return Description(
        f"Compaction blocked by a PreCompact hook: {fact.reason}", level="warn", code=fact.code
    )


@describe.register
def _summary_no_room(fact: SummaryNoRoom) -> Description:
    return Description(
        f"no summary: {fact.explanation} — compacting to the last "
        f"{fact.keep_messages} messages instead (everything else is archived). Set "
        f"compact_model to a route with more room, or raise max_payload if the gateway takes more.",
        level="warn",
        code=fact.code,
    )


@describe.register
def _not_saved(fact: CompactionNotSaved) -> Description:
    what = "The provider's compaction" if fact.by_provider else "Compaction"
    return Description(
        f"{what} could not be saved ({fact.error}); the history is unchanged.", level="error", code=fact.code
    )


@describe.register
def _edits_not_mirrored(fact: ProviderEditsNotMirrored) -> Description:
    return Description(
        f"The provider's cleared tool results could not be mirrored ({fact.error}).",
        level="warn",
        code=fact.code,
    )


@describe.register
def _native_over_cap(fact: NativeCompactionOverCap) -> Description:
    return Description(
        f"the provider's compaction request would be {format_size(fact.request_bytes)}, over "
        f"the {cap_name(fact.cap_source)} ({format_size(fact.cap_bytes)}) — not sent; compacting "
        f"locally instead",
        level="warn",
        code=fact.code,
    )


@describe.register
def _native_failed(fact: NativeCompactionFailed) -> Description:
    return Description(
        f"the provider could not compact ({fact.reason}) — compacting locally instead",
        level="warn",
        code=fact.code,
    )


@describe.register
def _native_empty(fact: NativeCompactionEmpty) -> Description:
    return Description(
        "the provider's compaction returned no compaction block — compacting locally instead",
        level="warn",
        code=fact.code,
    )


@describe.register
def _native_saved_nothing(fact: NativeCompactionSavedNothing) -> Description:
    return Description(
        "the provider's compaction saved nothing — compacting locally instead", level="warn", code=fact.code
    )
