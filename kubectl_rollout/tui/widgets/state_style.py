"""One colour per state, everywhere (jobs, nodes, pods); NO_COLOR removes the colour, the word stays."""

from __future__ import annotations

from rich.text import Text

STYLES = {
    "running": "bold cyan",
    "pending": "yellow",
    "paused": "bold yellow",
    "succeeded": "green",
    "failed": "bold red",
    "cancelled": "magenta",
    # nodes
    "cordoned": "yellow",
    "draining": "cyan",
    "drained": "green",
    #: a campaign's node whose drain the window's end stopped
    "stopped": "yellow",
    "schedulable": "",
    # pods
    "evicting": "cyan",
    "blocked": "bold red",
    "terminating": "yellow",
    "gone": "green",
    "replaced": "green",
    "replacement Ready": "green",
}


def state_text(state: str) -> Text:
    return Text(state, style=STYLES.get(state, ""))
