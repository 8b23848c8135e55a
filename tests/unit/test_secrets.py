"""Secrets: the keyring first, then the environment; no backend is a note, never a crash."""

from __future__ import annotations

import io

import keyring
import pytest
from keyring.backend import KeyringBackend
from keyring.errors import KeyringError, PasswordDeleteError

from app import secrets
from app.cli import main
from app.secrets import SecretLookup, SecretStoreError, delete_api_key, get_api_key, mask, set_api_key

FAKE_KEY = "sk-ant-api03-FAKEfakeFAKEfake0123456789abcdefXYZ"


class MemoryKeyring(KeyringBackend):
    """A keyring that lives in a dict, for tests."""

    priority = 1

    def __init__(self) -> None:
        super().__init__()
        self.passwords: dict[tuple[str, str], str] = {}

    def get_password(self, service, username):
        return self.passwords.get((service, username))

    def set_password(self, service, username, password):
        self.passwords[(service, username)] = password

    def delete_password(self, service, username):
        if self.passwords.pop((service, username), None) is None:
            raise PasswordDeleteError("not found")


class BrokenKeyring(MemoryKeyring):
    def get_password(self, service, username):
        raise KeyringError("the D-Bus session is gone")

    def set_password(self, service, username, password):
        raise RuntimeError("locked collection")

    def delete_password(self, service, username):
        raise RuntimeError("locked collection")


class NoPriorityKeyring(KeyringBackend):
    """A third-party backend that never says how usable it is."""

    def get_password(self, service, username):
        return None

    def set_password(self, service, username, password):
        raise NotImplementedError

    def delete_password(self, service, username):
        raise NotImplementedError


@pytest.fixture
def use_keyring():
    previous = keyring.get_keyring()

    def install(backend):
        keyring.set_keyring(backend)
        return backend

    yield install
    keyring.set_keyring(previous)


@pytest.fixture
def memory_keyring(use_keyring):
    return use_keyring(MemoryKeyring())


def test_keyring_first_then_env(memory_keyring, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "from-env-key-0123456789")
    assert get_api_key("anthropic") == SecretLookup("from-env-key-0123456789", "env ANTHROPIC_API_KEY", "")
    set_api_key("anthropic", FAKE_KEY)
    assert memory_keyring.passwords[("bulkhead", "anthropic")] == FAKE_KEY
    assert get_api_key("anthropic") == SecretLookup(FAKE_KEY, "keyring", "")
    assert delete_api_key("anthropic") is True
    assert delete_api_key("anthropic") is False
    assert get_api_key("anthropic").source == "env ANTHROPIC_API_KEY"


def test_custom_env_variable(memory_keyring, monkeypatch):
    monkeypatch.setenv("WORK_GATEWAY_KEY", "gw-key-0123456789")
    assert get_api_key("anthropic", "WORK_GATEWAY_KEY").source == "env WORK_GATEWAY_KEY"
    assert get_api_key("anthropic").source == "none"


def test_empty_env_is_not_a_key(memory_keyring, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "")
    assert get_api_key("openai") == SecretLookup(None, "none", "")


def test_no_backend_is_a_note_and_env_fallback(monkeypatch):
    # conftest selects keyring.backends.fail: what a headless box without a keyring has.
    assert type(keyring.get_keyring()).__module__ == "keyring.backends.fail"
    lookup = get_api_key("openai")
    assert lookup.value is None and lookup.source == "none"
    assert "no keyring backend" in lookup.note and "environment" in lookup.note
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-0123456789abcdef")
    lookup = get_api_key("openai")
    assert lookup.value == "sk-env-0123456789abcdef" and lookup.source == "env OPENAI_API_KEY"
    assert "no keyring backend" in lookup.note
    with pytest.raises(SecretStoreError, match="OPENAI_API_KEY"):
        set_api_key("openai", "x")
    with pytest.raises(SecretStoreError, match="keyring"):
        delete_api_key("openai")


def test_broken_backend_never_crashes(use_keyring, monkeypatch):
    use_keyring(BrokenKeyring())
    monkeypatch.setenv("ANTHROPIC_API_KEY", "env-key-0123456789")
    lookup = get_api_key("anthropic")
    assert lookup.value == "env-key-0123456789" and "keyring read failed" in lookup.note
    with pytest.raises(SecretStoreError, match="ANTHROPIC_API_KEY"):
        set_api_key("anthropic", FAKE_KEY)
    with pytest.raises(SecretStoreError):
        delete_api_key("anthropic")


def test_backend_without_priority_never_crashes(use_keyring, monkeypatch):
    use_keyring(NoPriorityKeyring())
    monkeypatch.setenv("ANTHROPIC_API_KEY", "env-key-0123456789")
    assert get_api_key("anthropic").value == "env-key-0123456789"


def test_null_backend_is_not_usable(use_keyring):
    from keyring.backends import null

    use_keyring(null.Keyring())
    lookup = get_api_key("anthropic")
    assert lookup.value is None and "not usable" in lookup.note


def test_keyring_import_failure_is_a_note(monkeypatch):
    def boom():
        raise ImportError("no keyring")

    monkeypatch.setattr(secrets, "_keyring", boom)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-0123456789abcdef")
    lookup = get_api_key("openai")
    assert lookup.source == "env OPENAI_API_KEY" and "keyring unavailable" in lookup.note


@pytest.mark.parametrize("value", [FAKE_KEY, "sk-12345678", "q1w2", "x", "zzzzzz", "sk-0123456789abcd"])
def test_mask_never_shows_the_whole_key(value):
    shown = mask(value)
    assert value not in shown
    assert str(len(value)) in shown
    assert len(shown.split("…", 1)[0]) <= max(0, len(value) // 4)


def test_mask_of_nothing():
    assert mask(None) == "—" and mask("") == "—"


def test_auth_status_never_prints_a_key(memory_keyring, monkeypatch, capsys):
    short = "sk-short1"
    memory_keyring.set_password("bulkhead", "anthropic", FAKE_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", short)
    assert main(["auth", "status"]) == 0
    out, err = capsys.readouterr()
    assert FAKE_KEY not in out + err and short not in out + err
    assert FAKE_KEY[:20] not in out
    assert "keyring" in out and "env OPENAI_API_KEY" in out and "bedrock" in out


def test_auth_status_without_backend(monkeypatch, capsys):
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    assert main(["auth", "status", "anthropic"]) == 0
    out, err = capsys.readouterr()
    assert FAKE_KEY not in out + err
    assert "note: no keyring backend" in out and "env ANTHROPIC_API_KEY" in out


def test_auth_set_and_delete(memory_keyring, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO(FAKE_KEY + "\n"))
    assert main(["auth", "set", "anthropic"]) == 0
    out, err = capsys.readouterr()
    assert FAKE_KEY not in out + err and "stored" in out
    assert memory_keyring.passwords[("bulkhead", "anthropic")] == FAKE_KEY
    assert main(["auth", "delete", "anthropic"]) == 0
    assert "removed" in capsys.readouterr().out
    assert main(["auth", "delete", "anthropic"]) == 0
    assert "no anthropic key" in capsys.readouterr().out


def test_auth_set_without_backend_says_what_to_do(monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO(FAKE_KEY + "\n"))
    assert main(["auth", "set", "openai"]) == 1
    out, err = capsys.readouterr()
    assert FAKE_KEY not in out + err
    assert err.startswith("bulkhead:") and "OPENAI_API_KEY" in err


def test_auth_set_with_empty_input(memory_keyring, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("\n"))
    assert main(["auth", "set", "openai"]) == 1
    assert "nothing stored" in capsys.readouterr().err
    assert memory_keyring.passwords == {}
