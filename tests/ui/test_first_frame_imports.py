"""The TUI's first frame pays only for what it draws (issue 43): what it must not import, mount or collect.

No wall-clock here: a fresh interpreter starts `bulkhead` the way `app.cli.main` does (the parser, the settings,
the app) and records `sys.modules` and the mounted panels at the first paint (`App._display`). `bench/startup.py`
measures what this saves.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap

from app.cli import main
from app.ui.startup import collect_from_now

# What the first frame does not draw, so must not import: the engine and all it brings (the store and sqlite,
# the tools, the providers, the classifier's rule tables), the one-shot mode, the Markdown parser and the
# highlighter (an empty chat parses nothing) and the provider SDKs (imported in a thread after it).
NOT_BEFORE_THE_FIRST_FRAME = (
    "app.engine",
    "app.store",
    "app.tools",
    "app.providers",
    "app.lab",
    "app.mcp",
    "app.commands.oneshot",
    "app.ui.explain",
    "sqlite3",
    "markdown_it",
    "pygments",
    "anthropic",
    "openai",
    "boto3",
    "botocore",
    "httpx",
)

FIRST_FRAME = textwrap.dedent("""
    import asyncio, gc, json, sys
    from app.cli import build_parser
    from app.ui.run import build_app

    args = build_parser().parse_args([])
    args.initial_prompt = ""
    app = build_app(args, cursor_blink=False, keymap={})
    seen = {}
    original = app._display

    def display(screen, renderable):
        if renderable is not None and "modules" not in seen:
            seen["modules"] = sorted(sys.modules)
            seen["mounted"] = sorted(name for name, panel in app.inspector.panels.items() if panel.is_attached)
        return original(screen, renderable)

    app._display = display

    async def run():
        async with app.run_test(size=(160, 48)) as pilot:
            while not app.engine_ready.is_set():
                await asyncio.sleep(0.01)
            await pilot.pause()
            seen["mounted_later"] = sorted(
                name for name, panel in app.inspector.panels.items() if panel.is_mounted
            )
            seen["engine_later"] = "app.engine.turn" in sys.modules

    asyncio.run(run())
    print(json.dumps(seen))
""")


def first_frame(tmp_path) -> dict:
    (tmp_path / "config.toml").write_text("")
    env = {
        "BULKHEAD_HOME": str(tmp_path),
        "BULKHEAD_CONFIG": str(tmp_path / "config.toml"),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
    }
    environment = {k: v for k, v in os.environ.items() if not k.startswith("BULKHEAD_")} | env
    done = subprocess.run(
        [sys.executable, "-c", FIRST_FRAME],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=environment,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_first_frame_imports_only_what_it_draws_and_mounts_the_hidden_tabs_after(tmp_path):
    seen = first_frame(tmp_path)
    imported = [
        module
        for module in seen["modules"]
        if any(module == name or module.startswith(name + ".") for name in NOT_BEFORE_THE_FIRST_FRAME)
    ]
    assert imported == [], f"imported before the first frame: {imported}"
    # Payload, Ladder and the shown tab (Requests) are drawn; the hidden tabs' panels join after the frame ...
    assert seen["mounted"] == ["ladder", "payload", "requests"]
    # ... and everything is there once the session is open: all seven panels, the engine.
    assert seen["mounted_later"] == [
        "archive",
        "compaction",
        "cost",
        "hooks",
        "ladder",
        "payload",
        "requests",
    ]
    assert seen["engine_later"]


def test_the_command_line_gives_the_collector_back():
    """`app.cli.main` pauses the cyclic collector for the TUI's start; any other command has it back at once,
    and the TUI once its first frame is drawn (`collect_from_now`)."""
    assert gc.isenabled()
    assert main(["--version"]) == 0
    assert gc.isenabled()
    gc.disable()
    try:
        collect_from_now()
        assert gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()
    collect_from_now()  # the collector on (an app built by a test): nothing changes
    assert gc.isenabled()
