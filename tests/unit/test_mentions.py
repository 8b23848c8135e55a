"""`@path` mentions: which words attach what, and the prompt's path completion."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.engine.mentions import Mention, complete_mention, find_mentions, mention_at_end


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    tmp_path = tmp_path / "ws"  # apart from the test's config.toml
    tmp_path.mkdir()
    (tmp_path / "README.md").write_text("# hi\n")
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "engine.py").write_text("x = 1\n")
    (tmp_path / "app" / "events.py").write_text("y = 2\n")
    (tmp_path / "app" / ".secret").write_text("z\n")
    (tmp_path / "my file.txt").write_text("spaces\n")
    return tmp_path


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("look at @README.md", [Mention("README.md", False)]),
        ("see @README.md.", [Mention("README.md", False)]),  # sentence punctuation is not the path
        ("(@app/engine.py, @app/)", [Mention("app/engine.py", False), Mention("app/", True)]),
        ("@README.md and @./README.md again", [Mention("README.md", False)]),  # one file, attached once
        ("mail bob@example.com, use @property, @recall <<ccr:0123456789abcdef>>", []),
        ("@nowhere.py", []),
        ("`@README.md`", []),  # quoted: not a mention
    ],
)
def test_find_mentions(ws: Path, prompt: str, expected: list[Mention]) -> None:
    assert find_mentions(prompt, ws, limit=10) == (expected, 0)


def test_absolute_and_home_paths(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(ws))
    found, _ = find_mentions(f"@{ws / 'app' / 'events.py'} @~/README.md", ws / "app", limit=10)
    assert found == [Mention(str(ws / "app" / "events.py"), False), Mention("~/README.md", False)]


def test_the_limit_counts_what_is_left_out(ws: Path) -> None:
    assert find_mentions("@README.md @app/engine.py @app/events.py", ws, limit=1) == (
        [Mention("README.md", False)],
        2,
    )


def test_completion_goes_one_segment_at_a_time(ws: Path) -> None:
    assert complete_mention("@", ws) == [
        ("@README.md", "file"),
        ("@app/", "folder"),
        ("@my file.txt", "file"),
    ]
    assert complete_mention("@ap", ws) == [("@app/", "folder")]
    assert complete_mention("@app/e", ws) == [("@app/engine.py", "file"), ("@app/events.py", "file")]
    assert complete_mention("@app/.", ws) == [("@app/.secret", "file")]  # hidden only when asked for
    assert complete_mention("@nope/x", ws) == [] and complete_mention("README", ws) == []


def test_completion_of_absolute_paths(ws: Path) -> None:
    assert complete_mention(f"@{ws}/app/ev", ws) == [(f"@{ws}/app/events.py", "file")]


@pytest.mark.parametrize(
    ("before", "word"),
    [
        ("explain @app/en", "@app/en"),
        ("@", "@"),
        ("(see @READ", "@READ"),
        ("mail bob@exa", ""),
        ("done @app ", ""),
        ("", ""),
    ],
)
def test_the_mention_being_typed(before: str, word: str) -> None:
    assert mention_at_end(before) == word
