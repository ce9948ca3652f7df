"""``/`` filters the current table: an input line under it, hidden until asked for."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Input


class FilterBar(Input):
    """Rows whose text contains what is typed here stay; Escape clears it, Enter keeps it and leaves."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "clear", "Clear filter", show=False)]

    @dataclass
    class FilterChanged(Message):
        """The filter's text changed (Input.Changed is Input's own: this one is for the screen)."""

        text: str

    def __init__(self) -> None:
        super().__init__(placeholder="filter: type to narrow the table, Enter keeps it, Escape clears it")

    def open(self) -> None:
        self.display = True
        self.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.post_message(self.FilterChanged(event.value))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if not self.value:
            self.display = False
        self.screen.focus_next()

    def action_clear(self) -> None:
        self.value = ""
        self.post_message(self.FilterChanged(""))
        self.display = False
        self.screen.focus_next()


def matches(text: str, needle: str) -> bool:
    """Case-insensitive substring; every word of ``needle`` must appear."""
    haystack = text.casefold()
    return all(word in haystack for word in needle.casefold().split())
