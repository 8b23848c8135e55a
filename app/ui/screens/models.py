"""The model picker (/model): every route, and the models each one's endpoint lists.

Each route's configured model is there at once; each route's list is then asked for in its own
worker (the title counts what is still loading), and a route that cannot say — no key, a gateway
that refuses, no answer in `model_list_timeout` — gets one line saying why. Each model shows its
context window and output cap (the catalog's, or the endpoint's own when it says). Typing filters;
Enter picks (the screen's result is `(route, model)`); Esc goes back.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Static

from app.textsafe import display_line
from app.ui.screens.list_typing import typed_into


def _tokens(count: int) -> str:
    if count >= 1_000_000 and count % 1_000_000 == 0:
        return f"{count // 1_000_000}M"
    if count >= 1000:
        return f"{count / 1000:.0f}k" if count % 1000 == 0 or count >= 100_000 else f"{count / 1000:.1f}k"
    return str(count)


class ModelScreen(ModalScreen[tuple[str, str] | None]):
    """Pick a route and a model."""

    HELP = """\
## Models

- **type**: filter by route, model or name · **↑ / ↓**: choose · **Enter**: use it (remembered for the route)
- **Esc**: back. A route whose list could not be read says why; its configured model is still there.
"""
    BINDINGS = [
        Binding("escape", "cancel", "Back", id="models.back"),
        Binding("enter", "pick", "Use", id="models.pick", priority=True),
    ]

    def __init__(
        self,
        routes: list[Any],
        *,
        current: tuple[str, str],
        load: Callable[[Any], Awaitable[Any]],
        chain: str = "",
    ) -> None:
        super().__init__()
        self.chain = chain  # the session's fallback chain in words (app.engine.fallback), "" without one
        self.routes = routes
        self.current = current
        self.load = load
        self.rows: list[dict[str, Any]] = []  # every row known, in route order
        self.shown: list[dict[str, Any]] = []
        self.pending = {route.name for route in routes}
        self.errors: dict[str, str] = {}

    def compose(self) -> ComposeResult:
        with Vertical(id="models-dialog"):
            yield Static("", id="models-title", markup=False)
            # Not selected on focus: a letter typed on the list moves the focus back here and is kept.
            yield Input(
                placeholder="filter by route, model or name…", id="models-filter", select_on_focus=False
            )
            yield DataTable(id="models-table", cursor_type="row", zebra_stripes=True)
            yield Static(
                (f"fallback chain: {display_line(self.chain)}\n" if self.chain else "")
                + "Enter uses it (remembered for the route) · type to filter · Esc back",
                id="models-keys",
                markup=False,
            )

    @property
    def table(self) -> DataTable:
        return self.query_one("#models-table", DataTable)

    def on_mount(self) -> None:
        if self.chain:  # the chain's line above the keys
            self.query_one("#models-keys", Static).styles.height = "auto"
        self.table.add_columns("route", "model", "window", "output cap", "")
        from app.providers.catalog import model_limits

        for route in self.routes:
            limits = model_limits(route.provider, route.model)
            self.rows.append(
                {
                    "route": route.name,
                    "model": route.model,
                    "name": "",
                    "note": "configured",
                    "window": route.context_window or limits.context_window,
                    "max_output": route.max_output_tokens or limits.max_output_tokens,
                    "error": False,
                }
            )
            self._load(route)
        self._refresh()
        self.query_one("#models-filter", Input).focus()

    @work(exit_on_error=False, name="list models")
    async def _load(self, route: Any) -> None:
        try:
            found = await self.load(route)
        except Exception as exc:  # shown on the route's line
            self._loaded(route, [], f"{type(exc).__name__}: {exc}")
            return
        self._loaded(route, list(found.models), found.error)

    def _loaded(self, route: Any, models: list[Any], error: str) -> None:
        self.pending.discard(route.name)
        rows = [r for r in self.rows if r["route"] != route.name]
        at = next((i for i, r in enumerate(self.rows) if r["route"] == route.name), len(rows))
        mine = [
            {
                "route": route.name,
                "model": m.model,
                "name": m.name,
                "window": m.window,
                "max_output": m.max_output,
                "note": ("configured" if m.model == route.model else m.note or m.name),
                "error": False,
            }
            for m in models
        ]
        if error:
            self.errors[route.name] = error
            mine.append(
                {
                    "route": route.name,
                    "model": "",
                    "name": "",
                    "window": 0,
                    "max_output": 0,
                    "note": f"✖ could not list: {error}",
                    "error": True,
                }
            )
        self.rows = rows[:at] + mine + rows[at:]
        self._refresh()

    def _refresh(self) -> None:
        needle = self.query_one("#models-filter", Input).value.strip().lower()
        keep = self._highlighted()
        self.shown = [
            r
            for r in self.rows
            if r["error"]
            or not needle
            or any(needle in str(r[k]).lower() for k in ("route", "model", "name"))
        ]
        table = self.table
        table.clear()
        for row in self.shown:
            here = " ●" if (row["route"], row["model"]) == self.current else ""
            table.add_row(
                row["route"],
                display_line(row["model"]) + here,
                _tokens(row["window"]) if row["window"] else "",
                _tokens(row["max_output"]) if row["max_output"] else "",
                display_line(row["note"])[:70],
            )
        keys = [(r["route"], r["model"]) for r in self.shown]
        target = keep if keep in keys else self.current if self.current in keys else None
        if target is not None:
            table.move_cursor(row=keys.index(target))
        total = sum(1 for r in self.rows if not r["error"])
        state = (
            f"loading {len(self.pending)} of {len(self.routes)} route(s)…"
            if self.pending
            else f"{total} models on {len(self.routes)} route(s)"
        )
        failed = f" · {len(self.errors)} could not list theirs" if self.errors else ""
        self.query_one("#models-title", Static).update(f"Models — {state}{failed}")

    def _highlighted(self) -> tuple[str, str] | None:
        try:
            row = self.table.cursor_row
        except Exception:  # before the table has rows
            return None
        if 0 <= row < len(self.shown) and not self.shown[row]["error"]:
            return self.shown[row]["route"], self.shown[row]["model"]
        return None

    @on(Input.Changed, "#models-filter")
    def _filter(self) -> None:
        self._refresh()

    def on_key(self, event) -> None:
        if event.key in ("up", "down", "pageup", "pagedown") and self.focused is not self.table:
            self.table.focus()
        elif self.focused is self.table:  # typing on the list goes on filtering (its letters went nowhere)
            typed_into(self.query_one("#models-filter", Input), event)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_pick(self) -> None:
        picked = self._highlighted()
        if picked is not None:
            self.dismiss(picked)
