"""The warm command server as a process, without a cluster: a command through it, refusals, a client that goes
away, its end when the agent's pipe closes, no zombies."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fake_api_servers import answering_version_then_holding
from kubeconfigs import write_kubeconfig
from plugin import WARM_WRAPPER, wait_for_exit

from kubectl_rollout.cli.warm.wire import Reader, identity, newest_source, send

pytestmark = pytest.mark.timeout(120)


def _children_of(pid: int) -> dict[int, str]:
    """``pid``'s children and their states (Z: a zombie nobody reaped)."""
    states = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().split(") ")[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                states[int(entry.name)] = fields[0]
    return states


def _children(pid: int) -> list[str]:
    """The states of ``pid``'s children."""
    return list(_children_of(pid).values())


class Server:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.socket = directory / "run" / "commands.sock"
        (directory / "run").mkdir(mode=0o700)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "kubectl_rollout.cli.warm", str(self.socket)],
            stdin=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        # It says so on stderr once it listens (the line the agent copies into its log).
        assert self.process.stderr is not None
        ready = self.process.stderr.readline().decode()
        assert "listening on" in ready, ready
        self.wrapper = directory / "client.py"
        self.wrapper.write_text(WARM_WRAPPER)
        self.runs = 0

    def run(self, *args: str, warm: bool = True) -> tuple[bytes, bytes, int, bool]:
        self.runs += 1
        report = self.directory / f"warm-{self.runs}"
        env = {**os.environ, "ROLLOUT_PLUS_AGENT_DIR": str(self.directory), "ROLLOUT_PLUS_WARM": "1" if warm else "0"}
        done = subprocess.run(
            [sys.executable, str(self.wrapper), str(report), "kubectl-rollout_plus", *args],
            capture_output=True,
            env=env,
            timeout=60,
        )
        return done.stdout, done.stderr, done.returncode, report.exists()

    def request(self, **changes: object) -> tuple[socket.socket, dict[str, object] | None]:
        """A request as the client sends it (descriptors: /dev/null and the cwd), with ``changes``; the reply."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(str(self.socket))
        message = {
            "entry": "main",
            "argv": ["kubectl-rollout_plus", "version", "--client"],
            "env": dict(os.environ),
            "path": sys.path,
            "umask": 0o022,
            "ignored": [],
            "stdio": [{"encoding": "utf-8", "errors": "strict", "line_buffering": False, "write_through": False}] * 3,
            "identity": identity(),
            **changes,
        }
        null = os.open(os.devnull, os.O_RDWR)
        cwd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
        try:
            send(sock, message, [null, null, null, cwd])
        finally:
            os.close(null)
            os.close(cwd)
        return sock, Reader().receive(sock)


@pytest.fixture
def server() -> Iterator[Server]:
    directory = Path(tempfile.mkdtemp(prefix="rpu-", dir="/tmp"))  # a socket path has ~100 bytes
    running = Server(directory)
    yield running
    running.process.kill()
    running.process.wait(30)
    shutil.rmtree(directory, ignore_errors=True)


def test_a_command_through_the_server_is_the_in_process_command(server: Server) -> None:
    for args in (["version", "--client"], ["version", "--client", "-o", "json"], ["history"], ["jobs", "show"]):
        warm = server.run(*args)
        cold = server.run(*args, warm=False)
        assert warm[3], f"not through the server: {args}"
        assert not cold[3]
        assert warm[:3] == cold[:3]
    assert _children(server.process.pid) == []  # every child reaped


def test_a_request_for_other_code_is_refused_and_the_client_runs_the_command_itself(server: Server) -> None:
    sock, reply = server.request(identity={**identity(), "version": "0.0.0"})
    sock.close()
    assert reply is not None
    assert reply["accepted"] is False
    sock, reply = server.request(argv="not a list")
    sock.close()
    assert reply is not None
    assert reply["accepted"] is False


def test_a_childs_status_comes_back_and_a_client_that_leaves_takes_its_command_along(
    server: Server, tmp_path: Path
) -> None:
    sock, reply = server.request()
    assert reply is not None
    assert reply["accepted"] is True
    final = Reader().receive(sock)
    sock.close()
    assert final == {"wait_status": 0}
    with answering_version_then_holding() as (url, held):
        quiet = write_kubeconfig(tmp_path / "quiet", contexts={"quiet": (url, "default")}, current="quiet")
        sock, reply = server.request(argv=["kubectl-rollout_plus", "history", "web", "--kubeconfig", str(quiet)])
        assert reply is not None
        assert reply["accepted"] is True
        assert held.wait(60)
        sock.close()  # the client is gone: so is its command
        pid = reply["pid"]
        assert isinstance(pid, int)
        wait_for_exit(pid, timeout=30, what="end of the abandoned command")
    # The server reaps every ended child whenever one ends: once a later command's status is back, the abandoned
    # one has been reaped too.
    sock, reply = server.request()
    assert reply is not None
    assert Reader().receive(sock) == {"wait_status": 0}
    sock.close()
    assert _children(server.process.pid) == []


def test_the_server_ends_when_the_agents_pipe_closes(server: Server) -> None:
    assert server.process.stdin is not None
    server.process.stdin.close()
    assert server.process.wait(30) == 0
    assert not server.socket.exists()


def test_sigint_to_the_client_is_passed_on_to_the_command(server: Server, tmp_path: Path) -> None:
    with answering_version_then_holding() as (url, held):
        quiet = write_kubeconfig(tmp_path / "quiet", contexts={"quiet": (url, "default")}, current="quiet")
        env = {**os.environ, "ROLLOUT_PLUS_AGENT_DIR": str(server.directory)}
        report = tmp_path / "report"
        client = subprocess.Popen(
            [
                sys.executable,
                str(server.wrapper),
                str(report),
                "kubectl-rollout_plus",
                "history",
                "web",
                "--kubeconfig",
                str(quiet),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        assert held.wait(60)
        client.send_signal(signal.SIGINT)
        _stdout, stderr = client.communicate(timeout=60)
    assert report.exists()
    assert (client.returncode, stderr) == (1, b"\nAborted!\n")  # click's answer to Ctrl-C, as in-process


def test_a_signal_passed_on_the_moment_the_pid_is_known_reaches_the_command(server: Server, tmp_path: Path) -> None:
    """A Ctrl-C pressed while the client hands the command over is passed on as soon as the client learns the
    child's pid, when the forked child may not have its caller's dispositions yet: it must still reach the command
    and end it as in-process (by SIGINT before click runs, "Aborted!" and 1 after), never run the server's own
    handler in the child (which unlinked the server's socket and left the command running)."""
    with answering_version_then_holding() as (url, _held):
        quiet = write_kubeconfig(tmp_path / "quiet", contexts={"quiet": (url, "default")}, current="quiet")
        argv = ["kubectl-rollout_plus", "history", "web", "--kubeconfig", str(quiet)]  # held until interrupted
        endings = []
        for _ in range(20):
            sock, reply = server.request(argv=argv)
            with sock:
                assert reply is not None
                assert reply.get("accepted") is True, reply
                os.kill(int(reply["pid"]), signal.SIGINT)  # type: ignore[call-overload]
                sock.settimeout(60)  # a lost interrupt leaves the command waiting on the held request
                final = Reader().receive(sock)
            assert final is not None
            status = int(final["wait_status"])  # type: ignore[call-overload]
            endings.append("SIGINT" if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGINT else status)
    assert set(endings) <= {"SIGINT", 1 << 8}, endings
    assert server.socket.exists()
    assert server.process.poll() is None


def test_writing_bytecode_is_not_a_change_of_code(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n")
    before = newest_source(str(tmp_path))
    (tmp_path / "pkg" / "__pycache__").mkdir()
    (tmp_path / "pkg" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"")
    assert newest_source(str(tmp_path)) == before
    (tmp_path / "pkg" / "a.py").write_text("x = 2\n")
    os.utime(tmp_path / "pkg" / "a.py", ns=(before + 10**9, before + 10**9))  # edited a second later
    assert newest_source(str(tmp_path)) == before + 10**9


def _state_becomes(pid: int, wanted: Callable[[str], bool], *, timeout: float = 30.0) -> str:
    """The process's state letter (/proc/PID/stat) once ``wanted`` accepts it.

    A stop or a continue of a process that is not our child raises no event we can wait on (its parent,
    the server, is told), so this one reads /proc until the kernel has done it, within ``timeout``.
    """
    deadline = time.monotonic() + timeout
    while True:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if wanted(state) or time.monotonic() > deadline:
            return state
        time.sleep(0.01)


def test_ctrl_z_stops_the_command_with_the_client_and_fg_continues_both(server: Server, tmp_path: Path) -> None:
    with answering_version_then_holding() as (url, held):
        quiet = write_kubeconfig(tmp_path / "quiet", contexts={"quiet": (url, "default")}, current="quiet")
        env = {**os.environ, "ROLLOUT_PLUS_AGENT_DIR": str(server.directory)}
        args = ["kubectl-rollout_plus", "history", "web", "--kubeconfig", str(quiet)]
        client = subprocess.Popen(
            [sys.executable, str(server.wrapper), str(tmp_path / "report"), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            # As a shell starts a job: Ctrl-Z's default action (a test runner's worker may ignore it), in a
            # process group of its own whose parent (this test) is in the same session. A group with no such
            # parent (a pytest-xdist worker's) is orphaned, and the kernel discards SIGTSTP sent to it.
            preexec_fn=lambda: signal.signal(signal.SIGTSTP, signal.SIG_DFL),
            process_group=0,
        )
        assert held.wait(60)  # the command runs, in the server's child
        (command,) = _children_of(server.process.pid)
        client.send_signal(signal.SIGTSTP)  # what the terminal sends its foreground process group on Ctrl-Z
        _pid, status = os.waitpid(client.pid, os.WUNTRACED)
        assert os.WIFSTOPPED(status), status
        assert _state_becomes(command, lambda state: state == "T") == "T"  # stopped with the client
        client.send_signal(signal.SIGCONT)  # `fg`
        assert _state_becomes(command, lambda state: state != "T") != "T"
        client.send_signal(signal.SIGINT)  # reaches a running command: it answers as it would in-process
        _stdout, stderr = client.communicate(timeout=60)
    assert (client.returncode, stderr) == (1, b"\nAborted!\n")
