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
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import aclosing
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
        self._users: dict[int, int] = {}  # id(client) -> requests using it now
        self._retired: list[Any] = []  # clients replaced after a failure, closed once unused

    # -- what each adapter provides ------------------------------------------------------------------
    def _new_client(self) -> Any:
        raise NotImplementedError

    async def _create(self, client: Any, request: Request) -> Any:
        raise NotImplementedError

    def _parser(self, exchange: Exchange) -> StreamParser:
        raise NotImplementedError

    def _from_body(
        self, text: str, content_type: str | None, parser: StreamParser, exchange: Exchange
    ) -> list[StreamEvent]:
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
        retired, self._retired = self._retired, []
        for old in (client, *retired):
            if old is not None:
                await _close(old)

    async def _acquire(self, exchange: Exchange) -> Any:
        """The client for one request (counted as in use until `_release`)."""
        try:
            if self.sdk_module and self.sdk_module not in sys.modules:
                await asyncio.to_thread(
                    importlib.import_module, self.sdk_module
                )  # never block the loop on it
            client = self._client_for_loop()
        except Exception as exc:  # e.g. no credentials: still provider-origin
            raise wrap_unknown(self.kind, exc, exchange, in_stream=False) from exc
        self._users[id(client)] = self._users.get(id(client), 0) + 1
        return client

    async def prepare(self) -> None:
        """The SDK imported (in a thread) and the client made, ahead of the first request."""
        try:
            client = await self._acquire(Exchange())
        except ProviderError:  # e.g. no credentials: the request will say so
            return
        await self._release(client)

    async def _release(self, client: Any) -> None:
        left = self._users.get(id(client), 1) - 1
        if left > 0:
            self._users[id(client)] = left
            return
        self._users.pop(id(client), None)
        if any(old is client for old in self._retired):
            self._retired = [old for old in self._retired if old is not client]
            await _close(client)

    def _fresh_connection(self) -> None:
        """After a failed request the next one goes on a new connection (issue 22): a gateway that answered
        413 before reading the whole body may read the rest as a new request and queue a stray reply (Caddy's
        431) on the pooled connection, which httpx would take as the answer to the retry. The client (and its
        pool) is replaced; the old one is closed as soon as no request uses it."""
        client, self._client = self._client, None
        if client is not None:
            self._retired.append(client)

    async def _call(
        self, exchange: Exchange, call: Callable[[Any], Awaitable[Any]], *, client: Any = None
    ) -> Any:
        """Run one SDK call with the exchange hooks recording it; every failure is a ProviderError."""
        own = client is None
        if own:
            client = await self._acquire(exchange)
        token = CURRENT_EXCHANGE.set(exchange)
        try:
            return await call(client)
        except Exception as exc:  # every SDK failure becomes a ProviderError
            self._fresh_connection()
            raise sdk_error(self.kind, exc, exchange, in_stream=False, type_attrs=self.type_attrs) from exc
        finally:
            CURRENT_EXCHANGE.reset(token)
            if own:
                await self._release(client)

    async def _probe_call(self, call: Callable[[Any], Awaitable[Any]]) -> ProbeReply:
        """A probe request (see `bulkhead probe`): any answer from the provider is a reply."""
        exchange = Exchange()
        result = await self._call(exchange, call)
        if isinstance(result, str):  # what the SDK makes of a 200 that is not JSON
            raise unexpected_200(
                self.kind, result, exchange, content_type=exchange.response_headers.get("content-type")
            )
        return ProbeReply(exchange.status or 200, exchange.actual_bytes)

    # -- streaming -------------------------------------------------------------------------------------
    async def stream(self, request: Request) -> AsyncIterator[StreamEvent]:
        exchange = Exchange()
        client = None
        try:
            client = await self._acquire(exchange)
            async with aclosing(
                self._stream(client, exchange, request)
            ) as events:  # closed before the release
                async for event in events:
                    yield event
        except ProviderError:
            self._fresh_connection()
            raise
        finally:
            if client is not None:
                await self._release(client)
            else:
                exchange.apply(request)

    async def _stream(
        self, client: Any, exchange: Exchange, request: Request
    ) -> AsyncGenerator[StreamEvent, None]:
        try:
            result = await self._call(exchange, lambda c: self._create(c, request), client=client)
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
            raise wrap_unknown(
                self.kind, TypeError(f"unexpected result {type(result).__name__}"), exchange, in_stream=False
            )
        content_type = response.headers.get("content-type", "")
        if "event-stream" not in content_type.lower():
            try:
                raw = await response.aread()
            except Exception as exc:
                raise sdk_error(self.kind, exc, exchange, in_stream=True, type_attrs=self.type_attrs) from exc
            finally:
                await close_quietly(result)
            for event in self._from_body(
                raw.decode("utf-8", errors="replace"), content_type, parser, exchange
            ):
                yield event
            return
        try:
            async for sdk_event in result:
                for event in parser.feed(sdk_event):
                    yield event
        except ProviderError:
            raise
        except Exception as exc:
            raise sdk_error(self.kind, exc, exchange, in_stream=True, type_attrs=self.type_attrs) from exc
        finally:
            await close_quietly(result)
        for event in parser.finish():
            yield event


async def _close(client: Any) -> None:
    try:
        await client.close()
    except Exception:  # closing is best effort
        pass
