"""One actor at a time on a workload: a coordination.k8s.io Lease.

A managed workload's driver holds ``rollout-plus.NAME`` while it acts and
renews it as it goes; another driver (another terminal, the agent, another
machine) may take over only once the lease has expired, for example after the
first one was killed, or at once when its holder is a process of this machine that
has provably ended (``holder_identity``: a SIGKILLed foreground driver's Lease is
taken over in a second, not after its 15 s). An eviction-based restart holds a lease of its own the
same way (``LeaseKeeper`` renews it from a thread while the restart waits).

A holder that is not the workload's rollout driver (a drain surging a managed
workload holds its driver's Lease) writes its ``purpose`` on the Lease: whoever
finds the Lease held is told that sentence rather than "is being driven", and a
spec change, which only a driver would carry out, is refused while it holds
(``refuse_while_held_for_a_purpose``) instead of being recorded and left undriven.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from datetime import UTC, datetime
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kubectl_rollout.kube.api_retry import call_with_retry
from kubectl_rollout.kube.cluster_access import Cluster
from kubectl_rollout.kube.errors import UserFacingError
from kubectl_rollout.kube.holder_identity import display, holder_verdict, identity, why_gone

LEASE_SECONDS = 15
RENEW_EVERY = 5.0
#: the annotation on a Lease in which a holder that is not a rollout driver says what it holds it for
PURPOSE = "rollout-plus.kubectl.io/purpose"

#: how many times ``acquire`` starts over when the Lease is deleted between its create and its read or write
_VANISHED_RETRIES = 5

log = logging.getLogger(__name__)


class _Vanished(Exception):
    """The Lease was deleted between two of ``acquire``'s steps: start over from the create."""


class LeaseHeld(UserFacingError):
    """Another actor holds the lease: who (empty when unknown), which lease, and when it lapses unless renewed."""

    def __init__(
        self, message: str, *, lease: str = "", holder: str = "", expires_at: float = 0.0, seconds_left: float = 0.0
    ) -> None:
        super().__init__(message)
        self.lease = lease
        self.holder = holder
        self.expires_at = expires_at
        self.seconds_left = seconds_left


__all__ = ["LEASE_SECONDS", "LeaseHeld", "LeaseKeeper", "WorkloadLease", "expires_at", "identity"]


def expires_at(spec: Any) -> float:
    """When a lease as written lapses, in seconds since the epoch (0: never taken)."""
    renewed = spec.renew_time or spec.acquire_time
    return float(renewed.timestamp() + (spec.lease_duration_seconds or LEASE_SECONDS)) if renewed else 0.0


