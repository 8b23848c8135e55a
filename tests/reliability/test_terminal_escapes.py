"""Nothing from outside reaches the terminal as it came (issue 14, item 1).

Every text path — a streamed answer, a provider's error body, tool output, a file name, a hook's
stderr, a prompt pasted with escapes in it — is fed the same sample: OSC 52 (writes the
clipboard), OSC 0 (retitles the window), CSI 2J (clears the screen), a C1 CSI and a bidi
override, plus Rich markup (`[@click=app.quit]`). Then the bytes each front end writes are
scanned: `bulkhead -p` stdout and stderr (a real process against the lab, and against a local
server answering 400), `sessions show`, the Markdown export, and the TUI's rendered segments
(every widget on screen, inspector tabs, the sessions screen, a toast). None may hold an ESC, a
C1 control or a bidi override, and the sample must be there — shown as visible escapes. Markup
must be shown, never parsed.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from textual.geometry import Region

from app.config import HookSpec, Route, load_settings
from app.lab.embedded import start_embedded_lab
from app.model.archive import make_entry
from app.ui.app import BulkheadApp
from app.ui.headless import ready, settle, until
from tests.reliability.helpers.terminal import run_bulkhead
from tests.wire.scripted_server import Reply, ScriptedServer

OSC52 = "\x1b]52;c;cHduZWQ=\x07"  # "pwned" on the clipboard
TITLE = "\x1b]0;PWNED\x07"
CLEAR = "\x1b[2J\x1b[H"
C1 = "\x9b31m"
BIDI = "\u202eevil\u202c"
SAMPLE = OSC52 + TITLE + CLEAR + C1 + BIDI
MARKUP = "[b]loud[/b][@click=app.quit]quit[/]"
SHOWN = "\\x1b]52;c;cHduZWQ=\\x07"  # how the sample's start must appear instead
EVIL_NAME = f"name{SAMPLE}.txt"

# What must never be written: C0 but \n and \t, DEL, C1, bidi embeddings, overrides and isolates.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def assert_terminal_safe(data: bytes | str, where: str) -> str:
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    found = UNSAFE.search(text)
    assert found is None, (
        f"{where} holds {found.group()!r} at {found.start()}: "
        f"…{text[max(0, found.start() - 60) : found.start() + 60]!r}…"
    )
    return text


def echo_escaped(text: str) -> str:
    """`text` as the lab's `!echo` takes it: printable ASCII as it is, everything else as \\xHH / \\uHHHH."""
    out = []
    for char in text:
        if char == "\\":
            out.append("\\\\")
        elif " " <= char <= "~":
            out.append(char)
        else:
            out.append(f"\\x{ord(char):02x}" if ord(char) <= 0xFF else f"\\u{ord(char):04x}")
    return "".join(out)


# The pasted first line becomes the session's title; then a streamed answer carrying the sample, a file
# whose content and one whose name carry it, a listing, and a shell call the hook blocks with it.
PROMPT = "\n".join(
    [
        f"pasted {SAMPLE}{MARKUP}",
        f"!echo {echo_escaped(SAMPLE + MARKUP)}",
        "!read evil.txt",
        f"!read {EVIL_NAME}",
        "!ls .",
        "!shell true",
    ]
)
ERROR_BODY = json.dumps(
    {
        "error": {
            "message": f"bad request {SAMPLE}{MARKUP}",
            "type": "invalid_request_error",
            "code": "invalid_value",
        }
    }
)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "evil.txt").write_text(f"{SAMPLE}{MARKUP} in a file\nsecond line\n")
    (folder / EVIL_NAME).write_text("a file with a name\n")
    return folder


