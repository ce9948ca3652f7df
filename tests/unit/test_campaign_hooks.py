"""A campaign's hooks: real ``sh`` processes, their exit code as the gate, their environment and output."""

from __future__ import annotations

import threading
import time

import pytest

from kubectl_rollout.campaign.hooks import OUTPUT_LINES, run_hook
from kubectl_rollout.jobs.events.campaign import HookRan
from kubectl_rollout.jobs.spec import Connection

CONNECTION = Connection(kubeconfig=("/k/one", "/k/two"), context="prod")


def _run(command: str, *, timeout: float = 10, cancel: threading.Event | None = None) -> HookRan:
    return run_hook(
        command,
        node="blue-1",
        job_id="0123456789ab",
        hook="pre",
        connection=CONNECTION,
        timeout=timeout,
        cancel=cancel or threading.Event(),
    )


@pytest.mark.parametrize(
    ("command", "exit_code", "ok", "output"),
    [
        ("true", 0, True, ""),
        ("exit 3", 3, False, ""),
        ('echo "$ROLLOUT_PLUS_NODE $ROLLOUT_PLUS_JOB $ROLLOUT_PLUS_HOOK"', 0, True, "blue-1 0123456789ab pre"),
        ('echo "$KUBECONFIG $ROLLOUT_PLUS_CONTEXT"', 0, True, "/k/one:/k/two prod"),
        ("echo oops >&2; exit 1", 1, False, "oops"),
    ],
)
def test_a_hooks_exit_code_is_the_gate_and_it_knows_its_node_job_and_cluster(
    command: str, exit_code: int, ok: bool, output: str
) -> None:
    ran = _run(command)
    assert (ran.exit_code, ran.ok, ran.output, ran.timed_out) == (exit_code, ok, output, False)


def test_only_the_end_of_a_long_output_is_kept() -> None:
    ran = _run("seq 1 5000")
    lines = ran.output.splitlines()
    assert len(lines) == OUTPUT_LINES
    assert lines[-1] == "5000"


def test_a_hook_past_its_bound_is_killed_with_its_children_and_fails() -> None:
    started = time.monotonic()
    ran = _run("sleep 30 & sleep 30", timeout=0.5)
    assert ran.timed_out
    assert not ran.ok
    assert time.monotonic() - started < 5


def test_a_cancelled_job_ends_its_hook() -> None:
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    started = time.monotonic()
    ran = _run("sleep 30", cancel=cancel)
    assert not ran.ok
    assert time.monotonic() - started < 5
