"""The facts of the session notices: what a session's start says (a crash's answer kept, a stale cap
forgotten, the instructions, the workspace's rule files and gateways) and the rule files read again while it
runs (worded by app.engine.notice_words.session)."""

from __future__ import annotations

from dataclasses import dataclass

from app.model.notice_facts import NoticeFact


@dataclass(frozen=True)
class StateFileSetAside(NoticeFact):
    """A damaged state file (state.toml) was put aside and a fresh one started."""

    kind = "state_file_set_aside"
    code = "state"
    explanation: str  # which file, what was wrong, where it was kept — worded by app.state


@dataclass(frozen=True)
class CrashPartialKept(NoticeFact):
    """A crash left an answer half-written: what arrived is kept, marked partial."""

    kind = "crash_partial_kept"
    code = "partial"


@dataclass(frozen=True)
class PermissionsProblem(NoticeFact):
    """A permission rule or rule file that could not be used (a typo, an unreadable file)."""

    kind = "permissions_problem"
    code = "permissions"
    problem: str  # the permissions' own sentence (app.engine.permissions), with the file it is in


@dataclass(frozen=True)
class WorkspaceGatewaysRead(NoticeFact):
    """What the workspace's shared gateways file (.bulkhead/gateways.toml) brought, or why it could not."""

    kind = "workspace_gateways"
    code = "gateways"
    problem: bool  # it could not be read or used
    explanation: str  # worded by app.workspace_gateways (app.engine.profile_evidence)


@dataclass(frozen=True)
class StaleCapForgotten(NoticeFact):
    """A cap an older bulkhead learned from a content block was forgotten (issue 36)."""

    kind = "stale_cap_forgotten"
    code = "cap_forgotten"
    endpoint: str
    explanation: str  # which cap and why it was wrong, worded by app.engine.cap_purge


@dataclass(frozen=True)
class InstructionsLoaded(NoticeFact):
    """The instruction files (AGENTS.md, CLAUDE.md, …) in the system prompt."""

    kind = "instructions_loaded"
    code = "instructions"
    files: tuple[str, ...]  # each as shown (its name, or its path from the workspace)
    scopes: tuple[str, ...]  # each one's scope: global | project | import
    file_bytes: tuple[int, ...]
    request_bytes: int  # what they take of every request


@dataclass(frozen=True)
class InstructionsProblem(NoticeFact):
    """An instruction file or import refused, or cut at its size limit."""

    kind = "instructions_problem"
    code = "instructions"
    problem: str  # worded by app.engine.instructions


@dataclass(frozen=True)
class RuleFileInForce(NoticeFact):
    """At the start: what of one workspace rule file is in force."""

    kind = "rule_file_at_start"
    code = "permissions"
    file: str  # relative to the workspace
    status: str  # no allow rules | approved | pending | changed | refused
    held: bool  # its allow rules wait for your approval
    summary: str  # the line the permissions word for it (app.engine.permissions.Permissions.summary)


@dataclass(frozen=True)
class RuleFilesApproved(NoticeFact):
    """You approved the allow rules of the workspace's rule files."""

    kind = "rule_files_approved"
    code = "permissions"
    files: tuple[str, ...]


@dataclass(frozen=True)
class RuleFilesRefused(NoticeFact):
    """You said no to the allow rules of the workspace's rule files (remembered)."""

    kind = "rule_files_refused"
    code = "permissions"
    files: tuple[str, ...]


@dataclass(frozen=True)
class RuleFileChanged(NoticeFact):
    """A workspace rule file changed while the session ran, and was read again."""

    kind = "rule_file_changed"
    code = "permissions"
    file: str
    status: str
    held: bool
    summary: str  # as in RuleFileInForce


@dataclass(frozen=True)
class RuleFileUnreadable(NoticeFact):
    """A workspace rule file changed and cannot be read now: its deny and ask rules from before stay."""

    kind = "rule_file_unreadable"
    code = "permissions"
    file: str
    problem: str  # what reading it said (the parser's words)
    kept: int  # deny/ask rules kept in force


@dataclass(frozen=True)
class RuleFileRemoved(NoticeFact):
    """A workspace rule file was removed: its rules are no longer in force."""

    kind = "rule_file_removed"
    code = "permissions"
    file: str


@dataclass(frozen=True)
class RuleFileEmptied(NoticeFact):
    """A workspace rule file changed and holds no permission rules now."""

    kind = "rule_file_emptied"
    code = "permissions"
    file: str


__all__ = [
    "CrashPartialKept",
    "InstructionsLoaded",
    "InstructionsProblem",
    "PermissionsProblem",
    "RuleFileChanged",
    "RuleFileEmptied",
    "RuleFileInForce",
    "RuleFileRemoved",
    "RuleFileUnreadable",
    "RuleFilesApproved",
    "RuleFilesRefused",
    "StaleCapForgotten",
    "StateFileSetAside",
    "WorkspaceGatewaysRead",
]
