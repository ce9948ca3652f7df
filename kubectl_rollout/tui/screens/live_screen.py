"""The base of every screen that shows live data: it repaints what changed when the app flushes."""

from __future__ import annotations

from typing import ClassVar, cast

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Static

from kubectl_rollout.tui.context import TuiContext
from kubectl_rollout.tui.widgets.filter_bar import FilterBar


class LiveScreen(Screen[None]):
    """Screens read the app's job store; ``show_changes`` is called a few times a second at most."""

    #: a paragraph for the ? help screen: what this screen shows
    HELP_TEXT: ClassVar[str] = ""
    BINDINGS: ClassVar[list[BindingType]] = [Binding("slash", "filter", "Filter", tooltip="Filter the table")]

    def __init__(self) -> None:
        super().__init__()
        self._shown_texts: dict[str, Text] = {}
        #: how many lines each shown text took, at which width
        self._shown_heights: dict[str, tuple[int, int]] = {}

    @property
    def rollout_app(self) -> TuiContext:
        return cast(TuiContext, self.app)

    def show_text(self, selector: str, text: Text) -> None:
        """Put ``text`` in the Static ``selector`` only if it differs: an update repaints the widget, and over SSH
        every repaint costs bytes."""
        widget = self.query_one(selector, Static)
        if self._shown_texts.get(selector) != text:
            self._shown_texts[selector] = text
            # A text as high as the one it replaces needs no layout of the screen (a layout costs more CPU than
            # the repaint); a different height or width, or none known yet, does.
            width = widget.content_size.width
            height = (width, len(text.wrap(self.app.console, width))) if width > 0 else (0, -1)
            widget.update(text, layout=height != self._shown_heights.get(selector) or height[1] < 0)
            self._shown_heights[selector] = height

    def show_changes(self, jobs: frozenset[str]) -> None:
        """Repaint what ``jobs`` changed (the app calls this inside one batch update)."""

    def show_all(self) -> None:
        """Repaint everything (on mount, on resume, on a new filter)."""

    def on_screen_resume(self) -> None:
        self.show_all()

    def action_filter(self) -> None:
        self.query_one(FilterBar).open()

    def on_filter_bar_filter_changed(self, message: FilterBar.FilterChanged) -> None:
        self.show_all()
