"""Getting a PDB counted again after a surge moved its workload's count.

The disruption controller recounts a PodDisruptionBudget on pod and PDB events only, never on a scale
change. A surge lowers its workload's count by one right after each eviction; when the evicted pod is gone
before the lowering lands (a pod that exits at once, a client far from the API server), no pod event follows
it, and the PDB keeps the count from before: ``disruptionsAllowed`` stays 0 although the lowered count leaves
room, and the next eviction waits out the safety-net backoff (16 s and more) instead of going at once.

An annotation on the PDB that says what the surge set is such an event, and tells whoever reads the PDB why
its expected count moves. The restore removes it; a killed drain's is removed with its leftover record.
Failing to write it never stops a drain: the eviction's own retry still follows the PDB, only slower.

The controller recounts at once on the note, but reads the workload's count from its own cache, which may not
have the lowering yet; the recount then keeps the old count, and nothing recounts the PDB until an evicted pod's
entry in ``disruptedPods`` expires, two minutes later. So ``RecountFollower`` follows each noted PDB (in the
drain's PDB watch: no request of its own) until its expected count takes the lowering, and asks again, a few
times and further apart, when it has not a moment later.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubernetes.client.exceptions import ApiException

from kubectl_rollout.eviction.pdb_watch import PdbWatch
from kubectl_rollout.kube.cluster_access import Cluster

log = logging.getLogger(__name__)

#: on a PDB whose workload a drain surges: "KIND/NAME COUNT (drain ID)", the count the drain set last
SURGE_COUNT = "rollout-plus.kubectl.io/surge-count"
#: on a PDB whose recount missed the lowered count in the note: when the drain asked for a recount again
ASKED_AGAIN = "rollout-plus.kubectl.io/surge-count-asked-again"

BudgetKey = tuple[str, str]


def count_note(workload: str, replicas: int, drain: str) -> str:
    return f"{workload} {replicas} (drain {drain})"


def note_count(cluster: Cluster, budgets: Iterable[BudgetKey], *, workload: str, replicas: int, drain: str) -> None:
    """Write the surge's new count on each PDB of the workload: the disruption controller counts it again."""
    _annotate(cluster, budgets, {SURGE_COUNT: count_note(workload, replicas, drain)})


def clear_count(cluster: Cluster, budgets: Iterable[BudgetKey]) -> None:
    """Remove the note once the count is restored (which gets the PDB counted again one last time)."""
    _annotate(cluster, budgets, {SURGE_COUNT: None, ASKED_AGAIN: None})


def clear_left_by(cluster: Cluster, namespace: str, drain: str) -> None:
    """Remove the notes a killed drain left on the PDBs of a namespace (with its leftover surge record)."""
    try:
        budgets = cluster.policy.list_namespaced_pod_disruption_budget(namespace).items
    except ApiException as err:
        log.info("could not list the PDBs of %s to remove drain %s's notes: %s", namespace, drain, err.reason)
        return
    left = [(namespace, pdb.metadata.name) for pdb in budgets if _noted_by(pdb, drain)]
    clear_count(cluster, left)


def _noted_by(pdb: Any, drain: str) -> bool:
    note = str((pdb.metadata.annotations or {}).get(SURGE_COUNT, ""))
    return note.endswith(f"(drain {drain})")


def others_expected(pdb: Any, replicas: int) -> int | None:
    """What of a PDB's expected pods is not one workload's (whose count is ``replicas``), as the PDB stands.

    A lowering of that workload's count to N is counted once the PDB expects at most this plus N. None when the
    PDB's expected count does not follow the workloads' counts (``minAvailable`` as a number counts the pods it
    finds) or it was never counted.
    """
    spec, status = pdb.spec, pdb.status
    by_counts = spec.max_unavailable is not None or (
        isinstance(spec.min_available, str) and spec.min_available.endswith("%")
    )
    if not by_counts or status is None or status.expected_pods is None:
        return None
    return max(0, int(status.expected_pods) - replicas)


@dataclass
class _Expected:
    """A PDB told a lowered count: the most pods it may expect once it counted it, and when to ask again."""

    at_most: int
    workload: str
    due: float
    asked: int = 0


