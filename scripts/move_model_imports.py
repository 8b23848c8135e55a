"""Move the shared data model into `app/model/` and rewrite every import of it (issue 20 item 4). Re-runnable.

`messages`, `events`, `costs`, `archive` and `textcut` used to live in `app/engine/`; providers, store and tools
imported them from there while the engine imported those packages, which made cycles. They now live in
`app/model/`, which imports nothing of the app. There are no re-export shims: every import names the new path.

    python3 scripts/move_model_imports.py          # git mv what is still in app/engine/, rewrite imports
    python3 scripts/move_model_imports.py --check  # list files that still use an old path; exit 1 if any

Rewrites `app.engine.NAME` (imports, `mock.patch` targets, strings), `from app.engine import NAME` and the path
`app/engine/NAME.py` in .py, .md, .toml and .tcss files under app/, tests/, bench/, scripts/ and the README.
Then sorts the imports of the files it rewrote (`ruff check --select I --fix`), since `app.model` sorts after
`app.engine`. Running it again changes nothing.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MOVED = ("messages", "events", "costs", "archive", "textcut")
FOLDERS = ("app", "tests", "bench", "scripts")
TOP_FILES = ("README.md", "config.example.toml", "pyproject.toml")
SUFFIXES = {".py", ".md", ".toml", ".tcss"}
NAMES = "|".join(MOVED)
DOTTED = re.compile(rf"\bapp\.engine\.({NAMES})\b")
FROM_PACKAGE = re.compile(rf"\bfrom app\.engine import ({NAMES})\b(?!\s*,)")
PATH = re.compile(rf"\bapp/engine/({NAMES})\.py\b")
SELF = Path(__file__).resolve()


def rewrite(text: str) -> str:
    text = DOTTED.sub(r"app.model.\1", text)
    text = FROM_PACKAGE.sub(r"from app.model import \1", text)
    return PATH.sub(r"app/model/\1.py", text)


def files() -> list[Path]:
    found = [ROOT / name for name in TOP_FILES if (ROOT / name).is_file()]
    for folder in FOLDERS:
        found += [p for p in sorted((ROOT / folder).rglob("*")) if p.suffix in SUFFIXES and p.is_file()]
    return [p for p in found if p.resolve() != SELF and "__pycache__" not in p.parts]


def move_modules() -> list[str]:
    model = ROOT / "app" / "model"
    model.mkdir(exist_ok=True)
    init = model / "__init__.py"
    if not init.exists():
        init.write_text(
            '"""The shared data model: messages, events, costs, archive entries. Imports nothing of the app."""\n',
            encoding="utf-8",
        )
        subprocess.run(["git", "add", str(init)], cwd=ROOT, check=False)
    moved = []
    for name in MOVED:
        old, new = ROOT / "app" / "engine" / f"{name}.py", model / f"{name}.py"
        if old.exists() and not new.exists():
            subprocess.run(["git", "mv", str(old), str(new)], cwd=ROOT, check=True)
            moved.append(name)
    return moved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only list files that still use an old path")
    args = parser.parse_args(argv)
    stale = []
    for path in files():
        text = path.read_text(encoding="utf-8")
        new = rewrite(text)
        if new != text:
            stale.append(path.relative_to(ROOT))
            if not args.check:
                path.write_text(new, encoding="utf-8")
    if args.check:
        for path in stale:
            print(path)
        return 1 if stale else 0
    moved = move_modules()
    python_files = [str(ROOT / p) for p in stale if p.suffix == ".py"]
    if python_files:
        sort = subprocess.run(
            [sys.executable, "-m", "ruff", "check", "--select", "I", "--fix", "--quiet", *python_files],
            cwd=ROOT,
            check=False,
        )
        if sort.returncode != 0:
            print(
                "ruff could not sort every import block; run `ruff check --select I --fix` on the files above"
            )
    print(f"moved {', '.join(moved) or 'nothing (already in app/model/)'}; rewrote {len(stale)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
