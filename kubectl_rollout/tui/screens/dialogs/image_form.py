"""The small form of `set image`: which container (when there are several) and its new image."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Select, Static

from kubectl_rollout.jobs.events.rollout import ContainerImage


class ImageForm(ModalScreen[ContainerImage | None]):
    DEFAULT_CSS = """
    ImageForm { align: center middle; }
    ImageForm > Vertical {
        width: 80%; height: auto; border: thick $primary; background: $surface; padding: 0 1;
    }
    ImageForm .error { color: $error; }
    ImageForm .keys { color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, workload: str, images: tuple[str, ...]) -> None:
        super().__init__()
        self.workload = workload
        #: container → its image now
        self.current = dict(image.partition("=")[::2] for image in images)

    def compose(self) -> ComposeResult:
        containers = list(self.current)
        with Vertical():
            yield Static(f"Set the image of {self.workload}", markup=False)
            if len(containers) > 1:
                yield Select([(c, c) for c in containers], value=containers[0], allow_blank=False, id="container")
            yield Input(value=self.current.get(containers[0], "") if containers else "", id="image")
            yield Static("", classes="error", id="error")
            yield Static("[b]enter[/b] roll it out   [b]escape[/b] cancel", classes="keys")

    def on_mount(self) -> None:
        self.query_one("#image", Input).focus()

    def _container(self) -> str:
        selects = self.query("#container")
        if selects:
            value = self.query_one("#container", Select).value
            return str(value)
        return next(iter(self.current), "")

    def on_select_changed(self, event: Select.Changed) -> None:
        self.query_one("#image", Input).value = self.current.get(str(event.value), "")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        image = event.value.strip()
        container = self._container()
        error = self.query_one("#error", Static)
        if not image or any(ch.isspace() for ch in image):
            error.update("an image is a reference without spaces, e.g. registry.example/app:v2")
            return
        if image == self.current.get(container):
            error.update(f"{container} runs {image} already")
            return
        self.dismiss(ContainerImage(container=container, image=image))

    def action_cancel(self) -> None:
        self.dismiss(None)
