"""The facts of the tool notices: `@mentions`, a hook's changed input, checkpoints, "always" answers kept as
allow rules (worded by app.engine.notice_words.tools)."""

from __future__ import annotations

from dataclasses import dataclass

from app.model.notice_facts import NoticeFact


@dataclass(frozen=True)
class MentionsLeftOut(NoticeFact):
    """A prompt named more `@paths` than max_mentions: the first are attached."""

    kind = "mentions_left_out"
    code = "mention"
    limit: int  # max_mentions
    left_out: int


@dataclass(frozen=True)
class MentionNotAttached(NoticeFact):
    """An `@path` outside the workspace, with nobody to ask: not attached."""

    kind = "mention_not_attached"
    code = "mention"
    path: str  # as the prompt wrote it
    outside: str  # where it resolves, outside the workspace


@dataclass(frozen=True)
class HookChangedInput(NoticeFact):
    """A PreToolUse hook replaced a tool call's input."""

    kind = "hook_changed_input"
    code = "hook_input"
    tool: str
    call: str  # the call as it now runs, in the approvals' words (app.tools.approval.describe_call)


@dataclass(frozen=True)
class CheckpointFailed(NoticeFact):
    """A file about to change could not be checkpointed: /undo will not restore it."""

    kind = "checkpoint_failed"
    code = "checkpoint"
    path: str
    problem: str  # the checkpoint's error, as it was raised (app.engine.checkpoints.CheckpointError)


@dataclass(frozen=True)
class RuleAllowedForSession(NoticeFact):
    """ "Always, this session" in an approval: its allow rule holds until the session ends."""

    kind = "rule_allowed_for_session"
    code = "permissions"
    rule: str


@dataclass(frozen=True)
class RuleAllowedForProject(NoticeFact):
    """ "Always, this project" in an approval: its allow rule is saved in the project's settings."""

    kind = "rule_allowed_for_project"
    code = "permissions"
    rule: str
    path: str  # the settings file it was saved in


@dataclass(frozen=True)
class RuleNotSaved(NoticeFact):
    """ "Always, this project", but the project's settings could not be written: allowed for the session."""

    kind = "rule_not_saved"
    code = "permissions"
    rule: str
    problem: str  # the OS error, as it was raised


__all__ = [
    "CheckpointFailed",
    "HookChangedInput",
    "MentionNotAttached",
    "MentionsLeftOut",
    "RuleAllowedForProject",
    "RuleAllowedForSession",
    "RuleNotSaved",
]
