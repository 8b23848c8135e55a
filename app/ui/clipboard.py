"""Copy that works over SSH and tmux: OSC 52 to the terminal, plus the system clipboard when one is here.

OSC 52 cannot be confirmed (the terminal never answers), so the toast says it was *sent*; a
system tool (`wl-copy`, `xclip`, `xsel`, `pbcopy`) is confirmed by its exit code. The toast
names what worked, and says so plainly when only the unconfirmable path was available.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

SYSTEM_TOOLS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("wl-copy", ()),  # Wayland
    ("xclip", ("-selection", "clipboard")),
    ("xsel", ("--clipboard", "--input")),
    ("pbcopy", ()),  # macOS
)
TOOL_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class CopyResult:
    osc52: bool  # the escape sequence was written to the terminal
    system_tool: str | None  # the clipboard tool that accepted the text
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.osc52 or self.system_tool is not None

    def describe(self, what: str) -> str:
        """The honest one-liner for the toast."""
        if self.system_tool and self.osc52:
            return f"Copied {what} to the system clipboard ({self.system_tool}) and sent it to the terminal (OSC 52)."
        if self.system_tool:
            return f"Copied {what} to the system clipboard ({self.system_tool})."
        if self.osc52:
            return (
                f"Sent {what} to the terminal's clipboard (OSC 52); no system clipboard tool was found, so "
                "this works only if your terminal (and tmux: set-clipboard on) allows OSC 52."
            )
        return f"Could not copy {what}: {self.error or 'no terminal and no clipboard tool'}."


def _display_available(tool: str) -> bool:
    if tool == "wl-copy":
        return bool(os.environ.get("WAYLAND_DISPLAY"))
    if tool in ("xclip", "xsel"):
        return bool(os.environ.get("DISPLAY"))
    return True


def system_copy(text: str, *, which: Callable[[str], str | None] = shutil.which) -> tuple[str | None, str]:
    """Put `text` on the system clipboard with the first tool that works: (tool name or None, error)."""
    error = ""
    for name, args in SYSTEM_TOOLS:
        path = which(name)
        if not path or not _display_available(name):
            continue
        try:
            completed = subprocess.run(
                [path, *args],
                input=text.encode("utf-8"),
                timeout=TOOL_TIMEOUT_S,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            error = f"{name}: {exc}"
            continue
        if completed.returncode == 0:
            return name, ""
        error = (
            f"{name} exited {completed.returncode}: {completed.stderr.decode(errors='replace').strip()[:120]}"
        )
    return None, error


def copy_text(app, text: str, *, which: Callable[[str], str | None] = shutil.which) -> CopyResult:
    """OSC 52 through the app's driver, then the system clipboard. Never raises."""
    osc52 = False
    error = ""
    try:
        app.copy_to_clipboard(text)
        osc52 = getattr(app, "_driver", None) is not None and not getattr(app, "is_headless", False)
    except Exception as exc:  # a clipboard failure is a toast, not a crash
        error = str(exc)
    tool, tool_error = system_copy(text, which=which)
    return CopyResult(osc52=osc52, system_tool=tool, error=tool_error or error)
