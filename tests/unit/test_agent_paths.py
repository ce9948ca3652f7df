"""Where the agent keeps its files, and the check that refuses a directory others could tamper with."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from kubectl_rollout.agent.errors import AgentError
from kubectl_rollout.agent.paths import ENV_DIR, agent_paths, directory_problem, ensure_private_dir
from kubectl_rollout.agent.transport.peer import peer_of


def test_the_override_puts_runtime_and_state_under_one_directory(tmp_path: Path) -> None:
    paths = agent_paths({ENV_DIR: str(tmp_path)})
    assert paths.socket == tmp_path / "run" / "agent.sock"
    assert paths.journal == tmp_path / "state" / "journal.sqlite3"
    assert paths.log.parent == paths.state_dir


def test_without_a_session_runtime_dir_the_socket_goes_under_the_state_dir_never_tmp() -> None:
    paths = agent_paths({"HOME": "/home/u"})
    assert not str(paths.runtime_dir).startswith("/tmp")
    assert paths.runtime_dir.parent == paths.state_dir


def test_with_a_session_runtime_dir_the_socket_goes_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert agent_paths({"XDG_RUNTIME_DIR": str(tmp_path)}).runtime_dir == tmp_path / "kubectl-rollout-plus"


def test_a_missing_directory_is_created_0700(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b"
    ensure_private_dir(target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o700


def test_a_readable_directory_of_ours_is_tightened_to_0700(tmp_path: Path) -> None:
    target = tmp_path / "d"
    target.mkdir(mode=0o755)
    target.chmod(0o755)
    ensure_private_dir(target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o700


@pytest.mark.parametrize(("mode", "who"), [(0o770, "its group"), (0o703, "others"), (0o777, "others")])
def test_a_group_or_world_writable_directory_is_refused_with_what_to_do(tmp_path: Path, mode: int, who: str) -> None:
    target = tmp_path / "d"
    target.mkdir()
    target.chmod(mode)
    with pytest.raises(AgentError) as caught:
        ensure_private_dir(target)
    assert f"writable by {who}" in caught.value.message
    assert "chmod 700" in caught.value.message
    assert ENV_DIR in caught.value.message


def test_a_symlinked_directory_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(AgentError, match="is a symbolic link"):
        ensure_private_dir(link)


def test_a_directory_of_another_user_is_refused(tmp_path: Path) -> None:
    st = tmp_path.lstat()
    problem = directory_problem(tmp_path, st, uid=st.st_uid + 1)
    assert problem is not None
    assert f"belongs to uid {st.st_uid}, not to you" in problem


def test_a_file_is_not_a_directory(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_text("")
    assert directory_problem(target, target.lstat(), uid=os.getuid()) == f"{target} is not a directory"


def test_a_long_socket_path_is_refused_before_bind(tmp_path: Path) -> None:
    deep = tmp_path / ("x" * 90)
    with pytest.raises(AgentError, match="longer than a Unix socket allows"):
        agent_paths({ENV_DIR: str(deep)}).ensure()


def test_the_peer_of_a_socket_is_this_process() -> None:
    left, right = socket.socketpair(socket.AF_UNIX)
    with left, right:
        peer = peer_of(left)
    assert peer.uid == os.getuid()
    assert peer.pid == os.getpid()
