"""The workspace's permission rule files, trusted on first use.

`.bulkhead/settings.toml`, `.claude/settings.json` and `.claude/settings.local.json` come with the
repository, so a cloned one could grant itself the shell. Their `deny` and `ask` rules are always in
force (they only take permissions away); their `allow` rules only once you approved the file as it is
now — the TUI asks once, `bulkhead -p` asks on the terminal, `bulkhead permissions approve` approves
ahead. The answer is kept in state.toml per workspace and file with a fingerprint of the file's allow
rules (`app.trust.WorkspaceTrust`, as for `.mcp.json`): when they change, you are asked again.

    permissions = load_permissions(settings, workspace, state)
    for line in permissions.summary(): ...            # said when the session starts
    await confirm_rule_files(permissions, ask, emit)  # the front end's question, if any

The files are looked at again before each prompt (`RuleFilesWatch.refresh`, a stat of each: cheap when
nothing changed). A file added, changed or removed while the session runs is read again and goes through
the same trust as at the start: its deny and ask rules are in force at once, its allow rules only once
approved (the front end that asked at the start asks again). A file that became unreadable (a save half
done, a typo) keeps the deny and ask rules it had, and says so.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

from app.engine.notice_words import notice
from app.engine.permissions import RULE_FILES, SESSION, Permissions, RuleFile
from app.model.events import Notice
from app.model.notice_facts import NoticeFact
from app.model.notice_facts.session import (
    PermissionsProblem,
    RuleFileChanged,
    RuleFileEmptied,
    RuleFileInForce,
    RuleFileRemoved,
    RuleFilesApproved,
    RuleFilesRefused,
    RuleFileUnreadable,
)
from app.trust import WorkspaceTrust

RULE_FILES_TABLE = "workspace_rule_files"
AskRules = Callable[[list[RuleFile]], Awaitable[str | None]]  # -> "allow" | "deny" | None (not now)


def rule_trust(state: Any, workspace: Path) -> WorkspaceTrust:
    """Where the answers for this workspace's rule files are kept (state.toml)."""
    return WorkspaceTrust(state, workspace, table=RULE_FILES_TABLE)


def load_permissions(settings: Any, workspace: Path, state: Any) -> Permissions:
    """config.toml's rules and the workspace's, each workspace file's allow rules only if approved."""
    source = settings.config_file.name if getattr(settings, "config_file", None) else "config.toml"
    trust = rule_trust(state, workspace) if state is not None else None
    return Permissions.load(workspace, settings.permissions, source, trust=trust)


def start_notices(permissions: Permissions) -> list[Notice]:
    """Which project rules are in force, said once when the session starts (nothing without rule files)."""
    notices = []
    for file, line in zip(permissions.files, permissions.summary(), strict=True):
        notices.append(
            notice(RuleFileInForce(file=file.relative, status=file.status, held=file.held, summary=line))
        )
    return notices


async def confirm_rule_files(
    permissions: Permissions, ask: AskRules | None, emit: Callable[[Notice], None]
) -> str | None:
    """Ask about the rule files that wait for an answer; the answer is remembered and in force at once.
    Returns "allow", "deny" or None (nothing asked, or "not now")."""
    pending = permissions.pending_files()
    if not pending or ask is None:
        return None
    try:
        answer = await ask(pending)
    except Exception:  # a broken question is "not now"
        answer = None
    names = tuple(file.relative for file in pending)
    if answer == "allow":
        permissions.answer(list(names), "allow")
        emit(notice(RuleFilesApproved(files=names)))
        return answer
    if answer == "deny":
        permissions.answer(list(names), "deny")
        emit(notice(RuleFilesRefused(files=names)))
        return answer
    return None


# -- read again while the session runs -----------------------------------------------------------------------
Stamp = tuple[tuple[str, int, int, int] | None, ...]  # per rule file: (path, mtime_ns, size, inode) or None


def rule_files_stamp(workspace: Path) -> Stamp:
    """What a stat says of each of the workspace's rule files (None: no such file)."""
    stamps: list[tuple[str, int, int, int] | None] = []
    for relative in RULE_FILES:
        try:
            found = os.stat(Path(workspace).expanduser() / relative)
        except OSError:
            stamps.append(None)
            continue
        stamps.append((relative.as_posix(), found.st_mtime_ns, found.st_size, found.st_ino))
    return tuple(stamps)


