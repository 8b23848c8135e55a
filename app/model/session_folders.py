"""Sessions belong to a folder: the workspace their tools run in.

`bulkhead -c` continues the newest session of the current folder, the F5 picker lists this folder's
sessions first, and a session resumed from another folder says (or the TUI asks) where its tools run.
A session's folder is stored resolved (symlinks and `..` gone), so `~/proj` and `/home/me/proj` are one.

    folder_key(Path.cwd())                  # "/home/me/proj" — what the store keeps
    shown_folder("/home/me/proj/app")       # "~/proj/app"
    elsewhere(row.workspace, workspace)     # the session's other folder, or None when it is this one
"""

from __future__ import annotations

import os
from pathlib import Path


def folder_key(path: str | os.PathLike[str]) -> str:
    """The form a session's folder is stored and compared in: absolute, `~` expanded, symlinks resolved."""
    return str(Path(path).expanduser().resolve())


def shown_folder(folder: str, max_chars: int = 0) -> str:
    """A folder for the screen: `~/…` under the home folder, its end when longer than `max_chars` (0: whole);
    "(unknown)" when the session never recorded one."""
    if not folder:
        return "(unknown)"
    home = str(Path.home())
    if folder == home:
        shown = "~"
    elif folder.startswith(home.rstrip("/") + "/"):
        shown = "~/" + folder[len(home.rstrip("/")) + 1 :]
    else:
        shown = folder
    if max_chars and len(shown) > max_chars:
        shown = "…" + shown[-(max_chars - 1) :]
    return shown


def elsewhere(session_folder: str, workspace: str | os.PathLike[str]) -> str | None:
    """The session's folder when it is not `workspace` (a session of another folder); None when it is this
    folder, or when the session never recorded one (older sessions)."""
    if not session_folder:
        return None
    if folder_key(session_folder) == folder_key(workspace):
        return None
    return session_folder


def no_session_here(workspace: str | os.PathLike[str], others: int) -> str:
    """What `-c` says when the current folder has no session to continue."""
    where = shown_folder(folder_key(workspace))
    if not others:
        return f"no session of {where} to continue — this is a new one"
    return (
        f"no session of {where} to continue — this is a new one. Other folders' sessions: "
        f"`bulkhead sessions list` (in the TUI, F5 and F5 again), `bulkhead --resume ID` opens one"
    )


def tools_run_in(session_id: str, session_folder: str, workspace: str | os.PathLike[str]) -> str:
    """What a resume from another folder says: where the session was, and where its tools run now."""
    here = shown_folder(folder_key(workspace))
    was = shown_folder(session_folder)
    return (
        f"session {session_id} was started in {was}; its tools now run in {here}, and it belongs to this folder "
        f"(`bulkhead -c` here continues it). To work in {was} instead: "
        f"`cd {session_folder} && bulkhead --resume {session_id}`"
    )
