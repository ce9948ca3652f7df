"""Why a job's pods are blocked, one entry per PodDisruptionBudget: its counts, its pods, and what would help.

Built from the pods' latest refusals (``Blocker``), so it says only what the
events said: the PDB's healthy / needed counts, how many pods it selects
(``expected``, when the engine read the PDB), since when and until when the
pods wait, and, once the engine looked (``PdbPodsUnhealthy``), which of its
pods it does not count as healthy, where, why and since when. A PDB that
needs as many healthy pods as it selects can never allow a disruption
(replicas 1 with minAvailable 1): waiting will not help, and the entry says
so, with the commands that would.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from kubectl_rollout.jobs.events.eviction import PdbPodsUnhealthy, UnhealthyPod
from kubectl_rollout.jobs.views.pods import PodState, PodView


def kubectl(*words: str) -> str:
    """A kubectl command line, quoted for a shell."""
    return shlex.join(("kubectl", *words))


@dataclass(frozen=True, kw_only=True)
class PdbBlock:
    #: "namespace/name"
    pdb: str
    healthy: int | None
    needed: int | None
    expected: int | None
    #: the pods it blocks now, longest blocked first
    pods: tuple[PodView, ...]
    #: when the first of them was blocked, and the earliest next attempt (epoch seconds)
    since: float
    next_try_by: float
    message: str
    #: it can never allow a disruption as it stands: waiting will not help
    never: bool
    hint: str
    #: commands that would unblock it (or show why it blocks)
    unblock: tuple[str, ...]
    #: its pods that it does not count as healthy (the first few, the longest unhealthy first)
    unhealthy: tuple[UnhealthyPod, ...] = ()
    #: how many they are in all; None when the engine has not looked
    unhealthy_count: int | None = None

    @property
    def counts(self) -> str:
        """``2 healthy/2 needed``, as the blocker panel and the pod table print it."""
        healthy = "?" if self.healthy is None else str(self.healthy)
        needed = "?" if self.needed is None else str(self.needed)
        return f"{healthy}/{needed}"


def _advice(
    pdb: str, healthy: int | None, needed: int | None, expected: int | None
) -> tuple[bool, str, tuple[str, ...]]:
    namespace, _, name = pdb.partition("/")
    describe = kubectl("-n", namespace, "describe", "pdb", name)
    if expected is not None and needed is not None and expected > 0 and needed >= expected:
        relax = kubectl(
            "-n",
            namespace,
            "patch",
            "pdb",
            name,
            "--type=merge",
            "-p",
            '{"spec":{"minAvailable":null,"maxUnavailable":1}}',
        )
        scale = kubectl("-n", namespace, "scale", "deployment/WORKLOAD", f"--replicas={needed + 1}")
        hint = (
            f"it selects {expected} pod{'s' if expected != 1 else ''} and needs {needed} healthy: it can never allow "
            "a disruption; waiting will not help. Give its workload more replicas, or let the PDB allow one"
        )
        return True, hint, (scale, relax)
    if healthy is not None and needed is not None and expected is not None and healthy < expected:
        unhealthy = expected - healthy
        more = needed + 1 - healthy
        hint = (
            f"{unhealthy} of its {expected} pods {'is' if unhealthy == 1 else 'are'} not healthy (not Ready); it "
            f"allows a disruption once {more} more {'is' if more == 1 else 'are'} Ready"
        )
        return False, hint, (describe,)
    if healthy is not None and needed is not None:
        hint = (
            f"it needs {needed} healthy and has {healthy}: it allows a disruption once a pod evicted earlier is "
            "replaced and Ready"
        )
        return False, hint, (describe,)
    return False, "the API server named this PDB; its counts are not known yet", (describe,)


def pdb_blocks(pods: Mapping[str, PodView], unhealthy: Mapping[str, PdbPodsUnhealthy] | None = None) -> list[PdbBlock]:
    """The PDBs that block pods now, the longest-blocking first; ``unhealthy``: their unhealthy pods by PDB."""
    by_pdb: dict[str, list[PodView]] = {}
    for pod in pods.values():
        if pod.state is PodState.BLOCKED and pod.blocker is not None and pod.blocker.pdb:
            by_pdb.setdefault(pod.blocker.pdb, []).append(pod)
    blocks = []
    for pdb, blocked in by_pdb.items():
        blocked.sort(key=lambda p: (p.blocker.since if p.blocker else 0.0, str(p.pod)))
        latest = max(blocked, key=lambda p: p.blocker.next_try_by if p.blocker else 0.0)
        assert latest.blocker is not None
        healthy, needed = latest.blocker.healthy, latest.blocker.needed
        expected = next((p.blocker.expected for p in blocked if p.blocker and p.blocker.expected is not None), None)
        never, hint, unblock = _advice(pdb, healthy, needed, expected)
        report = (unhealthy or {}).get(pdb)
        if report is not None and report.pods:
            # The longest unhealthy pod is where to look first: its events say why it is not Ready.
            first = report.pods[0].pod
            unblock = (*unblock, kubectl("-n", first.namespace, "describe", "pod", first.name))
        blocks.append(
            PdbBlock(
                pdb=pdb,
                healthy=healthy,
                needed=needed,
                expected=expected,
                pods=tuple(blocked),
                since=min(p.blocker.since for p in blocked if p.blocker),
                next_try_by=min(p.blocker.next_try_by for p in blocked if p.blocker),
                message=latest.blocker.message,
                never=never,
                hint=hint,
                unblock=unblock,
                unhealthy=report.pods if report is not None else (),
                unhealthy_count=report.unhealthy if report is not None else None,
            )
        )
    blocks.sort(key=lambda b: (b.since, b.pdb))
    return blocks
