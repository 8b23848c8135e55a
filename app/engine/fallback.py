"""The provider fallback chain: when a route cannot answer, the same turn goes on through the next one.

    chain = fallback_chain(settings, "anthropic")     # ("anthropic", "bedrock", "local")
    result = await engine.fallback.request(turn, max_tokens)   # instead of engine._request(...)

A route hands the turn on only after its own retries (the sender's backoff) and only for a failure the route
itself cannot get past (`fallback_on`; `moving_kind`): overloaded, 5xx, a rate limit past its retry-after budget,
a timeout, a drop that is not about size, an auth refusal, a content block, a model the route does not know. A
request refused for its size (413, a WAF's size block, a context overflow, headers too large) is recovered on
the route that refused it — the ladder runs there, and its failure ends the turn; switching never "solves" size.

The next route builds the same turn from the same view with its own adapter, cap, window and floor (the engine
switches to it: `_use_route`), and its own recovery applies. Nothing that became visible is asked for again: when
the route failed after part of the answer was on screen, the partial answer is kept and the user is asked
(`fallback_after_partial`: the TUI asks; `-p` stops and says so unless `--fallback-after-partial`); the next
route then continues it (the CONTINUATION notice) rather than starting over.

Each turn starts on the chain's first route unless `fallback_sticky = true` (then the route that answered
stays). Every move is an event (`FallbackMoved`) and a turn answered elsewhere says by whom and why
(`FallbackAnswered`: "anthropic: 529 overloaded after 2 retries → answered by bedrock").
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from app.config import ConfigError, fallback_chain
from app.engine.notice_words import notice
from app.engine.recovery import TurnFailed
from app.model.events import FallbackAnswered, FallbackMoved
from app.model.fallback import STAYING_KINDS, FallbackKind
from app.model.messages import Message
from app.model.notice_facts.routes import FallbackBackOnFirst, FallbackRouteSkipped
from app.model.prompts import CONTINUATION

if TYPE_CHECKING:
    from app.config import Route, Settings
    from app.engine.failures import Failure
    from app.engine.sender import StreamResult
    from app.engine.session import Session
    from app.model.events import Event
    from app.providers.base import Provider
    from app.state import State

# A route's own answer that it does not know the model (Anthropic `not_found_error: model: …`, OpenAI
# `model_not_found` / "The model `x` does not exist", Bedrock "The provided model identifier is invalid").
_MODEL_WORD_RE = re.compile(r"\bmodel\b|model_not_found|model identifier", re.I)
_MISSING_RE = re.compile(
    r"not[ _]found|does not exist|doesn't exist|invalid|unknown|no such|not supported|not available", re.I
)
# Connection failures the classifier keeps as kind `other` (their own rules): a drop of a small request, a stream
# cut after a 200, a connection that could not be made or was refused, a proxy refusing the tunnel. None is about
# the request's size, and another route (another host, another way out) may well get through.
_CONNECTION_RULES = frozenset(
    {"net.reset-unproven", "net.cut-after-200", "net.connect-failed", "net.refused", "proxy.tunnel-refused"}
)
_KIND_WORDS = {
    FallbackKind.OVERLOADED: "overloaded",
    FallbackKind.SERVER_ERROR: "server error",
    FallbackKind.RATE_LIMIT: "rate limited",
    FallbackKind.TIMEOUT: "timed out",
    FallbackKind.CONNECTION_DROP: "connection dropped",
    FallbackKind.AUTH: "auth refused",
    FallbackKind.CONTENT_BLOCK: "content blocked",
    FallbackKind.MODEL_NOT_FOUND: "model not found",
}

Asker = Callable[[str], Awaitable[bool]]  # (the question) -> continue on the next route?


def moving_kind(failure: Failure | None) -> FallbackKind | None:
    """The fallback kind of a failure that ended a route's attempt, or None when the turn stays (size and
    shape problems, failures no other route would change)."""
    if failure is None:
        return None
    if failure.cause == "content":  # a gateway judging the conversation's text (never its size)
        return FallbackKind.CONTENT_BLOCK
    if failure.payload_related or failure.kind in STAYING_KINDS:
        return None
    if failure.kind in (kind.value for kind in FallbackKind):
        return FallbackKind(failure.kind)
    if failure.rule_id in _CONNECTION_RULES:
        return FallbackKind.CONNECTION_DROP
    said = " ".join((failure.reason, *failure.evidence))
    if (
        failure.status in (400, 404)
        and _MODEL_WORD_RE.search(said)
        and (failure.status == 404 or _MISSING_RE.search(said))
    ):
        return FallbackKind.MODEL_NOT_FOUND
    return None


def move_reason(
    route: str, failure: Failure, kind: FallbackKind, retries: int, *, partial: bool = False
) -> str:
    """`anthropic: 529 overloaded after 2 retries` — why a route gave the turn up, in one line."""
    status = f"{failure.status} " if failure.status and failure.status >= 400 else ""
    after = f" after {retries} {'retry' if retries == 1 else 'retries'}" if retries else ""
    return f"{route}: {status}{_KIND_WORDS[kind]}{after}{' mid-answer' if partial else ''}"


class FallbackHost(Protocol):
    """What the chain uses of the engine (app.engine.turn.Engine satisfies it)."""

    settings: Settings
    session: Session
    state: State
    route: Route
    provider: Provider
    model_output_cap: int

    def emit(self, event: Event) -> None: ...

    def _use_route(self, route: Route, provider: Provider) -> None: ...

    async def _request(self, turn: int, max_tokens: int) -> StreamResult: ...

    async def _boundary(self, turn: int, max_tokens: int) -> None: ...


@dataclass
class _Turn:
    started_on: str
    tried: list[str]
    moves: list[str]
    partials: list[str]


class FallbackChain:
    def __init__(self, engine: FallbackHost) -> None:
        self.engine = engine
        self.head = engine.route  # the chain's first route: each turn starts here unless sticky
        self.providers: dict[str, Provider] = {engine.route.name: engine.provider}
        self.routes: dict[str, Route] = {engine.route.name: engine.route}
        self.asker: Asker | None = None  # the TUI's question after a partial answer (None: `-p`)
        self.after_partial = engine.settings.fallback_after_partial  # `-p --fallback-after-partial`: continue
        self._turn: _Turn | None = None

    # -- the chain --------------------------------------------------------------------------------
    def chain(self) -> tuple[str, ...]:
        """The routes a turn may use, first to last (just the head when no fallback is configured)."""
        if self.head.name not in self.engine.settings.routes:
            return (self.head.name,)
        return fallback_chain(self.engine.settings, self.head.name)

    def describe(self) -> str:
        """`anthropic → bedrock → local (moves on after …; each turn starts on anthropic)` for `/model`."""
        chain = self.chain()
        if len(chain) == 1:
            return f'{chain[0]} (no fallback: set fallback = ["ROUTE", …] on the route, or globally)'
        settings = self.engine.settings
        now = f"; now on {self.engine.route.name}" if self.engine.route.name != self.head.name else ""
        stays = (
            "the route that answered stays" if settings.fallback_sticky else f"each turn starts on {chain[0]}"
        )
        return f"{' → '.join(chain)} (moves on after {', '.join(settings.fallback_on) or 'nothing'}; {stays}{now})"

    async def reset(self, route: Route, provider: Provider, old: Provider | None = None) -> None:
        """`/model ROUTE`: the chain starts on `route` from now on; the providers built for the old chain are
        closed (but `old`, which the engine closes itself)."""
        for kept in list(self.providers.values()):
            if kept is not provider and kept is not old:
                with contextlib.suppress(Exception):
                    await kept.aclose()
        self.head = route
        self.providers = {route.name: provider}
        self.routes = {route.name: route}
        self._turn = None

    def take_partials(self) -> list[str]:
        """Partial answers kept on routes that failed mid-answer, before the route that continued them."""
        if self._turn is None or not self._turn.partials:
            return []
        partials, self._turn.partials = self._turn.partials, []
        return partials

    # -- a turn -------------------------------------------------------------------------------------
    def turn_started(self) -> None:
        """A new turn: back on the chain's first route unless `fallback_sticky` (quietly said)."""
        engine = self.engine
        self._turn = None
        if engine.route.name == self.head.name or engine.settings.fallback_sticky:
            return
        provider = self.providers.get(self.head.name)
        if provider is None:
            return
        engine._use_route(self.routes.get(self.head.name, self.head), provider)
        engine.emit(notice(FallbackBackOnFirst(route=self.head.name)))

    async def request(self, turn: int, max_tokens: int) -> StreamResult:
        """One request of the turn, moving along the chain when the route cannot answer."""
        engine = self.engine
        if self._turn is None:
            self._turn = _Turn(engine.route.name, [engine.route.name], [], [])
        state = self._turn
        while True:
            retries_before = engine.session.counters.retries
            try:
                result = await engine._request(turn, max_tokens)
            except TurnFailed as failed:
                kind = moving_kind(failed.failure)
                if kind is None or kind.value not in engine.settings.fallback_on or failed.failure is None:
                    self._raise_spent(failed)
                    raise
                retries = engine.session.counters.retries - retries_before
                reason = move_reason(engine.route.name, failed.failure, kind, retries, partial=failed.visible)
                target = self._next(reason)
                if target is None:
                    self._raise_spent(failed, reason)
                    raise
                route, provider = target
                if failed.visible and not await self._may_continue(failed, reason, route.name):
                    raise TurnFailed(
                        self._partial_refused(failed, reason, route.name), failed.failure, visible=True
                    ) from failed
                self._move(route, provider, kind, reason, failed, retries, turn)
                max_tokens = min(max_tokens, engine.model_output_cap)
                await engine._boundary(turn, max_tokens)  # the new route's cap and window decide
                continue
            if state.moves and engine.route.name != state.started_on:
                engine.emit(
                    FallbackAnswered(
                        route=engine.route.name, started_on=state.started_on, moves=tuple(state.moves)
                    )
                )
                if engine.settings.fallback_sticky:
                    route = engine.route
                    engine.session.set_route(route.name, route.provider, route.model)
                state.moves.clear()
            return result

    # -- pieces ---------------------------------------------------------------------------------------
    def _next(self, reason: str) -> tuple[Route, Provider] | None:
        """The next route of the chain not tried in this turn that can be built (a route without a key is
        skipped, and said so); None when none is left."""
        assert self._turn is not None
        engine = self.engine
        chain = self.chain()
        current = engine.route.name
        start = chain.index(current) + 1 if current in chain else 0
        for name in chain[start:]:
            if name in self._turn.tried:
                continue
            self._turn.tried.append(name)
            try:
                return self._built(name)
            except (ConfigError, OSError, ValueError) as exc:
                engine.emit(notice(FallbackRouteSkipped(route=name, reason=reason, error=str(exc))))
        return None

    def _built(self, name: str) -> tuple[Route, Provider]:
        """Route `name` as this run uses it (the model /model chose for it) and its provider, built once."""
        if name in self.providers and name in self.routes:
            return self.routes[name], self.providers[name]
        from app.engine.route_choice import choose_route, with_model
        from app.providers.factory import make_provider

        choice = with_model(choose_route(self.engine.settings, name), self.engine.state)
        provider = make_provider(choice.route, self.engine.settings, choice.api_key)
        self.routes[name], self.providers[name] = choice.route, provider
        return choice.route, provider

    def _move(
        self,
        route: Route,
        provider: Provider,
        kind: FallbackKind,
        reason: str,
        failed: TurnFailed,
        retries: int,
        turn: int,
    ) -> None:
        engine, state = self.engine, self._turn
        assert state is not None
        from_route = engine.route.name
        if failed.visible:  # the partial answer stays; the next route continues it instead of starting over
            last = engine.session.view.messages[-1] if engine.session.view.messages else None
            if last is not None and last.role == "assistant" and last.meta.partial:
                state.partials.append(last.text)
            engine.session.append(Message.create("user", CONTINUATION, turn=turn, origin="notice"))
        state.moves.append(reason)
        engine.session.counters.fallbacks += 1
        engine.session.save_counters()
        engine._use_route(route, provider)
        engine.emit(
            FallbackMoved(
                from_route=from_route,
                to_route=route.name,
                kind=kind.value,
                reason=reason,
                status=failed.failure.status if failed.failure is not None else None,
                retries=retries,
                after_partial=failed.visible,
            )
        )

    async def _may_continue(self, failed: TurnFailed, reason: str, route: str) -> bool:
        """After a partial answer: continue it on `route`? (`fallback_after_partial`; the TUI asks.)"""
        if self.after_partial == "continue":
            return True
        if self.after_partial == "stop" or self.asker is None:
            return False
        question = (
            f"{reason} — part of the answer had already arrived (it is kept, marked partial). Continue it on "
            f"{route}? {route} gets the conversation with the partial answer and is asked to go on from where "
            f"it stopped; nothing is asked twice."
        )
        try:
            return bool(await self.asker(question))
        except Exception:  # a broken question means "no": the partial answer stays either way
            return False

    def _partial_refused(self, failed: TurnFailed, reason: str, route: str) -> str:
        if self.after_partial == "stop":
            how = "fallback_after_partial = stop"
        elif self.asker is None:
            how = (
                "-p does not move on after a partial answer: pass --fallback-after-partial (or set "
                'fallback_after_partial = "continue") to let it continue there'
            )
        else:
            how = "you chose to stop"
        return f"{failed.message} — not moved on to {route} ({reason}; {how})"

    def _raise_spent(self, failed: TurnFailed, reason: str = "") -> None:
        """When the chain moved in this turn, or has no route left to move to (`reason`: why this one gave up), the
        failure that ends the turn says so and names the routes tried; otherwise the caller raises it as it is."""
        state = self._turn
        moved = list(state.moves) if state is not None else []
        if not moved and (not reason or len(self.chain()) == 1):  # no chain configured: nothing to add
            return
        if reason:
            said = f"no route left in the fallback chain: {' → '.join([*moved, reason])}"
        else:
            said = f"on {self.engine.route.name}, after the fallback chain moved: {' → '.join(moved)}"
        raise TurnFailed(f"{failed.message} ({said})", failed.failure, visible=failed.visible) from failed

    async def aclose(self) -> None:
        """Close the providers built for the chain's other routes (the engine closes its own)."""
        for provider in list(self.providers.values()):
            if provider is not self.engine.provider:
                with contextlib.suppress(Exception):
                    await provider.aclose()
