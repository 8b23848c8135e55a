"""Issue 22 in the TUI: a CA bundle that does not exist is said when the session opens — which variable,
which path, "does not exist" — before any request is sent."""

from __future__ import annotations

from app.config import Route, load_settings
from app.ui.headless import until
from tests.ui.test_app import make_app
from tests.ui.test_session_open import SIZE


async def test_a_missing_bundle_is_reported_when_the_session_opens(lab, tmp_path, monkeypatch):
    missing = tmp_path / "corp-ca.pem"
    monkeypatch.setenv("SSL_CERT_FILE", str(missing))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-FAKE")
    routes = {"work": Route(name="work", provider="anthropic", model="claude-sonnet-4-5", base_url=lab.url)}
    app = make_app(load_settings().with_overrides(routes=routes, default_route="work"), tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.chat.notices("session"), "the reason the session did not open")
        text = app.chat.notices("session")[0].text
        assert f"SSL_CERT_FILE = {missing} does not exist" in text, text
        assert app.session is None
    assert lab.requests() == []
