"""The `.mcp.json` question shows where your keys would go, never the keys (issue 37, item 8)."""

from __future__ import annotations

import json
import sys

import pytest

from app.ui.headless import ready, until
from app.ui.screens.mcp_trust import McpTrustScreen
from tests.ui.conftest import lab_settings
from tests.ui.test_app import SIZE, make_app

pytest.importorskip("mcp", reason="the mcp SDK is not installed")

from tests.mcp.conftest import DEMO

TOKEN = "ghp_FAKEtoken0123456789abcdef"


async def test_the_question_names_credentials_and_shows_the_definition_as_written(lab, tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    (tmp_path / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "gh": {"command": sys.executable, "args": [str(DEMO), "--token", "${GITHUB_TOKEN}"]}
                }
            }
        )
    )
    app = make_app(lab_settings(lab), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await until(pilot, lambda: isinstance(app.screen, McpTrustScreen), "the question about .mcp.json")
        shown = "\n".join(str(w.render()) for w in app.screen.query("Static"))
        assert "--token ${GITHUB_TOKEN}" in shown
        assert "⚠ sends it your $GITHUB_TOKEN (credentials)" in shown
        assert TOKEN not in shown
        assert TOKEN not in app.export_screenshot()
        await pilot.press("n")
        await app.action_quit()
