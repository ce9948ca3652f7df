"""A yes/no question over the current screen: `y` confirms, `n` or Escape declines."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static


class ConfirmDialog(ModalScreen[bool]):
    DEFAULT_CSS = """
    ConfirmDialog { align: center middle; }
    ConfirmDialog > Vertical {
        width: 70; max-width: 95%; height: auto; border: thick $warning; background: $surface; padding: 0 1;
    }
    ConfirmDialog .question { text-style: bold; }
    ConfirmDialog .keys { color: $text-muted; margin-top: 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n", "answer(False)", "No"),
        Binding("escape", "answer(False)", "No", show=False),
    ]

    def __init__(self, question: str, detail: str = "", *, yes: str = "yes") -> None:
        super().__init__()
        self.question = question
        self.detail = detail
        self.yes = yes

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.question, classes="question", markup=False)
            if self.detail:
                yield Static(self.detail, classes="detail", markup=False)
            yield Static(f"[b]y[/b] {self.yes}   [b]n[/b] cancel", classes="keys")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
