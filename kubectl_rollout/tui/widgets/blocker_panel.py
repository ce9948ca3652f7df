"""The blocker panel: one paragraph per PodDisruptionBudget that blocks pods now, and what would unblock it."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group
from rich.text import Text
from textual.widgets import Static

from kubectl_rollout.jobs.views.blockers import PdbBlock
from kubectl_rollout.tui.formatting import clock_time, countdown, duration

#: blocked pods named per PDB before "and N more"
NAMED_PODS = 3
#: unhealthy pods of a PDB named, one line each, before "and N more"
NAMED_UNHEALTHY = 3


def describe_block(block: PdbBlock, *, now: float, surge_key: bool = False) -> Text:
    """``surge_key``: the screen offers ``s`` (drain again with --surge) for this block's workloads."""
    text = Text()
    text.append("PDB ", style="bold")
    text.append(block.pdb, style="bold red")
    text.append(f"  {block.counts} healthy/needed")
    if block.expected is not None:
        text.append(f", selects {block.expected}")
    text.append(
        f"  blocks {len(block.pods)} pod{'s' if len(block.pods) != 1 else ''} since {clock_time(block.since)} "
        f"({duration(now - block.since)})"
    )
    names = ", ".join(p.pod.name for p in block.pods[:NAMED_PODS])
    more = len(block.pods) - NAMED_PODS
    others = f" and {more} more" if more > 0 else ""
    text.append(f"\n  waiting: {names}{others}; next try {countdown(block.next_try_by, now)}")
    text.append_text(describe_unhealthy(block, now=now))
    text.append("\n  ")
    text.append("never: " if block.never else "why: ", style="bold red" if block.never else "bold")
    text.append(block.hint)
    if block.surge:
        text.append("\n  surge: ", style="bold")
        text.append(block.surge)
        if surge_key and block.surgeable:
            text.append(" (press s)", style="bold")
    for command in block.unblock:
        text.append("\n  $ ", style="dim")
        text.append(command, style="bold")
    return text


def describe_unhealthy(block: PdbBlock, *, now: float) -> Text:
    """The PDB's pods that it does not count as healthy, one line each: which, on which node, why, since when."""
    text = Text()
    if block.unhealthy_count is None:
        return text  # the engine has not looked (yet, or an older engine's recording)
    if block.unhealthy_count == 0 and block.never:
        return text  # it can never allow one however healthy they are: the line after says so
    if block.unhealthy_count == 0:
        text.append("\n  all of its pods are healthy now", style="dim")
        return text
    for pod in block.unhealthy[:NAMED_UNHEALTHY]:
        text.append("\n  unhealthy: ", style="bold")
        text.append(f"{pod.pod.name} ")
        text.append(f"on {pod.pod.node or 'no node'}", style="dim")
        text.append(": ", style="dim")
        text.append(pod.reason, style="red")
        if pod.since:
            text.append(f" since {clock_time(pod.since)} ({duration(now - pod.since)})", style="dim")
    more = block.unhealthy_count - min(len(block.unhealthy), NAMED_UNHEALTHY)
    if more > 0:
        text.append(f"\n  and {more} more unhealthy", style="dim")
    return text


class BlockerPanel(Static):
    def __init__(self) -> None:
        super().__init__(id="blockers")
        self._shown: tuple[Text, ...] = ()

    @property
    def plain(self) -> str:
        """What the panel shows, without styles."""
        return "\n".join(text.plain for text in self._shown)

    def show_blocks(self, blocks: Sequence[PdbBlock], *, now: float, surge_key: bool = False) -> None:
        texts = tuple(describe_block(block, now=now, surge_key=surge_key) for block in blocks)
        self.display = bool(texts)
        if texts != self._shown:
            self._shown = texts
            self.update(Group(*texts))
