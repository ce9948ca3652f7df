"""How the agent writes a job's events to one client: in order, from any sequence number, and coalesced
when the client has fallen far behind. The agent's own stream code, with a client that records what it gets."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from kubectl_rollout.agent.host.job_host import JobHost
from kubectl_rollout.agent.host.journal import Journal
from kubectl_rollout.agent.host.live_job import LiveJob
from kubectl_rollout.agent.paths import ENV_DIR, agent_paths
from kubectl_rollout.agent.protocol import Notification, decode, encode_event
from kubectl_rollout.agent.settings import Settings
from kubectl_rollout.agent.transport.process import lease_holder_for
from kubectl_rollout.agent.transport.server import AgentServer
from kubectl_rollout.jobs.events.base import Envelope, PodRef
from kubectl_rollout.jobs.events.eviction import PodGone
from kubectl_rollout.jobs.events.restart import WaitingForReplacement
from kubectl_rollout.jobs.kinds import facts_for
from kubectl_rollout.jobs.spec import Connection, DrainJob, JobKind, JobSpec

SPEC = JobSpec(kind=JobKind.DRAIN, connection=Connection(context="c"), drain=DrainJob(nodes=("n1",)))


class RecordingClient:
    """Stands in for a client's connection: keeps every line, drains at once."""

    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, data: bytes) -> None:
        self.data.extend(data)

    async def drain(self) -> None:
        await asyncio.sleep(0)

    def messages(self) -> list[Notification]:
        return [m for m in (decode(line) for line in self.data.splitlines()) if isinstance(m, Notification)]


def _line(seq: int, event: Any) -> tuple[int, str | None, bytes]:
    envelope = Envelope(job="j1", seq=seq, at=float(seq), event=event)
    return seq, event.coalesce_key(), encode_event(json.dumps(envelope.as_dict()))


def _agent(tmp_path: Path, **settings: Any) -> AgentServer:
    paths = agent_paths({ENV_DIR: str(tmp_path)})
    host = JobHost(Journal(tmp_path / "j.sqlite3"), Settings(**settings), lease_holder=lease_holder_for(paths))
    return AgentServer(paths, host, Settings(**settings))


def _stream(agent: AgentServer, job: LiveJob, from_seq: int) -> RecordingClient:
    client = RecordingClient()
    asyncio.run(agent._stream(client, job, from_seq, follow=False))  # type: ignore[arg-type]
    return client


def test_a_client_gets_every_event_from_the_sequence_number_it_asks_then_the_end(tmp_path: Path) -> None:
    pod = PodRef(namespace="ns", name="p")
    history = [_line(seq, PodGone(pod=pod, after=0.1)) for seq in range(1, 11)]
    job = LiveJob("j1", SPEC, resumed=False, history=history)
    messages = _stream(_agent(tmp_path), job, 4).messages()
    assert [m.params["seq"] for m in messages[:-1]] == list(range(4, 11))
    assert (messages[-1].method, messages[-1].params) == ("end", {"job": "j1", "last_seq": 10})


def test_a_client_far_behind_gets_the_last_state_of_each_object_and_is_told_how_many_were_left_out(
    tmp_path: Path,
) -> None:
    pods = [PodRef(namespace="ns", name=f"p{i}") for i in range(3)]
    history = []
    for seq in range(1, 31):
        pod = pods[seq % 3]
        if seq % 10 == 0:
            history.append(_line(seq, PodGone(pod=pod, after=1.0)))  # no key: never left out
        else:
            history.append(_line(seq, WaitingForReplacement(pod=pod, ready=seq, desired=99)))
    job = LiveJob("j1", SPEC, resumed=False, history=history)
    messages = _stream(_agent(tmp_path, lag_events=5), job, 1).messages()
    lagged, *events, end = messages
    assert lagged.method == "lagged"
    assert lagged.params == {"job": "j1", "skipped": 30 - len(events)}
    kept = [m.params["seq"] for m in events]
    assert kept == sorted(kept)
    assert {10, 20, 30} <= set(kept)  # every unkeyed event
    last_per_pod = {}
    for seq, _key, _data in history:
        if seq % 10:
            last_per_pod[pods[seq % 3].name] = seq
    assert set(kept) == {10, 20, 30} | set(last_per_pod.values())
    assert end.params == {"job": "j1", "last_seq": 30}


