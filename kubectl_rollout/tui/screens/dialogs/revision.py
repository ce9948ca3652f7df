"""Choosing the revision an undo returns to: every revision but the current one, newest first."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from kubectl_rollout.jobs.cluster_rows import RevisionRow


def revision_label(revision: RevisionRow) -> str:
    images = ", ".join(revision.images)
    cause = f"  ({revision.change_cause})" if revision.change_cause else ""
    return f"#{revision.number}  {images}{cause}" + ("  (current)" if revision.current else "")


class RevisionDialog(ModalScreen[int | None]):
    DEFAULT_CSS = """
    RevisionDialog { align: center middle; }
    RevisionDialog > Vertical {
        width: 90%; max-height: 80%; height: auto; border: thick $primary; background: $surface; padding: 0 1;
    }
    RevisionDialog OptionList { height: auto; max-height: 16; }
    RevisionDialog .keys { color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, workload: str, revisions: list[RevisionRow]) -> None:
        super().__init__()
        self.workload = workload
        self.revisions = sorted(revisions, key=lambda r: -r.number)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"Undo {self.workload} to which revision?", markup=False)
            yield OptionList(*(Option(revision_label(r), id=str(r.number), disabled=r.current) for r in self.revisions))
            yield Static("[b]enter[/b] choose   [b]escape[/b] cancel", classes="keys")

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.highlighted = next((i for i, r in enumerate(self.revisions) if not r.current), None)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        assert event.option.id is not None
        self.dismiss(int(event.option.id))

    def action_cancel(self) -> None:
        self.dismiss(None)
