"""The `lab` provider: bulkhead's gateway lab, spoken to in the Anthropic wire format.

With `base_url` on the route it talks to a running `bulkhead lab`; without one it starts the lab in-process
on first use, once, with the `start_lab` it was given (the engine registers the embedded lab's,
`app.engine.lab_provider`: this package sits below `app.lab`), and keeps the handle in `LabProvider.lab` so the
caller can say so, reconfigure it, or read what it received.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from app.config import Route, Settings
from app.providers.anthropic import AnthropicProvider
from app.providers.base import ListedModel, ProbeFloor, ProbeReply, ProviderError, Request, StreamEvent
from app.providers.wire import Exchange, wrap_unknown

LAB_API_KEY = "sk-lab-placeholder"  # the lab accepts any key; the SDK wants one
NOT_STARTED_URL = "lab://embedded"


class LabProvider(AnthropicProvider):
    kind = "lab"

    def __init__(
        self,
        route: Route,
        settings: Settings,
        api_key: str | None = None,
        *,
        start_lab: Callable[..., Any] | None = None,
    ) -> None:
        super().__init__(route, settings, api_key)
        self.lab: Any = None  # app.lab.embedded.LabHandle once started
        self._start_lab = start_lab  # app.lab.embedded.start_embedded_lab, given by the engine
        self._lab_lock = threading.Lock()

    def _base_url(self) -> str:
        if self.route.base_url:
            return self.route.base_url
        return self.lab.url if self.lab is not None else NOT_STARTED_URL

    def _resolve_key(self) -> str | None:
        return self.api_key or LAB_API_KEY

    def _start_once(self) -> Any:
        with self._lab_lock:
            if self.lab is None:
                if self._start_lab is None:
                    raise RuntimeError(
                        f"route {self.route.name!r} has no base_url and there is no embedded lab here: start one "
                        f"with `bulkhead lab` and set base_url to its address"
                    )
                options: dict[str, Any] = {}
                if self.route.context_window:
                    options["window"] = self.route.context_window
                self.lab = self._start_lab(**options)
                self._client = None  # any client made before pointed nowhere
            return self.lab

    async def ensure_started(self) -> None:
        """Start the embedded lab if this route has none of its own (a ProviderError if it cannot)."""
        if not self.route.base_url and self.lab is None:
            try:
                await asyncio.to_thread(self._start_once)
            except Exception as exc:  # the lab is this provider's server
                raise wrap_unknown(self.kind, exc, Exchange(), in_stream=False) from exc

    async def prepare(self) -> None:
        """The embedded lab started, then the SDK and its client, ahead of the first request."""
        try:
            await self.ensure_started()
        except ProviderError:  # the request will say why
            return
        await super().prepare()

    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        await self.ensure_started()
        request.url = self._url()
        async for event in super().stream(request):
            yield event

    async def probe(self, size: int, floor: ProbeFloor | None = None) -> ProbeReply:
        await self.ensure_started()
        return await super().probe(size, floor)

    async def probe_texts(self, texts: Sequence[str]) -> ProbeReply:
        await self.ensure_started()
        return await super().probe_texts(texts)

    async def list_models(self) -> list[ListedModel]:
        await self.ensure_started()
        return await super().list_models()

    async def aclose(self) -> None:
        await super().aclose()
        lab, self.lab = self.lab, None
        if lab is not None:
            await asyncio.to_thread(lab.stop)
