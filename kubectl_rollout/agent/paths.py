"""Where the agent keeps its socket, lock, journal and logs, and the check that keeps them private.

Two directories, as tmux and ssh-agent split them:

- the *runtime* directory (socket, lock files): ``kubectl-rollout-plus/`` in
  ``$XDG_RUNTIME_DIR`` on Linux when the login session sets it (platformdirs'
  ``user_runtime_dir()`` on macOS), else ``run/`` under the state directory.
  One rule for every command: a ``$XDG_RUNTIME_DIR`` that is set but not what
  the XDG spec requires (absolute, a directory, yours, mode 0700) is refused
  with what to fix, never replaced by another directory. A replacement chosen
  by one command and not by the next is two agents, or a running agent that
  a later command cannot find (platformdirs falls back to ``/tmp/runtime-UID``,
  with a warning on stderr, and that name any other user can create first);
- the *state* directory (journal, logs): ``platformdirs.user_state_dir()``.

``ROLLOUT_PLUS_AGENT_DIR`` puts both under one directory (tests, several agents
side by side). Each directory of ours is created 0700 and checked on every
start: a symlink, another owner or write access for group or others is refused,
because whoever can write there can put their own socket in front of ours.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kubectl_rollout.agent.errors import AgentError

APP = "kubectl-rollout-plus"
ENV_DIR = "ROLLOUT_PLUS_AGENT_DIR"
#: sun_path holds 108 bytes on Linux, 104 on macOS, the terminating NUL included
MAX_SOCKET_PATH = 100


@dataclass(frozen=True)
class AgentPaths:
    runtime_dir: Path
    state_dir: Path
    #: ``$XDG_RUNTIME_DIR`` when the runtime directory is in it: checked by ``ensure`` (``session_dir_problem``)
    session_dir: Path | None = None

    @property
    def socket(self) -> Path:
        return self.runtime_dir / "agent.sock"

    @property
    def commands_socket(self) -> Path:
        """The warm command server's (``cli/warm/``), beside the agent's: the same private directory."""
        return self.runtime_dir / "commands.sock"

    @property
    def spawn_lock(self) -> Path:
        """Held by a client while it starts an agent, so that two clients never start two."""
        return self.runtime_dir / "spawn.lock"

    @property
    def pid_file(self) -> Path:
        """Locked by the running agent for its whole life, with its pid inside."""
        return self.runtime_dir / "agent.pid"

    @property
    def journal(self) -> Path:
        return self.state_dir / "journal.sqlite3"

    @property
    def log(self) -> Path:
        return self.state_dir / "agent.log"

    @property
    def start_errors(self) -> Path:
        """What a spawned agent printed before its log was open (an unsafe directory, an import error)."""
        return self.state_dir / "agent-start.err"

    def ensure(self) -> AgentPaths:
        """Create both directories if missing and check that they are private; raise AgentError if not."""
        if self.session_dir is not None:
            problem = session_dir_problem(self.session_dir, uid=os.getuid())
            if problem is not None:
                raise AgentError(
                    f"$XDG_RUNTIME_DIR ({self.session_dir}) {problem}, so the agent will not put its socket there. "
                    f"Fix it (chmod 700 {self.session_dir}), or unset XDG_RUNTIME_DIR (the agent then uses "
                    f"{self.state_dir / 'run'}), or set {ENV_DIR} to a directory of yours"
                )
        ensure_private_dir(self.state_dir)
        ensure_private_dir(self.runtime_dir)
        if len(os.fsencode(self.socket)) > MAX_SOCKET_PATH:
            raise AgentError(
                f"the agent's socket path {self.socket} is longer than a Unix socket allows ({MAX_SOCKET_PATH} "
                f"bytes); set {ENV_DIR} to a shorter directory"
            )
        return self


def agent_paths(environ: Mapping[str, str] | None = None) -> AgentPaths:
    """The agent's directories for this user (not created; see ``AgentPaths.ensure``)."""
    env = os.environ if environ is None else environ
    override = env.get(ENV_DIR)
    if override:
        base = Path(override).expanduser().absolute()
        return AgentPaths(runtime_dir=base / "run", state_dir=base / "state")
    import platformdirs  # a dependency of Textual; imported here so that an override needs nothing

    state = Path(platformdirs.user_state_dir(APP))
    if sys.platform == "darwin":
        return AgentPaths(runtime_dir=Path(platformdirs.user_runtime_dir(APP)), state_dir=state)
    session = env.get("XDG_RUNTIME_DIR")
    if session:
        # Read here, not through platformdirs: it replaces a directory it finds unsafe by /tmp/runtime-UID.
        return AgentPaths(runtime_dir=Path(session) / APP, state_dir=state, session_dir=Path(session))
    return AgentPaths(runtime_dir=state / "run", state_dir=state)


def session_dir_problem(path: Path, *, uid: int) -> str | None:
    """Why ``$XDG_RUNTIME_DIR`` breaks the XDG spec's rules for it (None: it keeps them)."""
    if not path.is_absolute():
        return "is not an absolute path"
    try:
        st = path.stat()
    except OSError as err:
        return f"cannot be read ({err.strerror})"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if st.st_uid != uid:
        return f"belongs to uid {st.st_uid}, not to you (uid {uid})"
    if stat.S_IMODE(st.st_mode) != 0o700:
        return f"has mode {stat.S_IMODE(st.st_mode):04o}, not 0700 as the XDG spec requires"
    return None


def directory_problem(path: Path, st: os.stat_result, *, uid: int) -> str | None:
    """Why ``path`` (with ``st`` from lstat) may not hold the agent's files, or None when it may."""
    if stat.S_ISLNK(st.st_mode):
        return f"{path} is a symbolic link; the agent's directory must be a real directory"
    if not stat.S_ISDIR(st.st_mode):
        return f"{path} is not a directory"
    if st.st_uid != uid:
        return f"{path} belongs to uid {st.st_uid}, not to you (uid {uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        who = "others" if st.st_mode & stat.S_IWOTH else "its group"
        return f"{path} is writable by {who} (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def ensure_private_dir(path: Path) -> None:
    """Create ``path`` 0700 if missing; refuse it if unsafe; drop read/search bits others have on it."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = path.lstat()
    except OSError as err:
        raise AgentError(
            f"cannot create the agent's directory {path}: {err.strerror}; check the permissions of its parent"
        ) from err
    problem = directory_problem(path, st, uid=os.getuid())
    if problem is not None:
        raise AgentError(
            f"refusing to use {path} for the agent: {problem}. Remove it (or fix it: chmod 700, owned by you) "
            f"and try again, or set {ENV_DIR} to another directory"
        )
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(path, 0o700)
