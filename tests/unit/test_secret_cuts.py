"""Secrets at a cut, on the live screen and in config errors (issue 37, item 10)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.config import ConfigError, load_settings
from app.engine.failures import classify_fields
from app.redact import REDACTED, StreamRedactor, register_secret

KEY = "sk-proj-FAKE-cut-1234567890-abcdefghijklmnop"
CORE = "1234567890-abcdef"


@pytest.fixture(autouse=True)
def known_key():
    register_secret(KEY, "env OPENAI_API_KEY")


def test_evidence_is_redacted_before_it_is_clipped() -> None:
    said = f"upstream refused {'x' * 40} {KEY} for this request"  # the 80-character cut falls inside the key
    failure = classify_fields(status=400, body=json.dumps({"error": {"message": said}}))

    evidence = " ".join(failure.evidence)
    assert "sk-proj-FAKE-cut" not in evidence and REDACTED in evidence, evidence


def test_a_cut_never_keeps_the_start_of_a_key() -> None:
    from app.redact import clip_redacted

    text = "the body ended: " + KEY[:20]  # the key itself was already cut upstream
    assert clip_redacted(text, 34) == f"the body ended: {REDACTED}…" and KEY[:8] not in clip_redacted(
        text, 34
    )
    assert KEY[:6] not in clip_redacted(f"a {KEY} b", 12)
    assert clip_redacted("short and clean", 80) == "short and clean"


def test_the_live_stream_is_redacted_even_split_across_deltas() -> None:
    from app.model.events import MessageAdded, TextDelta
    from app.redact import redact_data

    live = StreamRedactor()
    shown = live.feed("here it is: " + KEY[:10]) + live.feed(KEY[10:] + " done") + live.flush()
    assert KEY not in shown and CORE not in shown and REDACTED in shown
    event = redact_data(MessageAdded(message_id="m", role="assistant", origin="model", text=f"key {KEY}"))
    assert event.text == f"key {REDACTED}"
    assert redact_data(TextDelta("nothing secret")) == TextDelta("nothing secret")


@pytest.mark.parametrize(
    "config",
    [
        f'[routes.a]\nprovider = "openai"\nmodel = "gpt-4o"\nbase_url = "{KEY}"\n',
        f'[routes.a]\nprovider = "openai"\nmodel = "gpt-4o"\n[routes.a.headers]\n"{KEY}" = "x"\n',
        f'default_route = "{KEY}"\n[routes.a]\nprovider = "openai"\nmodel = "gpt-4o"\n',
        f'[routes.a]\nprovider = "openai"\nmodel = "gpt-4o"\n[routes.a.extra]\nx = "{KEY}"\n',
    ],
    ids=["base_url", "headers table", "default_route", "unknown table"],
)
def test_config_errors_never_echo_a_pasted_key(tmp_path: Path, config: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(config)
    with pytest.raises(ConfigError) as caught:
        load_settings(path, env={})
    said = str(caught.value)
    assert CORE not in said and "sk-proj-FAKE-cut" not in said, said
    assert "hidden: it may be a secret" in said
