"""A workspace's committed `.bulkhead/gateways.toml`: the team's gateway profiles, read on trust.

A repository never grants itself anything: the file is read only once the user said yes to that very
content. The answer is kept by `app.trust.WorkspaceTrust` (state.toml, per workspace, with a fingerprint of
the content: a changed file asks again), as for `.mcp.json` and the workspace's rule files.

    notices = sync_workspace_gateways(state, workspace)    # at a session's start: import when trusted
    pending = pending_gateways_file(state, workspace)      # a file waiting for an answer (or None)
    lines = answer_gateways_file(state, pending, "allow")   # remembered; read at once when allowed

The TUI asks with a dialog, `bulkhead -p` on the terminal (/dev/tty), `bulkhead gateway trust` ahead.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.gateway_share import GatewayFileError, describe_file, import_profiles
from app.state import State
from app.trust import Decision, WorkspaceTrust

WORKSPACE_FILE = ".bulkhead/gateways.toml"
MAX_FILE_BYTES = 1024 * 1024
TRUST_TABLE = "workspace_files"  # state.toml: the answers, per workspace (app.trust)
SYNCED = "workspace_gateways"  # state.toml: {workspace: fingerprint of the content last imported}


@dataclass(frozen=True)
class GatewaysFile:
    """The workspace's gateways file as it is now."""

    root: Path  # the workspace (resolved)
    content: bytes

    @property
    def path(self) -> Path:
        return self.root / WORKSPACE_FILE

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(self.content).hexdigest()[:16]

    def trust(self, state: Any) -> WorkspaceTrust:
        return WorkspaceTrust(state, self.root, table=TRUST_TABLE)

    def decision(self, state: Any) -> Decision | None:
        return self.trust(state).decision(WORKSPACE_FILE, self.fingerprint)

    def describe(self) -> list[str]:
        """What the file would import, one line per endpoint (what the trust question shows)."""
        try:
            return describe_file(self.content.decode("utf-8", errors="replace"), str(self.path))
        except GatewayFileError as exc:
            return [f"cannot be read: {exc}"]


def workspace_file(workspace: Path) -> Path:
    return Path(workspace).expanduser().resolve() / WORKSPACE_FILE


def gateways_file(workspace: Path) -> GatewaysFile | None:
    """The workspace's gateways file (None when there is none, or it is over 1 MB)."""
    path = workspace_file(workspace)
    try:
        if not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
            return None
        return GatewaysFile(path.parent.parent, path.read_bytes())
    except OSError:
        return None


def pending_gateways_file(state: State, workspace: Path) -> GatewaysFile | None:
    """The gateways file when it waits for an answer (never answered for, or changed since)."""
    found = gateways_file(workspace)
    return found if found is not None and found.decision(state) is None else None


def import_workspace_file(state: State, found: GatewaysFile) -> list[str]:
    """Import the file's content (already trusted) and remember that this content was imported."""
    report = import_profiles(
        state, found.content.decode("utf-8", errors="replace"), source=f"workspace {found.path}"
    )

    def change(data: dict[str, Any]) -> None:
        synced = data.get(SYNCED)
        if not isinstance(synced, dict):
            synced = data[SYNCED] = {}
        synced[str(found.root)] = found.fingerprint

    state.update(change)
    return report.imported + [f"skipped {line}" for line in report.skipped]


def answer_gateways_file(state: State, found: GatewaysFile, decision: Decision) -> list[str]:
    """Remember the user's answer for this content; when allowed, import it now (the import's lines)."""
    found.trust(state).remember({WORKSPACE_FILE: found.fingerprint}, decision)
    return import_workspace_file(state, found) if decision == "allow" else []


def sync_workspace_gateways(state: State, workspace: Path) -> list[tuple[str, str]]:
    """Notices (level, text) about the workspace's gateways file; imports it when trusted and new."""
    found = gateways_file(workspace)
    if found is None:
        return []
    decision = found.decision(state)
    if decision == "deny":
        return []
    if decision is None:
        return [
            (
                "warn",
                f"this workspace has {WORKSPACE_FILE} (gateway profiles shared with the repository) — not "
                f"read until you trust it (bulkhead asks; `bulkhead gateway trust` shows it and reads it, "
                f"`bulkhead gateway trust --deny` leaves it alone; asked again when it changes)",
            )
        ]
    synced = state.read().get(SYNCED)
    if isinstance(synced, dict) and synced.get(str(found.root)) == found.fingerprint:
        return []
    try:
        lines = import_workspace_file(state, found)
    except GatewayFileError as exc:
        return [("warn", str(exc))]
    return [("info", f"gateway profiles read from {WORKSPACE_FILE}: " + "; ".join(lines))]
