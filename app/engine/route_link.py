"""The route link: the route a session talks to and everything derived from it — the output limits, the window
the catalog knows, the sender (with its rejection handler and the endpoint's size evidence), the summarizer's
route — and `/model`, which moves the session to another route.

It sees the engine only through `RouteHost` (app.engine.host).
"""

from __future__ import annotations

import contextlib
import functools
from typing import TYPE_CHECKING

from app.engine.failures import PAYLOAD_KINDS, Failure
from app.engine.notice_words import notice
from app.engine.profile_evidence import StreamQuirks, apply_profile, on_failure
from app.engine.resets import SizeEvidence
from app.engine.sender import Sender
from app.engine.user_rules import build_rules
from app.model.events import Rejection
from app.model.notice_facts.routes import RouteSwitched
from app.providers.catalog import model_limits
from app.providers.factory import make_provider

if TYPE_CHECKING:
    from app.config import Route
    from app.engine.host import RouteHost
    from app.providers.base import Provider, Request


class RouteLink:
    def __init__(self, host: RouteHost) -> None:
        self.host = host
        self._summarizer: tuple[Provider, Sender] | None = None

    def forget_summarizer(self) -> None:
        """The settings changed: the next summary builds its route's provider again."""
        self._summarizer = None

    def use(self, route: Route, provider: Provider) -> None:
        """Derive everything that depends on the route: limits, the sender, cached sizes."""
        self.host.route = route
        self.host.provider = provider
        limits = model_limits(route.provider, route.model)
        # A configured max_output_tokens (the route's, else an explicit global one) wins over the catalog's
        # guess: for a model the catalog does not know, it is also the ceiling of the escalations.
        configured = route.max_output_tokens or (
            self.host.settings.max_output_tokens
            if "max_output_tokens" in self.host.settings.sources
            else None
        )
        cap = limits.max_output_tokens
        if configured and (limits.source == "default" or configured > cap):
            cap = configured
        self.host.model_output_cap = cap
        self.host.max_tokens = min(configured or self.host.settings.max_output_tokens, cap)
        self.host.catalog_window = (
            route.context_window or self.host.settings.context_window or limits.context_window
        )
        self.host.sender = self.make_sender(provider, route.name)
        apply_profile(provider, self.host.state)  # betas this endpoint refused are not sent again
        self._summarizer = None
        self.host.route_changed()  # cached sizes and plans go; the provider's compaction threshold is set again

    async def switch(self, route: Route, provider: Provider) -> None:
        """`/model ROUTE`: continue this session on another route (the old provider is closed)."""
        async with self.host.lock:
            old = self.host.provider
            self.use(route, provider)
            self.host.session.set_route(route.name, route.provider, route.model)
            await self.host.fallback.reset(route, provider, old)
        with contextlib.suppress(Exception):
            await old.aclose()
        self.host.emit(notice(RouteSwitched(route=route.name, provider=route.provider, model=route.model)))
        self.host.view_changed("route")

    def make_sender(self, provider: Provider, route_name: str) -> Sender:
        return Sender(
            self.host.session,
            provider,
            route=route_name,
            emit=self.host.emit,
            retry_policy=self.host.retry_policy,
            drop_threshold=self.host.settings.drop_payload_min_bytes,
            on_rejection=self.on_rejection,
            sleep=self.host.sleep,
            size_evidence=self.size_evidence(provider.route),
            user_rules=build_rules(self.host.settings.classifier_rules),
            floor_bytes=(lambda: self.host.floor_sizes().total_bytes)
            if provider is self.host.provider
            else None,
            cap=functools.partial(self.host.route_cap, provider.route),
            on_stream=StreamQuirks(self.host.state, provider.route.endpoint_id),
        )

    def size_evidence(self, route: Route) -> SizeEvidence:
        """What this route's endpoint has shown about body sizes: a remembered payload cap is a refusal, and this
        session's own requests on the route say what it took before (a resumed session, a `-c -p` run, judges a
        reset with the same evidence as the session that is still open — for every SDK)."""
        evidence = SizeEvidence()
        learned = self.host.state.learned_cap(route.endpoint_id)
        if learned is not None and learned.kind in PAYLOAD_KINDS and learned.rejected_bytes:
            evidence.refused(learned.rejected_bytes)
        try:
            accepted, refused = self.host.session.store.route_sizes(
                self.host.session.id, route.name, route.provider
            )
        except Exception:  # evidence is a help, never a reason to fail a turn
            accepted, refused = None, None
        evidence.accepted(accepted)
        evidence.refused(refused)
        return evidence

    def summarizer(self) -> tuple[Provider, Sender]:
        """The summarizer route's provider (compact_model, else the session's) and a sender for it."""
        if self._summarizer is None:
            name = self.host.settings.compact_model
            if name and name != self.host.route.name:
                from app.secrets import get_api_key

                route = self.host.settings.route(name)
                provider = make_provider(
                    route, self.host.settings, get_api_key(route.provider, route.api_key_env).value
                )
                self._summarizer = (provider, self.make_sender(provider, route.name))
            else:
                self._summarizer = (self.host.provider, self.host.sender)
        return self._summarizer

    def summarizer_window(self) -> int:
        provider, _ = self.summarizer()
        if provider is self.host.provider:
            return self.host.context_window
        return (
            provider.route.context_window
            or model_limits(provider.route.provider, provider.route.model).context_window
        )

    async def on_rejection(self, failure: Failure, request: Request) -> None:
        self.host.emit(
            Rejection(
                kind=failure.kind,
                bytes=failure.rejected_bytes or request.actual_bytes,
                reason=failure.reason,
                status=failure.status,
                evidence=tuple(failure.evidence),
                payload_related=failure.payload_related,
                recoverable=failure.recoverable,
                cause=failure.cause,
                incident_id=failure.incident_id,
            )
        )
        route = (
            self.host.route
            if request.route == self.host.route.name
            else self.host.settings.routes.get(request.route)
        )
        if route is not None:  # what the refusal shows about the endpoint goes to its profile
            on_failure(self.host.state, route.endpoint_id, failure)
        await self.host.hooks.request_rejected(
            failure.kind,
            list(failure.evidence),
            failure.rejected_bytes or request.actual_bytes,
            self.host.cap_info().bytes,
        )
