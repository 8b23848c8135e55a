"""The TUI asks once whether a workspace's rule files may grant anything (issue 37, item 1): their allow
rules are off until `y`, the answer is remembered, and the start of the session says what is in force."""

from __future__ import annotations

import json

from app.ui.headless import ready, until
from app.ui.screens.rules_trust import RulesTrustScreen
from tests.ui.conftest import lab_settings
from tests.ui.test_app import SIZE, make_app


async def test_a_repositorys_allow_rules_wait_for_the_users_yes(lab, tmp_path):
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"allow": ["Bash", "Edit(//**)"], "deny": ["Read(./.env)"]}})
    )
    app = make_app(lab_settings(lab), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await until(pilot, lambda: isinstance(app.screen, RulesTrustScreen), "the question about the rules")
        body = " ".join(str(w.render()) for w in app.screen.query(".mcp-trust-server"))
        assert "allow Bash" in body and "allow Edit(//**)" in body
        assert (
            app.session.engine.permissions.check("shell", {"command": "id"}).kind is None
        )  # not in force yet
        assert (
            app.session.engine.permissions.check("read_file", {"path": ".env"}).kind == "deny"
        )  # deny holds at once
        await until(pilot, lambda: app.chat.notices("permissions"), "the start notice")
        assert "NOT in force" in app.chat.notices("permissions")[0].text
        await pilot.press("y")
        await until(pilot, lambda: not app.session.engine.permissions.pending_files(), "the answer")
        assert app.session.engine.permissions.check("shell", {"command": "id"}).kind == "allow"
        await app.action_quit()

    again = make_app(lab_settings(lab), tmp_path)
    async with again.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await until(pilot, lambda: again.chat.notices("permissions"), "the start notice")
        assert "approved by you" in again.chat.notices("permissions")[0].text
        assert not isinstance(again.screen, RulesTrustScreen)
        await again.action_quit()


async def test_a_repositorys_gateways_file_waits_for_the_users_yes(lab, tmp_path):
    """`.bulkhead/gateways.toml` is asked about with the same dialog (app.ui.screens.trust): what it would
    import, per endpoint; y reads it and the cap is in force at once; the next session does not ask."""
    from app.gateway_profile import load_profile
    from app.ui.screens.gateways_trust import GatewaysTrustScreen
    from app.workspace_gateways import WORKSPACE_FILE

    app = make_app(lab_settings(lab), tmp_path)
    endpoint = "anthropic https://gw.example.com"
    (tmp_path / ".bulkhead").mkdir()
    (tmp_path / WORKSPACE_FILE).write_text(f'[gateways."{endpoint}"]\ncap_bytes = 65536\n')
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await until(pilot, lambda: isinstance(app.screen, GatewaysTrustScreen), "the question about the file")
        body = " ".join(str(w.render()) for w in app.screen.query(".mcp-trust-server"))
        assert f"{endpoint}: cap 64.0 KB" in body
        assert load_profile(app.session.engine.state, endpoint).imported is None  # not read before the answer
        await pilot.press("y")
        await until(pilot, lambda: load_profile(app.session.engine.state, endpoint).imported, "the import")
        assert not isinstance(app.screen, GatewaysTrustScreen)
        await app.action_quit()

    again = make_app(lab_settings(lab), tmp_path)
    async with again.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await until(pilot, lambda: again.chat.notices("gateways") or True, "the start")
        assert not isinstance(again.screen, GatewaysTrustScreen)
        await again.action_quit()
