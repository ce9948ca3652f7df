"""A server that never answered is reported in seconds; riding out an outage is for one that did.

``api_outage`` retries a job's requests while its API server is away, because
a server that answered and then went quiet is most likely restarting. A
server that has not answered once since the command started is another
story: a wrong context, a closed VPN, a typo in the address. Waiting for it
would leave the user staring at a command that never ends.

So the first request of a client asks ``GET /version`` first (public to every
user, tiny, never throttled in practice), with a short total timeout and no
retry, in a thread of its own so that even a name lookup that hangs is
bounded. Any HTTP answer proves there is a server; 401 says the credentials
are refused, which no later request would get past either; no answer ends
the command with one line (``unreachable``). After that first answer, every
request goes the ordinary way and outages are ridden out.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from kubectl_rollout.kube.unreachable import ClusterAccessError, describe_unreachable, refused_credentials, where

#: how long a command waits for a server that never answered before it says so (DESIGN: "within ~3 s")
FIRST_CONTACT_SECONDS = 2.5
#: added to the wait for the probe's thread: its own timeout ends it first, unless a name lookup hangs. Room
#: for a loaded machine to schedule the thread whose timeout fired: with 0.3 s, at load 15, the wait ran out
#: first and a silent server was worded as a hang ("within 2.5s ... DNS") instead of "did not answer in time".
_THREAD_GRACE = 1.0

#: ``ask(timeout)`` makes one request and returns the HTTP status it got
Ask = Callable[[float], int]


def first_contact_timeout(request_timeout: float) -> float:
    """The first contact's bound: FIRST_CONTACT_SECONDS, or a shorter --request-timeout."""
    return min(request_timeout, FIRST_CONTACT_SECONDS) if request_timeout > 0 else FIRST_CONTACT_SECONDS


class FirstContact:
    """Whether one client's server has answered yet. Thread-safe: one thread asks, the others wait for it.

    A failed first contact is the answer for every request made within the
    next ``timeout`` seconds: threads that queued behind the one that asked
    fail with it, instead of each asking again in turn (ten requests would
    otherwise take ten timeouts). A client that lives on (the agent's) asks
    again after that.
    """

    def __init__(self, *, server: str, context: str, timeout: float) -> None:
        self.server = server
        self.context = context
        self.timeout = timeout
        self._answered = threading.Event()
        self._lock = threading.Lock()
        self._failed: tuple[float, ClusterAccessError] | None = None

    @property
    def answered(self) -> bool:
        return self._answered.is_set()

    def mark_answered(self) -> None:
        """The server is known to have answered (a job resumed after a restart: it did, before)."""
        self._answered.set()

    def ensure(self, ask: Ask) -> None:
        """Return at once once the server has answered; else ask it, and raise ClusterAccessError without an answer."""
        if self._answered.is_set():
            return
        with self._lock:
            if self._answered.is_set():
                return
            if self._failed is not None and time.monotonic() - self._failed[0] < self.timeout:
                raise ClusterAccessError(self._failed[1].message)
            try:
                status = self._ask_within_bound(ask)
                if status == 401:
                    raise refused_credentials(self.server, self.context)
            except ClusterAccessError as err:
                self._failed = (time.monotonic(), err)
                raise
            self._failed = None
            self._answered.set()

    def _ask_within_bound(self, ask: Ask) -> int:
        outcome: list[int | BaseException] = []
        done = threading.Event()

        def asking() -> None:
            try:
                outcome.append(ask(self.timeout))
            except BaseException as err:  # handed to the waiting thread, which raises or words it
                outcome.append(err)
            finally:
                done.set()

        threading.Thread(target=asking, name="first-contact", daemon=True).start()
        if not done.wait(self.timeout + _THREAD_GRACE):
            raise ClusterAccessError(
                f"{where(self.server, self.context)} did not answer within {self.timeout:g}s; check that it is up "
                "and reachable from here (VPN, proxy, firewall, DNS)"
            )
        import urllib3  # imported by the client that asks anyway; `version`'s light path imports this module too

        result = outcome[0]
        if isinstance(result, urllib3.exceptions.HTTPError | OSError):
            raise describe_unreachable(result, server=self.server, context=self.context) from result
        if isinstance(result, BaseException):
            raise result
        return result
