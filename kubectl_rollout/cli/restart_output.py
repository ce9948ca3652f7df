"""Printing an eviction-based restart: the drain printer's eviction lines, plus the restart's own."""

from __future__ import annotations

from kubectl_rollout.cli.drain_output import HumanPrinter
from kubectl_rollout.jobs.events import restart as rev
from kubectl_rollout.jobs.events.base import Event


def _pods(count: int) -> str:
    return f"{count} pod" if count == 1 else f"{count} pods"


def _dry(dry_run: str) -> str:
    return {"client": " (dry run)", "server": " (server dry run)"}.get(dry_run, "")


class RestartPrinter(HumanPrinter):
    def _handle(self, event: Event) -> None:
        if isinstance(event, rev.RestartPlanned):
            pods = ", ".join(event.pods) or "none"
            verb = "resuming the restart of" if event.resumed else "restarting"
            done = f" ({event.already_replaced} already replaced)" if event.resumed else ""
            self._write(
                self.out,
                f"{verb} {event.workload} by eviction, one pod at a time: {pods}{done}{_dry(event.dry_run)}",
            )
            if event.supersedes_unfinished:
                self._write(
                    self.err,
                    f"warning: an earlier restart of {event.workload} stopped unfinished; this one starts over "
                    "(--resume continues the earlier one instead)",
                )
        elif isinstance(event, rev.WaitingToStart):
            self._write(self.out, f"waiting for {event.workload} to settle before the first eviction: {event.reason}")
        elif isinstance(event, rev.WaitingForReplacement):
            self._write(
                self.out, f"waiting for a replacement of {event.pod.name} ({event.ready}/{event.desired} available)"
            )
        elif isinstance(event, rev.PodReplaced):
            self._write(self.out, f"pod/{event.pod.name} replaced ({event.index}/{event.total}, {event.seconds:.1f}s)")
        elif isinstance(event, rev.RestartFinished):
            self.close()
            if event.failure:
                self.err.write(
                    f"error: {event.workload} restart stopped after {_pods(event.replaced)}: {event.failure}\n"
                )
                if event.resumable:
                    self.err.write(
                        f"the pods replaced so far are recorded on {event.workload}: continue with "
                        f"kubectl rollout-plus restart {event.workload} -n {event.namespace} --resume\n"
                    )
                self.err.flush()
            else:
                self.out.write(f"{event.workload} restarted: {_pods(event.replaced)} replaced{_dry(event.dry_run)}\n")
                self.out.flush()
        else:
            super()._handle(event)
