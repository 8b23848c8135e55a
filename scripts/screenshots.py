#!/usr/bin/env python3
"""Make the README screenshots: the real app, headless, against the embedded lab.

    python3 scripts/screenshots.py [--out screenshots]

Writes (160×48 cells each):

- `recovery.svg`       a session mid-recovery: nginx profile, 128 KB cap, the session grown with
                       `!big 40KB` until a 413; the Ladder at L1, the retry streaming in
- `archive.svg`        the archive browser with a preview of the segment the recovery dropped
- `waf-403.svg`        the request inspector on a Cloudflare-style WAF 403 (block page, cf-ray)
- `approval.svg`       a tool call waiting for inline approval (`!shell echo hi`)

It runs in a throwaway BULKHEAD_HOME with no config, so nothing of yours is read or changed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIZE = (160, 48)
CAP = 128 * 1024
GROW = "!big 40KB"
MAX_MESSAGES = 10
WAIT_S = float(os.environ.get("BULKHEAD_SHOT_WAIT", 120))


async def until(pilot, predicate: Callable[[], object], what: str, timeout: float = WAIT_S) -> None:
    """`headless.until`, with the app's state in the error when BULKHEAD_SHOT_DEBUG is set."""
    from app.ui import headless

    try:
        await headless.until(pilot, predicate, what, timeout)
    except TimeoutError as exc:
        if not os.environ.get("BULKHEAD_SHOT_DEBUG"):
            raise
        app = pilot.app
        ladder = app.inspector.ladder
        records = [r.get("status") for r in app.inspector.requests.records.values()]
        raise TimeoutError(
            f"{exc} (busy={app.busy} streaming={app.chat.streaming} level={ladder.level} "
            f"outcome={ladder.outcome} records={records})"
        ) from None


async def settle(pilot) -> None:
    from app.ui import headless

    await headless.settle(pilot, WAIT_S)


def make_app(lab_url: str, workspace: Path, **settings_overrides):
    from app.config import Route, load_settings
    from app.ui.app import BulkheadApp
    from app.ui.widgets.inspector import Inspector

    route = Route(name="gateway", provider="lab", model="lab-1", base_url=lab_url)
    settings = load_settings().with_overrides(routes={"gateway": route}, **settings_overrides)
    return BulkheadApp(
        settings,
        workspace=workspace,
        cursor_blink=False,
        keymap={},
        inspector=Inspector(id="inspector", tz=UTC),
    )


def rejected(app, status: int) -> list[dict]:
    return [r for r in app.inspector.requests.records.values() if r.get("status") == status]


async def grow(pilot, status: int, *, wait_for_end: bool = True) -> None:
    """Send `!big 40KB` until a request is rejected with `status`."""
    app = pilot.app
    for _ in range(MAX_MESSAGES):
        turn = app.session.info().turn
        app.prompt.set_text(GROW)
        await pilot.press("enter")
        if not wait_for_end:

            def answered(turn: int = turn) -> bool:
                session = app.session
                return (
                    not app.busy and session.info().turn > turn and session.history()[-1].role == "assistant"
                )

            await until(pilot, lambda: rejected(app, status) or answered(), "a rejection or the answer")
            if rejected(app, status):
                return
        await settle(pilot)
        if rejected(app, status):
            return
    raise RuntimeError(f"no request was rejected with {status} after {MAX_MESSAGES} messages")


async def shoot_recovery(out: Path, workspace: Path) -> list[str]:
    from app.lab.embedded import start_embedded_lab

    names = []
    with start_embedded_lab(gateway="nginx", cap="128KB") as lab:
        app = make_app(lab.url, workspace)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, app.engine_ready.is_set, "the engine")
            # When the gateway refuses a request, the lab starts answering slowly — the engine's bus calls
            # subscribers inline, before the recovery sends its retry — so the shot catches the ladder at work.
            from app.model.events import Rejection

            def slow_down(event) -> None:
                if isinstance(event, Rejection):
                    lab.configure(faults="slow:1", slow_pause=0.3)

            app.session.subscribe(slow_down)
            await grow(pilot, 413, wait_for_end=False)
            ladder = app.inspector.ladder
            await until(
                pilot,
                lambda: ladder.level >= 1 and app.chat.streaming and len(app.chat.last_answer().raw) >= 40,
                "the recovery's answer streaming in",
            )
            app.inspector.show_panel("requests")
            await pilot.pause()
            app.save_screenshot("recovery.svg", str(out))
            names.append("recovery.svg")
            lab.configure(faults=None)
            await app.action_quit()
    return names


