"""The words of the tool notices (facts in app.model.notice_facts.tools)."""

from __future__ import annotations

from app.engine.describe import Description, describe
from app.model.notice_facts.tools import (
    CheckpointFailed,
    HookChangedInput,
    MentionNotAttached,
    MentionsLeftOut,
    RuleAllowedForProject,
    RuleAllowedForSession,
    RuleNotSaved,
)
from app.textsafe import display_line


@describe.register
def _mentions_left_out(fact: MentionsLeftOut) -> Description:
    return Description(
        f"only the first {fact.limit} @mentions are attached ({fact.left_out} more left out; "
        f"max_mentions in config.toml)",
        level="warn",
        code=fact.code,
    )


@describe.register
def _mention_not_attached(fact: MentionNotAttached) -> Description:
    return Description(
        f"@{fact.path} is outside the workspace ({fact.outside}): not attached — there is no terminal to ask. "
        f"Run bulkhead in a terminal to be asked, pass --yes, or copy the file into the workspace.",
        level="warn",
        code=fact.code,
    )


@describe.register
def _hook_changed_input(fact: HookChangedInput) -> Description:
    return Description(f"A PreToolUse hook changed the input of {fact.tool}: now {fact.call}", code=fact.code)


@describe.register
def _checkpoint_failed(fact: CheckpointFailed) -> Description:
    return Description(
        f"{display_line(fact.problem)}; /undo will not restore it", level="warn", code=fact.code
    )


@describe.register
def _allowed_for_session(fact: RuleAllowedForSession) -> Description:
    return Description(f"allowed for the rest of this session: {display_line(fact.rule)}", code=fact.code)


@describe.register
def _allowed_for_project(fact: RuleAllowedForProject) -> Description:
    return Description(
        f"allowed in this project from now on: {display_line(fact.rule)} (saved in {fact.path})",
        code=fact.code,
    )


@describe.register
def _rule_not_saved(fact: RuleNotSaved) -> Description:
    return Description(
        f"{display_line(fact.problem)} — allowed for this session only", level="warn", code=fact.code
    )


__all__: list[str] = []
