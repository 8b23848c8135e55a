"""The layers of DESIGN.md §15 hold: `lint-imports` checks the contracts in pyproject.toml.

model < store, tools, providers < engine < commands, ui; the core never imports textual; recovery and the compactor
reach the engine only through `app.engine.host`. The same command runs in .ci/run and in pre-commit.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("importlinter") is None,
    reason="import-linter is not installed (pip install '.[test]')",
)


def _lint_imports() -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    code = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    return subprocess.run(
        [sys.executable, "-c", code, "--no-cache"],
        cwd=REPOSITORY,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_every_import_contract_is_kept():
    result = _lint_imports()

    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout


def test_the_tool_registry_declares_the_tools_in_the_order_requests_always_had():
    from app.tools.registry import EDIT_TOOLS, READ_TOOLS, TOOL_SPECS, TOOLS

    assert [spec.name for spec in TOOL_SPECS] == [
        "read_file",
        "list_dir",
        "glob",
        "grep",
        "web_fetch",
        "shell",
        "write_file",
        "edit_file",
        "recall",
    ]
    assert READ_TOOLS == {"read_file", "list_dir", "glob", "grep", "recall"}
    assert EDIT_TOOLS == {"write_file", "edit_file"}
    assert all(
        info.handler.__module__ == f"app.tools.{module}"
        for info, module in zip(
            TOOLS.values(),
            ["files", "files", "files", "search", "web_fetch", "shell", "files", "files", "recall"],
            strict=True,
        )
    )


def test_the_front_door_contract_forbids_every_engine_module_but_the_api():
    """A new module of app.engine is forbidden to the front ends as soon as it exists: the contract's list is
    the engine's modules, every one but `app.engine.api`."""
    import tomllib

    contracts = tomllib.loads((REPOSITORY / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"
    ]
    front_door = next(c for c in contracts if c.get("source_modules") == ["app.ui", "app.commands"])
    engine = REPOSITORY / "app" / "engine"
    modules = {
        f"app.engine.{path.stem}"
        for path in engine.iterdir()
        if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").exists()
    }
    assert set(front_door["forbidden_modules"]) == modules - {"app.engine.api"}
