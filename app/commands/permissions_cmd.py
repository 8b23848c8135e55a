"""`bulkhead permissions list|approve [FILE…]|deny [FILE…]|reset` — this workspace's permission rules.

`list` prints every rule in force (deny, ask, allow) with its file, then the allow rules of the
workspace's rule files that are held back until approved. `approve` puts the allow rules of the
workspace's rule files (all, or those named: `.claude/settings.json`, `.claude/settings.local.json`,
`.bulkhead/settings.toml`) in force, as they are now — a later change asks again; `deny` keeps them off
without asking again; `reset` forgets the answers for this workspace. Answers live in state.toml,
never in the workspace.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Literal

from app.commands import settings_flags
from app.config import Settings, load_settings
from app.textsafe import display_line


def _workspace(args, settings: Settings) -> Path:
    return Path(args.workspace or settings.workspace or os.getcwd()).expanduser().resolve()


def run(args) -> int:
    from app.engine.api.permissions import workspace_permissions
    from app.state import State

    settings = load_settings(flags=settings_flags(args))
    workspace = _workspace(args, settings)
    permissions = workspace_permissions(settings, workspace, State())
    if args.action == "list":
        return _list(permissions, workspace)
    if args.action == "reset":
        from app.engine.api.permissions import forget_rule_answers

        forgotten = forget_rule_answers(State(), workspace)
        print(
            f"forgot {forgotten} answer{'s' if forgotten != 1 else ''} for {display_line(str(workspace))}'s rule "
            f"files; their allow rules are off until approved again"
        )
        return 0
    names = [name.removeprefix("./") for name in getattr(args, "files", None) or []]
    with_allow = [file for file in permissions.files if file.allow]
    known = {file.relative for file in with_allow}
    unknown = [name for name in names if name not in known]
    if unknown:
        have = ", ".join(sorted(known)) or "none with allow rules"
        print(
            f"bulkhead: not a rule file of this workspace with allow rules: {', '.join(map(display_line, unknown))} "
            f"(its files: {have})",
            file=sys.stderr,
        )
        return 2
    chosen = [file for file in with_allow if not names or file.relative in names]
    if not chosen:
        print(f"nothing to {args.action}: {display_line(str(workspace))} has no rule file with allow rules")
        return 0
    decision: Literal["allow", "deny"] = "allow" if args.action == "approve" else "deny"
    permissions.answer([file.relative for file in chosen], decision)
    for file in chosen:
        verb = "in force" if decision == "allow" else "kept off"
        print(
            f"{display_line(file.relative)}: {len(file.allow)} allow rule{'s' if len(file.allow) != 1 else ''} {verb}"
        )
        for rule in file.allow:
            print(f"    allow {display_line(rule)}")
    print("(remembered in state.toml for these rules as they are now; a change to them asks again)")
    return 0


def _list(permissions, workspace: Path) -> int:
    print(f"permission rules for {display_line(str(workspace))}")
    for kind, rule, source in permissions.listing():
        print(f"  {kind:<5} {display_line(rule)}  ({display_line(source)})")
    if not permissions.listing():
        print("  no rules: the approval mode decides every call")
    for line in permissions.summary():
        print(display_line(line))
    for problem in permissions.problems:
        print(f"⚠ {display_line(problem)}")
    return 0
