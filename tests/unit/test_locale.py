"""Terminals that are not UTF-8: output degrades to ASCII stand-ins, never loses a chunk, never crashes
— the one-shot answer, the sub-commands and the TUI (which must not draw `\\u256d`). Each case runs the
real entry point in a subprocess with PYTHONIOENCODING unset."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.console import fallback, prepare_streams

ROOT = Path(__file__).resolve().parents[2]


def _has_locale(name: str) -> bool:
    try:
        listed = subprocess.run(["locale", "-a"], capture_output=True, text=True, timeout=10).stdout.lower()
    except (OSError, subprocess.SubprocessError):
        return False
    return name.lower().replace("-", "") in listed.replace("-", "")


# Two terminals that are not UTF-8: plain ASCII (the C locale, with Python's switch to UTF-8 turned off
# as on systems that do not coerce it), and Latin-1 (needs the en_US.ISO-8859-1 locale: `.ci/run` makes it).
LOCALES = [
    pytest.param(
        {"LC_ALL": "C", "LANG": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}, "ascii", id="C"
    ),
    pytest.param(
        {"LANG": "en_US.ISO-8859-1"},
        "latin-1",
        id="ISO-8859-1",
        marks=pytest.mark.skipif(
            not _has_locale("en_US.iso88591"),
            reason="the en_US.ISO-8859-1 locale is not installed "
            "(localedef -i en_US -f ISO-8859-1 en_US.ISO-8859-1)",
        ),
    ),
]


def _env(tmp_path: Path, locale_env: dict[str, str]) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not (
            k.startswith(("LC_", "BULKHEAD_")) or k in ("LANG", "LANGUAGE", "PYTHONIOENCODING", "PYTHONUTF8")
        )
        and not k.endswith("_API_KEY")
    }
    config = tmp_path / "config.toml"
    config.touch()
    env.update(
        BULKHEAD_HOME=str(tmp_path / "home"), BULKHEAD_CONFIG=str(config), PYTHONPATH=str(ROOT), **locale_env
    )
    return env


def _run(tmp_path: Path, locale_env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        env=_env(tmp_path, locale_env),
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(("locale_env", "encoding"), LOCALES)
def test_one_shot_keeps_every_chunk_of_the_answer(tmp_path, locale_env, encoding):
    exact = _run(tmp_path, locale_env, "-p", "hello", "--json")
    assert exact.returncode == 0, exact.stderr
    answer = json.loads(exact.stdout.decode("ascii").splitlines()[-1])["text"]  # \uXXXX escapes: lossless
    assert "≈" in answer and "·" in answer  # the lab's answer has what such a terminal lacks
    shown = _run(tmp_path, locale_env, "-p", "hello")
    assert shown.returncode == 0 and b"Traceback" not in shown.stderr
    expected = "".join(c if c.encode(encoding, "ignore") else fallback(c) for c in answer)
    assert shown.stdout.decode(encoding).rstrip("\n") == expected  # every chunk, degraded not dropped
    assert "(~1," in expected and expected.endswith("understands.)")


@pytest.mark.parametrize(("locale_env", "encoding"), LOCALES)
@pytest.mark.parametrize(
    "command",
    [
        ["--help"],
        ["config", "show"],
        ["config", "check"],
        ["sessions", "list"],
        ["archive", "list"],
        ["lab", "--help"],
        ["classify", "--status", "413"],
    ],
)
def test_sub_commands_do_not_crash(tmp_path, locale_env, encoding, command):
    done = _run(tmp_path, locale_env, *command)
    assert done.returncode == 0, done.stderr.decode(encoding, "replace")
    assert b"UnicodeEncodeError" not in done.stderr and b"Traceback" not in done.stderr
    assert done.stdout.decode(encoding)  # readable in the terminal's own encoding


def test_fallbacks_keep_the_width_on_screen():
    from rich.cells import cell_len

    for character in "╭─╮│╰╯━┃▏▌█▅—“”’…≈✓✖⚠ℹ●→↓⏎é你":
        assert cell_len(fallback(character)) == max(1, cell_len(character)), character
        assert fallback(character).isascii()
    assert fallback("╭") == "+" and fallback("─") == "-" and fallback("│") == "|" and fallback("≈") == "~"


def test_prepare_streams_leaves_a_utf8_stream_alone(capsys):
    prepare_streams()
    print("≈ “kept”")
    assert capsys.readouterr().out == "≈ “kept”\n"


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
@pytest.mark.parametrize(("locale_env", "encoding"), LOCALES)
def test_the_tui_draws_ascii_boxes_not_escapes(tmp_path, locale_env, encoding):
    import pty  # noqa: F401 - only where pseudo-terminals exist

    primary, secondary = os.openpty()
    env = _env(tmp_path, locale_env)
    env.update(TERM="xterm-256color", COLUMNS="120", LINES="30")
    process = subprocess.Popen(
        [sys.executable, "-m", "app"],
        env=env,
        cwd=tmp_path,
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        start_new_session=True,
    )
    os.close(secondary)
    output = b""
    try:
        deadline = time.monotonic() + 60
        while b"lab model" not in output and time.monotonic() < deadline:
            ready, _, _ = select.select([primary], [], [], 0.5)
            if ready:
                try:
                    output += os.read(primary, 65536)
                except OSError:
                    break
        os.write(primary, b"\x11")  # Ctrl+Q
        # Keep reading, as a terminal does: the app's last frames and the terminal reset are written on the
        # way out, and a pty nobody reads fills up and blocks the writer.
        deadline = time.monotonic() + 30
        while process.poll() is None and time.monotonic() < deadline:
            ready, _, _ = select.select([primary], [], [], 0.2)
            if ready:
                try:
                    output += os.read(primary, 65536)
                except OSError:
                    break
        process.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(primary)
    screen = re.sub(r"\x1b\[[0-9;:?<>=$]*[A-Za-z~]", "", output.decode(encoding, "replace"))  # text only
    assert "lab model" in screen, screen[-2000:]
    assert "\\u256" not in screen and "\\u25" not in screen  # no box drawing drawn as escapes
    assert "+-" in screen  # the corners and edges as ASCII
    assert process.returncode == 0