class WorkloadLease:
    def __init__(
        self,
        cluster: Cluster,
        namespace: str,
        name: str,
        holder: str | None = None,
        *,
        lease_name: str,
        subject: str,
        advice: str,
        purpose: str = "",
    ) -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.workload = name
        self.name = lease_name
        self.holder = holder or identity()
        #: what the holder is doing ("... is being driven"), and what to do while it holds the lease
        self.subject = subject
        self.advice = advice
        #: written on the Lease: what this holder holds it for, told as is to whoever finds it held ("" for none)
        self.purpose = purpose
        self._renewed = 0.0
        #: the resourceVersion of our own last write of the Lease (None: not held by this object)
        self._version: str | None = None
        #: the holder whose unexpired Lease the last ``acquire`` took because its process had provably ended,
        #: and that in words ("" for none)
        self.took_from_gone = ""
        self.gone_because = ""

    def _body(self, resource_version: str | None = None) -> client.V1Lease:
        now = datetime.now(UTC)
        return client.V1Lease(
            metadata=client.V1ObjectMeta(
                name=self.name,
                namespace=self.namespace,
                resource_version=resource_version,
                annotations={PURPOSE: self.purpose} if self.purpose else None,
            ),
            spec=client.V1LeaseSpec(
                holder_identity=self.holder, lease_duration_seconds=LEASE_SECONDS, acquire_time=now, renew_time=now
            ),
        )

    def expiry(self) -> float:
        """When the lease as it stands now lapses, in seconds since the epoch (0: no lease, or its holder is a
        process of this machine that has provably ended); a renewal moves it."""
        try:
            current = call_with_retry(self.cluster.coordination.read_namespaced_lease, self.name, self.namespace)
        except ApiException as err:
            if err.status == 404:
                return 0.0
            raise
        holder = current.spec.holder_identity
        if holder and holder != self.holder and holder_verdict(holder).gone:
            return 0.0
        return expires_at(current.spec)

    def seconds_left(self) -> float:
        """How long until the lease as it stands now expires (0 when it is free or lapsed)."""
        return max(0.0, self.expiry() - time.time())

    def held(self) -> LeaseHeld | None:
        """Who holds the lease now, if another live holder does (as ``acquire`` would say); changes nothing."""
        try:
            current = call_with_retry(self.cluster.coordination.read_namespaced_lease, self.name, self.namespace)
        except ApiException as err:
            if err.status == 404:
                return None
            raise
        holder = current.spec.holder_identity
        if not holder or holder == self.holder or expires_at(current.spec) <= time.time():
            return None
        if holder_verdict(holder).gone:
            return None
        return held_error(current, subject=self.subject, advice=self.advice)

    def take_if_free(self) -> bool:
        """Take the Lease if there is none (one create), and say so; one already there is left for ``acquire`` to
        judge (False)."""
        try:
            created = call_with_retry(self.cluster.coordination.create_namespaced_lease, self.namespace, self._body())
        except ApiException as err:
            if err.status == 409:
                return False
            raise
        self.took_from_gone = self.gone_because = ""
        self._renewed, self._version = time.monotonic(), created.metadata.resource_version
        return True

    def acquire(self) -> None:
        """Take the lease, or raise LeaseHeld naming who holds it and until when.

        A Lease still valid is taken only when its holder is a process of this machine that has provably ended
        (``took_from_gone`` says whose), and like a lapsed one by a write conditional on the version read: of two
        processes that both judged it so, one writes and the other is told it was just taken. A Lease its holder
        deletes between our steps (a driver finishing as we arrive) is simply created again.
        """
        self.took_from_gone = self.gone_because = ""
        for _ in range(_VANISHED_RETRIES):
            try:
                self._take()
                return
            except _Vanished:
                continue
        # Created and deleted under us again and again: as good as held by someone who keeps coming back.
        raise LeaseHeld(
            f"lease {self.namespace}/{self.name} keeps being taken and released by another process",
            lease=f"{self.namespace}/{self.name}",
        )

    def _take(self) -> None:
        """One try: create the Lease, or judge the one there and overwrite it; _Vanished when it went meanwhile."""
        if self.take_if_free():
            return
        api = self.cluster.coordination
        try:
            current = call_with_retry(api.read_namespaced_lease, self.name, self.namespace)
        except ApiException as err:
            if err.status == 404:  # released between our create and our read
                raise _Vanished from err
            raise
        spec = current.spec
        expires = expires_at(spec)
        left = expires - time.time()
        gone = ""
        if spec.holder_identity and spec.holder_identity != self.holder and left > 0:
            verdict = holder_verdict(spec.holder_identity)
            if not verdict.gone:
                raise held_error(current, subject=self.subject, advice=self.advice)
            gone = why_gone(spec.holder_identity, verdict)
        try:
            written = call_with_retry(
                api.replace_namespaced_lease, self.name, self.namespace, self._body(current.metadata.resource_version)
            )
        except ApiException as err:
            if err.status == 409:  # someone else took it between our read and write
                raise LeaseHeld(
                    f"lease {self.namespace}/{self.name} was just taken by another process",
                    lease=f"{self.namespace}/{self.name}",
                ) from err
            if err.status == 404:  # released between our read and our write (a server that creates Leases on
                # update, as kube-apiserver does, writes ours instead)
                raise _Vanished from err
            raise
        self._renewed, self._version = time.monotonic(), written.metadata.resource_version
        if gone:
            log.info("lease %s/%s taken over %.0fs before it lapsed: %s", self.namespace, self.name, left, gone)
            self.took_from_gone, self.gone_because = spec.holder_identity, gone

    def renew(self) -> None:
        """Hold the lease on: one write conditional on our own last one, or ``acquire`` anew when the Lease
        changed under us (gone, or written by another: that one is judged as ``acquire`` judges it)."""
        if time.monotonic() - self._renewed < RENEW_EVERY:
            return
        if self._version is not None:
            try:
                written = call_with_retry(
                    self.cluster.coordination.replace_namespaced_lease,
                    self.name,
                    self.namespace,
                    self._body(self._version),
                )
            except ApiException as err:
                if err.status not in (404, 409):
                    raise
            else:
                self._renewed, self._version = time.monotonic(), written.metadata.resource_version
                return
        self._version = None
        self.acquire()

    def release(self) -> None:
        """Delete the Lease if it is still as we last wrote it (another holder's is left alone)."""
        version, self._version = self._version, None
        if version is None:
            return
        # Taken by another meanwhile (409), or gone: nothing to do; a delete that failed otherwise lapses anyway.
        with contextlib.suppress(ApiException):
            call_with_retry(
                self.cluster.coordination.delete_namespaced_lease,
                self.name,
                self.namespace,
                body=client.V1DeleteOptions(preconditions=client.V1Preconditions(resource_version=version)),
            )