class RulesHost(Protocol):
    """What the watch reads and replaces on the engine."""

    settings: Any
    workspace: Path
    state: Any
    permissions: Permissions

    def emit(self, event: Any) -> None: ...


def _in_force(permissions: Permissions) -> list[tuple[str, str, str]]:
    return [row for row in permissions.listing() if row[2] != SESSION]


class RuleFilesWatch:
    """The workspace's rule files, looked at again before each prompt; a change goes through trust as at start."""

    def __init__(self, host: RulesHost) -> None:
        self.host = host
        self.ask: AskRules | None = None  # the front end's question (set by the first confirm_rule_files)
        self.seen = rule_files_stamp(host.workspace)
        self._asking = False

    async def confirm(self, ask: AskRules | None) -> str | None:
        """The question at the start (`confirm_rule_files`); `ask` is kept to ask again after a change."""
        self.ask = ask
        return await confirm_rule_files(self.host.permissions, ask, self.host.emit)

    async def refresh(self) -> bool:
        """Read the rule files again if a stat says one was added, changed or removed; say what changed and
        ask about allow rules that wait for an answer. True when the rules in force changed."""
        stamp = rule_files_stamp(self.host.workspace)
        if stamp == self.seen:
            return False
        before_stamp, self.seen = self.seen, stamp
        host, before = self.host, self.host.permissions
        after = load_permissions(host.settings, host.workspace, host.state)
        after.rules += [rule for rule in before.rules if rule.source == SESSION]  # yours, for this session
        kept = _keep_unreadable(before, after, host.workspace)
        same = sorted(_in_force(after)) == sorted(_in_force(before)) and sorted(
            after.files, key=lambda file: file.relative
        ) == sorted(before.files, key=lambda file: file.relative)  # "p" on an approval wrote the file
        host.permissions = after
        if same and not kept:
            return False
        changed = [
            relative.as_posix()
            for relative, old, new in zip(RULE_FILES, before_stamp, stamp, strict=True)
            if old != new
        ]
        files = {file.relative: (file, line) for file, line in zip(after.files, after.summary(), strict=True)}
        said: NoticeFact
        for relative in changed:
            if relative in files:
                file, line = files[relative]
                said = RuleFileChanged(file=relative, status=file.status, held=file.held, summary=line)
            elif relative in kept:
                problem = _problem_of(after, host.workspace, relative)
                said = RuleFileUnreadable(file=relative, problem=problem, kept=kept[relative])
            elif not (Path(host.workspace) / relative).exists():
                said = RuleFileRemoved(file=relative)
            else:
                said = RuleFileEmptied(file=relative)
            host.emit(notice(said))
        unreadable = tuple(f"{Path(host.workspace).expanduser() / relative}:" for relative in kept)
        for problem in after.problems:
            if problem not in before.problems and not problem.startswith(unreadable):  # said above
                host.emit(notice(PermissionsProblem(problem=problem)))
        if after.pending_files() and not self._asking:
            self._asking = True
            try:
                await confirm_rule_files(after, self.ask, host.emit)
            finally:
                self._asking = False
        return True


def _keep_unreadable(before: Permissions, after: Permissions, workspace: Path) -> dict[str, int]:
    """A rule file that is there but can no longer be read keeps its deny and ask rules (a half-done save
    must not lift a deny). Returns relative path → how many were kept."""
    now = {file.relative for file in after.files}
    kept: dict[str, int] = {}
    for file in before.files:
        path = Path(workspace).expanduser() / file.relative
        if file.relative in now or not any(problem.startswith(f"{path}:") for problem in after.problems):
            continue
        rules = [rule for rule in before.rules if rule.source == file.relative and rule.kind != "allow"]
        if rules:
            after.rules += rules
            kept[file.relative] = len(rules)
    return kept


def _problem_of(permissions: Permissions, workspace: Path, relative: str) -> str:
    """What reading `relative` said (the parser's words), without the path and the advice."""
    prefix = f"{Path(workspace).expanduser() / relative}:"
    found = next((p for p in permissions.problems if p.startswith(prefix)), "")
    return found.removeprefix(prefix).strip().split("; ")[0] or "unreadable"
