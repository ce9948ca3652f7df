"""A DataTable fed whole rows at each flush, which touches only the cells whose value changed.

DataTable repaints the whole table on every change, so the app calls ``sync``
inside one ``batch_update`` a few times a second, and a cell whose value is
the same as before is not touched at all. Rows keep their keys, so the cursor
stays on the same object while rows come and go.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import DataTable

from kubectl_rollout.tui.widgets.filter_bar import matches

Cell = str | Text
Row = tuple[str, tuple[Cell, ...]]


def _plain(cell: Cell) -> str:
    return cell.plain if isinstance(cell, Text) else cell


class LiveTable(DataTable[Cell]):
    def __init__(self, columns: Sequence[str], *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False)
        self._column_names = tuple(columns)
        self._column_keys: list[str] = []
        self._shown: dict[str, tuple[Cell, ...]] = {}
        self._order: list[str] = []
        #: how many cells the last sync changed (for tests and the benchmark)
        self.cells_updated = 0

    def on_mount(self) -> None:
        self._column_keys = [str(self.add_column(name, key=name).value) for name in self._column_names]

    @property
    def row_keys(self) -> list[str]:
        return list(self._order)

    @property
    def selected_key(self) -> str | None:
        if not self._order or self.cursor_row < 0 or self.cursor_row >= len(self._order):
            return None
        return self._order[self.cursor_row]

    def sync(self, rows: Sequence[Row], *, needle: str = "") -> None:
        if needle:
            rows = [row for row in rows if matches(" ".join(_plain(c) for c in row[1]), needle)]
        keys = [key for key, _ in rows]
        self.cells_updated = 0
        if keys[: len(self._order)] != self._order:
            self._rebuild(rows)
            return
        for key, cells in rows[len(self._order) :]:
            self.add_row(*cells, key=key)
            self._shown[key] = cells
            self._order.append(key)
            self.cells_updated += len(cells)
        for key, cells in rows:
            before = self._shown[key]
            if before == cells:
                continue
            for column, (old, new) in zip(self._column_keys, zip(before, cells, strict=True), strict=True):
                if old != new:
                    self.update_cell(key, column, new)
                    self.cells_updated += 1
            self._shown[key] = cells

    def _rebuild(self, rows: Sequence[Row]) -> None:
        selected = self.selected_key
        self.clear()
        self._shown.clear()
        self._order = []
        for key, cells in rows:
            self.add_row(*cells, key=key)
            self._shown[key] = cells
            self._order.append(key)
            self.cells_updated += len(cells)
        if selected in self._shown:
            self.move_cursor(row=self._order.index(selected))
