"""Issue 43's shape of the engine, kept: no engine module over 500 lines, `Engine` itself under 300 (it
composes parts that see it through app/engine/host.py; new logic goes into a part or a module of its own)."""

from __future__ import annotations

import ast
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[2] / "app" / "engine"
MAX_MODULE_LINES = 500
MAX_ENGINE_CLASS_LINES = 299


def test_no_engine_module_is_over_500_lines():
    long = {
        str(path.relative_to(ENGINE)): lines
        for path in ENGINE.rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}, f"split these along a seam: {long}"


def test_the_engine_class_stays_a_composition():
    tree = ast.parse((ENGINE / "turn.py").read_text(encoding="utf-8"))
    engine = next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Engine")
    assert engine.end_lineno is not None
    assert engine.end_lineno - engine.lineno + 1 <= MAX_ENGINE_CLASS_LINES
