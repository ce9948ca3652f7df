"""A node's drain plan (every pod with its verdict and why), then `y` to drain it or `n` to leave it.

A node the drain would refuse (kubectl's "cannot delete ...") offers no `y`:
its errors say what to change first.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from kubectl_rollout.jobs.events.drain import NodePlan, Verdict

VERDICT_STYLE = {
    Verdict.EVICT: "green",
    Verdict.DELETE: "green",
    Verdict.SKIP: "dim",
    Verdict.BLOCKED: "yellow",
    Verdict.ERROR: "red",
}


class DrainPlanDialog(ModalScreen[bool]):
    DEFAULT_CSS = """
    DrainPlanDialog { align: center middle; }
    DrainPlanDialog > Vertical {
        width: 95%; height: 90%; border: thick $warning; background: $surface; padding: 0 1;
    }
    DrainPlanDialog .title { text-style: bold; }
    DrainPlanDialog DataTable { height: 1fr; }
    DrainPlanDialog .errors { color: $error; }
    DrainPlanDialog .why { height: auto; max-height: 4; }
    DrainPlanDialog .keys { color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Drain"),
        Binding("n", "answer(False)", "Cancel"),
        Binding("escape", "answer(False)", "Cancel", show=False),
    ]

    def __init__(self, plan: NodePlan) -> None:
        super().__init__()
        self.plan = plan

    @property
    def drainable(self) -> bool:
        return not self.plan.errors and not any(p.verdict is Verdict.ERROR for p in self.plan.pods)

    def compose(self) -> ComposeResult:
        plan = self.plan
        counts = {v: sum(1 for p in plan.pods if p.verdict is v) for v in Verdict}
        summary = ", ".join(f"{n} {v.value}" for v, n in counts.items() if n) or "no pods"
        state = "cordoned" if plan.cordoned else "schedulable"
        with Vertical():
            yield Static(f"Drain node {plan.node}? ({state}; {summary})", classes="title", markup=False)
            yield DataTable(cursor_type="row", zebra_stripes=True)
            yield Static("", classes="why", markup=False)
            if plan.errors:
                yield Static("\n".join(plan.errors), classes="errors", markup=False)
            if plan.warnings:
                yield Static(plan.warnings, markup=False)
            keys = "[b]y[/b] cordon and drain   [b]n[/b] cancel" if self.drainable else "[b]n[/b] close"
            yield Static(keys, classes="keys")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("POD", "VERDICT", "WHY")
        for pod in self.plan.pods:
            verdict = Text(pod.verdict.value, style=VERDICT_STYLE[pod.verdict])
            table.add_row(f"{pod.pod.namespace}/{pod.pod.name}", verdict, pod.reason or ", ".join(pod.pdbs))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        pod = self.plan.pods[event.cursor_row] if event.cursor_row < len(self.plan.pods) else None
        why = "" if pod is None else f"{pod.pod.name}: {pod.reason or pod.verdict.value}"
        if pod is not None and pod.pdbs:
            why += f" (PodDisruptionBudget {', '.join(pod.pdbs)})" if pod.pdbs[0] not in why else ""
        self.query_one(".why", Static).update(why)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        refused = action == "answer" and parameters == (True,) and not self.drainable
        return not refused

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer and self.drainable)
