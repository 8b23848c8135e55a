"""The workspace's `.bulkhead/settings.toml`: where "always for this project" approvals are kept.

bulkhead never rewrites a file you edit: adding a rule inserts one string into `[permissions]
allow` and leaves every other byte as it was. The result is parsed before it is written; if the
insertion would change anything else, nothing is written and the error says what to add by hand.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import tomllib
from pathlib import Path

_TEMPLATE = """\
# bulkhead's settings for this project. Rules use Claude Code's syntax: allow / ask / deny lists of
# Tool or Tool(specifier), e.g. "Bash(npm test:*)", "Read(./src/**)", "Edit(./docs/**)".
# "Always for this project" in an approval adds to `allow`; edit this file freely.

[permissions]
allow = []
ask = []
deny = []
"""


def add_allow_rule(path: Path, rule: str) -> None:
    """Add `rule` to `[permissions] allow` of `path`, changing nothing else in the file.

    The new text is checked by parsing it: if the insertion would change anything but that list,
    nothing is written and an OSError says what to add by hand."""
    text = path.read_text(encoding="utf-8") if path.exists() else _TEMPLATE
    try:
        before = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise OSError(
            f"{path} is not valid TOML ({exc}); fix it, then add {rule} to [permissions] allow"
        ) from None
    allow = list((before.get("permissions") or {}).get("allow") or [])
    if rule in allow:
        return
    literal = json.dumps(rule, ensure_ascii=False)  # a JSON string is a TOML basic string
    header = re.search(r"^\s*\[\s*permissions\s*\]\s*(#.*)?$", text, re.M)
    if header is None:
        updated = (
            text.rstrip("\n") + ("\n\n" if text.strip() else "") + f"[permissions]\nallow = [{literal}]\n"
        )
    else:
        following = re.search(r"^[ \t]*\[", text[header.end() :], re.M)
        end = header.end() + (following.start() if following else len(text) - header.end())
        section = text[header.end() : end]
        key = re.search(r"^[ \t]*allow[ \t]*=[ \t]*\[", section, re.M)
        if key is None:
            section = f"\nallow = [{literal}]" + section
        else:
            rest = section[key.end() :]
            separator = "" if rest.lstrip().startswith("]") else ("," if rest[:1] in "\r\n" else ", ")
            section = section[: key.end()] + literal + separator + rest
        updated = text[: header.end()] + section + text[end:]
    after = tomllib.loads(updated)
    expected = dict(before)
    expected["permissions"] = {**(before.get("permissions") or {}), "allow": [rule, *allow]}
    if after != expected:
        raise OSError(
            f"could not add {rule} to {path} without changing the rest of it; add it to "
            f"[permissions] allow yourself"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".settings-", suffix=".toml", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(updated)
        with contextlib.suppress(OSError):
            os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
