"""A command gate's child ends with the driver that forked it, even when the driver dies before the child has set
its death signal (the kernel decides the reparenting; nothing here is mocked)."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.timeout(30),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's"),
]

ROOT = Path(__file__).resolve().parents[2]

#: a driver that forks its gate's child and dies at once; the child sets the death signal only after its parent
#: is gone (the SIGKILL that overtook the fork), then would run the gate's command: write the marker
_DRIVER = textwrap.dedent(
    """
    import os, select, sys
    sys.path.insert(0, sys.argv[1])
    from kubectl_rollout.rollout.canary.command_gate import _die_with_parent

    set_death_signal = _die_with_parent()
    parent = os.pidfd_open(os.getpid())
    child = os.fork()
    if child == 0:
        select.select([parent], [], [])  # until the driver has died
        set_death_signal()
        with open(sys.argv[2], "w") as marker:
            marker.write("the gate's command ran without its driver")
        os._exit(0)
    print(child, flush=True)
    os._exit(0)
    """
)


def _wait_gone(pid: int) -> None:
    try:
        handle = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        assert select.select([handle], [], [], 20)[0], f"process {pid} still running"
    finally:
        os.close(handle)


def test_a_gate_whose_driver_died_before_its_death_signal_was_set_does_not_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    driver = subprocess.run(
        [sys.executable, "-c", _DRIVER, str(ROOT), str(marker)], capture_output=True, text=True, check=True
    )
    _wait_gone(int(driver.stdout.strip()))
    assert not marker.exists(), marker.read_text()
