"""Whether a Lease holder is a process of this machine that has provably ended (``kube.holder_identity``).

Every case that cannot be decided for sure must come out "not gone": its Lease
is then waited out as before, which is slow but never puts two drivers on one
workload.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kubectl_rollout.kube.holder_identity import (
    ProcessHolder,
    ProcessState,
    ThisMachine,
    Verdict,
    display,
    holder_verdict,
    identity,
    judge,
    parse,
    read_process,
    this_machine,
    why_gone,
)

HERE = ThisMachine(uid=1000, boot="1a2b3c4d5e6f", machine="9f8e7d6c5b4a", pidns=4026531836)
PROOF = "proc,uid=1000,start=912345,boot=1a2b3c4d5e6f,machine=9f8e7d6c5b4a,pidns=4026531836"
HOLDER = f"build-01/4242/78bad10c/{PROOF}"


@pytest.mark.parametrize(
    ("holder", "here", "processes", "verdict"),
    [
        # the holder's process is gone from this machine's process table: SIGKILLed and reaped
        (HOLDER, HERE, {}, Verdict.ENDED),
        # killed, not reaped yet by its parent: a zombie runs no code, renews nothing
        (HOLDER, HERE, {4242: ProcessState(start=912345, state="Z")}, Verdict.ZOMBIE),
        (HOLDER, HERE, {4242: ProcessState(start=912345, state="X")}, Verdict.ZOMBIE),
        # still running (sleeping, running, in a disk wait, stopped by Ctrl-Z: it renews once continued)
        (HOLDER, HERE, {4242: ProcessState(start=912345, state="S")}, Verdict.RUNNING),
        (HOLDER, HERE, {4242: ProcessState(start=912345, state="R")}, Verdict.RUNNING),
        (HOLDER, HERE, {4242: ProcessState(start=912345, state="T")}, Verdict.RUNNING),
        # the PID is another process's now: it started later than the holder did
        (HOLDER, HERE, {4242: ProcessState(start=999999, state="S")}, Verdict.PID_REUSED),
        # a process with that PID whose stat cannot be read: nothing proves it is not the holder
        (HOLDER, HERE, {4242: ProcessState(start=None)}, Verdict.UNREADABLE),
        # this machine rebooted since: its PIDs are not the holder's (and its Lease has long lapsed anyway)
        (
            HOLDER,
            ThisMachine(uid=1000, boot="000000000000", machine=HERE.machine, pidns=HERE.pidns),
            {},
            Verdict.ELSEWHERE,
        ),
        # another machine of the same hostname: its boot and machine-id differ, whatever its process table says
        (
            HOLDER,
            ThisMachine(uid=1000, boot="aaaaaaaaaaaa", machine="bbbbbbbbbbbb", pidns=HERE.pidns),
            {},
            Verdict.ELSEWHERE,
        ),
        # a clone sharing the machine-id (an image baked with one), booted on its own
        (
            HOLDER,
            ThisMachine(uid=1000, boot="aaaaaaaaaaaa", machine=HERE.machine, pidns=HERE.pidns),
            {},
            Verdict.ELSEWHERE,
        ),
        # another container of this host: same boot id (and maybe machine-id), another PID namespace
        (HOLDER, ThisMachine(uid=1000, boot=HERE.boot, machine=HERE.machine, pidns=4026532000), {}, Verdict.ELSEWHERE),
        # another user of this machine: /proc may hide its processes (hidepid), so their absence proves nothing
        (HOLDER, ThisMachine(uid=1001, boot=HERE.boot, machine=HERE.machine, pidns=HERE.pidns), {}, Verdict.ELSEWHERE),
        # this machine's facts could not be read (no /proc, not Linux)
        (HOLDER, None, {}, Verdict.ELSEWHERE),
        # an older version's identity: waited out as before
        ("build-01/4242/78bad10c", HERE, {}, Verdict.NOT_A_PROCESS),
        # the agent's stable identity: the agent takes back its own Lease; nobody else judges it
        ("build-01/rollout-plus-agent/uid-1000/0f1e2d3c", HERE, {}, Verdict.NOT_A_PROCESS),
        # a holder of another program, or a test's
        ("agent-of-this-user", HERE, {}, Verdict.NOT_A_PROCESS),
        ("", HERE, {}, Verdict.NOT_A_PROCESS),
        # garbage shaped almost like ours
        (f"/4242/78bad10c/{PROOF}", HERE, {}, Verdict.NOT_A_PROCESS),
        (f"build-01/42x/78bad10c/{PROOF}", HERE, {}, Verdict.NOT_A_PROCESS),
        (f"build-01/4242/78BAD10C/{PROOF}", HERE, {}, Verdict.NOT_A_PROCESS),
        (f"build-01/4242/78bad10c/{PROOF.replace('proc,', 'pid,')}", HERE, {}, Verdict.NOT_A_PROCESS),
        (f"build-01/4242/78bad10c/{PROOF.replace('start=912345', 'start=-1')}", HERE, {}, Verdict.NOT_A_PROCESS),
        (f"build-01/4242/78bad10c/{PROOF.replace('boot=1a2b3c4d5e6f', 'boot=1a2b')}", HERE, {}, Verdict.NOT_A_PROCESS),
        (f"build-01/4242/78bad10c/{PROOF},uid=1000", HERE, {}, Verdict.NOT_A_PROCESS),
        (f"build-01/4242/78bad10c/{PROOF.replace(',pidns=4026531836', '')}", HERE, {}, Verdict.NOT_A_PROCESS),
        # a hostname holding a slash is still parsed from the right
        (f"odd/host/4242/78bad10c/{PROOF}", HERE, {}, Verdict.ENDED),
    ],
    ids=[
        "same-machine-dead-pid",
        "same-machine-zombie",
        "same-machine-dead-state-x",
        "same-machine-live-pid",
        "same-machine-running",
        "same-machine-stopped",
        "same-pid-reused-later-start",
        "same-pid-unreadable",
        "same-machine-other-boot",
        "other-machine-same-hostname",
        "cloned-machine-id-other-boot",
        "other-pid-namespace",
        "other-user",
        "this-machine-unknown",
        "old-format",
        "agent-format",
        "foreign-word",
        "empty",
        "no-host",
        "pid-not-a-number",
        "nonce-not-lowercase-hex",
        "other-proof-word",
        "negative-start",
        "short-boot",
        "extra-field",
        "missing-field",
        "slash-in-hostname",
    ],
)
def test_only_a_process_of_this_machine_that_provably_ended_is_gone(
    holder: str, here: ThisMachine | None, processes: dict[int, ProcessState], verdict: Verdict
) -> None:
    assert judge(holder, here, processes.get) is verdict
    assert verdict.gone == (verdict in (Verdict.ENDED, Verdict.ZOMBIE, Verdict.PID_REUSED))


def test_an_identity_parses_back_to_what_it_was_made_of() -> None:
    holder = parse(HOLDER)
    assert holder == ProcessHolder(host="build-01", pid=4242, nonce="78bad10c", start=912345, machine=HERE)
    assert str(holder) == HOLDER


@pytest.mark.parametrize(
    ("holder", "shown"),
    [
        (HOLDER, "build-01/4242/78bad10c"),
        ("build-01/4242/78bad10c", "build-01/4242/78bad10c"),
        ("build-01/rollout-plus-agent/uid-1000/0f1e2d3c", "build-01/rollout-plus-agent/uid-1000/0f1e2d3c"),
    ],
)
def test_people_are_shown_host_pid_and_nonce(holder: str, shown: str) -> None:
    assert display(holder) == shown


def test_why_a_holder_is_gone_names_its_process_and_host() -> None:
    assert why_gone(HOLDER, Verdict.ENDED) == "process 4242 of build-01 has ended"
    assert (
        why_gone(HOLDER, Verdict.PID_REUSED) == "process 4242 of build-01 has ended (its PID is now another process's)"
    )


# --- this machine, as /proc shows it (Linux only) ------------------------------------------------------

linux_proc = pytest.mark.skipif(this_machine() is None, reason="needs /proc, a boot id and a machine-id")


@linux_proc
def test_this_process_is_running_and_a_reaped_child_has_ended() -> None:
    mine = identity()
    assert parse(mine) is not None
    assert holder_verdict(mine) is Verdict.RUNNING
    child = subprocess.run(
        [sys.executable, "-c", "from kubectl_rollout.kube.holder_identity import identity; print(identity())"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    theirs = child.stdout.strip()
    assert parse(theirs) is not None
    assert holder_verdict(theirs) in (Verdict.ENDED, Verdict.PID_REUSED)


@linux_proc
def test_a_killed_child_not_yet_reaped_is_a_zombie() -> None:
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from kubectl_rollout.kube.holder_identity import identity; print(identity(), flush=True); input()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        theirs = child.stdout.readline().strip()
        assert holder_verdict(theirs) is Verdict.RUNNING
        child.kill()
        # Not reaped: /proc still shows it, as Z once the kill has landed; os.waitid with WNOWAIT waits for that
        # without reaping it.
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
        assert read_process(child.pid) is not None
        assert holder_verdict(theirs) is Verdict.ZOMBIE
    finally:
        child.kill()
        child.wait(timeout=60)
    assert holder_verdict(theirs) in (Verdict.ENDED, Verdict.PID_REUSED)
