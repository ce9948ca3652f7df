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
from dataclasses import dataclass, field

from kubectl_rollout.jobs.events.drain import WorkloadRef
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
    #: the workloads of the pods it blocks, where the drain named them (``PodOwnerKnown``)
    owners: tuple[WorkloadRef, ...] = ()
    #: what --surge does, or would do, for those workloads ("" when none is known)
    surge: str = ""
    #: those a drain with --surge would raise (this one does not surge them yet)
    surgeable: tuple[WorkloadRef, ...] = ()

    @property
    def counts(self) -> str:
        """``2 healthy/2 needed``, as the blocker panel and the pod table print it."""
        healthy = "?" if self.healthy is None else str(self.healthy)
        needed = "?" if self.needed is None else str(self.needed)
        return f"{healthy}/{needed}"


#: the kinds ``drain --surge`` can raise (the surge's own list: kubectl_rollout.drain.surge.decision)
SURGEABLE_KINDS = frozenset({"Deployment", "ManagedWorkload"})

#: how ``kubectl scale`` names each kind it can scale
_SCALE_RESOURCE = {
    "Deployment": "deployment",
    "StatefulSet": "statefulset",
    "ReplicaSet": "replicaset",
    "ReplicationController": "replicationcontroller",
}


def scale_command(owner: WorkloadRef, replicas: int) -> str | None:
    """The command that gives ``owner`` ``replicas`` replicas; None for what has no count (a bare pod, a Job)."""
    if owner.kind == "ManagedWorkload":
        return kubectl("rollout-plus", "scale", owner.name, f"--replicas={replicas}", "-n", owner.namespace)
    resource = _SCALE_RESOURCE.get(owner.kind)
    if resource is None:
        return None
    return kubectl("-n", owner.namespace, "scale", f"{resource}/{owner.name}", f"--replicas={replicas}")


def _named(owner: WorkloadRef) -> str:
    """A workload as a sentence names it: ``Deployment shop/web``, ``managed workload shop/web``."""
    if owner.kind == "ManagedWorkload":
        return f"managed workload {owner.namespace}/{owner.name}"
    return str(owner)


def _never_advice(pdb: str, needed: int, expected: int, owners: tuple[WorkloadRef, ...]) -> tuple[str, tuple[str, ...]]:
    namespace, _, name = pdb.partition("/")
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
    scales = tuple(c for c in (scale_command(o, needed + 1) for o in owners) if c is not None)
    bare = [o for o in owners if o.kind == "Pod"]
    if owners and len(bare) == len(owners):
        give = "It is a bare pod: no workload runs a copy of it. Let the PDB allow a disruption"
    elif scales:
        give = f"Give {', '.join(_named(o) for o in owners)} more replicas, or let the PDB allow one"
    elif owners:
        give = f"{', '.join(_named(o) for o in owners)} has no replica count to raise: let the PDB allow a disruption"
    else:
        give = "Give its workload more replicas, or let the PDB allow one"
    hint = (
        f"it selects {expected} pod{'s' if expected != 1 else ''} and needs {needed} healthy: it can never allow "
        f"a disruption; waiting will not help. {give}"
    )
    return hint, (*scales, relax)


def _advice(
    pdb: str, healthy: int | None, needed: int | None, expected: int | None, owners: tuple[WorkloadRef, ...]
) -> tuple[bool, str, tuple[str, ...]]:
    namespace, _, name = pdb.partition("/")
    describe = kubectl("-n", namespace, "describe", "pdb", name)
    if expected is not None and needed is not None and expected > 0 and needed >= expected:
        hint, commands = _never_advice(pdb, needed, expected, owners)
        return True, hint, commands
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


@dataclass(frozen=True, kw_only=True)
class OwnerFacts:
    """What a job's events said of its held pods' workloads and, for a drain, of ``--surge``: which workloads it
    raised and why it left others alone. Empty when nothing is known (an older recording)."""

    #: each pod's workload ("namespace/name" -> owner), for the pods a PDB held
    owners: Mapping[str, WorkloadRef] = field(default_factory=dict)
    #: whether --surge is a way out at all (a drain's; a restart by eviction has none)
    surge_applies: bool = True
    #: pods whose workload this drain did not surge, with why ("namespace/name" -> reason)
    not_surged: Mapping[str, str] = field(default_factory=dict)
    #: workloads this drain raised now ("Kind ns/name" -> replicas)
    surging: Mapping[str, int] = field(default_factory=dict)
    #: what would surge a held workload, as the advice's sentence starts ("drain --surge would start ...")
    surge_way: str = "drain --surge would"


def _surge_advice(
    owners: Mapping[WorkloadRef, list[PodView]], surge: OwnerFacts
) -> tuple[str, tuple[WorkloadRef, ...]]:
    """What ``--surge`` does (or would do) for the workloads of a PDB's blocked pods, and those a drain with
    ``--surge`` would raise."""
    said: list[str] = []
    surgeable: list[WorkloadRef] = []
    if not surge.surge_applies:
        return "", ()
    for owner, pods in sorted(owners.items()):
        why_not = next((surge.not_surged[str(p.pod)] for p in pods if str(p.pod) in surge.not_surged), None)
        raised = surge.surging.get(str(owner))
        if why_not is not None:
            said.append(f"--surge left {_named(owner)} alone: {why_not}")
        elif raised is not None:
            said.append(
                f"--surge raised {_named(owner)} to {raised} replicas; its pods here go once the extra ones are Ready"
            )
        elif owner.kind in SURGEABLE_KINDS:
            surgeable.append(owner)
            count = len(pods)
            said.append(
                f"{surge.surge_way} start {count} extra replica{'s' if count != 1 else ''} of {_named(owner)} "
                f"on other nodes first, evict {'this pod' if count == 1 else 'these pods'}, then restore the count; "
                "the PDB never drops below its minimum"
            )
        elif owner.kind == "StatefulSet":
            said.append(
                f"--surge cannot help {_named(owner)}: a StatefulSet's pods have identities (an extra replica is a "
                "new ordinal, not a stand-in)"
            )
        elif owner.kind == "Pod":
            said.append(f"--surge cannot help: pod {owner.namespace}/{owner.name} is bare, nothing runs a copy")
        else:
            said.append(f"--surge cannot help {_named(owner)}: its replicas are not a count a drain raises")
    return "; ".join(said), tuple(surgeable)


def pdb_blocks(
    pods: Mapping[str, PodView],
    unhealthy: Mapping[str, PdbPodsUnhealthy] | None = None,
    *,
    surge: OwnerFacts | None = None,
) -> list[PdbBlock]:
    """The PDBs that block pods now, the longest-blocking first; ``unhealthy``: their unhealthy pods by PDB;
    ``surge``: a drain's owners and surges (the advice then names the workloads, and says what --surge does)."""
    surge = surge or OwnerFacts()
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
        owners: dict[WorkloadRef, list[PodView]] = {}
        for pod in blocked:
            owner = surge.owners.get(str(pod.pod))
            if owner is not None:
                owners.setdefault(owner, []).append(pod)
        never, hint, unblock = _advice(pdb, healthy, needed, expected, tuple(sorted(owners)))
        surge_said, surgeable = _surge_advice(owners, surge)
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
                owners=tuple(sorted(owners)),
                surge=surge_said,
                surgeable=surgeable,
            )
        )
    blocks.sort(key=lambda b: (b.since, b.pdb))
    return blocks
