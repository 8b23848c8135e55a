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
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from app.engine.permissions import Permissions, RuleFile
from app.model.events import Notice
from app.textsafe import display_line
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
        notices.append(Notice(display_line(line), level="warn" if file.held else "info", code="permissions"))
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
    names = ", ".join(file.relative for file in pending)
    if answer == "allow":
        permissions.answer([file.relative for file in pending], "allow")
        emit(Notice(f"allow rules of {display_line(names)} are in force (approved)", code="permissions"))
        return answer
    if answer == "deny":
        permissions.answer([file.relative for file in pending], "deny")
        emit(
            Notice(
                f"allow rules of {display_line(names)} stay off (remembered; `bulkhead permissions approve` "
                f"changes it); their deny and ask rules are in force",
                code="permissions",
            )
        )
        return answer
    return None
