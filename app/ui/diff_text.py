"""A unified diff as Rich text: removed lines, added lines and hunk headers each in their own style.

    diff_text("@@ -1 +1 @@\n-old\n+new", {"added": Style(color="green"), "removed": ..., "hunk": ...})

The styles come from the widget's component classes (theme variables in `styles/app.tcss`), so the colours
follow the theme. The text is shown as it is (it is made safe by the caller: `app.textsafe.display`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text


def line_kind(line: str) -> str:
    """ "added", "removed", "hunk" or "" (context, and the file names of a diff's header)."""
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+") and not line.startswith("+++"):
        return "added"
    if line.startswith("-") and not line.startswith("---"):
        return "removed"
    return ""


def diff_text(diff: str, styles: Mapping[str, Any]) -> Text:
    text = Text()
    for index, line in enumerate(diff.split("\n")):
        if index:
            text.append("\n")
        kind = line_kind(line)
        text.append(line, style=styles.get(kind) or "" if kind else "")
    return text
