"""Slash commands under `bulkhead -p`: the ones that make sense without a screen run; the rest are refused.

    bulkhead -c -p "/compact keep the API notes"   summarize this folder's newest session now
    bulkhead -c -p "/rename parser rewrite"        give it a title
    bulkhead -c -p "/undo"                         the files its last turn changed, back
    bulkhead -c -p "/rewind compact"               the view before its last compaction

A custom command (`.bulkhead/commands`, `.claude/commands`, the config folder) is expanded and sent, as in
the TUI. Any other slash command is a TUI one (a picker, a panel, a screen) or unknown: -p says which, with
exit status 2, and sends nothing to the model (`//text` sends `/text` as typed). The words are the TUI's
(`app.model.slash`, the TUI's own parser).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.engine.api import SessionApi

RUNS_IN_ONESHOT = ("compact", "rename", "undo", "rewind")
SAID = "/compact [instructions], /rename TITLE, /undo, /rewind compact"


@dataclass(frozen=True)
class SlashPlan:
    action: str = ""  # one of RUNS_IN_ONESHOT ("" : not a slash command for -p to run)
    argument: str = ""
    error: str = ""  # why -p refuses it (exit status 2)


def plan_slash(prompt: str, is_custom: Callable[[str], bool]) -> SlashPlan:
    """What -p does with `prompt`: run a command (`action`), refuse it (`error`), or send it (neither)."""
    from app.model.slash import SlashError, parse_slash

    text = prompt.strip()
    if not text.startswith("/") or text.startswith("//") or is_custom(text):
        return SlashPlan()
    word = text.split(maxsplit=1)[0]
    try:
        action, argument = parse_slash(text)
    except SlashError as exc:
        if str(exc).startswith("usage:"):
            return SlashPlan(error=f"{word}: {exc}")
        return SlashPlan(
            error=f"{word} is not a command (-p runs {SAID} and your custom commands; to send the text to "
            f"the model as it is, start it with //)"
        )
    if action == "rewind_to":
        return SlashPlan(
            error="/rewind picks a prompt on the screen: in -p, /rewind compact is the one that runs"
        )
    if action not in RUNS_IN_ONESHOT:
        return SlashPlan(
            error=f"{word} works in the full-screen chat (bulkhead, or bulkhead -c for this folder's newest "
            f"session); -p runs {SAID}"
        )
    return SlashPlan(action=action, argument=argument)


async def run_slash(session: SessionApi, plan: SlashPlan, say: Callable[[str], None]) -> int:
    """Run `plan` on the open, started session; say the outcome in one line (stderr). The exit status."""
    if plan.action == "compact":
        if not session.info().in_view:
            say(
                "bulkhead: /compact: the session is empty — nothing to summarize (-c continues this folder's newest)"
            )
            return 1
        result = await session.compact(plan.argument or None)
        if not result.ran:
            say("bulkhead: /compact did not run (a hook blocked it)")
            return 1
        if not result.changed:
            say("bulkhead: /compact: nothing to summarize — the view is as it was")
            return 0
        say(
            f"bulkhead: compacted {result.bytes_before:,} B → {result.bytes_after:,} B ({result.method}); "
            f"session {session.info().id}"
        )
        return 0
    if plan.action == "rename":
        try:
            title = session.rename(plan.argument)
        except ValueError as exc:
            say(f"bulkhead: /rename: {exc}")
            return 2
        say(f"bulkhead: session {session.info().id} is now “{title}”")
        return 0
    if plan.action == "undo":
        restored = await session.undo()
        if not restored:
            say("bulkhead: /undo: no turn of this session changed a file")
            return 1
        for item in restored:
            say(f"  {item.action}: {item.path}{f' ({item.detail})' if item.detail else ''}")
        return 0
    if plan.action == "rewind":
        return 0 if session.undo_compaction() else 1
    raise ValueError(plan.action)
