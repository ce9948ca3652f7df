"""The pure parts of riding out an API server outage: which errors are transient, how long to wait,
and that a job hears once per outage. The outage itself is tested for real in
tests/integration/test_api_outage.py."""

from __future__ import annotations

import http.client
import random
import ssl
import threading
from collections.abc import Callable

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from kubectl_rollout.kube.api_outage import (
    FIRST_WAIT,
    JITTER,
    MAX_WAIT,
    ApiOutage,
    ApiUnreachableError,
    OutageReport,
    backoff,
    is_connection_error,
    short_reason,
)

POOL = urllib3.HTTPSConnectionPool("127.0.0.1", 6443)
REFUSED = urllib3.exceptions.NewConnectionError(
    POOL, "Failed to establish a new connection: [Errno 111] Connection refused"
)


@pytest.mark.parametrize(
    ("err", "transient"),
    [
        # What the drain of the issue died of: urllib3 gave up connecting.
        (urllib3.exceptions.MaxRetryError(POOL, "/api/v1/pods", REFUSED), True),
        (REFUSED, True),
        (urllib3.exceptions.ProtocolError("Connection aborted.", ConnectionResetError(104, "reset")), True),
        (urllib3.exceptions.ReadTimeoutError(POOL, "/api", "Read timed out. (read timeout=5)"), True),
        (urllib3.exceptions.ConnectTimeoutError(POOL, "timed out"), True),
        (urllib3.exceptions.SSLError("EOF occurred in violation of protocol (_ssl.c:2427)"), True),
        (ssl.SSLEOFError(8, "EOF occurred in violation of protocol"), True),
        (http.client.RemoteDisconnected("Remote end closed connection without response"), True),
        (ConnectionRefusedError(111, "Connection refused"), True),
        (ConnectionResetError(104, "Connection reset by peer"), True),
        (TimeoutError("timed out"), True),
        # A certificate the server fails is no outage: waiting would not fix it.
        (urllib3.exceptions.SSLError("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed"), False),
        (
            urllib3.exceptions.MaxRetryError(
                POOL, "/api", urllib3.exceptions.SSLError("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
            ),
            False,
        ),
        (urllib3.exceptions.ProxyError("proxy said no", OSError("no")), False),
        # Any answer means the server is up.
        (ApiException(status=404, reason="Not Found"), False),
        (ApiException(status=503, reason="Service Unavailable"), False),
        (ValueError("bad"), False),
        (FileNotFoundError("kubeconfig"), False),
    ],
)
def test_which_errors_are_transient(err: BaseException, transient: bool) -> None:
    assert is_connection_error(err) is transient


@pytest.mark.parametrize(
    ("failures", "low", "high"),
    [
        (1, FIRST_WAIT, FIRST_WAIT * (1 + JITTER)),
        (2, 2 * FIRST_WAIT, 2 * FIRST_WAIT * (1 + JITTER)),
        (3, 4 * FIRST_WAIT, 4 * FIRST_WAIT * (1 + JITTER)),
        (4, MAX_WAIT, MAX_WAIT * (1 + JITTER)),
        (50, MAX_WAIT, MAX_WAIT * (1 + JITTER)),
    ],
)
def test_backoff_doubles_up_to_its_cap_and_jitter_only_adds(failures: int, low: float, high: float) -> None:
    for seed in range(50):
        assert low <= backoff(failures, random.Random(seed)) <= high


def test_short_reason_names_what_the_connection_did() -> None:
    assert short_reason(urllib3.exceptions.MaxRetryError(POOL, "/", REFUSED)) == "connection refused"
    assert short_reason(ConnectionResetError(104, "Connection reset by peer")) == "connection reset"


class Recorder:
    def __init__(self) -> None:
        self.down: list[OutageReport] = []
        self.up: list[float] = []
        self.slept: list[float] = []

    def outage(self, give_up_after: float | None = None, cancel: threading.Event | None = None) -> ApiOutage:
        def sleep(seconds: float) -> bool:
            self.slept.append(seconds)
            return False

        return ApiOutage(
            "https://api.example:6443",
            on_down=self.down.append,
            on_up=lambda _report, seconds: self.up.append(seconds),
            give_up_after=give_up_after,
            cancel=cancel,
            sleep=sleep,
        )


def failing(times: int, err: BaseException, result: str = "answer") -> Callable[[], str]:
    left = [times]

    def request() -> str:
        if left[0] > 0:
            left[0] -= 1
            raise err
        return result

    return request


def test_a_request_retries_until_answered_and_the_job_hears_once_each_way() -> None:
    recorder = Recorder()
    outage = recorder.outage()
    assert outage.call(failing(5, REFUSED)) == "answer"
    assert [r.error for r in recorder.down] == ["connection refused"]
    assert recorder.down[0].server == "https://api.example:6443"
    assert len(recorder.up) == 1
    assert len(recorder.slept) == 5
    assert all(0 < s <= MAX_WAIT * (1 + JITTER) for s in recorder.slept)
    # The next outage is a new one.
    outage.call(failing(1, REFUSED))
    assert len(recorder.down) == 2
    assert len(recorder.up) == 2


def test_an_answer_that_is_an_error_ends_the_outage_and_is_raised() -> None:
    recorder = Recorder()
    outage = recorder.outage()
    outage.failed(REFUSED)
    with pytest.raises(ApiException):
        outage.call(failing(1, ApiException(status=409, reason="Conflict")))
    assert len(recorder.up) == 1


def test_past_the_timeout_it_gives_up_with_one_line_naming_the_server() -> None:
    recorder = Recorder()
    outage = recorder.outage(give_up_after=0.000001)
    with pytest.raises(ApiUnreachableError) as raised:
        outage.call(failing(1000, REFUSED))
    message = raised.value.message
    assert message.startswith("the API server at https://api.example:6443 has been unreachable for ")
    assert "(connection refused)" in message
    assert "--timeout" in message
    assert "\n" not in message


def test_cancel_stops_the_retries_with_the_connection_error() -> None:
    cancel = threading.Event()
    cancel.set()
    outage = Recorder().outage(cancel=cancel)
    with pytest.raises(urllib3.exceptions.NewConnectionError):
        outage.call(failing(1000, REFUSED))


def test_a_job_that_ends_while_the_server_is_down_hears_why() -> None:
    recorder = Recorder()
    outage = recorder.outage(give_up_after=30)
    assert outage.still_down() is None
    outage.failed(REFUSED)
    line = outage.still_down()
    assert line is not None
    assert line.startswith("the API server at https://api.example:6443 has been unreachable for ")
    assert "gave up at the --timeout of 30s" in line
    outage.answered()
    assert outage.still_down() is None
