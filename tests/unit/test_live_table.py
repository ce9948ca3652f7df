"""The live table repaints only what changed: rows compared at each sync, unchanged ones left alone."""

from __future__ import annotations

import asyncio

from rich.text import Text
from textual.app import App, ComposeResult

from kubectl_rollout.tui.widgets.live_table import LiveTable, Row


class _OneTable(App[None]):
    def compose(self) -> ComposeResult:
        yield LiveTable(("POD", "STATE"), id="t")


def _rows(states: dict[str, str]) -> list[Row]:
    return [(name, (name, Text(state))) for name, state in states.items()]


def _run(steps: list[tuple[dict[str, str], str]]) -> list[tuple[int, list[str], str | None]]:
    """Sync each step's rows (with its filter); after each, the rows changed, the keys shown, the cursor's key."""
    seen = []

    async def scenario() -> None:
        app = _OneTable()
        async with app.run_test(size=(40, 10)) as pilot:
            table = app.query_one(LiveTable)
            for index, (states, needle) in enumerate(steps):
                table.sync(_rows(states), needle=needle)
                await pilot.pause()
                seen.append((table.rows_changed, table.row_keys, table.selected_key))
                if index == 1:
                    table.action_move(1)  # the cursor goes to b, and must stay on b

    asyncio.run(scenario())
    return seen


def test_only_changed_rows_count_and_the_cursor_stays_on_its_row() -> None:
    seen = _run(
        [
            ({"a": "pending", "b": "pending", "c": "pending"}, ""),
            ({"a": "pending", "b": "evicting", "c": "pending"}, ""),
            ({"a": "pending", "b": "evicting", "c": "pending"}, ""),
            ({"x": "pending", "a": "gone", "b": "evicting", "c": "pending"}, ""),
            ({"x": "pending", "a": "gone", "b": "evicting", "c": "pending"}, "evict"),
        ]
    )
    assert seen == [
        (3, ["a", "b", "c"], "a"),
        (1, ["a", "b", "c"], "a"),  # one pod changed: one row
        (0, ["a", "b", "c"], "b"),  # nothing changed: nothing repainted
        (4, ["x", "a", "b", "c"], "b"),  # a row came first: every row moved, the cursor stayed on b
        (4, ["b"], "b"),  # filtered
    ]


def test_the_same_row_objects_again_change_nothing_and_moved_ones_repaint() -> None:
    # Screens hand an unchanged row's tuple again: the table checks it by identity before comparing cells.
    a, b = ("a", ("a", Text("gone"))), ("b", ("b", Text("evicting")))
    seen: list[int] = []

    async def scenario() -> None:
        app = _OneTable()
        async with app.run_test(size=(40, 10)) as pilot:
            table = app.query_one(LiveTable)
            for rows in ([a, b], [a, b], [b, a]):
                table.sync(rows)
                await pilot.pause()
                seen.append(table.rows_changed)

    asyncio.run(scenario())
    assert seen == [2, 0, 2]


def test_a_table_whose_rows_reorder_keeps_its_cursor_on_its_line() -> None:
    """The Drain screen's pods move between groups by themselves: the cursor stays on its line there, so a pod
    under it that goes (to the bottom) does not scroll the table away."""
    seen: list[tuple[int, str | None]] = []

    class _Reordering(App[None]):
        def compose(self) -> ComposeResult:
            yield LiveTable(("POD", "STATE"), id="t", cursor_follows_key=False)

    async def scenario() -> None:
        app = _Reordering()
        async with app.run_test(size=(40, 10)) as pilot:
            table = app.query_one(LiveTable)
            table.sync(_rows({"a": "blocked", "b": "evicting", "c": "pending"}))
            await pilot.pause()
            seen.append((table.cursor_row, table.selected_key))
            table.sync(_rows({"b": "evicting", "c": "pending", "a": "gone"}))
            await pilot.pause()
            seen.append((table.cursor_row, table.selected_key))

    asyncio.run(scenario())
    assert seen == [(0, "a"), (0, "b")]
