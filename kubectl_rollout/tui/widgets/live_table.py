"""A table fed whole rows at each flush, which renders only the lines on screen and repaints only changed rows.

Textual's DataTable measures every cell of every new row and repaints the
whole table on each change: measured here, a 5000-pod drain took 5.3 s to
first paint with it. This table uses Textual's Line API instead: ``sync``
compares the new rows with the shown ones (plain Python, no rendering), column
widths come from the cells' lengths, and only the changed rows that are on
screen are refreshed; ``render_line`` renders just the lines asked for. Rows
keep their keys, so the cursor stays on the same object while rows come and
go (or, for a table whose rows reorder themselves, on its line); the header
line stays put while the rows scroll.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from kubectl_rollout.tui.widgets.filter_bar import matches

Cell = str | Text
Row = tuple[str, tuple[Cell, ...]]

#: no column grows wider than this (long reasons are cut; the row's full text is in the filter)
MAX_COLUMN = 60
GAP = 2


def plain(cell: Cell) -> str:
    return cell.plain if isinstance(cell, Text) else cell


class LiveTable(ScrollView, can_focus=True):
    DEFAULT_CSS = """
    LiveTable {
        background: $surface;
    }
    LiveTable > .live-table--header {
        text-style: bold;
        color: $text-accent;
    }
    LiveTable > .live-table--cursor {
        background: $block-cursor-background;
        color: $block-cursor-foreground;
        text-style: bold;
    }
    LiveTable:blur > .live-table--cursor {
        background: $block-cursor-blurred-background;
        text-style: none;
    }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {"live-table--header", "live-table--cursor"}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1)", "Up", show=False),
        Binding("down", "move(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "move(-1000000000)", "First row", show=False),
        Binding("end", "move(1000000000)", "Last row", show=False),
        Binding("enter", "choose", "Open", show=False),
    ]

    cursor_row: reactive[int] = reactive(0)

    @dataclass
    class RowChosen(Message):
        """Enter (or a click on the chosen row): the screen opens what the row stands for."""

        table: LiveTable
        key: str

    def __init__(self, columns: Sequence[str], *, id: str | None = None, cursor_follows_key: bool = True) -> None:
        """``cursor_follows_key``: the cursor stays on its row's object as rows move (False: on its line, for a
        table whose rows change places by themselves, where following one would scroll the table away)."""
        super().__init__(id=id)
        self.cursor_follows_key = cursor_follows_key
        self.column_names = tuple(columns)
        self._widths = [len(name) for name in self.column_names]
        self._rows: list[Row] = []
        self._index: dict[str, int] = {}
        self._strips: dict[str, Strip] = {}
        #: how many rows the last sync changed, added or removed (for tests and the benchmark)
        self.rows_changed = 0

    # --- data ------------------------------------------------------------------------------

    @property
    def row_keys(self) -> list[str]:
        return [key for key, _ in self._rows]

    @property
    def selected_key(self) -> str | None:
        if 0 <= self.cursor_row < len(self._rows):
            return self._rows[self.cursor_row][0]
        return None

    def get_row(self, key: str) -> tuple[Cell, ...]:
        return self._rows[self._index[key]][1]

    def sync(self, rows: Sequence[Row], *, needle: str = "") -> None:
        """Show ``rows`` (those matching ``needle``); repaint only what changed."""
        if needle:
            rows = [row for row in rows if matches(" ".join(plain(c) for c in row[1]), needle)]
        selected = self.selected_key
        old_index = self._index
        old_rows = self._rows
        widths = list(self._widths)  # columns widen as rows need, and never narrow (no jumping about)
        changed: list[int] = []
        new_rows = list(rows)
        self._index = {key: i for i, (key, _) in enumerate(new_rows)}
        for i, row in enumerate(new_rows):
            if i < len(old_rows) and old_rows[i] is row:
                continue  # the same row object in the same place (a screen hands unchanged rows again)
            key, cells = row
            before = old_index.get(key)
            if before is not None:
                shown = old_rows[before][1]
                # A screen hands the same tuple again for an unchanged row: checked by identity first.
                if shown is cells or (before == i and shown == cells):
                    if before != i:
                        changed.append(i)
                    continue
            changed.append(i)
            self._strips.pop(key, None)
            for column, cell in enumerate(cells):
                length = len(plain(cell))
                if length > widths[column]:
                    widths[column] = min(length, MAX_COLUMN)
        relayout = widths != self._widths
        self._widths = widths
        for key in old_index.keys() - self._index.keys():
            self._strips.pop(key, None)
        self.rows_changed = len(changed) + max(0, len(old_rows) - len(new_rows))
        self._rows = new_rows
        self.virtual_size = Size(sum(widths) + GAP * len(widths), len(new_rows) + 1)
        if self.cursor_follows_key and selected is not None and selected in self._index:
            self.cursor_row = self._index[selected]
        elif self.cursor_row >= len(new_rows):
            self.cursor_row = max(0, len(new_rows) - 1)
        if relayout or len(new_rows) != len(old_rows):
            self._strips.clear()
            self.refresh()
            return
        top = int(self.scroll_offset.y)
        bottom = top + self.size.height
        for i in changed:
            if top <= i < bottom:
                self.refresh_line(i + 1)

    # --- rendering -------------------------------------------------------------------------

    def _line(self, cells: Sequence[Cell], style: Style) -> Strip:
        segments: list[Segment] = []
        for cell, width in zip(cells, self._widths, strict=True):
            text = cell if isinstance(cell, Text) else Text(cell)
            text = text.copy()
            text.truncate(width, overflow="ellipsis", pad=True)
            segments.extend(text.render(self.app.console))
            segments.append(Segment(" " * GAP))
        return Strip(segments).apply_style(style)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        base = self.rich_style
        if y == 0:
            header = self.get_component_rich_style("live-table--header")
            strip = self._line(self.column_names, base + header)
        else:
            index = int(scroll_y) + y - 1
            if index >= len(self._rows):
                return Strip.blank(width, base)
            key, cells = self._rows[index]
            cached = self._strips.get(key)
            if cached is None:
                cached = self._strips[key] = self._line(cells, base)
            strip = cached
            if index == self.cursor_row:
                strip = strip.apply_style(self.get_component_rich_style("live-table--cursor"))
        return strip.crop_extend(int(scroll_x), int(scroll_x) + width, base)

    def watch_cursor_row(self, old: int, new: int) -> None:
        self.refresh_line(old + 1)
        self.refresh_line(new + 1)
        top = int(self.scroll_offset.y)
        visible = max(1, self.size.height - 1)
        if new < top:
            self.scroll_to(y=new, animate=False)
        elif new >= top + visible:
            self.scroll_to(y=new - visible + 1, animate=False)

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    # --- keys and mouse --------------------------------------------------------------------

    def action_move(self, rows: int) -> None:
        if self._rows:
            self.cursor_row = min(max(0, self.cursor_row + rows), len(self._rows) - 1)

    def action_page(self, pages: int) -> None:
        self.action_move(pages * max(1, self.size.height - 1))

    def action_choose(self) -> None:
        key = self.selected_key
        if key is not None:
            self.post_message(self.RowChosen(self, key))

    def on_click(self, event: events.Click) -> None:
        if event.y == 0:
            return
        index = int(self.scroll_offset.y) + event.y - 1
        if 0 <= index < len(self._rows):
            if index == self.cursor_row and event.chain >= 2:
                self.action_choose()
            self.cursor_row = index
