"""The campaign engine: waves of nodes, each cordoned whole, then drained, soaked, handed to the after-hook.

For each wave, within the window and the rate: pre-labels and pre-hook per node (a failing hook skips the
node or stops the campaign), cordon every node of the wave (so no evicted pod lands on a node next in
line; the later waves' nodes carry a soft taint meanwhile, ``pending_taint``), drain them at once with the
drain engine (its eviction retries, PDB watch, per-pod verdicts and ``--surge`` are the campaign's), wait
for the pods per-pod rules hold, soak (the workloads that lost pods are fully available again and stay so
for the soak), then post-labels and post-hook node after node, and the wave's nodes are uncordoned together
(their taint comes off with it).
A node that cannot be drained within ``--timeout`` is waited for, skipped, kept or surged
(``--on-blocked``). When the window closes no new wave starts; the nodes in progress finish or stop.

Plain Python over the cluster access layer; everything it decides goes out as events
(``jobs.events.campaign`` and the drain's own).
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import threading
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from kubernetes.client.exceptions import ApiException

from kubectl_rollout.campaign.asked_surges import AskedSurges
from kubectl_rollout.campaign.hooks import run_hook
from kubectl_rollout.campaign.node_events import node_events
from kubectl_rollout.campaign.pending_taint import PendingTaints, pending_taint, still_to_come
from kubectl_rollout.campaign.plan import CampaignPlan, plan_campaign, zone_of
from kubectl_rollout.campaign.pod_rules import holds_node, rule_filter, rule_of, ruled
from kubectl_rollout.campaign.settings import CampaignSettings, NodeLabel, settings_of
from kubectl_rollout.drain.engine import DrainEngine, DrainError, NodeOutcome
from kubectl_rollout.drain.node_events import record_event_on_node
from kubectl_rollout.drain.workload_availability import owning_workloads, wait_until_available
from kubectl_rollout.jobs.context import JobContext
from kubectl_rollout.jobs.events import campaign as ev
from kubectl_rollout.jobs.events.base import Event
from kubectl_rollout.jobs.events.drain import WaitingForWorkloads
from kubectl_rollout.jobs.events.eviction import DryRun
from kubectl_rollout.jobs.kinds.campaign import FINISHED_NODE_EVENTS
from kubectl_rollout.jobs.spec import AtWindowEnd, CampaignJob, Connection, OnBlocked, OnHookFailure
from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.errors import UserFacingError
from kubectl_rollout.kube.slim_pods import slim_pod
from kubectl_rollout.kube.watched_collection import WatchedCollection

log = logging.getLogger(__name__)

#: the label a kept node carries (``--on-blocked keep``), its value the campaign's job id
KEPT_LABEL = "rollout-plus.io/campaign-kept"
#: the longest a wait for a window or the rate sleeps before it looks at the clock again (a laptop suspended
#: meanwhile wakes up to a clock that jumped)
LONGEST_SLEEP = 60.0


class CampaignStopped(Exception):
    """A hook failed under ``--on-hook-failure stop``: no node starts after it."""


@dataclass
class _Tally:
    done: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


class _Settled(enum.Enum):
    #: on to the soak and the after-hook
    DRAINED = "drained"
    SKIPPED = "skipped"
    KEPT = "kept"
    #: could not be drained (an error, or --on-blocked wait and a cancel): stays cordoned
    FAILED = "failed"
    #: its drain was stopped by the window's end: drained again at the next window
    INTERRUPTED = "interrupted"


@dataclass
class _NodeResult:
    node: Any
    settled: _Settled
    evicted: list[Any] = field(default_factory=list)

    @property
    def drained(self) -> bool:
        return self.settled is _Settled.DRAINED


class CampaignEngine:
    def __init__(self, cluster: Cluster, job: CampaignJob, context: JobContext, *, connection: Connection) -> None:
        self.cluster = cluster
        self.job = job
        self.context = context
        self.connection = connection
        self.cancel = context.cancel
        self.settings: CampaignSettings = settings_of(job)
        # The drains stop on the job's cancel, and (--at-window-end stop) on the window's end: a switch of
        # their own, set by either.
        self._stop_drains = threading.Event()
        options = job.drain
        if job.on_blocked is OnBlocked.WAIT:
            options = dataclasses.replace(options, timeout=0.0)  # no bound: the node waits as long as it takes
        drain_context = dataclasses.replace(context, cancel=self._stop_drains)
        self.drainer = DrainEngine(cluster, options, drain_context, extra_filters=(rule_filter,))
        self._drain_context = drain_context
        #: the nodes a person asked to drain through a surge (``jobs surge``): those of a resumed job's journal,
        #: then those asked while it runs
        self._asked = AskedSurges(job.surge_nodes)
        if context.surge_requests is not None:
            self._asked.ask(context.surge_requests.listen(self._surge_asked))
        self._starts: list[float] = []
        #: nodes whose pre-hook let them in and whose wave started (in this run, or before a resume): a wave
        #: run again (the window's end stopped it) or resumed does not ask their pre-hook again
        self._admitted: set[str] = set(job.started)
        #: the last wave waited for a window: the next says it is open
        self._waited_for_window = False
        #: the soft taint on the nodes still to come; None with --no-taint-pending or a dry run
        self._pending: PendingTaints | None = None
        if job.taint_pending and job.drain.dry_run is DryRun.NONE and not job.plan_only:
            self._pending = PendingTaints(cluster, job_id=context.job_id, emit=self.emit)
        #: the names of the plan's waves, and the nodes finished with (done, skipped, kept, failed)
        self._wave_names: list[list[str]] = []
        self._tally = _Tally()
        self._closed = threading.Event()
        self._relay = threading.Thread(target=self._relay_cancel, daemon=True, name="campaign-cancel")
        self._relay.start()

    def emit(self, event: Event) -> None:
        """Say ``event``, then put it on its nodes as Kubernetes Events (``campaign.node_events``). A node's
        soft taint comes off before the event that finishes it is said (and journaled): a resumed campaign
        never takes that node again, so it would never lift it."""
        if self._pending is not None and isinstance(event, FINISHED_NODE_EVENTS):
            self._pending.lift(event.node)
        self.context.emit(event)
        for said in node_events(event, job=self.context.job_id or ""):
            record_event_on_node(
                self.cluster, said.node, reason=said.reason, message=said.message, warning=said.warning
            )

    def _relay_cancel(self) -> None:
        while not self._closed.is_set():
            if self.cancel.wait(1.0):
                self._stop_every_drain()
                return

    def _stop_every_drain(self) -> None:
        self._stop_drains.set()
        self._asked.stop_all()

    def _surge_asked(self, nodes: tuple[str, ...]) -> None:
        """A surge request (on the agent's thread, journaled already): see ``asked_surges``."""
        moves = self._asked.ask(nodes)
        log.info("surge asked for %s", ", ".join(f"{node}: {move.value}" for node, move in moves.items()))

    def close(self) -> None:
        self._closed.set()
        self.drainer.close()

    # --- nodes and plan -----------------------------------------------------------------

    def resolve_nodes(self) -> list[Any]:
        """The campaign's nodes: those named, then those the selector picks; all exist, or nothing changes."""
        nodes = self.drainer.resolve_nodes(list(self.job.nodes), "") if self.job.nodes else []
        if self.job.selector and not self.job.nodes:
            nodes = self.drainer.resolve_nodes([], self.job.selector)
        return nodes

    def plan(self, nodes: list[Any]) -> CampaignPlan:
        taint = ""
        if self.job.taint_pending and self.job.drain.dry_run is DryRun.NONE:
            taint = str(pending_taint(self.context.job_id))
        return plan_campaign(
            cluster=self.cluster,
            engine=self.drainer,
            nodes=nodes,
            job=self.job,
            settings=self.settings,
            pending_taint=taint,
        )

    # --- running ------------------------------------------------------------------------

    def run(self, plan: CampaignPlan) -> ev.CampaignFinished:
        started = time.monotonic()
        tally = self._tally
        self._wave_names = [[n.metadata.name for n in wave] for wave in plan.waves]
        if self._pending is not None:
            # A resumed campaign (the same job id) takes over the taints its killed run put on: lifted at its
            # end or while it waits for a window, like its own.
            self._pending.tainted.update(still_to_come(self._wave_names, finished=()))
        waves: deque[tuple[int, tuple[Any, ...]]] = deque(
            (wave.index, nodes) for wave, nodes in zip(plan.event.waves, plan.waves, strict=True)
        )
        stopped = ""
        try:
            self.drainer.restore_leftover_surges()
            while waves and not self.cancel.is_set():
                index, nodes = waves.popleft()
                if not self._wait_until_allowed(index, len(nodes)):
                    break
                retry = self._run_wave(index, nodes, tally)
                if retry:
                    waves.appendleft((index, retry))
        except CampaignStopped as err:
            stopped = str(err)
        finally:
            self.close()
            self._lift_pending(reason="finished")
        settled = {*tally.done, *tally.skipped, *tally.kept, *tally.failed}
        every = [n.metadata.name for wave in plan.waves for n in wave]
        if self.cancel.is_set() and not stopped:
            stopped = "cancelled"
        finished = ev.CampaignFinished(
            done=tuple(tally.done),
            skipped=tuple(tally.skipped),
            kept=tuple(tally.kept),
            failed=tuple(tally.failed),
            not_started=tuple(n for n in every if n not in settled),
            seconds=round(time.monotonic() - started, 3),
            stopped=stopped,
        )
        self.emit(finished)
        return finished

    # --- the soft taint on the nodes still to come ----------------------------------------

    def _taint_pending(self) -> None:
        if self._pending is None:
            return
        t = self._tally
        self._pending.put_on(still_to_come(self._wave_names, finished={*t.done, *t.skipped, *t.kept, *t.failed}))

    def _lift_pending(self, *, reason: str) -> None:
        if self._pending is None:
            return
        try:
            self._pending.lift_all(reason=reason)
        except (ApiException, UserFacingError) as err:
            # The campaign's own outcome (or error) is what the user must see; a taint left here is soft, and
            # `uncordon NODE` takes it off (docs/campaigns.md).
            log.warning("could not take the campaign's taint off every node: %s", err)

    # --- windows, rate, pause ----------------------------------------------------------

    def _sleep_until(self, wall_time: float) -> bool:
        """Sleep until ``wall_time`` (epoch seconds), following the clock; False when cancelled first."""
        while (left := wall_time - time.time()) > 0:
            if self.cancel.wait(min(left, LONGEST_SLEEP)):
                return False
        return not self.cancel.is_set()

    def _wait_until_allowed(self, index: int, count: int) -> bool:
        """Hold the next wave while the job is paused, the window closed, or the rate spent."""
        while True:
            paused = self.context.paused
            while paused is not None and paused.is_set():
                if self.cancel.wait(0.2):
                    return False
            schedule = self.settings.schedule
            now = time.time()
            if schedule is not None and not schedule.is_open_at(now):
                # Said once per wait, with nothing in progress: the job sleeps from here.
                opening = schedule.next_opening(now)
                self.emit(ev.WindowClosed(next_opening=opening, at_window_end=self.job.at_window_end.value))
                # No taint while it waits: a pool half tainted for days would crowd every new pod of the
                # cluster onto the rest. The window's opening puts it back on.
                self._lift_pending(reason="window")
                self._waited_for_window = True
                if opening is None or not self._sleep_until(opening):
                    return False
                continue
            if self._waited_for_window or not self._starts:
                self.emit(ev.WindowOpened(closes_at=schedule.closes_at(now) if schedule is not None else None))
                self._waited_for_window = False
                self._taint_pending()
            rate = self.settings.rate
            if rate is not None:
                until = rate.earliest_start(starts=self._starts, count=count, now=now)
                if until > now:
                    self.emit(ev.WaitingForRate(index=index, until=until))
                    if not self._sleep_until(until):
                        return False
                    continue  # the window may have closed meanwhile
            return not self.cancel.is_set()

    @contextmanager
    def _window_watch(self, nodes: tuple[Any, ...]) -> Iterator[None]:
        """While a wave runs: at the window's end say so, and under ``--at-window-end stop`` stop its drains."""
        schedule = self.settings.schedule
        closes = schedule.closes_at(time.time()) if schedule is not None else None
        timer: threading.Timer | None = None
        if schedule is not None and closes is not None:

            def window_ended() -> None:
                self.emit(
                    ev.WindowClosed(
                        next_opening=schedule.next_opening(time.time()),
                        in_progress=tuple(n.metadata.name for n in nodes),
                        at_window_end=self.job.at_window_end.value,
                    )
                )
                if self.job.at_window_end is AtWindowEnd.STOP:
                    self._stop_every_drain()

            timer = threading.Timer(max(0.0, closes - time.time()), window_ended)
            timer.daemon = True
            timer.start()
        try:
            yield
        finally:
            if timer is not None:
                timer.cancel()

    # --- one wave -----------------------------------------------------------------------

    def _run_wave(self, index: int, nodes: tuple[Any, ...], tally: _Tally) -> tuple[Any, ...]:
        """Run one wave; returns its nodes whose drains the window's end stopped (to run again)."""
        ready = []
        for planned in nodes:
            # As it is now, not as planned: a campaign across windows may reach a node days later.
            node = self._read_node(planned.metadata.name)
            if node is None:
                name = planned.metadata.name
                self.emit(ev.NodeSkipped(node=name, reason="the node is gone", uncordoned=False))
                tally.skipped.append(name)
                continue
            if planned.metadata.name in self._admitted or self._before_node(node, tally):
                ready.append(node)
        if not ready:
            return ()
        names = tuple(n.metadata.name for n in ready)
        self.emit(ev.WaveStarted(index=index, nodes=names, zones=tuple(dict.fromkeys(zone_of(n) for n in ready))))
        self._starts += [time.time() for name in names if name not in self._admitted]
        self._admitted.update(names)
        # The wave's cordons go out together (each is its own patch and event), then its drains.
        with ThreadPoolExecutor(max_workers=len(ready), thread_name_prefix="campaign-cordon") as pool:
            list(pool.map(self.drainer.cordon, ready))
        with (
            self._window_watch(tuple(ready)),
            ThreadPoolExecutor(max_workers=len(ready), thread_name_prefix="campaign-node") as pool,
        ):
            results = list(pool.map(self._drain_one, ready))
        window_stopped = self._stop_drains.is_set() and not self.cancel.is_set()
        if window_stopped:
            self._stop_drains.clear()
            self._asked.go_on()
        drained = [r for r in results if r.drained]
        for result in results:
            name = result.node.metadata.name
            if result.settled is _Settled.SKIPPED:
                tally.skipped.append(name)
            elif result.settled is _Settled.KEPT:
                tally.kept.append(name)
            elif result.settled is _Settled.FAILED:
                tally.failed.append(name)
        if drained and not self.cancel.is_set():
            self._soak(index, drained)
        finished: list[Any] = []
        try:
            for result in drained:
                if self.cancel.is_set():
                    break
                if self._after_node(result.node, tally):
                    finished.append(result.node)
        finally:
            # Even when a later node's post-hook stops the campaign, those past their post-steps go back.
            self._hand_back(finished, tally)
        failed = [r.node.metadata.name for r in results if r.settled is _Settled.FAILED]
        if failed and not self.cancel.is_set():
            # A failed node stays cordoned, so it is still out: a next wave would go past the budget.
            raise CampaignStopped(
                f"{', '.join(f'node/{n}' for n in failed)} could not be drained and stay cordoned; "
                "no node starts after them (--on-blocked skip or keep lets a campaign go on)"
            )
        return tuple(r.node for r in results if r.settled is _Settled.INTERRUPTED)

    # --- before and after each node ------------------------------------------------------

    def _before_node(self, node: Any, tally: _Tally) -> bool:
        """The pre-hook, then the pre-labels; False when the node is skipped (the campaign goes on). The hook
        is the gate: a node it turns away keeps its labels as they were."""
        name = node.metadata.name
        ran = self._hook(self.job.pre_hook, node=name, hook="pre") if self.job.pre_hook else None
        if ran is None or ran.ok:
            if self.settings.pre_labels:
                self._label(node, self.settings.pre_labels, hook="pre")
            return True
        why = f"pre-hook exited {ran.exit_code}" + (" (timed out)" if ran.timed_out else "")
        if self.job.on_hook_failure is OnHookFailure.STOP:
            raise CampaignStopped(f"node/{name}: {why}; no node starts after it (--on-hook-failure stop)")
        self.emit(ev.NodeSkipped(node=name, reason=why, uncordoned=False))
        tally.skipped.append(name)
        return False

    def _after_node(self, node: Any, tally: _Tally) -> bool:
        """The post-labels, then the post-hook; False when the node is left cordoned (the hook failed under
        --on-hook-failure skip). Nodes go one after another, as their hooks may replace them."""
        name = node.metadata.name
        if self.settings.post_labels:
            self._label(node, self.settings.post_labels, hook="post")
        if self.job.post_hook:
            ran = self._hook(self.job.post_hook, node=name, hook="post")
            if not ran.ok:
                why = f"post-hook exited {ran.exit_code}" + (" (timed out)" if ran.timed_out else "")
                if self.job.on_hook_failure is OnHookFailure.STOP:
                    tally.failed.append(name)
                    raise CampaignStopped(f"node/{name}: {why}; it stays cordoned (--on-hook-failure stop)")
                self.emit(ev.NodeSkipped(node=name, reason=f"{why}; left cordoned", uncordoned=False))
                tally.skipped.append(name)
                return False
        return True

    def _hand_back(self, nodes: list[Any], tally: _Tally) -> None:
        """Uncordon the wave's nodes past their post-steps, all at once (a node replaced by its hook is read
        afresh), and count them done."""
        if not nodes:
            return
        with ThreadPoolExecutor(max_workers=len(nodes), thread_name_prefix="campaign-hand-back") as pool:
            list(pool.map(self._hand_back_one, nodes))
        tally.done.extend(node.metadata.name for node in nodes)

    def _hand_back_one(self, node: Any) -> None:
        name = node.metadata.name
        fresh = self._read_node(name)
        uncordoned = False
        if fresh is not None and self.job.uncordon:
            self.drainer.uncordon(fresh)
            uncordoned = True
        self.emit(ev.NodeDone(node=name, uncordoned=uncordoned, replaced=fresh is None or _replaced(node, fresh)))

    def _read_node(self, name: str) -> Any | None:
        try:
            return call_with_retry(self.cluster.core.read_node, name)
        except ApiException as err:
            if err.status == 404:
                return None
            raise

    def _hook(self, command: str, *, node: str, hook: str) -> ev.HookRan:
        ran = run_hook(
            command,
            node=node,
            job_id=self.context.job_id,
            hook=hook,
            connection=self.connection,
            timeout=self.job.hook_timeout,
            cancel=self.cancel,
        )
        self.emit(ran)
        return ran

    def _label(self, node: Any, labels: tuple[NodeLabel, ...], *, hook: str) -> None:
        body = {"metadata": {"labels": {label.key: label.value for label in labels}}}
        call_with_retry(self.cluster.core.patch_node, node.metadata.name, body)
        self.emit(ev.NodeLabelled(node=node.metadata.name, hook=hook, labels=tuple(map(str, labels))))

    # --- draining one node ---------------------------------------------------------------

    def _drain_one(self, node: Any) -> _NodeResult:
        name = node.metadata.name
        stop = self._asked.start_drain(name)
        if stop is None:  # asked before its drain started (or before the job was resumed)
            return self._drain_surging(node, [])
        try:
            outcome, evicted = self._drain_without_surge(node, stop)
        finally:
            asked = self._asked.end_drain(name)
        if outcome.ok:
            return _NodeResult(node=node, settled=_Settled.DRAINED, evicted=evicted)
        if asked:  # its drain was stopped for it, the others going on
            return self._drain_surging(node, evicted)
        return self._unfinished(node, outcome, evicted)

    def _drain_without_surge(self, node: Any, stop: threading.Event) -> tuple[NodeOutcome, list[Any]]:
        """Drain the node, then wait for the pods per-pod rules hold; ``stop`` ends it (``asked_surges``)."""
        name = node.metadata.name
        deadline = time.monotonic() + self.job.drain.timeout if self.job.drain.timeout > 0 else None
        if self.job.on_blocked is OnBlocked.WAIT:
            deadline = None
        outcome = self.drainer.drain_node(node, stop=stop)
        evicted = list(outcome.evicted)
        while outcome.ok:
            held = self._wait_for_held_pods(name, deadline)
            if held is None:
                return outcome, evicted
            if held:  # a rule was lifted: its pods go like any other
                outcome = self.drainer.drain_node(node, stop=stop)
                evicted += outcome.evicted
                continue
            outcome = NodeOutcome(node=name, ok=False, reason="pods held by per-pod rules are still there")
        return outcome, evicted

    def _unfinished(self, node: Any, outcome: NodeOutcome, evicted: list[Any], *, surged: bool = False) -> _NodeResult:
        """A drain that ended without the node drained: stopped (the window's end, a cancel), or blocked."""
        if self._stop_drains.is_set() and not self.cancel.is_set():
            return _NodeResult(node=node, settled=_Settled.INTERRUPTED)
        if self.cancel.is_set():
            return _NodeResult(node=node, settled=_Settled.FAILED)
        return self._blocked(node, outcome, evicted, surged=surged)

    def _drain_surging(self, node: Any, evicted: list[Any]) -> _NodeResult:
        """Drain the node with ``--surge`` (asked for, or ``--on-blocked surge``), with the per-node bound the
        drain without a surge had (none under ``--on-blocked wait``). An engine of its own per node: a surge's
        session belongs to the node it raised replicas for, and nodes of a wave surge at once."""
        name = node.metadata.name
        options = dataclasses.replace(self.drainer.options, surge=True)
        surger = DrainEngine(self.cluster, options, self._drain_context, extra_filters=(rule_filter,))
        try:
            with self._asked.surging(name), surger.surging([node]):
                again = surger.drain_node(node)
        finally:
            surger.close()
        evicted = evicted + list(again.evicted)
        bound = time.monotonic() + options.timeout if options.timeout > 0 else None
        if again.ok and self._wait_for_held_pods(name, bound) is None:
            return _NodeResult(node=node, settled=_Settled.DRAINED, evicted=evicted)
        if again.ok:
            again = NodeOutcome(node=name, ok=False, reason="pods held by per-pod rules are still there")
        return self._unfinished(node, again, evicted, surged=True)

    def _wait_for_held_pods(self, node: str, deadline: float | None) -> bool | None:
        """Wait until no pod on ``node`` holds it (do-not-disrupt, wait-completed). None: none does (any
        more); True: a pod's rule was lifted and it is still there (drain again); False: the bound ran out."""
        pods = WatchedCollection(
            self.cluster.core.list_pod_for_all_namespaces,
            field_selector=f"spec.nodeName={node}",
            description=f"held pods on {node}",
            transform=slim_pod,  # a whole wave's nodes watch at once: what the rules read, not the models
        ).start()
        try:
            holding = [r for r in (ruled(p) for p in pods.snapshot()) if r is not None and holds_node(r.rule)]
            if not holding:
                return None
            self.emit(ev.PodsHeld(node=node, pods=tuple(holding)))
            keys = {(r.pod.namespace, r.pod.name) for r in holding}
            lifted: list[bool] = []

            def settled(collection: WatchedCollection) -> bool:
                lifted.clear()
                for key in keys:
                    pod = collection.objects_locked().get(key)
                    if pod is None or pod.metadata.deletion_timestamp is not None:
                        continue
                    rule = rule_of(pod)
                    if rule is not None and holds_node(rule[0]):
                        return False
                    if rule is None and pod.status.phase not in ("Succeeded", "Failed"):
                        lifted.append(True)
                return True

            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not pods.wait_until(settled, timeout, self._stop_drains):
                return False
            return True if lifted else None
        finally:
            pods.stop()

    def _blocked(self, node: Any, outcome: NodeOutcome, evicted: list[Any], *, surged: bool) -> _NodeResult:
        """A node that could not be drained within its bound: what ``--on-blocked`` says (``surged``: it was
        drained through a surge already)."""
        name = node.metadata.name
        reason = outcome.reason or "its drain did not finish"
        choice = self.job.on_blocked
        if choice is OnBlocked.SURGE and not surged:
            return self._drain_surging(node, evicted)
        if choice is OnBlocked.SURGE:
            choice, reason = OnBlocked.KEEP, f"{reason}; the surge did not help either"
        if choice is OnBlocked.SKIP:
            fresh = self._read_node(name)
            if fresh is not None:
                self.drainer.uncordon(fresh)
            self.emit(ev.NodeSkipped(node=name, reason=reason, uncordoned=fresh is not None))
            return _NodeResult(node=node, settled=_Settled.SKIPPED)
        if choice is OnBlocked.KEEP:
            label = f"{KEPT_LABEL}={self.context.job_id or 'true'}"
            call_with_retry(
                self.cluster.core.patch_node,
                name,
                {"metadata": {"labels": {KEPT_LABEL: self.context.job_id or "true"}}},
            )
            self.emit(ev.NodeKept(node=name, reason=reason, label=label))
            return _NodeResult(node=node, settled=_Settled.KEPT)
        return _NodeResult(node=node, settled=_Settled.FAILED)  # wait: only an error ends a node's drain

    # --- soak ------------------------------------------------------------------------------

    def _soak(self, index: int, drained: list[_NodeResult]) -> None:
        started = time.monotonic()
        workloads = owning_workloads(self.cluster, (pod for result in drained for pod in result.evicted))
        self.emit(ev.SoakStarted(index=index, seconds=self.job.soak, workloads=tuple(sorted(workloads))))

        def counting() -> None:
            if self.job.soak:
                self.emit(ev.SoakCounting(index=index, until=time.time() + self.job.soak))

        if workloads:
            left = wait_until_available(
                self.cluster,
                workloads,
                timeout=None,
                cancel=self.cancel,
                on_waiting=lambda states: self.emit(WaitingForWorkloads(workloads=tuple(states))),
                stay_available_for=self.job.soak,
                on_steady=counting,
            )
            if left and not self.cancel.is_set():
                raise DrainError(f"workloads still not available after wave {index}: {', '.join(map(str, left))}")
        elif self.job.soak:
            counting()
            if not self._sleep_until(time.time() + self.job.soak):
                return
        if self.cancel.is_set():
            return
        seconds = round(time.monotonic() - started, 3)
        for result in drained:
            self.emit(ev.NodeSoaked(node=result.node.metadata.name, index=index, seconds=seconds))


def _replaced(before: Any, after: Any) -> bool:
    return bool(before.metadata.uid and after.metadata.uid and before.metadata.uid != after.metadata.uid)
