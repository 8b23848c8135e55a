"""Help that teaches: every sub-command says what it does and shows examples, every flag has a help text
(with its default when it has one), the top-level help says that no command starts the TUI, and ports
are validated."""

from __future__ import annotations

import argparse

import pytest

from app.cli import build_parser, main

TOP_COMMANDS = ("lab", "probe", "classify", "sessions", "archive", "config", "auth")


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    found = {}
    for action in parser._actions:  # argparse has no public walk of its tree
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


def all_parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    top = build_parser()
    out = [("bulkhead", top)]
    for name, parser in subparsers(top).items():
        out.append((name, parser))
        out.extend((f"{name} {child}", sub) for child, sub in subparsers(parser).items())
    return out


def help_of(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--help"])
    assert exit_.value.code == 0
    return capsys.readouterr().out


def test_top_level_help_says_no_command_starts_the_tui(capsys):
    text = " ".join(help_of(capsys).split())
    assert "With no COMMAND, bulkhead starts the full-screen chat (the TUI)" in text
    assert "examples:" in text and "bulkhead -p" in text


@pytest.mark.parametrize("command", TOP_COMMANDS)
def test_each_command_has_a_description_and_examples(capsys, command):
    text = help_of(capsys, command)
    description = text.split("\n\n")[1]
    assert len(description.split()) >= 15, description  # a paragraph, not a label
    examples = text.split("examples:\n", 1)[1].splitlines()
    assert (
        len(
            [
                line
                for line in examples
                if line.strip().startswith(("bulkhead", "pass", "git")) or "| bulkhead" in line
            ]
        )
        >= 2
    )


@pytest.mark.parametrize(("name", "parser"), all_parsers(), ids=[name for name, _ in all_parsers()])
def test_every_flag_has_help_and_its_default(name, parser):
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        assert action.help, f"{name}: {action.option_strings or action.dest} has no help"
        shown = parser._get_formatter()._expand_help(action) if action.help else ""
        if action.option_strings and action.default not in (None, False, "", [], argparse.SUPPRESS):
            assert "(default" in shown, f"{name}: {action.option_strings} does not say its default"


def test_probe_flags_name_their_defaults(capsys):
    text = " ".join(help_of(capsys, "probe").split())
    assert "--min SIZE smallest body to try (should pass) (default: 1KB)" in text
    assert "--max SIZE largest body to try (default: 32MB)" in text
    assert "(default: 1KB)" in text.split("--precision SIZE", 2)[2]


def test_the_batch_format_is_documented(capsys):
    text = " ".join(help_of(capsys, "classify").split())
    for field in (
        "id",
        "status (int)",
        "message (str)",
        "body (str)",
        "headers (object of name: value)",
        "request_bytes (int)",
        "{id, kind, payload_related, recoverable, reason, evidence}",
    ):
        assert field in text, field


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("99999", "99999 is not a port: use 1–65535"),
        ("-1", "-1 is not a port"),
        ("http", "'http' is not a port"),
    ],
)
def test_lab_port_is_validated(capsys, value, message):
    with pytest.raises(SystemExit) as exit_:
        main(["lab", "--port", value])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "OverflowError" not in err and "Traceback" not in err
