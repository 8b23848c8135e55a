"""Trust on first use for a file a workspace brings (the mechanism `.mcp.json`'s servers use).

A repository never grants itself anything: a file it carries (`.bulkhead/gateways.toml`) is read only once
the user said yes to that very content — the answer is remembered in state.toml (never in the workspace,
which the repository could pre-fill), per workspace and per file, with a fingerprint of the content, so a
changed file asks again.

    trust = workspace_file_trust(state, workspace, ".bulkhead/gateways.toml", content)
    trust.decision()          # "allow" | "deny" | None (never asked, or the file changed since)
    trust.remember("allow")

`workspace_file_trust` is the one door: it reuses `ProjectApprovals` (app.mcp.config) on a table of its
own, and is the place to point at a shared trust store.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.mcp.config import ProjectApprovals


class _FileApprovals(ProjectApprovals):
    TABLE = "workspace_files"


@dataclass(frozen=True)
class _Entry:
    """What ProjectApprovals remembers an answer for: a name and the fingerprint of what was answered."""

    name: str
    fingerprint: str


@dataclass(frozen=True)
class FileTrust:
    approvals: ProjectApprovals
    entry: _Entry

    @property
    def fingerprint(self) -> str:
        return self.entry.fingerprint

    def decision(self) -> str | None:
        return self.approvals.decision(self.entry)  # type: ignore[arg-type]  # duck-typed: name + fingerprint

    def remember(self, decision: str) -> None:
        self.approvals.remember([self.entry], decision)  # type: ignore[list-item]


def fingerprint(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()[:16]


def workspace_file_trust(state: Any, workspace: Path, name: str, content: bytes) -> FileTrust:
    """The user's answer for this content of `name` in `workspace` (see the module docstring)."""
    return FileTrust(_FileApprovals(state, workspace), _Entry(name, fingerprint(content)))
