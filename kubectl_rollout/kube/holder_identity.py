"""A Lease holder that is a process of this machine, named so that a later process here can tell it has ended.

A driver killed by SIGKILL stops renewing its Lease, and until now every other
driver waited for the Lease to lapse (up to ``LEASE_SECONDS``) before taking
it over. A process's holder identity now carries what proves, on the machine
that wrote it and only there, whether that process still runs::

    build-01/4242/78bad10c/proc,uid=1000,start=912345,boot=1a2b3c4d5e6f,machine=9f8e7d6c5b4a,pidns=4026531836

``HOST/PID/NONCE`` as before (what messages show, ``display``), then: the
user, the process's start time (``/proc/PID/stat`` field 22, clock ticks since
boot: a PID reused by a later process has a later one), hashes of the kernel's
boot id (a reboot reuses PIDs too) and of ``/etc/machine-id`` (the hostname
alone never proves it is this machine), and the PID namespace's inode (two
containers of one host share the boot id and may share the machine-id).

``judge`` is pure: it compares a holder with this machine's facts and a
process-table lookup. Only a holder of this format, written by the same user
(whose processes ``/proc`` always shows, ``hidepid`` or not) on the same
machine, boot and PID namespace, can be judged gone; anything else (an older
version's ``HOST/PID/NONCE``, the agent's stable ``HOST/rollout-plus-agent/...``,
another machine, an unreadable ``/proc``) is ``not gone``, and waits for the
Lease to lapse exactly as before. Every doubt falls on that side.

Not covered: two machines resumed from one memory snapshot share boot id,
machine-id, PID namespace and PIDs; a process started on one after the split
is unknown to the other's ``/proc``. Such clones must not run drivers of the
same workloads at once (as they must not share a hostname, a machine-id, an SSH
host key...).
"""

from __future__ import annotations

import enum
import functools
import hashlib
import os
import re
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass

#: the first word of the proof part, which tells this format from every other
PROOF = "proc"
_HEX12 = re.compile(r"[0-9a-f]{12}")
_NONCE = re.compile(r"[0-9a-f]{8}")
_FIELDS = ("uid", "start", "boot", "machine", "pidns")


@dataclass(frozen=True, kw_only=True)
class ThisMachine:
    """What a process's proof is compared with: who, which machine, which boot, which PID namespace."""

    uid: int
    #: the first 12 hex digits of sha256 over the boot id and over /etc/machine-id (never the raw ids)
    boot: str
    machine: str
    #: the inode of /proc/self/ns/pid
    pidns: int


@dataclass(frozen=True, kw_only=True)
class ProcessHolder:
    """A holder identity of this format, parsed."""

    host: str
    pid: int
    nonce: str
    #: /proc/PID/stat field 22: when the process started, in clock ticks since boot
    start: int
    machine: ThisMachine

    def __str__(self) -> str:
        m = self.machine
        return (
            f"{self.host}/{self.pid}/{self.nonce}/{PROOF},uid={m.uid},start={self.start},"
            f"boot={m.boot},machine={m.machine},pidns={m.pidns}"
        )


@dataclass(frozen=True, kw_only=True)
class ProcessState:
    """A process as ``/proc/PID/stat`` shows it; ``start`` None when the file could not be read or parsed."""

    start: int | None
    #: field 3: R, S, D, ... Z for a zombie (ended, not yet reaped), X for dead
    state: str = "S"


class Verdict(enum.StrEnum):
    #: no process has that PID any more
    ENDED = "ended"
    #: ended, not reaped yet by its parent (it runs no code any more)
    ZOMBIE = "zombie"
    #: the PID now belongs to a later process (another start time)
    PID_REUSED = "pid-reused"
    #: the holder process still runs
    RUNNING = "running"
    #: /proc shows a process with that PID and nothing more can be read of it
    UNREADABLE = "unreadable"
    #: a process of another machine, boot, PID namespace or user: nothing here can tell
    ELSEWHERE = "elsewhere"
    #: not a process identity of this format (an older version's, the agent's, anything else)
    NOT_A_PROCESS = "not-a-process"

    @property
    def gone(self) -> bool:
        """Provably gone: its Lease may be taken at once."""
        return self in (Verdict.ENDED, Verdict.ZOMBIE, Verdict.PID_REUSED)


