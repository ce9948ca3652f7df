"""One driver per managed workload: a coordination.k8s.io Lease ``rollout-plus.NAME``.

A driver holds the lease while it acts and renews it as it goes; another
driver (another terminal, the agent, another machine) may take over only
once the lease has expired, for example after the first one was killed.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from datetime import UTC, datetime

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kubectl_rollout.api_retry import call_with_retry
from kubectl_rollout.cluster_access import Cluster
from kubectl_rollout.errors import UserFacingError
from kubectl_rollout.workload_record import record_name

LEASE_SECONDS = 15
RENEW_EVERY = 5.0


class LeaseHeld(UserFacingError):
    pass


def identity() -> str:
    return f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex[:8]}"


class WorkloadLease:
    def __init__(self, cluster: Cluster, namespace: str, name: str, holder: str | None = None) -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.workload = name
        self.name = record_name(name)
        self.holder = holder or identity()
        self._renewed = 0.0

    def _body(self, resource_version: str | None = None) -> client.V1Lease:
        now = datetime.now(UTC)
        return client.V1Lease(
            metadata=client.V1ObjectMeta(name=self.name, namespace=self.namespace, resource_version=resource_version),
            spec=client.V1LeaseSpec(
                holder_identity=self.holder, lease_duration_seconds=LEASE_SECONDS, acquire_time=now, renew_time=now
            ),
        )

    def acquire(self) -> None:
        """Take the lease, or raise LeaseHeld naming who holds it and until when."""
        api = self.cluster.coordination
        try:
            call_with_retry(api.create_namespaced_lease, self.namespace, self._body())
            self._renewed = time.monotonic()
            return
        except ApiException as err:
            if err.status != 409:
                raise
        current = call_with_retry(api.read_namespaced_lease, self.name, self.namespace)
        spec = current.spec
        renewed = spec.renew_time or spec.acquire_time
        expires = renewed.timestamp() + (spec.lease_duration_seconds or LEASE_SECONDS) if renewed else 0.0
        if spec.holder_identity and spec.holder_identity != self.holder and expires > time.time():
            raise LeaseHeld(
                f'managed workload "{self.workload}" is being driven by {spec.holder_identity} (lease '
                f"{self.namespace}/{self.name} valid for {expires - time.time():.0f}s more); wait for it to finish, "
                "or follow it with kubectl rollout-plus status -w"
            )
        try:
            call_with_retry(
                api.replace_namespaced_lease, self.name, self.namespace, self._body(current.metadata.resource_version)
            )
        except ApiException as err:
            if err.status == 409:  # someone else took it between our read and write
                raise LeaseHeld(f'managed workload "{self.workload}" was just taken over by another driver') from err
            raise
        self._renewed = time.monotonic()

    def renew(self) -> None:
        if time.monotonic() - self._renewed < RENEW_EVERY:
            return
        self.acquire()

    def release(self) -> None:
        try:
            current = self.cluster.coordination.read_namespaced_lease(self.name, self.namespace)
            if current.spec.holder_identity == self.holder:
                self.cluster.coordination.delete_namespaced_lease(
                    self.name,
                    self.namespace,
                    body=client.V1DeleteOptions(
                        preconditions=client.V1Preconditions(resource_version=current.metadata.resource_version)
                    ),
                )
        except ApiException:
            pass  # expiry frees it anyway