def held_error(lease: Any, *, subject: str, advice: str) -> LeaseHeld:
    """LeaseHeld for a Lease as read: in its holder's own words when it wrote a purpose, else in the asker's."""
    metadata, spec = lease.metadata, lease.spec
    expires = expires_at(spec)
    left = max(0.0, expires - time.time())
    where = f"{metadata.namespace}/{metadata.name}"
    holder = display(spec.holder_identity or "")
    purpose = (metadata.annotations or {}).get(PURPOSE, "")
    if purpose:
        message = f"{purpose} (lease {where} held by {holder}, valid for {left:.0f}s more)"
    else:
        message = f"{subject} by {holder} (lease {where} valid for {left:.0f}s more); {advice}"
    return LeaseHeld(message, lease=where, holder=spec.holder_identity or "", expires_at=expires, seconds_left=left)


def refuse_while_held_for_a_purpose(cluster: Cluster, namespace: str, lease_name: str) -> None:
    """LeaseHeld when a live holder that wrote its purpose holds the Lease (a drain surging the workload).

    A rollout driver that holds it carries out a spec change recorded meanwhile, so that is allowed; any other
    holder would leave the change recorded but undriven until it lets go, so the change is refused, unmade.
    """
    try:
        lease = call_with_retry(cluster.coordination.read_namespaced_lease, lease_name, namespace)
    except ApiException as err:
        if err.status == 404:
            return
        raise
    if (lease.metadata.annotations or {}).get(PURPOSE) and expires_at(lease.spec) > time.time():
        raise held_error(lease, subject="", advice="")


class LeaseKeeper:
    """Holds a lease from a thread, renewing it while the caller blocks in long waits.

    Losing it (another actor took it over after it lapsed, say while this
    process was stopped) sets ``lost`` and the caller's ``cancel``: two actors
    must not go on side by side.
    """

    def __init__(self, lease: WorkloadLease, cancel: threading.Event) -> None:
        self.lease = lease
        self.cancel = cancel
        self.lost = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew, name=f"lease-{lease.name}", daemon=True)

    def start(self) -> LeaseKeeper:
        """Take the lease (LeaseHeld if another holds it) and begin renewing it."""
        self.lease.acquire()
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop renewing and give the lease back, unless it was lost to another."""
        self._stop.set()
        self._thread.join()
        if not self.lost:
            self.lease.release()

    def _renew(self) -> None:
        while not self._stop.wait(RENEW_EVERY):
            try:
                self.lease.renew()
            except LeaseHeld as err:
                self.lost = str(err)
                self.cancel.set()
                return
            except ApiException:
                continue  # a failed renewal is retried; the lease outlives a few of them
            except Exception as err:
                # The API server unreachable past the job's --timeout, say: the job itself fails with
                # that line; this thread must not print a traceback of its own. The next renewal retries.
                log.debug("renewing lease %s failed: %s", self.lease.name, err)
                continue