@pytest.fixture
def hooks(tmp_path: Path) -> tuple[HookSpec, ...]:
    """A PreToolUse hook that blocks shell with the sample on stderr, a UserPromptSubmit hook that fails with it."""
    folder = tmp_path / "hooks"
    folder.mkdir()
    specs = []
    for name, event, code in (("guard.py", "PreToolUse", 2), ("broken.py", "UserPromptSubmit", 1)):
        path = folder / name
        path.write_text(
            f"#!{sys.executable}\nimport sys\nsys.stdin.read()\n"
            f"sys.stderr.write({SAMPLE + MARKUP!r})\nsys.exit({code})\n"
        )
        path.chmod(0o755)
        specs.append(
            HookSpec(event=event, command=str(path), matcher="shell" if event == "PreToolUse" else "")
        )
    return tuple(specs)


@pytest.fixture
def server():
    scripted = ScriptedServer().start()
    for _ in range(8):
        scripted.push(Reply(400, {"content-type": "application/json"}, ERROR_BODY))
    try:
        yield scripted
    finally:
        scripted.stop()


def config_file(tmp_path: Path, hooks: tuple[HookSpec, ...], server: ScriptedServer | None = None) -> Path:
    lines = []
    if server is not None:
        lines += [
            'default_route = "bad"',
            "[routes.bad]",
            'provider = "openai"',
            'model = "gpt-4o"',
            f'base_url = "{server.url}/v1"',
            "",
        ]
    for spec in hooks:
        lines += [
            f"[[hooks.{spec.event}]]",
            f"matcher = {json.dumps(spec.matcher)}",
            f"command = {json.dumps(spec.command)}",
            "",
        ]
    path = tmp_path / "escapes.toml"
    path.write_text("\n".join(lines))
    return path


# -- bulkhead -p, sessions show, the Markdown export --------------------------------------------------------
def test_oneshot_show_and_export_write_no_escape(tmp_path: Path, workspace: Path, hooks) -> None:
    env = {"BULKHEAD_CONFIG": str(config_file(tmp_path, hooks))}
    run = run_bulkhead(["-p", PROMPT, "--workspace", str(workspace)], env=env)

    out = assert_terminal_safe(run.stdout, "-p stdout")
    err = assert_terminal_safe(run.stderr, "-p stderr")
    assert run.returncode == 1  # the hook blocked the shell call: the turn did not do all it was asked
    assert SHOWN in out  # the streamed answer (!echo) and the file's first line, shown as text
    assert "[@click=app.quit]" in out
    assert f"{SHOWN}" in err  # the hook's stderr, and the blocked call's reason
    assert "\\u001b]52" in err  # the file name, in the tool call's JSON arguments

    json_run = run_bulkhead(["-p", PROMPT, "--workspace", str(workspace), "--json"], env=env)
    assert_terminal_safe(json_run.stdout, "-p --json stdout")
    events = [json.loads(line) for line in json_run.out.splitlines()]
    assert OSC52 in events[-1]["text"]  # JSON escapes, and keeps the exact text for tools
    session_id = events[-1]["session_id"]

    show = run_bulkhead(["sessions", "show", session_id])
    shown = assert_terminal_safe(show.stdout, "sessions show")
    assert show.returncode == 0 and SHOWN in shown and "[@click=app.quit]" in shown

    exported = tmp_path / "export.md"
    export = run_bulkhead(["sessions", "export", session_id, "--format", "md", "-o", str(exported)])
    assert export.returncode == 0, export.err
    text = assert_terminal_safe(exported.read_bytes(), "the Markdown export")
    assert SHOWN in text and f"name{SHOWN}" in text

    as_json = run_bulkhead(["sessions", "export", session_id, "--format", "json"])
    assert_terminal_safe(as_json.stdout, "sessions export --format json")
    assert json.loads(as_json.out)["title"].startswith(
        f"pasted {SAMPLE}"
    )  # JSON escapes; parsed, it is exact