async def shoot_archive(out: Path, workspace: Path) -> list[str]:
    from app.lab.embedded import start_embedded_lab

    with start_embedded_lab(gateway="nginx", cap="128KB") as lab:
        app = make_app(lab.url, workspace)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, app.engine_ready.is_set, "the engine")
            await grow(pilot, 413)
            archive = app.inspector.archive
            await until(pilot, lambda: archive.row_keys, "the archive to list the dropped segment")
            app.inspector.show_panel("archive")
            await until(pilot, lambda: app.focused is archive.table, "the archive table")
            archive.table.move_cursor(row=0)
            await until(pilot, lambda: archive.preview_key is not None, "the preview")
            await pilot.pause()
            app.save_screenshot("archive.svg", str(out))
            await app.action_quit()
    return ["archive.svg"]


async def shoot_waf(out: Path, workspace: Path) -> list[str]:
    from app.lab.embedded import start_embedded_lab

    with start_embedded_lab(gateway="cloudflare", cap="128KB") as lab:
        app = make_app(lab.url, workspace)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, app.engine_ready.is_set, "the engine")
            await grow(pilot, 403)
            requests = app.inspector.requests
            record = rejected(app, 403)[0]
            app.action_widen_inspector()
            app.inspector.show_panel("requests")
            await until(pilot, lambda: app.focused is requests.table, "the requests table")
            row = list(requests.records).index(record["id"])
            requests.table.move_cursor(row=row)
            await until(pilot, lambda: requests.selected_id == record["id"], "the 403's detail")
            await pilot.pause()
            app.save_screenshot("waf-403.svg", str(out))
            await app.action_quit()
    return ["waf-403.svg"]


async def shoot_approval(out: Path, workspace: Path) -> list[str]:
    from app.lab.embedded import start_embedded_lab

    with start_embedded_lab() as lab:
        app = make_app(lab.url, workspace, approval="auto-read")
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, app.engine_ready.is_set, "the engine")
            app.prompt.set_text("What is in this folder?")
            await pilot.press("enter")
            await settle(pilot)
            app.prompt.set_text("!shell echo hi")
            await pilot.press("enter")
            await until(pilot, lambda: app.chat.pending_approval() is not None, "the approval prompt")
            await pilot.pause()
            app.save_screenshot("approval.svg", str(out))
            await pilot.press("y")
            await settle(pilot)
            await app.action_quit()
    return ["approval.svg"]


async def main(out: Path) -> list[str]:
    out.mkdir(parents=True, exist_ok=True)
    names: list[str] = []
    for shoot in (shoot_recovery, shoot_archive, shoot_waf, shoot_approval):
        with tempfile.TemporaryDirectory(prefix="bulkhead-shot-") as home:
            os.environ["BULKHEAD_HOME"] = home
            workspace = Path(home) / "workspace"
            workspace.mkdir()
            (workspace / "README.md").write_text("# demo\n", encoding="utf-8")
            names += await shoot(out, workspace)
            print(f"  {names[-1]}", flush=True)
    return names


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "screenshots"), help="folder for the SVGs")
    args = parser.parse_args()
    empty_config = Path(tempfile.mkdtemp(prefix="bulkhead-screenshots-")) / "config.toml"
    empty_config.write_text("", encoding="utf-8")  # nothing of yours is read (a named config must exist)
    os.environ["BULKHEAD_CONFIG"] = str(empty_config)
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        os.environ.pop(name, None)
    os.environ["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
    sys.path.insert(0, str(ROOT))
    print(f"writing screenshots to {args.out}")
    written = asyncio.run(main(Path(args.out)))
    print(f"done: {', '.join(written)}")
