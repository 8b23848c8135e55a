"""Lab fixtures: one embedded lab per test module, reset before each test, and the three real SDK clients."""

from __future__ import annotations

import json
import socket
import urllib.request
from functools import cached_property
from typing import Any

import pytest

from app.lab.embedded import LabHandle

MODEL = "lab-1"
BEDROCK_MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0"


@pytest.fixture
def lab(lab_server: LabHandle) -> LabHandle:
    """The module's lab with default settings, an empty log and a cold prompt cache."""
    lab_server.configure(gateway="none", cap=None, window=None, faults=None, seed=0, slow_pause=0.01)
    lab_server.clear_requests()
    lab_server.clear_cache()
    return lab_server


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAFAKELABLABLAB000")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "lab-secret")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


class SDK:
    """The real clients pointed at a lab, without retries; `ask_*` send one user message."""

    def __init__(self, url: str, timeout: float = 10.0) -> None:
        self.url, self.timeout = url, timeout

    @cached_property
    def anthropic(self):
        import anthropic

        return anthropic.Anthropic(base_url=self.url, api_key="lab-key", max_retries=0, timeout=self.timeout)

    @cached_property
    def openai(self):
        import openai

        return openai.OpenAI(
            base_url=self.url + "/v1", api_key="lab-key", max_retries=0, timeout=self.timeout
        )

    @cached_property
    def bedrock(self):
        import boto3
        from botocore.config import Config

        config = Config(
            retries={"total_max_attempts": 1}, read_timeout=self.timeout, connect_timeout=self.timeout
        )
        return boto3.client("bedrock-runtime", region_name="us-east-1", endpoint_url=self.url, config=config)

    def ask_anthropic(self, text: str, max_tokens: int = 1024, **kw: Any):
        return self.anthropic.messages.create(
            model=MODEL, max_tokens=max_tokens, messages=[{"role": "user", "content": text}], **kw
        )

    def ask_openai(self, text: str, **kw: Any):
        return self.openai.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": text}], **kw
        )

    def ask_bedrock(self, text: str, **kw: Any):
        return self.bedrock.converse(
            modelId=BEDROCK_MODEL, messages=[{"role": "user", "content": [{"text": text}]}], **kw
        )

    def stream_anthropic(self, text: str, max_tokens: int = 1024) -> tuple[list[str], Any]:
        """Text deltas as they arrived, then the final message (or the exception, re-raised by the caller)."""
        pieces: list[str] = []
        with self.anthropic.messages.stream(
            model=MODEL, max_tokens=max_tokens, messages=[{"role": "user", "content": text}]
        ) as stream:
            for piece in stream.text_stream:
                pieces.append(piece)
            return pieces, stream.get_final_message()

    def stream_openai(self, text: str) -> tuple[list[str], list[Any]]:
        pieces, chunks = [], []
        for chunk in self.openai.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": text}],
            stream=True,
            stream_options={"include_usage": True},
        ):
            chunks.append(chunk)
            if chunk.choices and chunk.choices[0].delta.content:
                pieces.append(chunk.choices[0].delta.content)
        return pieces, chunks

    def stream_bedrock(self, text: str, pieces: list[str] | None = None) -> tuple[list[str], list[dict]]:
        pieces = [] if pieces is None else pieces
        events = []
        response = self.bedrock.converse_stream(
            modelId=BEDROCK_MODEL, messages=[{"role": "user", "content": [{"text": text}]}]
        )
        for event in response["stream"]:
            events.append(event)
            if "contentBlockDelta" in event and "text" in event["contentBlockDelta"]["delta"]:
                pieces.append(event["contentBlockDelta"]["delta"]["text"])
        return pieces, events


@pytest.fixture
def sdk(lab: LabHandle, aws_env: None) -> SDK:
    return SDK(lab.url)


@pytest.fixture
def make_sdk(lab: LabHandle, aws_env: None):
    """SDK clients with another timeout: make_sdk(timeout=0.3)."""
    return lambda timeout=10.0: SDK(lab.url, timeout)


@pytest.fixture
def bedrock_model() -> str:
    return BEDROCK_MODEL


@pytest.fixture
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def http_json(url: str, method: str = "GET", body: Any = None) -> tuple[int, Any]:
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    request = urllib.request.Request(
        url, data=data, method=method, headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


@pytest.fixture
def control():
    """GET/POST/DELETE against the lab's HTTP control plane: control(url, method, body) -> (status, json)."""
    return http_json