def parse(identity: str) -> ProcessHolder | None:
    """The holder of this format, or None for any other string (which is never judged)."""
    parts = identity.rsplit("/", 3)
    if len(parts) != 4:
        return None
    host, pid, nonce, proof = parts
    words = proof.split(",")
    if not host or words[0] != PROOF or not pid.isdigit() or not _NONCE.fullmatch(nonce):
        return None
    pairs = [word.partition("=") for word in words[1:]]
    fields = {key: value for key, _, value in pairs}
    if tuple(key for key, _, _ in pairs) != _FIELDS:
        return None
    numbers = (fields["uid"], fields["start"], fields["pidns"])
    if not all(n.isdigit() for n in numbers) or not all(_HEX12.fullmatch(fields[k]) for k in ("boot", "machine")):
        return None
    return ProcessHolder(
        host=host,
        pid=int(pid),
        nonce=nonce,
        start=int(fields["start"]),
        machine=ThisMachine(
            uid=int(fields["uid"]), boot=fields["boot"], machine=fields["machine"], pidns=int(fields["pidns"])
        ),
    )


def display(identity: str) -> str:
    """How a person is shown a holder: ``HOST/PID/NONCE`` for this format (the proof is for machines), else as is."""
    holder = parse(identity)
    return f"{holder.host}/{holder.pid}/{holder.nonce}" if holder is not None else identity


def judge(identity: str, here: ThisMachine | None, process: Callable[[int], ProcessState | None]) -> Verdict:
    """Whether the process that wrote ``identity`` has provably ended, seen from ``here`` (None: this machine's
    facts are unknown); ``process``: this machine's process table (None: no process with that PID)."""
    holder = parse(identity)
    if holder is None:
        return Verdict.NOT_A_PROCESS
    if here is None or holder.machine != here:
        return Verdict.ELSEWHERE
    state = process(holder.pid)
    if state is None:
        return Verdict.ENDED
    if state.start is None:
        return Verdict.UNREADABLE
    if state.start != holder.start:
        return Verdict.PID_REUSED
    if state.state in ("Z", "X"):
        return Verdict.ZOMBIE
    return Verdict.RUNNING


def why_gone(identity: str, verdict: Verdict) -> str:
    """The verdict of a gone holder in words: ``process 4242 of build-01 has ended``."""
    holder = parse(identity)
    where = f"process {holder.pid} of {holder.host}" if holder is not None else identity
    if verdict is Verdict.PID_REUSED:
        return f"{where} has ended (its PID is now another process's)"
    return f"{where} has ended"


# --- this machine, read from /proc ---------------------------------------------------------------------


def _hash(kind: str, value: str) -> str:
    # Hashed with a word of our own: /etc/machine-id is not to be shown as is (machine-id(5)).
    return hashlib.sha256(f"kubectl-rollout-plus {kind} {value.strip()}".encode()).hexdigest()[:12]


@functools.cache
def this_machine() -> ThisMachine | None:
    """This process's user, machine, boot and PID namespace; None where /proc cannot prove them (not Linux, a
    /proc of another PID namespace, no readable machine-id or boot id)."""
    try:
        if os.readlink("/proc/self") != str(os.getpid()):
            return None  # /proc is another PID namespace's: its PIDs are not ours
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            boot = f.read()
        machine_id = ""
        for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
            try:
                with open(path, encoding="ascii") as f:
                    machine_id = f.read().strip()
            except OSError:
                continue
            if machine_id:
                break
        pidns = os.stat("/proc/self/ns/pid").st_ino
    except (OSError, ValueError):
        return None
    if not boot.strip() or not machine_id:
        return None
    return ThisMachine(uid=os.getuid(), boot=_hash("boot", boot), machine=_hash("machine", machine_id), pidns=pidns)


def read_process(pid: int) -> ProcessState | None:
    """``/proc/PID/stat``'s state and start time; None when no process has that PID."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    except OSError:
        return ProcessState(start=None)
    # The command name (field 2) is in parentheses and may hold spaces and parentheses itself.
    fields = stat[stat.rfind(")") + 2 :].split()
    try:
        return ProcessState(start=int(fields[19]), state=fields[0])
    except (IndexError, ValueError):
        return ProcessState(start=None)


def identity() -> str:
    """This process's holder identity: with its proof where /proc gives one, else ``HOST/PID/NONCE`` as before."""
    host, pid, nonce = socket.gethostname(), os.getpid(), uuid.uuid4().hex[:8]
    here = this_machine()
    me = read_process(pid) if here is not None else None
    if here is None or me is None or me.start is None:
        return f"{host}/{pid}/{nonce}"
    return str(ProcessHolder(host=host, pid=pid, nonce=nonce, start=me.start, machine=here))


def holder_verdict(identity: str) -> Verdict:
    """``judge`` of a holder against this machine as it is now."""
    return judge(identity, this_machine(), read_process)
