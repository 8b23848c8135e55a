"""Withhold the text a gateway refuses: out of the view, kept in the master log and the local archive.

    outcome = withhold(session, finding, gateway="Apache (ModSecurity or a similar filter)")
    outcome.applied, outcome.message         # a new view, or why not (the newest prompt: edit it instead)

The found span's lines (or the whole part when they are most of it) become a stub in a new view that
tells the model what was withheld and why. The original stays in the master log (never rewritten) and is
archived with reason `withheld`: local-only, so the recall tool answers that it is withheld instead of
re-sending it (the user can still read it: `bulkhead archive show KEY`). The new view is a view like a
compaction's: `/rewind compact` undoes it, and the session's flags list what was withheld.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from app.engine.content_finder import Finding
from app.model.archive import ArchiveEntry, archive_key
from app.model.messages import Message, Text, ToolCall, ToolResult

if TYPE_CHECKING:
    from app.engine.session import Session

WITHHELD_REASON = "withheld"
WITHHELD_RECALL = (
    "[withheld: this content is kept on the user's machine only, because the network's security filter "
    "refuses it. Ask the user if you need it.]"
)
WHOLE_PART_SHARE = 0.5  # withhold the whole part when the span's lines are at least half of it


@dataclass(frozen=True)
class WithholdOutcome:
    applied: bool
    message: str
    archive_key: str | None = None
    view_id: str | None = None


def _range_words(first: int, last: int) -> str:
    return f"line {first}" if first == last else f"lines {first}-{last}"


def stub_for(finding: Finding, whole: bool, lines: tuple[int, int] | None = None) -> str:
    what = finding.part.label.split(", ", 1)[-1]
    where = what if whole or lines is None else f"{_range_words(*lines)} of {what}"
    return (
        f"[{where}: withheld, it contained text the network security filter blocks. The user has the "
        f"original; ask the user if you need it.]"
    )


def _replace_text(text: str, finding: Finding) -> tuple[str, bool]:
    lines = text.split("\n")
    ranges = finding.line_ranges
    covered = sum(last - first + 1 for first, last in ranges)
    whole = not finding.cleared or covered >= WHOLE_PART_SHARE * len(lines) or len(lines) <= 2
    if whole:
        return stub_for(finding, True), True
    out: list[str] = []
    position = 0
    for first, last in ranges:
        out.extend(lines[position : first - 1])
        out.append(stub_for(finding, False, (first, last)))
        position = last
    out.extend(lines[position:])
    return "\n".join(out), False


def withheld_message(message: Message, finding: Finding) -> tuple[Message, str, bool]:
    """`message` with the found part's spans replaced by a stub (a derived message), the original text,
    and whether the whole part was withheld."""
    part = message.parts[finding.part.index]
    whole = True
    if isinstance(part, Text):
        original = part.text
        new_text, whole = _replace_text(original, finding)
        new_part: Text | ToolResult | ToolCall = Text(new_text)
    elif isinstance(part, ToolResult):
        original = part.content
        new_text, whole = _replace_text(original, finding)
        new_part = replace(part, content=new_text)
    elif isinstance(part, ToolCall):
        original = finding.part.text
        new_part = replace(part, args={"withheld": stub_for(finding, True)})
    else:
        raise ValueError("only text, tool results and tool calls can be withheld")
    parts = list(message.parts)
    parts[finding.part.index] = new_part
    return message.derive(parts, origin="stub"), original, whole


def withhold(session: Session, finding: Finding) -> WithholdOutcome:
    """Withhold `finding` from `session`'s view (a new view, one transaction), or say why not."""
    part = finding.part
    if part.message_id is None:
        fix = (
            "shorten or reword AGENTS.md / CLAUDE.md"
            if part.kind == "system"
            else "leave that tool out (tools = [...] in config.toml)"
        )
        return WithholdOutcome(False, f"{part.label} is not part of the conversation: {fix}")
    if part.newest_prompt:
        return WithholdOutcome(
            False,
            f"the refused text is in your newest prompt ({part.label}): edit it and send it again",
        )
    messages = list(session.view.messages)
    index = next((i for i, m in enumerate(messages) if m.id == part.message_id), None)
    if index is None:
        return WithholdOutcome(False, f"{part.label} is no longer in the conversation's view")
    stubbed, original, whole = withheld_message(messages[index], finding)
    key = archive_key(original)
    entry = ArchiveEntry(key=key, content=original, reason=WITHHELD_REASON, source_ids=(messages[index].id,))
    messages[index] = stubbed
    view = session.commit_view(messages, [entry], reason="withheld")
    withheld = dict(session.flags.get("withheld") or {})
    withheld[messages[index].meta.source_ids[0]] = key
    session.set_flag("withheld", withheld)
    return WithholdOutcome(
        True,
        f"withheld {'all' if whole else ', '.join(_range_words(*r) for r in finding.line_ranges)} of "
        f"{part.label} from the model "
        f"(kept locally as ccr:{key}: bulkhead archive show {key}); /rewind compact undoes it",
        archive_key=key,
        view_id=view.id,
    )
