"""Running a Job gate: create the step's Job (or find it), and follow it by watch until it ends.

On a thread of its own, like a command gate, so that the driver keeps its
Lease and its watches meanwhile. The Job's name is fixed by the record
(``gate_job.gate_job_name``): a driver that finds the Job already there
(AlreadyExists: an earlier driver created it, then died) follows that Job and
creates none. Stopping a run (its driver ends) stops the following only: the
Job goes on in the cluster, and the next driver follows it to its end.
Cancelling it (the canary aborted, or promoted past the step) deletes the Job
and its pods. Its result is written to the record before the driver acts on
it, so an ended Job is never run again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import urllib3
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from kubectl_rollout.kube.cluster_access import Cluster, describe_api_error
from kubectl_rollout.kube.record_names import record_name
from kubectl_rollout.rollout.canary.gate_job import gate_job, gate_job_name, job_verdict
from kubectl_rollout.rollout.canary.gate_thread import GateOutcome, GateThread
from kubectl_rollout.rollout.canary.job_template import read_template
from kubectl_rollout.rollout.canary.state import CanaryState
from kubectl_rollout.rollout.record import Record
from kubectl_rollout.rollout.steps.format import JobGate

#: a watch of the Job asks the server to end it after this long, and the run reads the Job again: the bound on how
#: long a stopped run takes to notice, and on a change the watch might have missed
WATCH_SECONDS = 10
#: how long past its activeDeadlineSeconds a Job may take to be marked Failed before the gate stops waiting
DEADLINE_GRACE_SECONDS = 60.0


def _epoch(value: Any) -> float:
    return float(value.timestamp()) if hasattr(value, "timestamp") else time.time()


class JobGateRun(GateThread):
    """One driver's following of a gate's Job; ``outcome`` once the Job has ended (or could not be created)."""

    def __init__(
        self, cluster: Cluster, *, name: str, namespace: str, build: Callable[[], Mapping[str, Any]], timeout: float
    ) -> None:
        """``build``: the Job to create (ValueError: the template is missing or wrong), called on the run's thread."""
        super().__init__(name="canary-job-gate")
        self.cluster = cluster
        self.name = name
        self.namespace = namespace
        self._build = build
        self.timeout = timeout
        self.started_at = time.time()
        #: True: this run created the Job; False: it found the Job an earlier driver created
        self.created = False
        self._stopped = threading.Event()
        self._cancelled = threading.Event()

    def stop(self) -> None:
        """Stop following (the driver ends); the Job goes on, and the next driver follows it."""
        self._stopped.set()

    def cancel(self) -> str:
        """Stop following and delete the Job, its pods with it (a Job created after this is deleted as it is)."""
        self._cancelled.set()
        self._stopped.set()
        return delete_gate_job(self.cluster, self.name, self.namespace) or f"Job {self.name} was gone"

    def _run(self) -> None:
        try:
            self.outcome = self._follow()
        except (ApiException, urllib3.exceptions.HTTPError, OSError) as err:
            if not self._stopped.is_set():
                self.outcome = self._ended(False, f"Job {self.name}: {_said(err)}")
        finally:
            if not self._stopped.is_set():
                self._on_end()

    def _ended(self, ok: bool, output: str, finished_at: float | None = None) -> GateOutcome:
        return GateOutcome(
            ok=ok,
            exit_code=None,
            output=output,
            started_at=self.started_at,
            finished_at=finished_at or time.time(),
        )

    def _follow(self) -> GateOutcome | None:
        batch = client.BatchV1Api(self.cluster.api_client)
        try:
            job = self._build()
        except ValueError as err:
            return self._ended(False, f"Job gate: {err}")
        try:
            found = batch.create_namespaced_job(self.namespace, job)
            self.created = True
            if self._cancelled.is_set():  # cancelled while the create was on its way
                delete_gate_job(self.cluster, self.name, self.namespace)
                return None
        except ApiException as err:
            if err.status != 409:
                return self._ended(False, f"Job {self.name} could not be created: {describe_api_error(err)}")
            found = batch.read_namespaced_job(self.name, self.namespace)
        self.started_at = _epoch(found.metadata.creation_timestamp)
        give_up_at = self.started_at + self.timeout + DEADLINE_GRACE_SECONDS
        while not self._stopped.is_set():
            ended = self._verdict(found)
            if ended is not None:
                return ended
            if time.time() > give_up_at:
                return self._ended(False, f"Job {self.name} did not end within {self.timeout:g}s")
            try:
                found, ended = self._watch(batch, found)
            except ApiException as err:
                if err.status != 410:
                    raise
                ended = None  # the version read is too old to watch from: read the Job again
            if ended is not None:
                return ended
            if not self._stopped.is_set():
                found = batch.read_namespaced_job(self.name, self.namespace)
        return None

    def _watch(self, batch: client.BatchV1Api, found: Any) -> tuple[Any, GateOutcome | None]:
        """Watch the Job from the version read, for WATCH_SECONDS at most: (the Job as last seen, its end if it
        ended)."""
        stream = watch.Watch()
        for event in stream.stream(
            batch.list_namespaced_job,
            self.namespace,
            field_selector=f"metadata.name={self.name}",
            resource_version=found.metadata.resource_version,
            timeout_seconds=WATCH_SECONDS,
        ):
            if self._stopped.is_set():
                stream.stop()
                break
            if event["type"] in ("ADDED", "MODIFIED"):
                found = event["object"]
                ended = self._verdict(found)
                if ended is not None:
                    stream.stop()
                    return found, ended
        return found, None

    def _verdict(self, job: Any) -> GateOutcome | None:
        raw = self.cluster.api_client.sanitize_for_serialization(job)
        verdict = job_verdict(raw)
        if verdict is None:
            return None
        ok, said = verdict
        finished = job.status.completion_time if job.status is not None else None
        return self._ended(ok, f"Job {self.name}: {said}", _epoch(finished) if finished is not None else None)


def delete_gate_job(cluster: Cluster, name: str, namespace: str) -> str | None:
    """Delete a gate's Job and its pods (background propagation); a few words on what happened, None when there
    was no such Job."""
    try:
        client.BatchV1Api(cluster.api_client).delete_namespaced_job(name, namespace, propagation_policy="Background")
    except ApiException as err:
        if err.status == 404:
            return None
        return f"Job {name} could not be deleted: {describe_api_error(err)}"
    except (urllib3.exceptions.HTTPError, OSError) as err:
        return f"Job {name} could not be deleted: {_said(err)}"
    return f"Job {name} deleted"


def job_gate_run(
    cluster: Cluster, record: Record, state: CanaryState, gate: JobGate, environment: Mapping[str, str]
) -> JobGateRun:
    """The run of the current step's Job gate: its Job named by the record, from the template as it is now."""
    name = gate_job_name(
        workload=record.name, canary_hash=state.canary_hash, step=state.step, step_started_at=state.step_started_at
    )
    owner = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": record_name(record.name),
        "uid": record.uid,
        "blockOwnerDeletion": False,
    }

    def build() -> Mapping[str, Any]:
        return gate_job(
            read_template(cluster, record.namespace, gate.template),
            name=name,
            namespace=record.namespace,
            workload=record.name,
            step=state.step,
            canary_hash=state.canary_hash,
            environment=environment,
            owner=owner,
            timeout=gate.timeout,
        )

    return JobGateRun(cluster, name=name, namespace=record.namespace, build=build, timeout=gate.timeout)


def _said(err: BaseException) -> str:
    return describe_api_error(err) if isinstance(err, ApiException) else f"{type(err).__name__}: {err}"
