"""The engine's notices are facts worded in one place (app.engine.notice_words through describe).

Every fact kind has words, a stable unique `kind`, a code, and JSON-able facts; no engine part writes a
notice's sentence itself (an AST walk of app/engine finds every `Notice(…)` call)."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import json
import pkgutil
from pathlib import Path

import pytest

import app.model.notice_facts as facts_package
from app.engine.describe import describe
from app.engine.notice_words import notice
from app.model.events import Notice
from app.model.notice_facts import NoticeFact
from app.model.notice_facts.history import RewoundToPrompt

ENGINE = Path(__file__).resolve().parents[2] / "app" / "engine"

# Where a Notice may still be built from text: the wording itself, and the modules not yet converted
# (each an entry to empty, not to grow).
NOTICE_BUILDERS = {
    "notice_words/__init__.py",
}

SAMPLE = {
    "int": 3,
    "float": 1.5,
    "str": "x",
    "bool": True,
    "tuple[str, ...]": ("a", "b"),
    "tuple[int, ...]": (1, 2),
    "int | None": 2,
    "str | None": "y",
    "float | None": 2.5,
}


def all_facts() -> list[type[NoticeFact]]:
    for module in pkgutil.iter_modules(facts_package.__path__):
        importlib.import_module(f"{facts_package.__name__}.{module.name}")
    found: list[type[NoticeFact]] = []
    todo = list(NoticeFact.__subclasses__())
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return sorted(found, key=lambda c: c.kind)


def sample(cls: type[NoticeFact]) -> NoticeFact:
    values = {}
    for field in dataclasses.fields(cls):
        assert field.type in SAMPLE, f"{cls.__name__}.{field.name}: {field.type} is not a plain value"
        values[field.name] = SAMPLE[str(field.type)]
    return cls(**values)


FACTS = all_facts()


def test_the_facts_are_found():
    assert len(FACTS) >= 8  # the walk itself works (history's alone are 8)


@pytest.mark.parametrize("cls", FACTS, ids=lambda c: c.kind)
def test_every_fact_has_words_a_kind_and_a_code(cls):
    fact = sample(cls)
    line = describe(fact)
    assert line is not None, f"{cls.__name__} has no words in app.engine.notice_words"
    assert line.text.strip() and line.level in ("info", "warn", "error")
    assert cls.kind != "notice" and cls.code, f"{cls.__name__} names no kind or code"
    made = notice(fact)
    assert isinstance(made, Notice) and made.fact == fact and made.text == line.text
    assert made.code == (line.code or cls.code)
    data = json.loads(json.dumps(made.to_json()))
    assert data["type"] == "notice" and data["fact"]["kind"] == cls.kind


def test_kinds_are_unique():
    kinds = [cls.kind for cls in FACTS]
    assert len(kinds) == len(set(kinds)), sorted(k for k in kinds if kinds.count(k) > 1)


def test_a_notice_without_a_fact_prints_as_before():
    assert Notice("plain", level="warn", code="x").to_json() == {
        "text": "plain",
        "level": "warn",
        "code": "x",
        "type": "notice",
    }


def test_the_words_of_a_fact_follow_its_facts():
    asked = notice(RewoundToPrompt(turn=4, messages=9, files_asked=True, files_restored=""))
    restored = notice(RewoundToPrompt(turn=4, messages=9, files_asked=True, files_restored="a.py restored"))
    left = notice(RewoundToPrompt(turn=4, messages=9, files_asked=False, files_restored=""))
    assert asked.text.endswith("; no file had changed since")
    assert restored.text.endswith("; files: a.py restored")
    assert left.text.endswith("; files left as they are")
    assert "turn 4 (9 messages in view" in asked.text


def test_a_fact_without_words_is_refused():
    @dataclasses.dataclass(frozen=True)
    class Unworded(NoticeFact):
        kind = "unworded_for_test"
        code = "test"

    with pytest.raises(TypeError, match="no words for the notice fact Unworded"):
        notice(Unworded())


def notice_calls(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Name) and node.func.id == "Notice")
            or (isinstance(node.func, ast.Attribute) and node.func.attr == "Notice")
        )
    ]


def test_no_engine_part_writes_a_notice_sentence_itself():
    builders = {}
    for path in sorted(ENGINE.rglob("*.py")):
        relative = path.relative_to(ENGINE).as_posix()
        if relative.startswith("api/"):
            continue
        if lines := notice_calls(path):
            builders[relative] = lines
    unexpected = {k: v for k, v in builders.items() if k not in NOTICE_BUILDERS}
    assert not unexpected, (
        "these engine modules build Notice(...) from text: say it as a fact (app.model.notice_facts) and "
        f"word it in app.engine.notice_words — {unexpected}"
    )
    stale = NOTICE_BUILDERS - set(builders)
    assert not stale, f"NOTICE_BUILDERS lists modules that no longer build notices: {stale}"
