"""API keys: the system keyring first, then the environment. Nothing else ever stores them.

`bulkhead auth set anthropic` stores a key in the keyring. Without a usable keyring
backend (headless Linux, containers) bulkhead says so once and reads the environment.
Bedrock uses the AWS credential chain (env, profile, SSO, instance role) through boto3.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from app.network_env import register_proxy_passwords
from app.redact import register_secret

SERVICE = "bulkhead"
ENV_VARS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
KEYED_PROVIDERS = tuple(ENV_VARS)

# Provider credentials the shell tool's commands never see (unless `shell_env_passthrough` names them):
# the `*_API_KEY` family, these, and every route's `api_key_env`. The AWS key id goes with its secret.
PROVIDER_CREDENTIAL_VARS = frozenset(
    {
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_SECURITY_TOKEN",
        "AWS_BEARER_TOKEN_BEDROCK",
        "ANTHROPIC_AUTH_TOKEN",
        "AZURE_OPENAI_AD_TOKEN",
    }
)
API_KEY_VAR_RE = re.compile(r"(?:^|_)API_?KEY$", re.I)
# Variables whose values are registered as secrets (redacted wherever they appear), a wider net.
SECRET_VAR_RE = re.compile(
    r"(?:^|_)(?:API_?KEY|APIKEY|SECRET|SECRET_ACCESS_KEY|ACCESS_KEY_ID|TOKEN|"
    r"SESSION_TOKEN|PASSWORD|PASSWD|CREDENTIALS?)(?:_|$)",
    re.I,
)


def is_provider_credential(name: str, extra_names: Iterable[str] = ()) -> bool:
    """True for a variable holding a provider credential (`OPENAI_API_KEY`, `AWS_SECRET_ACCESS_KEY`, a
    route's `api_key_env`)."""
    return (
        name in PROVIDER_CREDENTIAL_VARS
        or API_KEY_VAR_RE.search(name) is not None
        or name in set(extra_names)
    )


def register_environment_secrets(env: Mapping[str, str] | None = None, names: Iterable[str] = ()) -> None:
    """Put the environment's secrets in the redaction registry: secret-named variables, `names`
    (the routes' `api_key_env`) and the passwords of proxy URLs."""
    env = os.environ if env is None else env
    wanted = set(names)
    for name, value in env.items():
        if name in wanted or is_provider_credential(name) or SECRET_VAR_RE.search(name):
            register_secret(value, f"env {name}")
    register_proxy_passwords(env)


class SecretStoreError(Exception):
    """The keyring cannot be used; the message says what to do instead."""


@dataclass(frozen=True)
class SecretLookup:
    value: str | None
    source: str  # "keyring" | "env NAME" | "none"
    note: str = ""  # why the keyring was not used, when it was not


def _keyring():
    import keyring
    from keyring.errors import KeyringError, NoKeyringError

    return keyring, KeyringError, NoKeyringError


def _backend_usable() -> tuple[bool, str]:
    try:
        keyring, _, _ = _keyring()
        backend = keyring.get_keyring()
    except Exception as exc:  # any import/backend failure means "no keyring"
        return False, f"keyring unavailable ({exc.__class__.__name__})"
    name = type(backend).__name__
    if name in ("Keyring", "NoKeyring") and type(backend).__module__.startswith("keyring.backends.fail"):
        return False, "no keyring backend is installed on this system"
    try:
        priority = getattr(backend, "priority", 1)
    except Exception:  # a backend that cannot say its priority is still worth a try
        priority = 1
    if priority <= 0 and "chainer" not in type(backend).__module__:
        return False, f"keyring backend {name} is not usable"
    return True, name


def get_api_key(provider: str, env_var: str | None = None) -> SecretLookup:
    """Find the key for `provider`: keyring, then `env_var` (or the provider's usual variable)."""
    note = ""
    usable, detail = _backend_usable()
    if usable:
        try:
            keyring, keyring_error, _ = _keyring()
            value = keyring.get_password(SERVICE, provider)
            if value:
                register_secret(value, f"keyring {provider}")
                return SecretLookup(value, "keyring")
        except Exception as exc:  # a broken backend must never crash the app
            note = f"keyring read failed ({exc.__class__.__name__}); using the environment"
    else:
        note = f"{detail}; using the environment"
    name = env_var or ENV_VARS.get(provider)
    if name and os.environ.get(name):
        register_secret(os.environ[name], f"env {name}")
        return SecretLookup(os.environ[name], f"env {name}", note)
    return SecretLookup(None, "none", note)


def set_api_key(provider: str, value: str) -> None:
    usable, detail = _backend_usable()
    name = ENV_VARS.get(provider, f"{provider.upper()}_API_KEY")
    if not usable:
        raise SecretStoreError(f"cannot store the key: {detail}. Export {name} in your shell instead.")
    register_secret(value, f"keyring {provider}")
    keyring, keyring_error, _ = _keyring()
    try:
        keyring.set_password(SERVICE, provider, value)
    except Exception as exc:  # backends raise all sorts (D-Bus, locked collections)
        raise SecretStoreError(
            f"the keyring refused the key ({exc.__class__.__name__}: {exc}). Export {name} instead."
        ) from None


def delete_api_key(provider: str) -> bool:
    usable, detail = _backend_usable()
    if not usable:
        raise SecretStoreError(f"cannot reach the keyring: {detail}")
    keyring, keyring_error, _ = _keyring()
    try:
        keyring.delete_password(SERVICE, provider)
        return True
    except keyring_error:
        return False
    except Exception as exc:  # a broken backend is a message, not a traceback
        raise SecretStoreError(
            f"the keyring could not delete the key ({exc.__class__.__name__}: {exc})"
        ) from None


def mask(value: str | None) -> str:
    """Show that a key exists without showing it: `sk-a…(51 chars)`; short values show no prefix."""
    if not value:
        return "—"
    prefix = value[:4] if len(value) >= 16 else ""
    return f"{prefix}…({len(value)} chars)"
