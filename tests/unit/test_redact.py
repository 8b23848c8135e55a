"""Redaction by value (issue 14, item 6): one registry of known secrets, used by everything that stores,
exports or prints — plus the header-name rule and URL passwords hidden by position."""

from __future__ import annotations

import base64
import json

import pytest

from app import redact
from app.config import Route, load_settings
from app.engine.session import Session
from app.model.messages import Message
from app.redact import (
    REDACTED,
    forget_secrets,
    known_secrets,
    redact_headers,
    redact_text,
    redact_value,
    register_secret,
)
from app.secrets import get_api_key, register_environment_secrets
from app.store import Store

KEY = "sk-ant-api03-FAKE-redact-unit-key-0123456789"


def test_a_registered_value_is_replaced_everywhere_in_text_and_structures():
    register_secret(KEY, "env ANTHROPIC_API_KEY")
    assert redact_text(f"bad key {KEY}!") == f"bad key {REDACTED}!"
    assert redact_value({"a": [KEY, ("x", KEY)], KEY: 1, "n": 3}) == {
        "a": [REDACTED, ("x", REDACTED)],
        REDACTED: 1,
        "n": 3,
    }
    encoded = base64.b64encode(KEY.encode()).decode()
    assert REDACTED in redact_text(f"Basic {encoded}")
    assert known_secrets()[KEY] == "env ANTHROPIC_API_KEY"


def test_short_values_are_not_replaced_by_value_but_url_passwords_always_are():
    register_secret("abc12", "too short")
    assert "abc12" not in known_secrets()
    assert (
        redact_text("see abc12 and http://u:abc12@proxy:8080/x") == "see abc12 and http://u:***@proxy:8080/x"
    )
    assert (
        redact_text("postgres://app:pw@db/main, ssh://git@github.com:22/x, http://host:8080/a@b")
        == "postgres://app:***@db/main, ssh://git@github.com:22/x, http://host:8080/a@b"
    )


def test_the_longest_secret_is_replaced_first():
    register_secret("FAKE-inner-secret-77", "a")
    register_secret("prefix-FAKE-inner-secret-77-suffix", "b")
    assert redact_text("x prefix-FAKE-inner-secret-77-suffix y") == f"x {REDACTED} y"


def test_headers_are_redacted_by_name_and_by_value_and_credentials_join_the_registry():
    sent = redact_headers(
        {"x-api-key": KEY, "Authorization": "Bearer sk-proj-FAKE-bearer-abcdefgh", "accept": "*/*"}
    )
    assert sent == {"x-api-key": REDACTED, "Authorization": REDACTED, "accept": "*/*"}
    assert KEY in known_secrets() and "sk-proj-FAKE-bearer-abcdefgh" in known_secrets()
    echoed = redact_headers(
        {"x-echo-authorization": "Bearer sk-proj-FAKE-bearer-abcdefgh", "x-request-id": "r1"}
    )
    assert echoed == {"x-echo-authorization": f"Bearer {REDACTED}", "x-request-id": "r1"}
    redact_headers({"authorization": "AWS4-HMAC-SHA256 Credential=AKIA/x, Signature=abcdef0123456789"})
    assert not any(v.startswith("AWS4-") for v in known_secrets())  # per-request signatures are not kept


def test_keys_read_from_the_environment_and_config_are_registered(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-FAKE-from-env-0123456789")
    assert get_api_key("openai").value == "sk-proj-FAKE-from-env-0123456789"
    assert "sk-proj-FAKE-from-env-0123456789" in known_secrets()
    forget_secrets()
    config = tmp_path / "config.toml"
    config.write_text(
        '[routes.gw]\nprovider = "openai"\nmodel = "m"\n'
        'base_url = "https://me:FAKE-url-password@gw.example/v1"\napi_key_env = "GW_KEY"\n'
    )
    load_settings(
        config,
        env={
            "GW_KEY": "FAKE-gateway-key-value",
            "HTTPS_PROXY": "http://u:FAKE-proxy-pw@p:1",
            "AWS_SESSION_TOKEN": "FAKE-session-token-value",
            "HOME": "/home/someone",
        },
    )
    known = known_secrets()
    for value in ("FAKE-url-password", "FAKE-gateway-key-value", "FAKE-proxy-pw", "FAKE-session-token-value"):
        assert value in known, value
    assert "/home/someone" not in known


def test_a_password_in_base_url_never_reaches_the_learned_cap_key():
    route = Route(name="gw", provider="anthropic", model="m", base_url="https://me:FAKE-pw-123@gw.example")
    assert route.endpoint_id == "anthropic https://me:***@gw.example"


def test_the_store_writes_no_known_secret(tmp_path):
    register_secret(KEY, "env")
    store = Store(tmp_path / "db.sqlite")
    session = Session.create(store, route="r", provider="anthropic", model="m")
    session.append(Message.create("user", f"my key is {KEY}", turn=1))
    store.record_request(
        {
            "id": "q1",
            "session_id": session.id,
            "created_at": 1.0,
            "url": "http://a:pw@h/v1",
            "error_body": json.dumps({"error": f"invalid key {KEY}"}),
            "response_headers": {"x-echo-authorization": KEY},
            "reason": f"bad {KEY}",
            "evidence": [f"phrase {KEY}"],
            "body_preview": KEY,
        }
    )
    store.record_event(session.id, "notice", {"text": f"echo {KEY}"})
    store.close()
    data = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert KEY.encode() not in data
    reopened = Store(tmp_path / "db.sqlite")
    row = reopened.list_requests(session.id)[0]
    assert row["url"] == "http://a:***@h/v1" and REDACTED in row["error_body"]
    assert row["response_headers"]["x-echo-authorization"] == REDACTED
    assert Session.load(reopened, session.id).master[0].text == f"my key is {REDACTED}"


@pytest.fixture(autouse=True)
def _empty_registry():
    forget_secrets()
    yield
    forget_secrets()


def test_the_registry_is_bounded():
    for i in range(redact.MAX_KNOWN_SECRETS + 50):
        register_secret(f"FAKE-bounded-secret-{i:05d}", "x")
    assert len(known_secrets()) <= redact.MAX_KNOWN_SECRETS


def test_register_environment_secrets_takes_named_keys():
    register_environment_secrets(
        {"MY_KEY_VAR": "FAKE-named-by-config-1", "EDITOR": "vim-but-long-enough"}, names=["MY_KEY_VAR"]
    )
    assert "FAKE-named-by-config-1" in known_secrets() and "vim-but-long-enough" not in known_secrets()


def test_a_secret_split_across_streamed_chunks_is_still_caught():
    from app.redact import StreamRedactor

    register_secret(KEY, "env")
    stream = StreamRedactor()
    pieces = ["your key is sk-", "ant-api03-FAKE-redact", "-unit-key-0123456789 — keep it", " safe", ""]
    shown = "".join(stream.feed(piece) for piece in pieces) + stream.flush()
    assert shown == f"your key is {REDACTED} — keep it safe"
    plain = StreamRedactor()
    assert plain.feed("nothing secret here") == "nothing secret here" and plain.flush() == ""
