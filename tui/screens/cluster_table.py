"""What the Nodes and Workloads screens share: a table of rows from the agent, refreshed, filtered, diffed.

A refresh asks the agent (``load``), then touches only what changed: a new
row is added, a gone one removed, and a cell is updated only when its value
differs (DataTable repaints on every ``update_cell``). `/` opens a filter that
keeps the rows whose text contains it; Escape clears it. Errors from the agent
(its messages say what failed and what to do) go to the status line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar, Generic, TypeVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static

from kubectl_rollout.agent.errors import AgentError
from kubectl_rollout.jobs.spec import Connection
from kubectl_rollout.tui.agent_calls import CallRunner
from kubectl_rollout.tui.cluster_scope import ClusterScope

Row = TypeVar("Row")
Cell = str | Text


class ClusterTableScreen(Screen[None], Generic[Row]):
    DEFAULT_CSS = """
    ClusterTableScreen { layout: vertical; }
    ClusterTableScreen .heading { height: 1; background: $panel; padding: 0 1; }
    ClusterTableScreen DataTable { height: 1fr; }
    ClusterTableScreen .detail { height: auto; max-height: 6; padding: 0 1; border-top: solid $panel; }
    ClusterTableScreen .status { height: 1; padding: 0 1; color: $text-muted; }
    ClusterTableScreen .status.-error { color: $error; }
    ClusterTableScreen #filter { display: none; height: 1; border: none; padding: 0 1; }
    ClusterTableScreen #filter.-shown { display: block; }
    """
    #: every table's keys; a screen lists its own actions first, then these (its BINDINGS)
    TABLE_BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "filter", "Filter"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        Binding("g", "refresh", "Refresh"),
    ]
    #: (header, key) of each column, in order
    COLUMNS: ClassVar[Sequence[tuple[str, str]]] = ()
    #: the actions that change something: hidden (and refused) with --readonly
    CHANGES: ClassVar[frozenset[str]] = frozenset()

    def __init__(
        self, link: CallRunner | None = None, scope: ClusterScope | None = None, *, name: str | None = None
    ) -> None:
        """``link`` and ``scope``: None takes the app's (``cluster_link``, ``cluster_scope``), as when the app
        makes the screen for one of its modes."""
        super().__init__(name=name)
        self._link = link
        self._scope = scope
        #: why there is no cluster to show ("" : there is one)
        self.no_cluster = ""
        self.rows: dict[str, Row] = {}
        #: what each shown row's cells are now, to update only those that change
        self._cells: dict[str, tuple[Cell, ...]] = {}
        self.filter_text = ""
        #: how many refreshes have completed (tests wait on it)
        self.loads = 0
        self._refresh_failed = False
        #: what the status line says after the table's summary
        self.status_text = ""
        self._status_error = False

    @property
    def link(self) -> CallRunner:
        if self._link is None:
            self._link = self._from_app("cluster_link")
        return self._link

    @property
    def scope(self) -> ClusterScope:
        if self._scope is None:
            scope: ClusterScope | None = getattr(self.app, "cluster_scope", None)
            if scope is None:
                # A TUI opened on recordings: nothing to show, nothing to change.
                self.no_cluster = "no cluster: the TUI shows recorded jobs (--replay)"
                scope = ClusterScope(connection=Connection(), readonly=True, refresh_every=0)
            if getattr(self.app, "readonly", False) and not scope.readonly:
                scope = dataclasses.replace(scope, readonly=True)
            self._scope = scope
        return self._scope

    def _from_app(self, attribute: str) -> Any:
        value = getattr(self.app, attribute, None)
        if value is None:
            raise RuntimeError(f"{type(self).__name__} needs the app's {attribute} (or one passed in)")
        return value

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
        yield Static(self.heading(), classes="heading", markup=False)
        yield DataTable(cursor_type="row", zebra_stripes=True)
        yield Static("", classes="detail", markup=False)
        yield Input(placeholder="filter (escape clears)", id="filter")
        yield Static("loading...", classes="status", markup=False)  # the summary replaces it
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for header, key in self.COLUMNS:
            table.add_column(header, key=key)
        self.action_refresh()
        if self.scope.refresh_every > 0:
            self.set_interval(self.scope.refresh_every, self.action_refresh)

    # --- the rows --------------------------------------------------------------------------------

    @property
    def table(self) -> DataTable[Any]:
        return self.query_one(DataTable)

    @property
    def selected(self) -> Row | None:
        table = self.table
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
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

    def _shown(self, cells: tuple[Cell, ...]) -> bool:
        if not self.filter_text:
            return True
        text = " ".join(cell.plain if isinstance(cell, Text) else cell for cell in cells).lower()
        return self.filter_text.lower() in text

    def show(self, rows: list[Row]) -> None:
        """Bring the table to ``rows``, touching only what changed."""
        table = self.table
        self.rows = {self.key_of(row): row for row in rows}
        wanted = {key: self.cells_of(row) for key, row in self.rows.items()}
        wanted = {key: cells for key, cells in wanted.items() if self._shown(cells)}
        with self.app.batch_update():
            for key in [k for k in self._cells if k not in wanted]:
                table.remove_row(key)
                del self._cells[key]
            if [k for k in wanted if k in self._cells] != list(self._cells) or self._inserted(list(wanted)):
                self._rebuild(wanted)
            else:
                for key, cells in wanted.items():
                    before = self._cells.get(key)
                    if before is None:
                        table.add_row(*cells, key=key)
                    else:
                        for (_header, column), old, new in zip(self.COLUMNS, before, cells, strict=True):
                            if old != new:
                                table.update_cell(key, column, new, update_width=True)
                    self._cells[key] = cells
        self.show_detail()
        self.refresh_bindings()

    def _inserted(self, order: list[str]) -> bool:
        """Whether a new row would land before an existing one (the table can only append)."""
        known = [key for key in order if key in self._cells]
        return bool(known) and any(key not in self._cells for key in order[: order.index(known[-1])])

    def _rebuild(self, wanted: dict[str, tuple[Cell, ...]]) -> None:
        """Rows in a new order (rare: a node or workload appeared in between): lay the table out again."""
        table = self.table
        selected = self.selected
        table.clear()
        self._cells = {}
        for key, cells in wanted.items():
            table.add_row(*cells, key=key)
            self._cells[key] = cells
        if selected is not None and self.key_of(selected) in self._cells:
            table.move_cursor(row=table.get_row_index(self.key_of(selected)))

    def show_detail(self) -> None:
        row = self.selected
        self.query_one(".detail", Static).update(self.detail_of(row) if row is not None else "")

    def on_data_table_row_highlighted(self, _event: DataTable.RowHighlighted) -> None:
        self.show_detail()
        self.refresh_bindings()

    @work(exclusive=True, group="refresh")
    async def action_refresh(self) -> None:
        if self.no_cluster:
            self.say(self.no_cluster, error=True)
            return
        try:
            rows = await self.load()
        except AgentError as err:
            self.say(err.message, error=True)
            self._refresh_failed = True
            return
        self.show(rows)
        self.loads += 1
        if self._refresh_failed:  # the agent answers again: its error is over
            self._refresh_failed = False
            self.say("")
        else:
            self._show_status()

    def summary(self) -> str:
        """The table's part of the status line."""
        if not self.loads:
            return "loading..."
        shown = len(self._cells)
        total = len(self.rows)
        return f"{shown} of {total} shown (filter: {self.filter_text})" if self.filter_text else f"{total} in all"

    # --- filter ----------------------------------------------------------------------------------

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.add_class("-shown")
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self.filter_text = event.value.strip()
            self.show(list(self.rows.values()))
            self._show_status()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            self.table.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.value = ""
        box.remove_class("-shown")
        self.filter_text = ""
        self.table.focus()
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
