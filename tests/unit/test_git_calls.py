"""Every git call in bulkhead goes through `app.tools.gitsafe.run_git` (issue 37, item 6).

A repository's config names programs git runs by itself (`core.fsmonitor` on every index read,
hooks, pagers, diff drivers). `run_git` switches them off; a raw `subprocess.run(["git", …])`
anywhere else would run them. This test reads the source of `app/` and fails on any call that
starts a process with git outside `app/tools/gitsafe.py`.
"""

from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app"
STARTERS = {
    "run",
    "Popen",
    "check_output",
    "check_call",
    "call",
    "create_subprocess_exec",
    "create_subprocess_shell",
}
SAFE = APP / "tools" / "gitsafe.py"


def _is_git_word(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        first = node.value.strip().split(" ", 1)[0]
        return first == "git" or first.endswith("/git")
    return False


def raw_git_calls(source: str, filename: str) -> list[str]:
    """`file:line` of each process started with git in `source`: a `which("git")` or a "git" word as the
    program, in a call to a subprocess/asyncio starter."""
    tree = ast.parse(source, filename)
    found = []
    git_names: set[str] = set()

    def tainted(node: ast.AST) -> bool:
        """Does this expression name git as the program: "git …", `which("git")`, a name bound to one, a
        list starting with one, `[git] + args`, `git_command(git, …)`?"""
        if _is_git_word(node):
            return True
        if isinstance(node, ast.Name):
            return node.id in git_names
        if isinstance(node, ast.List | ast.Tuple):
            return bool(node.elts) and tainted(node.elts[0])
        if isinstance(node, ast.Starred):
            return tainted(node.value)
        if isinstance(node, ast.BinOp):
            return tainted(node.left)
        if isinstance(node, ast.Call):
            return any(tainted(arg) for arg in node.args)
        return False

    assignments = [
        n for n in ast.walk(tree) if isinstance(n, ast.Assign | ast.AnnAssign) and n.value is not None
    ]
    changed = True
    while (
        changed
    ):  # names bound to shutil.which("git"), and to anything built from them (`command = [git, …]`)
        changed = False
        for node in assignments:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {t.id for t in targets if isinstance(t, ast.Name)} - git_names
            if names and node.value is not None and tainted(node.value):
                git_names |= names
                changed = True
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name not in STARTERS or not node.args:
            continue
        if tainted(node.args[0]):
            found.append(f"{filename}:{node.lineno}")
    return found


def test_no_module_starts_git_but_the_safe_runner() -> None:
    offenders = []
    for path in sorted(APP.rglob("*.py")):
        if path == SAFE:
            continue
        offenders += raw_git_calls(path.read_text(encoding="utf-8"), str(path.relative_to(APP.parent)))
    assert offenders == [], f"git started outside app/tools/gitsafe.py (use run_git): {offenders}"


def test_the_scan_finds_a_raw_call() -> None:
    raw = 'import shutil, subprocess\ngit = shutil.which("git")\nsubprocess.run([git, "ls-files"])\n'
    assert raw_git_calls(raw, "x.py") == ["x.py:3"]
    assert raw_git_calls('import subprocess\nsubprocess.run(["git", "status"])\n', "y.py") == ["y.py:2"]
    assert raw_git_calls('import subprocess\nsubprocess.run(["ls", "git"])\n', "z.py") == []
