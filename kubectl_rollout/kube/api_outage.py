"""Riding out an API server that stops answering: which errors mean "not now", and how long to wait.

A kube-apiserver restarts (an upgrade, a crash, a control-plane node
rebooting) in seconds to a minute. A job that dies on the first refused
connection leaves a node cordoned and half drained; one that waits goes on
where it was. So every request of a job's cluster goes through
``ApiOutage.call``: a connection that fails (refused, reset, a TLS handshake
cut short, a read that timed out) is retried with a capped exponential backoff
and jitter until the job's own deadline, the job hears once that the server is
unreachable and once that it answers again, and nothing else changes.

An answer, any answer (a 404, a 409, a 429), means the server is up: only the
transport is judged here. A certificate the server does not pass is not an
outage either, and fails at once.
"""

from __future__ import annotations

import http.client
import random
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import urllib3

from kubectl_rollout.kube.errors import UserFacingError

T = TypeVar("T")

#: first wait after a failed connection, doubled per failure up to MAX_WAIT
FIRST_WAIT = 0.25
#: a restarted server is noticed within this long (plus jitter); each waiting
#: thread makes one cheap refused connection per period meanwhile
MAX_WAIT = 2.0
#: fraction added at random (0..JITTER) to every wait, so that the job's threads spread out
JITTER = 0.2


class ApiUnreachableError(UserFacingError):
    """The API server did not answer before the job's deadline."""


def is_connection_error(err: BaseException) -> bool:
    """True when the request never got an answer: the server may well be back in a moment."""
    if isinstance(err, urllib3.exceptions.MaxRetryError):
        return err.reason is None or is_connection_error(err.reason)
    if isinstance(err, urllib3.exceptions.SSLError | ssl.SSLError):
        # A handshake cut short is the server going away; a certificate it does not pass is no outage.
        return "CERTIFICATE_VERIFY_FAILED" not in str(err) and "certificate verify failed" not in str(err)
    if isinstance(err, urllib3.exceptions.ProxyError):
        return False
    return isinstance(
        err,
        urllib3.exceptions.NewConnectionError  # refused, no route (a ConnectTimeoutError)
        | urllib3.exceptions.ProtocolError  # reset, closed mid-answer
        | urllib3.exceptions.TimeoutError  # connect or read timed out
        | http.client.RemoteDisconnected
        | http.client.IncompleteRead
        | ConnectionError  # refused, reset, aborted, broken pipe
        | TimeoutError,
    )


def short_reason(err: BaseException) -> str:
    """A few words for what failed: "connection refused" rather than urllib3's paragraph."""
    text = str(getattr(err, "reason", None) or err)
    lowered = text.lower()
    for words in ("connection refused", "connection reset", "timed out", "remote end closed", "eof"):
        if words in lowered:
            return words
    return " ".join(text.split())[:120]


def backoff(failures: int, rng: random.Random | None = None) -> float:
    """Seconds to wait after the ``failures``-th failure in a row (1 is the first)."""
    base = min(MAX_WAIT, FIRST_WAIT * 2.0 ** max(0, failures - 1))
    return base * (1.0 + (rng or random).uniform(0.0, JITTER))


@dataclass(frozen=True)
class OutageReport:
    """What the job is told: the server, when it stopped answering (epoch seconds), and why."""

    server: str
    since: float
    error: str


class ApiOutage:
    """One job's view of its API server's reachability, shared by all the job's threads.

    ``on_down(report)`` is called once per outage, at its first failed request;
    ``on_up(report, seconds)`` once, at the first answer after it.
    ``give_up_after`` (the command's --timeout; None or 0: never) and ``cancel``
    bound the retries: once the server has been unreachable that long
    ApiUnreachableError is raised, and on cancel the connection error itself.
    Measured from the outage's start, not the request's, so that a thread that
    joins the outage late gives up with the others.
    """

    def __init__(
        self,
        server: str,
        *,
        on_down: Callable[[OutageReport], None],
        on_up: Callable[[OutageReport, float], None],
        give_up_after: float | None = None,
        cancel: threading.Event | None = None,
        sleep: Callable[[float], bool] | None = None,
    ) -> None:
        self.server = server
        self.give_up_after = give_up_after or None
        self.cancel = cancel or threading.Event()
        self._on_down = on_down
        self._on_up = on_up
        self._sleep = sleep or self.cancel.wait
        self._lock = threading.Lock()
        self._down: OutageReport | None = None
        self._down_at = 0.0

    @property
    def down(self) -> OutageReport | None:
        return self._down

    def failed(self, err: BaseException) -> None:
        with self._lock:
            if self._down is not None:
                return
            self._down = OutageReport(server=self.server, since=time.time(), error=short_reason(err))
            self._down_at = time.monotonic()
            report = self._down
        self._on_down(report)

    def answered(self) -> None:
        if self._down is None:  # the common case, without the lock
            return
        with self._lock:
            report, self._down = self._down, None
            if report is None:
                return
            seconds = time.monotonic() - self._down_at
        self._on_up(report, seconds)

    def unreachable_for(self) -> float:
        with self._lock:
            return 0.0 if self._down is None else time.monotonic() - self._down_at

    def call(self, request: Callable[[], T]) -> T:
        """``request()``, again after each connection error, until it is answered, cancelled or too late."""
        failures = 0
        while True:
            try:
                result = request()
            except Exception as err:
                if not is_connection_error(err):
                    self.answered()
                    raise
                failures += 1
                self.failed(err)
                wait = backoff(failures)
                if self.give_up_after is not None:
                    left = self.give_up_after - self.unreachable_for()
                    if left <= 0:
                        raise self.gave_up(err) from err
                    wait = min(wait, left)
                if self.cancel.is_set() or self._sleep(wait):
                    raise
                continue
            self.answered()
            return result

    def gave_up(self, err: BaseException) -> ApiUnreachableError:
        return ApiUnreachableError(self._gave_up_message(short_reason(err)))

    def still_down(self) -> str | None:
        """The one line a job that ended while its server was unreachable fails with (None: it answers)."""
        report = self._down
        return None if report is None else self._gave_up_message(report.error)

    def _gave_up_message(self, reason: str) -> str:
        limit = f"the --timeout of {_seconds(self.give_up_after)}" if self.give_up_after else "the job's end"
        return (
            f"the API server at {self.server} has been unreachable for {_seconds(self.unreachable_for())} "
            f"({reason}); gave up at {limit}. Nothing was undone: run the command again once the server answers"
        )


def _seconds(value: float) -> str:
    return f"{value:.1f}s" if value < 10 else f"{value:.0f}s"
