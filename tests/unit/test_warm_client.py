"""The warm command server's pure parts: which command lines it may run, exit statuses, framing, its socket."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kubectl_rollout.agent.paths import agent_paths
from kubectl_rollout.cli.warm.child import exit_code_of
from kubectl_rollout.cli.warm.eligibility import eligible, follows_a_job
from kubectl_rollout.cli.warm.wire import Reader, encode, exit_code, send, socket_path

ELIGIBLE = [
    "version",
    "version --client -o json",
    "history web",
    "history web --revision 2",
    "--kubeconfig k -n shop history web",
    "--context=prod --namespace=shop status web",
    "-nshop status web -o json",
    "--request-timeout 3s status web",
    "status web",
    "cordon node-1 node-2",
    "uncordon node-1",
    "drain node-1 --plan",
    "drain node-1 --plan -o json --ignore-daemonsets",
    "campaign -l pool=blue --budget 20% --plan",
    "jobs list",
    "jobs show 0123456789ab",
    "--context x jobs --context y list",
    "pause web",
]
NOT_ELIGIBLE = [
    "",  # the group's usage
    "--help",
    "-h",
    "history --help",
    "status web -w",
    "status web --watch",
    "status web -wo jsonl",
    "status -w web --timeout 1m",
    "drain node-1",  # a job, here not in a terminal: in-process
    "drain node-1 --plan --detach",
    "drain node-1 --plan --tui",
    "jobs attach 0123456789ab",
    "jobs cancel 0123456789ab",
    "jobs",
    "apply -f web.yaml",
    "set image web web=nginx:2",
    "tui",
    "agent status",
    "--unknown-flag history web",
    "-- history web",
    "--kubeconfig",  # a flag's value missing
    "completion bash",
]


#: job commands: through the warm server when their job runs in the agent (the child submits it and follows it)
JOB_LINES = [
    "drain node-1",
    "drain -l pool=blue --surge --ignore-daemonsets",
    "apply -f web.yaml",
    "set image web web=nginx:2",
    "scale web --replicas 3",
    "restart web",
    "restart deployment/web --dry-run server",
    "resume web",
    "undo web --to-revision 2",
    "status web -w",
    "-n shop status -w web --timeout 1m",
    "promote web --full",
    "abort web",
    "retry web",
    "campaign -l pool=blue --budget 20% --per-zone",
]


@pytest.mark.parametrize("line", ELIGIBLE)
def test_commands_that_read_and_end_at_once_are_eligible(line: str) -> None:
    for terminal in (True, False):
        assert eligible(line.split(), environ={}, terminal=terminal)
        assert not follows_a_job(line.split())


@pytest.mark.parametrize("line", NOT_ELIGIBLE)
def test_anything_else_runs_in_process(line: str) -> None:
    assert not eligible(line.split(), environ={}, terminal=False)


@pytest.mark.parametrize("line", JOB_LINES)
def test_a_job_command_is_eligible_exactly_when_its_job_runs_in_the_agent(line: str) -> None:
    words = line.split()
    # the same choice as the command's own (cli/agent_choice.py): a terminal, the flags, ROLLOUT_PLUS_AGENT
    assert eligible(words, environ={}, terminal=True)
    assert not eligible(words, environ={}, terminal=False)
    assert eligible([*words, "--agent"], environ={}, terminal=False)
    assert eligible([*words, "--detach"], environ={}, terminal=False)
    assert not eligible([*words, "--in-process"], environ={}, terminal=True)
    assert not eligible([*words, "--tui"], environ={}, terminal=True)
    assert eligible(words, environ={"ROLLOUT_PLUS_AGENT": "1"}, terminal=False)
    assert not eligible(words, environ={"ROLLOUT_PLUS_AGENT": "0"}, terminal=True)
    assert follows_a_job(words)


@pytest.mark.parametrize("line", ["", "drain ''", "status web -w", "--help"])
def test_every_completion_request_is_eligible(line: str) -> None:
    assert eligible(line.split(), completing=True)


def _wait_status(code: int | None = None, killed_by: int | None = None) -> int:
    """A real wait status from a real child: exited with ``code`` or killed by signal ``killed_by``."""
    pid = os.fork()
    if pid == 0:
        try:  # never back into pytest: the child ends here, whatever happens
            if killed_by is not None:
                if killed_by != signal.SIGKILL:
                    signal.signal(killed_by, signal.SIG_DFL)
                os.kill(os.getpid(), killed_by)
        finally:
            os._exit(code or 0)
    _, status = os.waitpid(pid, 0)
    return status


@pytest.mark.parametrize(
    ("code", "killed_by", "expected"),
    [
        (0, None, (0, None)),
        (1, None, (1, None)),
        (2, None, (2, None)),
        (120, None, (120, None)),
        (None, signal.SIGINT, (130, signal.SIGINT)),
        (None, signal.SIGTERM, (143, signal.SIGTERM)),
        (None, signal.SIGKILL, (137, signal.SIGKILL)),
        (None, signal.SIGHUP, (129, signal.SIGHUP)),
    ],
)
def test_a_childs_wait_status_becomes_a_shells_exit_code(
    code: int | None, killed_by: int | None, expected: tuple[int, int | None]
) -> None:
    assert exit_code(_wait_status(code, killed_by)) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, 0), (0, 0), (1, 1), (2, 2), (256, 0), (-1, 255), (2**70, 255), (True, 1), ("bye", 1)],
)
def test_sys_exit_values_end_the_child_as_python_ends_a_process(value: object, expected: int) -> None:
    assert exit_code_of(value) == expected
    script = f"import sys; sys.exit({value!r})"
    assert subprocess.run([sys.executable, "-c", script], capture_output=True).returncode == expected


def test_messages_cross_a_socket_whole_with_their_descriptors(tmp_path: Path) -> None:
    left, right = socket.socketpair()
    with left, right, open(tmp_path / "f", "w") as handle:
        send(left, {"argv": ["x", "é\udcff"], "n": 1}, [handle.fileno()])
        send(left, {"second": True})
        reader = Reader()
        assert reader.receive(right) == {"argv": ["x", "é\udcff"], "n": 1}
        assert len(reader.fds) == 1
        assert os.path.samestat(os.fstat(reader.fds[0]), os.fstat(handle.fileno()))
        assert reader.receive(right) == {"second": True}
        left.close()
        assert reader.receive(right) is None
        os.close(reader.fds[0])


def test_a_message_is_read_as_its_bytes_arrive() -> None:
    data = encode({"accepted": True, "pid": 42})
    reader = Reader()
    for byte in data[:-1]:
        assert reader.feed(bytes([byte])) is None
    assert reader.feed(data[-1:]) == {"accepted": True, "pid": 42}


def test_an_oversized_or_strange_message_is_refused() -> None:
    with pytest.raises(ValueError, match="more than"):
        Reader().feed(b"\xff\xff\xff\xff")
    with pytest.raises(ValueError, match="not a JSON object"):
        Reader().feed(b"\x00\x00\x00\x02[]")


@pytest.mark.parametrize(
    "environ",
    [
        {"ROLLOUT_PLUS_AGENT_DIR": "/tmp/some-agent"},
        {"ROLLOUT_PLUS_AGENT_DIR": "~/agent", "HOME": "/home/u"},
        {"XDG_RUNTIME_DIR": "/run/user/1000", "HOME": "/home/u"},
        {"HOME": "/home/u"},
        {"HOME": "/home/u", "XDG_STATE_HOME": "/home/u/state"},
    ],
)
def test_the_client_finds_the_socket_the_agent_starts_the_server_on(
    environ: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "ROLLOUT_PLUS_AGENT_DIR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert socket_path(environ) == str(agent_paths(environ).commands_socket)


def test_the_thin_client_imports_neither_click_nor_the_kubernetes_client(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from kubectl_rollout.cli.warm import client, wire\n"
        "client.WarmCommand('main')._request()\n"
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in ('click', 'kubernetes', 'yaml'))))\n"
    )
    env = {**os.environ, "ROLLOUT_PLUS_AGENT_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


@pytest.mark.parametrize(
    ("code", "killed_by", "returncode"),
    [(0, None, 0), (3, None, 3), (None, signal.SIGTERM, -signal.SIGTERM), (None, signal.SIGINT, -signal.SIGINT)],
)
def test_the_client_ends_as_its_child_did(code: int | None, killed_by: int | None, returncode: int) -> None:
    """The same exit code; the same signal, so that the shell sees what the in-process command would give it."""
    status = _wait_status(code, killed_by)
    script = f"from kubectl_rollout.cli.warm.client import _end_as; _end_as({status})"
    assert subprocess.run([sys.executable, "-c", script], timeout=60).returncode == returncode


def test_the_client_ends_without_teardown_yet_flushes_what_it_wrote() -> None:
    """The client skips the interpreter's teardown at the end, but a line it buffered still reaches the pipe."""
    status = _wait_status(4, None)
    script = f"from kubectl_rollout.cli.warm.client import _end_as; print('fell back', end=''); _end_as({status})"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (4, "fell back")


def test_the_client_whose_output_cannot_be_flushed_ends_as_python_does() -> None:
    """A full device on stdout: Python's own exit, its 120 and its wording, not a silent success."""
    status = _wait_status(0, None)
    script = (
        "import sys; from kubectl_rollout.cli.warm.client import _end_as\n"
        "sys.stdout = open('/dev/full', 'w'); print('lost', end='')\n"
        f"_end_as({status})\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 120, done.stderr
    assert "Exception ignored" in done.stderr
