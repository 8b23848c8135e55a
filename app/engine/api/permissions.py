"""A workspace's permission rules through the front door, outside a session (`bulkhead permissions …`).

    permissions = workspace_permissions(settings, workspace, State())
    permissions.listing()          # (kind, rule, source) for every rule in force: deny, ask, allow
    permissions.summary()          # one line per rule file of the workspace: in force, held back, refused
    permissions.files              # the workspace's rule files (`RuleFile`: its allow rules, its status)
    permissions.answer([".claude/settings.json"], "allow")   # remembered in state.toml, never in the workspace
    forget_rule_answers(State(), workspace)                  # how many answers were forgotten

A workspace file's allow rules are in force only once approved (a repository never grants itself a
permission); its deny and ask rules always are. Inside a session, `SessionApi.permissions()` shows them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from app.engine.permissions import Permissions, RuleFile
from app.engine.workspace_rules import load_permissions, rule_trust

if TYPE_CHECKING:
    from app.config import Settings
    from app.state import State

__all__ = ["Permissions", "RuleFile", "forget_rule_answers", "workspace_permissions"]


def workspace_permissions(settings: Settings, workspace: Path, state: State) -> Permissions:
    """config.toml's rules and the workspace's (each rule file's allow rules only if approved)."""
    return load_permissions(settings, workspace, state)


def forget_rule_answers(state: State, workspace: Path) -> int:
    """Forget the answers given for `workspace`'s rule files: their allow rules are off until approved again."""
    return rule_trust(state, workspace).forget()
