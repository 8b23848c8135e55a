"""Importing the adapters (and building requests) never imports an SDK: they take seconds to import."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
import app.providers.anthropic, app.providers.openai, app.providers.bedrock, app.providers.lab
import app.providers.catalog, app.providers.wire, app.providers.html
from app.config import Route, Settings
from app.model.messages import Message
from app.providers.factory import make_provider
from app.model.tools import ToolSpec

tool = ToolSpec("read_file", "Read a file.", {"type": "object"})
for provider, model in (("anthropic", "claude-sonnet-5"), ("openai", "gpt-4o"),
                        ("bedrock", "anthropic.claude-sonnet-4-5-20250929-v1:0"), ("lab", "lab-1")):
    adapter = make_provider(Route(name=provider, provider=provider, model=model), Settings(), "FAKE-key")
    request = adapter.build([Message.create("user", "hi")], "system", [tool], max_tokens=10)
    assert request.predicted_bytes > 0
loaded = {"anthropic", "openai", "boto3", "botocore", "httpx2", "httpx"} & set(sys.modules)
assert not loaded, loaded
print("ok")
"""


def test_adapters_do_not_import_sdks():
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_the_documented_one_liner():
    line = (
        "import app.providers.anthropic, app.providers.openai, app.providers.bedrock, sys; "
        "assert not {'anthropic','openai','boto3','botocore'} & set(sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", line], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
