"""Which CA bundle each route trusts, where that came from, and handing it to the route's SDK.

One setting of bulkhead's own, `ca_bundle` (config.toml or `BULKHEAD_CA_BUNDLE`), is handed to
every SDK the way that SDK takes it: the httpx SDKs (Anthropic, OpenAI) get an `ssl.SSLContext`
as `verify=`, botocore (Bedrock) the file path as `verify=`. Without it the bundle comes from the
environment, first match wins:

1. the variable(s) the route's own SDK reads — `SSL_CERT_FILE`, `SSL_CERT_DIR` for httpx;
   `AWS_CA_BUNDLE`, then `ca_bundle` in the AWS profile for botocore;
2. then the other well-known ones, so one corporate bundle works for all three providers:
   `REQUESTS_CA_BUNDLE`, `SSL_CERT_FILE`, `SSL_CERT_DIR` (httpx only: botocore takes a file),
   `AWS_CA_BUNDLE`.

Nothing found: each SDK keeps its own default (httpx: the system's trust store; botocore: certifi's). A bundle that does not exist is
a `ConfigError` at route setup (`problem`), before the first request.
"""

from __future__ import annotations

import configparser
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HTTPX_VARIABLES = ("SSL_CERT_FILE", "SSL_CERT_DIR")
BOTOCORE_VARIABLES = ("AWS_CA_BUNDLE",)
SHARED_VARIABLES = ("REQUESTS_CA_BUNDLE", "SSL_CERT_FILE", "SSL_CERT_DIR", "AWS_CA_BUNDLE")
_DIR_VARIABLES = frozenset({"SSL_CERT_DIR"})
DEFAULT_STORE = {
    "anthropic": "the system's trust store",
    "openai": "the system's trust store",
    "bedrock": "certifi's bundle",
}
SDK_NAMES = {
    "anthropic": "the Anthropic SDK (httpx)",
    "openai": "the OpenAI SDK (httpx)",
    "bedrock": "boto3 (botocore)",
}


@dataclass(frozen=True)
class CaBundle:
    """A CA bundle (file, or folder for httpx) and where bulkhead found it."""

    path: str
    source: str  # "ca_bundle in config.toml", "SSL_CERT_FILE", "ca_bundle in AWS profile work", …
    is_dir: bool = False

    @property
    def exists(self) -> bool:
        return os.path.isdir(self.path) if self.is_dir else os.path.isfile(self.path)

    def problem(self, route_name: str, provider: str) -> str | None:
        """What is wrong with this bundle for `provider`, worded for the user; None when it is usable."""
        if provider == "bedrock" and os.path.isdir(self.path):
            return (
                f"routes.{route_name}: {self.source} = {self.path} is a folder; Bedrock (botocore) takes one "
                "bundle file — point it at a PEM file with your proxy's CA"
            )
        if not self.exists:
            kind = "folder" if self.is_dir else "file"
            return (
                f"routes.{route_name}: {self.source} = {self.path} does not exist (no such {kind}); "
                f"{provider} requests would fail TLS verification — point it at your proxy's CA bundle, "
                "or unset it"
            )
        return None


def sdk_reads(provider: str) -> str:
    """What the provider's SDK itself reads for its CA bundle, for hints."""
    if provider == "bedrock":
        return "AWS_CA_BUNDLE (or ca_bundle in the AWS profile)"
    return "SSL_CERT_FILE (or SSL_CERT_DIR)"


def _aws_profile_bundle(profile: str | None, env: Mapping[str, str]) -> CaBundle | None:
    name = profile or env.get("AWS_PROFILE") or env.get("AWS_DEFAULT_PROFILE") or "default"
    path = Path(env.get("AWS_CONFIG_FILE") or "~/.aws/config").expanduser()
    parser = configparser.RawConfigParser()
    try:
        parser.read(path, encoding="utf-8")
    except (OSError, configparser.Error, UnicodeDecodeError):
        return None
    section = "default" if name == "default" else f"profile {name}"
    value = parser.get(section, "ca_bundle", fallback="").strip() if parser.has_section(section) else ""
    if not value:
        return None
    return CaBundle(os.path.expanduser(value), f"ca_bundle in AWS profile {name} ({path})")


def resolve(
    provider: str,
    *,
    setting: str | None = None,
    setting_source: str = "ca_bundle in config.toml",
    profile: str | None = None,
    env: Mapping[str, str] | None = None,
) -> CaBundle | None:
    """The bundle a route of `provider` uses, or None for the SDK's default. See the module doc."""
    env = os.environ if env is None else env
    if provider == "lab":
        return None
    if setting:
        path = os.path.expanduser(setting)
        return CaBundle(path, setting_source, is_dir=os.path.isdir(path))
    own = BOTOCORE_VARIABLES if provider == "bedrock" else HTTPX_VARIABLES
    for name in own:
        if env.get(name):
            return CaBundle(env[name], name, is_dir=name in _DIR_VARIABLES)
    if provider == "bedrock":
        found = _aws_profile_bundle(profile, env)
        if found is not None:
            return found
    for name in SHARED_VARIABLES:
        if name in own or not env.get(name) or (provider == "bedrock" and name in _DIR_VARIABLES):
            continue
        return CaBundle(env[name], name, is_dir=name in _DIR_VARIABLES)
    return None


def for_route(route: Any, settings: Any, env: Mapping[str, str] | None = None) -> CaBundle | None:
    """`resolve` for a configured route."""
    env = os.environ if env is None else env
    setting = getattr(settings, "ca_bundle", None)
    source = (
        "BULKHEAD_CA_BUNDLE"
        if setting and env.get("BULKHEAD_CA_BUNDLE") == setting
        else "ca_bundle in config.toml"
    )
    return resolve(
        route.provider,
        setting=setting,
        setting_source=source,
        profile=getattr(route, "profile", None),
        env=env,
    )


class CaBundleMissing(ValueError):
    """The route's CA bundle cannot be used (says which variable, which path, and why)."""


def check_route(route: Any, settings: Any) -> None:
    """Raise CaBundleMissing when the route's bundle does not exist (route setup, before any request)."""
    bundle = for_route(route, settings)
    if bundle is not None:
        problem = bundle.problem(route.name, route.provider)
        if problem:
            raise CaBundleMissing(problem)


def httpx_verify(route: Any, settings: Any) -> Any:
    """`verify=` for an httpx client: an SSLContext with the route's bundle, or True (the SDK's default)."""
    import ssl

    bundle = for_route(route, settings)
    if bundle is None:
        return True
    problem = bundle.problem(route.name, route.provider)
    if problem:
        raise CaBundleMissing(problem)
    if bundle.is_dir:
        return ssl.create_default_context(capath=bundle.path)
    return ssl.create_default_context(cafile=bundle.path)


def botocore_verify(route: Any, settings: Any) -> str | None:
    """`verify=` for a botocore client: the bundle's path, or None (botocore's own chain)."""
    bundle = for_route(route, settings)
    if bundle is None:
        return None
    problem = bundle.problem(route.name, route.provider)
    if problem:
        raise CaBundleMissing(problem)
    return bundle.path


def fetch_verify(settings: Any, env: Mapping[str, str] | None = None) -> Any:
    """`verify=` for web_fetch's httpx client: the bundle the httpx providers trust (`ca_bundle`, else
    SSL_CERT_FILE / SSL_CERT_DIR, else REQUESTS_CA_BUNDLE), or True (httpx's default). A bundle that does not
    exist raises CaBundleMissing, named as for a route."""
    import ssl

    bundle = resolve("web_fetch", setting=getattr(settings, "ca_bundle", None), env=env)
    if bundle is None:
        return True
    if not bundle.exists:
        kind = "folder" if bundle.is_dir else "file"
        raise CaBundleMissing(
            f"{bundle.source} = {bundle.path} does not exist (no such {kind}); web_fetch would fail TLS "
            "verification — point it at your proxy's CA bundle, or unset it"
        )
    if bundle.is_dir:
        return ssl.create_default_context(capath=bundle.path)
    return ssl.create_default_context(cafile=bundle.path)