def test_oneshot_error_body_writes_no_escape(tmp_path: Path, workspace: Path, server: ScriptedServer) -> None:
    env = {
        "BULKHEAD_CONFIG": str(config_file(tmp_path, (), server)),
        "OPENAI_API_KEY": "sk-FAKE-test",
        "BULKHEAD_RETRY_MAX_ATTEMPTS": "0",
    }
    run = run_bulkhead(["-p", "hello", "--workspace", str(workspace)], env=env)

    assert run.returncode == 1
    assert_terminal_safe(run.stdout, "-p stdout (error)")
    err = assert_terminal_safe(run.stderr, "-p stderr (error)")
    assert f"bad request {SHOWN}" in err and "[@click=app.quit]" in err


# -- the TUI -----------------------------------------------------------------------------------------------
def rendered_text(app) -> str:
    """What every widget on the screen renders now — its strips' segments, scrolled out of view or not."""
    parts = []
    for widget in app.screen.walk_children(with_self=True):
        if not widget.display or not widget.size.area:
            continue
        for strip in widget.render_lines(Region(0, 0, widget.size.width, widget.size.height)):
            parts.append("".join(text for text, _style, control in strip if not control))
            parts.append("\n")
    return "".join(parts)


async def test_tui_renders_no_escape(
    tmp_path: Path, workspace: Path, hooks, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-FAKE-test")
    with start_embedded_lab() as lab:
        routes = {
            "lab": Route(name="lab", provider="lab", model="lab-1", base_url=lab.url),
            "bad": Route(name="bad", provider="openai", model="gpt-4o", base_url=f"{server.url}/v1"),
        }
        settings = load_settings().with_overrides(
            routes=routes, default_route="lab", hooks=hooks, retry_max_attempts=0, workspace=str(workspace)
        )
        app = BulkheadApp(settings, workspace=workspace, keymap={}, cursor_blink=False)
        async with app.run_test(size=(200, 60), notifications=True) as pilot:
            await ready(pilot)
            app.prompt.set_text(PROMPT)  # pasted, escapes and all: the prompt draws none of them
            await pilot.pause()
            assert_terminal_safe(rendered_text(app), "the prompt being edited")
            await pilot.press("enter")
            await settle(pilot)

            engine = app.session.engine  # the integration: a stored archive entry
            entry = make_entry(f"archived {SAMPLE}{MARKUP}", "microcompact")
            engine.session.store.archive_put(engine.session.id, [entry])
            app.run_command("model", "bad")
            await until(pilot, lambda: app.session.info().route == "bad", "the route switch")
            app.prompt.set_text("hello")
            await pilot.press("enter")
            await settle(pilot)
            await until(pilot, lambda: bool(app.screen.query("Toast")), "the turn-failed toast")

            for block in app.chat.tool_blocks():  # the reads' output shows when a block is unfolded
                if block.collapsed:
                    block.toggle()
            await pilot.pause()
            seen = [assert_terminal_safe(rendered_text(app), "the chat")]
            inspector = app.inspector
            inspector.archive.reload()
            for name in ("requests", "hooks", "archive", "compaction", "cost"):
                inspector.show_panel(name)
                await pilot.pause()
                if name == "archive":
                    await until(
                        pilot, lambda: inspector.archive.preview_key == entry.key, "the archive preview"
                    )
                seen.append(assert_terminal_safe(rendered_text(app), f"the {name} panel"))
            assert_terminal_safe(app.export_screenshot(), "a screenshot")

            await pilot.press("f5")
            await until(pilot, lambda: type(app.screen).__name__ == "SessionsScreen", "the sessions screen")
            await pilot.pause()
            seen.append(assert_terminal_safe(rendered_text(app), "the sessions screen"))
            await pilot.press("escape")

        flat = re.sub(r"[\s▌]", "", "".join(seen))  # as read, whatever the wrapping
        for what in (
            "pasted",
            "archived",
            "badrequest",
            "name",
        ):  # prompt/title, archive, error body, file name
            assert f"{what}{SHOWN}" in flat, what
        assert flat.count(SHOWN) >= 8  # answer, tool output, hook stderr, toast, panels…
        assert "[b]loud[/b][@click=app.quit]quit[/]" in flat  # markup shown as text, never parsed
