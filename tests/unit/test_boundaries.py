"""The core never imports the UI: app/engine, app/providers, app/tools, app/lab and app/mcp import no `textual`."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "app"
CORE = ("engine", "providers", "tools", "lab", "mcp")
FORBIDDEN = ("textual",)


def imported_modules(path: Path, root: Path = APP.parent) -> list[tuple[int, str]]:
    """Every module an `import` or `from … import` names, with absolute names for relative imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = ".".join(path.relative_to(root).with_suffix("").parts[:-1])
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            found.append((node.lineno, str(node.args[0].value)))
    return found


def core_files() -> list[Path]:
    return sorted(p for part in CORE for p in (APP / part).rglob("*.py"))


def is_forbidden(module: str) -> bool:
    return any(module == name or module.startswith(name + ".") for name in FORBIDDEN) or module.startswith(
        "app.ui"
    )


def test_core_packages_exist():
    for part in CORE:
        assert (APP / part / "__init__.py").exists(), part
    assert len(core_files()) >= len(CORE)


@pytest.mark.parametrize("path", core_files(), ids=lambda p: str(p.relative_to(APP)))
def test_core_module_imports_no_ui(path):
    bad = [
        f"{path.relative_to(APP.parent)}:{line}: imports {module}"
        for line, module in imported_modules(path)
        if is_forbidden(module)
    ]
    assert bad == []


def test_the_checker_sees_every_import_form(tmp_path):
    source = (
        "import textual\nfrom textual.app import App\nimport os, textual.widgets as w\n"
        "def f():\n    from textual import on\n    import importlib\n    importlib.import_module('textual')\n"
        "from ..ui import widgets\nimport textualize_not_textual\n"
    )
    path = tmp_path / "app" / "engine" / "x.py"
    path.parent.mkdir(parents=True)
    path.write_text(source, encoding="utf-8")
    found = imported_modules(path, root=tmp_path)
    modules = [m for _, m in found if is_forbidden(m)]
    assert "textual" in modules and "textual.app" in modules and "textual.widgets" in modules
    assert "app.ui" in modules and sum(1 for _, m in found if m == "textual") == 3
    assert "textualize_not_textual" not in modules


def test_importing_the_core_loads_no_textual():
    code = (
        "import json, sys\n"
        "import app.engine.session, app.store, app.config, app.state, app.secrets, app.export\n"
        "import app.model.events, app.model.messages, app.providers.base\n"
        "import app.mcp.manager, app.mcp.toolset, app.mcp.deferral, app.mcp.context_engine\n"
        "print(json.dumps(sorted(m for m in sys.modules if m == 'textual' or m.startswith(('textual.', 'app.ui')))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=APP.parent
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


def test_cli_help_loads_no_textual():
    code = (
        "import sys, contextlib, io\nfrom app.cli import build_parser\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n        build_parser().parse_args(['--help'])\n    except SystemExit:\n        pass\n"
        "print('textual' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=APP.parent
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_opening_an_engine_without_mcp_servers_imports_neither_the_sdk_nor_the_manager(tmp_path):
    """No MCP configured: the SDK (~0.6 s) and the manager stay out of the startup path."""
    code = (
        "import json, sys, os\n"
        "from app.config import Settings\n"
        "from app.engine.bootstrap import open_engine\n"
        "engine, _choice, _resumed = open_engine(Settings(), workspace=os.getcwd())\n"
        "print(json.dumps(sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'app.mcp.manager',\n"
        "                                                                                 'app.mcp.connection')))))\n"
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "BULKHEAD_HOME": str(tmp_path / "home"),
        "PYTHONPATH": str(APP.parent),
        "BULKHEAD_CONFIG": str(tmp_path / "none.toml"),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
    }
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


def test_importing_the_mcp_package_does_not_import_the_sdk():
    code = (
        "import json, sys\nimport app.mcp.manager, app.mcp.toolset, app.mcp.report, app.mcp.context_engine\n"
        "print(json.dumps(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.'))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=APP.parent
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []
