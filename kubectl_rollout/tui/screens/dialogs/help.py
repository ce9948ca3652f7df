"""``?``: what the screen underneath shows and every key it has now (greyed: not applicable now)."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static


def _key_name(screen: Screen[object], key: str) -> str:
    return screen.app.get_key_display(Binding(key, ""))


def keys_table(screen: Screen[object]) -> Table:
    table = Table.grid(padding=(0, 2))
    table.add_column(justify="right", style="bold")
    table.add_column()
    seen: set[str] = set()
    for key, active in screen.active_bindings.items():
        if not isinstance(active.node, Screen | App) and not active.binding.show:
            continue  # a widget's own keys (cursor movement): not this screen's actions
        description = active.binding.description or active.binding.action
        if description in seen:
            continue
        seen.add(description)
        style = "" if active.enabled else "dim"
        note = "" if active.enabled else "  (not now)"
        table.add_row(Text(_key_name(screen, key), style=style), Text(description + note, style=style))
    return table


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "dismiss_help", "Close help"),
    ]

    def __init__(self, under: Screen[object]) -> None:
        super().__init__()
        self._under = under

    def compose(self) -> ComposeResult:
        about = str(getattr(self._under, "HELP_TEXT", ""))
        with VerticalScroll(id="help"):
            yield Static(Text(f"{self._under.title or self.app.title}", style="bold"), id="help-title")
            if about:
                yield Static(about, id="help-about")
            yield Static(keys_table(self._under), id="help-keys")
            yield Static(
                "q leaves the TUI and detaches: every job goes on in the agent. Ctrl+P: the command palette.",
                id="help-footer",
            )

    def action_dismiss_help(self) -> None:
        self.dismiss(None)