class RecountFollower:
    """Follows each noted PDB until its expected count takes the lowering; asks it to count again if not.

    It asks ``first_wait`` seconds after the note, then three and nine times that (then gives up: the
    controller's own requeue still comes). A newer note on the same PDB replaces what was expected.
    """

    def __init__(self, cluster: Cluster, pdbs: PdbWatch, *, first_wait: float = 1.0, asks: int = 3) -> None:
        self.cluster = cluster
        self.pdbs = pdbs
        self.first_wait = first_wait
        self.asks = asks
        #: how many times a recount was asked again (changed under the watch's condition, which is notified)
        self.asked_again = 0
        self._pending: dict[BudgetKey, _Expected] = {}
        self._stopped = False
        self._thread: threading.Thread | None = None

    def expect(self, budget: BudgetKey, *, at_most: int, workload: str) -> None:
        """The PDB was just told a lowered count: it is to expect at most ``at_most`` pods once it counted it."""
        with self.pdbs.collection.condition:
            if self._stopped:
                return
            self._pending[budget] = _Expected(at_most, workload, due=time.monotonic() + self.first_wait)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="pdb-recount", daemon=True)
                self._thread.start()
            self.pdbs.collection.condition.notify_all()

    def forget(self, budgets: Iterable[BudgetKey]) -> None:
        """Stop following these PDBs (their count is restored, which gets them counted once more)."""
        with self.pdbs.collection.condition:
            for budget in budgets:
                self._pending.pop(budget, None)

    def following(self) -> set[BudgetKey]:
        """The PDBs not yet seen counting the lowering they were told (under the watch's condition: wait on it)."""
        with self.pdbs.collection.condition:
            return set(self._pending)

    def stop(self) -> None:
        with self.pdbs.collection.condition:
            self._stopped = True
            self._pending.clear()
            self.pdbs.collection.condition.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        while True:
            due = self._next_due()
            if due is None:
                return
            stamp = datetime.now(UTC).isoformat(timespec="milliseconds")
            for budget, expected in due:
                log.info(
                    "PDB %s/%s still expects more pods than %s's lowered count leaves; asking it to count again",
                    *budget,
                    expected.workload,
                )
                _annotate(self.cluster, [budget], {ASKED_AGAIN: stamp})
            with self.pdbs.collection.condition:
                self.asked_again += len(due)
                self.pdbs.collection.condition.notify_all()

    def _next_due(self) -> list[tuple[BudgetKey, _Expected]] | None:
        """Wait until some followed PDB is due to be asked again (None once stopped); counted ones are dropped."""
        condition = self.pdbs.collection.condition
        with condition:
            while not self._stopped:
                objects = self.pdbs.collection.objects_locked()
                for budget in [b for b, e in self._pending.items() if _counted(objects.get(b), e.at_most)]:
                    del self._pending[budget]
                now = time.monotonic()
                due = [(b, e) for b, e in self._pending.items() if e.due <= now]
                if due:
                    for budget, expected in due:
                        expected.asked += 1
                        if expected.asked >= self.asks:
                            del self._pending[budget]
                        else:
                            expected.due = now + self.first_wait * 3**expected.asked
                    return due
                soonest = min((e.due for e in self._pending.values()), default=now + 60.0)
                condition.wait(soonest - now)
        return None


def _counted(pdb: Any, at_most: int) -> bool:
    """Whether the PDB as watched took the lowering (a deleted PDB has nothing left to count)."""
    if pdb is None:
        return True
    return pdb.status is not None and (pdb.status.expected_pods or 0) <= at_most


def _annotate(cluster: Cluster, budgets: Iterable[BudgetKey], annotations: dict[str, str | None]) -> None:
    patch = {"metadata": {"annotations": annotations}}
    for namespace, name in budgets:
        try:
            cluster.policy.patch_namespaced_pod_disruption_budget(name, namespace, patch)
        except ApiException as err:
            # A PDB deleted meanwhile has nothing left to count; a user who may not patch PDBs (`uncordon`
            # removing a killed drain's note) leaves a note that only tells the past.
            level = logging.INFO if err.status in (403, 404) else logging.WARNING
            log.log(level, "could not write the surge count on PDB %s/%s: %s", namespace, name, err.reason)
        except Exception as err:  # a lost connection: the eviction this follows must not fail for a note
            log.warning("could not write the surge count on PDB %s/%s: %s", namespace, name, err)