def test_the_lease_holder_is_stable_per_state_directory(tmp_path: Path) -> None:
    one = agent_paths({ENV_DIR: str(tmp_path / "one")})
    other = agent_paths({ENV_DIR: str(tmp_path / "other")})
    assert lease_holder_for(one) == lease_holder_for(agent_paths({ENV_DIR: str(tmp_path / "one")}))
    assert lease_holder_for(one) != lease_holder_for(other)
    assert "/rollout-plus-agent/uid-" in lease_holder_for(one)


def test_what_an_interrupted_job_runs_when_it_resumes() -> None:
    from kubectl_rollout.jobs.spec import ActionKind, RestartJob, RolloutAction

    def spec_to_resume(spec: JobSpec, recorded: set[str]) -> JobSpec:
        return facts_for(spec).to_resume(spec, recorded)

    connection = Connection(context="c", namespace="shop")
    restart = JobSpec(kind=JobKind.RESTART, connection=connection, restart=RestartJob(workload="deployment/web"))
    resumed = spec_to_resume(restart, {"JobStarted", "RestartPlanned"})
    assert resumed.restart is not None
    assert resumed.restart.resume  # from its cutoff label: no pod replaced twice

    manifest = {"metadata": {"name": "web", "namespace": "other"}, "spec": {}}
    apply = JobSpec(
        kind=JobKind.ROLLOUT,
        connection=connection,
        rollout=RolloutAction(kind=ActionKind.APPLY, manifest=manifest),
    )
    # The change never reached the record: apply it again.
    assert spec_to_resume(apply, {"JobStarted"}) == apply
    # Recorded: follow the rollout to its end instead of changing it a second time.
    followed = spec_to_resume(apply, {"JobStarted", "SpecChanged"}).rollout
    assert followed is not None
    assert (followed.kind, followed.name, followed.namespace, followed.manifest) == (
        ActionKind.WATCH,
        "web",
        "other",
        None,
    )
    assert spec_to_resume(SPEC, {"JobStarted", "NodeCordoned"}) == SPEC


def test_a_second_rollout_of_a_workload_conflicts() -> None:
    from kubectl_rollout.agent.host.conflicts import conflict
    from kubectl_rollout.jobs.spec import ActionKind, RolloutAction

    def rollout(kind: ActionKind) -> JobSpec:
        return JobSpec(
            kind=JobKind.ROLLOUT,
            connection=Connection(context="c", namespace="shop"),
            rollout=RolloutAction(kind=kind, name="web"),
        )

    restart = rollout(ActionKind.RESTART)
    running = {"job1": facts_for(restart).claims(restart)}
    assert conflict(rollout(ActionKind.SCALE), running) == ("job1", "shop/workload/web")


def test_an_attach_that_asks_gets_the_backlog_coalesced_however_short(tmp_path: Path) -> None:
    pod = PodRef(namespace="ns", name="p")
    history = [_line(seq, WaitingForReplacement(pod=pod, ready=seq, desired=9)) for seq in range(1, 5)]
    history.append(_line(5, PodGone(pod=pod, after=1.0)))
    job = LiveJob("j1", SPEC, resumed=False, history=history)
    agent = _agent(tmp_path)  # lag_events 2000: a plain attach gets all five
    assert len(_stream(agent, job, 1).messages()) == 6

    client = RecordingClient()
    asyncio.run(agent._stream(client, job, 1, follow=False, coalesce_backlog=True))  # type: ignore[arg-type]
    lagged, *events, end = client.messages()
    assert (lagged.method, lagged.params) == ("lagged", {"job": "j1", "skipped": 3})
    assert [m.params["seq"] for m in events] == [4, 5]
    assert end.params == {"job": "j1", "last_seq": 5}


def test_the_journal_keeps_each_event_coalesce_key_for_attaching_to_finished_jobs(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.sqlite3")
    journal.create_job("j1", SPEC)
    pod = PodRef(namespace="ns", name="p")
    for seq, event in enumerate([WaitingForReplacement(pod=pod, ready=1, desired=2), PodGone(pod=pod, after=1.0)], 1):
        envelope = Envelope(job="j1", seq=seq, at=float(seq), event=event)
        journal.append(envelope, json.dumps(envelope.as_dict()))
    assert [e.coalesce_key for e in journal.events("j1")] == ["replacement:ns/p", None]
