"""What the two httpx-based adapters (anthropic, openai) share: one client per event loop, the
exchange hooks that record the real bytes, provenance wrapping, and reading a stream.

Each adapter says how to make its client (`_new_client`), how to start a streamed request
(`_create`), how to parse its events (`_parser`) and what a 200 that is not a stream means
(`_from_body`); everything else — including HTML pages where JSON belongs — is here, once.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from app.providers.base import ProbeReply, Provider, ProviderError, Request, StreamEvent
from app.providers.wire import (
    CURRENT_EXCHANGE,
    Exchange,
    StreamParser,
    close_quietly,
    sdk_error,
    unexpected_200,
    wrap_unknown,
)


class HttpxSdkProvider(Provider):
    type_attrs: tuple[str, ...] = ("type",)  # where the SDK's exceptions keep the API's error type
    sdk_module: str = ""  # imported off the event loop before the first client (it takes ~1 s)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._client: Any = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    # -- what each adapter provides ------------------------------------------------------------------
    def _new_client(self) -> Any:
        raise NotImplementedError

    async def _create(self, client: Any, request: Request) -> Any:
        raise NotImplementedError

    def _parser(self, exchange: Exchange) -> StreamParser:
        raise NotImplementedError

    def _from_body(self, text: str, content_type: str | None, parser: StreamParser,
                   exchange: Exchange) -> list[StreamEvent]:
        raise NotImplementedError

    # -- the client ------------------------------------------------------------------------------------
    def _client_for_loop(self) -> Any:
        """The SDK client, made lazily (the SDK import is slow) and again for another event loop."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client = self._new_client()
            self._client_loop = loop
        return self._client

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            try:
                await client.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass

    async def _call(self, exchange: Exchange, call: Callable[[Any], Awaitable[Any]]) -> Any:
        """Run one SDK call with the exchange hooks recording it; every failure is a ProviderError."""
        try:
            if self.sdk_module and self.sdk_module not in sys.modules:
                await asyncio.to_thread(importlib.import_module, self.sdk_module)  # never block the loop on it
            client = self._client_for_loop()
        except Exception as exc:  # noqa: BLE001 - e.g. no credentials: still provider-origin
            raise wrap_unknown(self.kind, exc, exchange, in_stream=False) from exc
        token = CURRENT_EXCHANGE.set(exchange)
        try:
            return await call(client)
        except Exception as exc:  # noqa: BLE001 - every SDK failure becomes a ProviderError
            raise sdk_error(self.kind, exc, exchange, in_stream=False, type_attrs=self.type_attrs) from exc
        finally:
            CURRENT_EXCHANGE.reset(token)

    async def _probe_call(self, call: Callable[[Any], Awaitable[Any]]) -> ProbeReply:
        """A probe request (see `bulkhead probe`): any answer from the provider is a reply."""
        exchange = Exchange()
        result = await self._call(exchange, call)
        if isinstance(result, str):  # what the SDK makes of a 200 that is not JSON
            raise unexpected_200(self.kind, result, exchange,
                                 content_type=exchange.response_headers.get("content-type"))
        return ProbeReply(exchange.status or 200, exchange.actual_bytes)

    # -- streaming -------------------------------------------------------------------------------------
    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        exchange = Exchange()
        try:
            result = await self._call(exchange, lambda client: self._create(client, request))
        finally:
            exchange.apply(request)
        response = getattr(result, "response", None)
        if response is not None:
            exchange.saw_response(response.status_code, response.headers)
        exchange.apply(request)
        parser = self._parser(exchange)
        if isinstance(result, str):  # what the SDK makes of a 200 that is not JSON
            content_type = exchange.response_headers.get("content-type")
            for event in self._from_body(result, content_type, parser, exchange):
                yield event
            return
        if response is None:
            raise wrap_unknown(self.kind, TypeError(f"unexpected result {type(result).__name__}"), exchange,
                               in_stream=False)
        content_type = response.headers.get("content-type", "")
        if "event-stream" not in content_type.lower():
            try:
                raw = await response.aread()
            except Exception as exc:  # noqa: BLE001
                raise sdk_error(self.kind, exc, exchange, in_stream=True, type_attrs=self.type_attrs) from exc
            finally:
                await close_quietly(result)
            for event in self._from_body(raw.decode("utf-8", errors="replace"), content_type, parser, exchange):
                yield event
            return
        try:
            async for sdk_event in result:
                for event in parser.feed(sdk_event):
                    yield event
        except ProviderError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise sdk_error(self.kind, exc, exchange, in_stream=True, type_attrs=self.type_attrs) from exc
        finally:
            await close_quietly(result)
        for event in parser.finish():
            yield event
