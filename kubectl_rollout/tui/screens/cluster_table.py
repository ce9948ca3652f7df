"""What the Nodes and Workloads screens share: a table of rows the agent answers with, refreshed and filtered.

A refresh asks the agent (``load``) and hands the rows to the app's
``LiveTable``, which touches only the cells whose value changed. `/` opens the
app's ``FilterBar`` (rows whose text contains every word typed stay; Escape
clears it). Errors from the agent (its messages say what failed and what to
do) go to the status line, in red, beside the table's summary.

The screen takes the agent link and its cluster from the app (``cluster_link``,
``cluster_scope``) when the app makes it for a mode, or from its caller.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import ClassVar, Generic, TypeVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from kubectl_rollout.agent.errors import AgentError
from kubectl_rollout.jobs.spec import Connection
from kubectl_rollout.tui.agent_calls import CallRunner
from kubectl_rollout.tui.cluster_scope import ClusterScope
from kubectl_rollout.tui.screens.dialogs.confirm import ConfirmScreen
from kubectl_rollout.tui.widgets.filter_bar import FilterBar
from kubectl_rollout.tui.widgets.live_table import Cell, LiveTable

Row = TypeVar("Row")


class ClusterTableScreen(Screen[None], Generic[Row]):
    DEFAULT_CSS = """
    ClusterTableScreen .heading { height: 1; padding: 0 1; color: $text-muted; }
    ClusterTableScreen LiveTable { height: 1fr; }
    ClusterTableScreen .detail { height: auto; max-height: 6; padding: 0 1; border-top: solid $panel; }
    ClusterTableScreen .status { height: 1; padding: 0 1; color: $text-muted; }
    ClusterTableScreen .status.-error { color: $error; }
    """
    #: every table's keys; a screen lists its own actions first, then these (its BINDINGS)
    TABLE_BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "filter", "Filter"),
        Binding("g", "refresh", "Refresh"),
    ]
    #: the column headers, in order
    COLUMNS: ClassVar[Sequence[str]] = ()
    #: the actions that change something: hidden (and refused) with --readonly
    CHANGES: ClassVar[frozenset[str]] = frozenset()
    #: for ? help
    HELP_TEXT: ClassVar[str] = ""

    def __init__(
        self, link: CallRunner | None = None, scope: ClusterScope | None = None, *, name: str | None = None
    ) -> None:
        """``link`` and ``scope``: None takes the app's (``cluster_link``, ``cluster_scope``)."""
        super().__init__(name=name)
        self._link = link
        self._scope = scope
        #: why there is no cluster to show ("": there is one)
        self.no_cluster = ""
        self.rows: dict[str, Row] = {}
        #: how many refreshes have completed (tests wait on it)
        self.loads = 0
        #: what the status line says after the table's summary
        self.status_text = ""
        self._status_error = False
        self._refresh_failed = False

    @property
    def link(self) -> CallRunner:
        if self._link is None:
            link: CallRunner | None = getattr(self.app, "cluster_link", None)
            if link is None:
                raise RuntimeError(f"{type(self).__name__} needs the app's cluster_link (or one passed in)")
            self._link = link
        return self._link

    @property
    def scope(self) -> ClusterScope:
        if self._scope is None:
            scope: ClusterScope | None = getattr(self.app, "cluster_scope", None)
            if scope is None:
                # A TUI opened on recordings, or without a usable kubeconfig: nothing to show, nothing to change.
                reason: str = getattr(self.app, "no_cluster_reason", "")
                self.no_cluster = reason or "no cluster: the TUI shows recorded jobs (--replay)"
                scope = ClusterScope(connection=Connection(), readonly=True, refresh_every=0)
            if getattr(self.app, "readonly", False) and not scope.readonly:
                scope = dataclasses.replace(scope, readonly=True)
            self._scope = scope
        return self._scope

    # --- what a screen says ----------------------------------------------------------------------

    def heading(self) -> str:
        raise NotImplementedError

    async def load(self) -> list[Row]:
        raise NotImplementedError

    def key_of(self, row: Row) -> str:
        raise NotImplementedError

    def cells_of(self, row: Row) -> tuple[Cell, ...]:
        raise NotImplementedError

    def detail_of(self, row: Row) -> str:
        return ""

    # --- layout ----------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(self.heading(), classes="heading", markup=False)
        yield LiveTable(self.COLUMNS)
        yield Static("", classes="detail", markup=False)
        yield Static("loading...", classes="status", markup=False)
        yield FilterBar()
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(FilterBar).display = False
        self.watch(self.table, "cursor_row", self._cursor_moved, init=False)
        self.action_refresh()
        if self.scope.refresh_every > 0:
            self.set_interval(self.scope.refresh_every, self.action_refresh)

    # --- the rows --------------------------------------------------------------------------------

    @property
    def table(self) -> LiveTable:
        return self.query_one(LiveTable)

    @property
    def selected(self) -> Row | None:
        key = self.table.selected_key
        return self.rows.get(key) if key is not None else None

    def say(self, text: str, *, error: bool = False) -> None:
        """Tell the person what just happened (an error in red); it stays until the next thing to say."""
        self.status_text = text
        self._status_error = error
        self._show_status()

    def _show_status(self) -> None:
        status = self.query_one(".status", Static)
        status.update(" · ".join(part for part in (self.summary(), self.status_text) if part))
        status.set_class(self._status_error, "-error")

    def summary(self) -> str:
        """The table's part of the status line."""
        if not self.loads:
            return "loading..."
        needle = self.query_one(FilterBar).value
        total = len(self.rows)
        return f"{len(self.table.row_keys)} of {total} shown (filter: {needle})" if needle else f"{total} in all"

    def show(self, rows: list[Row]) -> None:
        """Bring the table to ``rows``, touching only what changed."""
        self.rows = {self.key_of(row): row for row in rows}
        with self.app.batch_update():
            self.table.sync(
                [(key, self.cells_of(row)) for key, row in self.rows.items()], needle=self.query_one(FilterBar).value
            )
        self.show_detail()
        self.refresh_bindings()

    def show_detail(self) -> None:
        row = self.selected
        self.query_one(".detail", Static).update(self.detail_of(row) if row is not None else "")

    def _cursor_moved(self, _row: int) -> None:
        self.show_detail()
        self.refresh_bindings()

    @work(exclusive=True, group="refresh")
    async def action_refresh(self) -> None:
        if self.no_cluster:
            # The whole of why (and how to configure a cluster) where there is room for it; the status line is short.
            self.query_one(".detail", Static).update(self.no_cluster)
            self.say("no cluster to show (see above); the Jobs screen (1) works without one", error=True)
            return
        try:
            rows = await self.load()
        except AgentError as err:
            self.say(err.message, error=True)
            self._refresh_failed = True
            return
        self.loads += 1
        self.show(rows)
        if self._refresh_failed:  # the agent answers again: its error is over
            self._refresh_failed = False
            self.say("")
        else:
            self._show_status()

    # --- filter ----------------------------------------------------------------------------------

    def action_filter(self) -> None:
        self.query_one(FilterBar).open()

    def on_filter_bar_filter_changed(self, _event: FilterBar.FilterChanged) -> None:
        self.show(list(self.rows.values()))
        self._show_status()

    # --- actions ---------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in self.CHANGES:
            if self.scope.readonly:
                return False
            row = self.selected
            if row is None:
                return None
            return self.applies(action, row)
        return True

    def applies(self, action: str, row: Row) -> bool | None:
        """True when ``action`` applies to ``row``; None greys its key out."""
        return True

    def allowed(self, action: str) -> bool:
        """Whether ``action`` may run now (a key that is greyed out or hidden may still arrive by the palette)."""
        if self.check_action(action, ()) is True:
            return True
        self.say("read-only: nothing may be changed" if self.scope.readonly else f"{action} does not apply here")
        return False

    async def confirmed(self, question: str, *, yes: str, detail: str = "") -> bool:
        """Ask first (destructive actions); a no is said on the status line."""
        text = f"{question}\n\n{detail}" if detail else question
        if await self.app.push_screen_wait(ConfirmScreen(text, yes=yes)):
            return True
        self.say(f"{yes.lower()} cancelled; nothing was changed")
        return False
