"""Custom slash commands from Markdown files, as in Claude Code."""

from __future__ import annotations

from pathlib import Path

from app.engine.custom_commands import discover


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_folders_names_front_matter_and_precedence(tmp_path: Path) -> None:
    ws, config = tmp_path / "ws", tmp_path / "config"
    write(ws / ".bulkhead" / "commands" / "review.md", "Review this project's change.")
    write(ws / ".claude" / "commands" / "review.md", "Claude's review (shadowed).")
    write(
        ws / ".claude" / "commands" / "frontend" / "component.md",
        "---\ndescription: Make a React component\nargument-hint: NAME [props]\n---\nCreate $1 with $2.\n",
    )
    write(config / "commands" / "standup.md", "# Standup\nSummarise yesterday.")
    write(config / "commands" / "compact.md", "a built-in name")
    write(ws / ".claude" / "commands" / "bad name!.md", "x")

    commands, problems = discover(ws, global_dir=config, reserved=["/compact", "/help"])

    assert [(c.name, c.source) for c in commands] == [
        ("frontend:component", ".claude/commands"),
        ("review", ".bulkhead/commands"),
        ("standup", "global"),
    ]
    component = commands[0]
    assert component.description == "Make a React component" and component.argument_hint == "NAME [props]"
    assert commands[2].description == "Standup"  # else the first line
    assert any("/compact is a built-in command" in p for p in problems)
    assert any("bad name!" in p for p in problems)


def test_arguments_are_substituted_or_appended(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write(ws / ".claude" / "commands" / "fix.md", "Fix issue #$ARGUMENTS following our style.")
    write(ws / ".claude" / "commands" / "pair.md", "Compare $1 against $2.")
    write(ws / ".claude" / "commands" / "plain.md", "Explain the build.")
    commands = {c.name: c for c in discover(ws, global_dir=tmp_path / "none")[0]}

    assert commands["fix"].expand("123") == "Fix issue #123 following our style."
    assert commands["pair"].expand('"old api" new') == "Compare old api against new."
    assert commands["pair"].expand("one") == "Compare one against ."
    assert commands["plain"].expand("") == "Explain the build."
    assert commands["plain"].expand("for windows") == "Explain the build.\n\nARGUMENTS: for windows"
