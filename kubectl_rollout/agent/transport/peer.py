"""Who is on the other end of a Unix socket: the kernel's word for the peer's uid and pid.

The socket file is 0600 in a 0700 directory, so only this user can reach it;
the uid check on each connection is the second lock (tmux and ssh-agent do the
same), and it is what refuses a root process's socket to another user if the
directory's mode was ever loosened.
"""

from __future__ import annotations

import socket
import struct
import sys
from dataclasses import dataclass

# macOS: <sys/un.h> SOL_LOCAL and LOCAL_PEERCRED, struct xucred {u_int version; uid_t uid; short ngroups; ...}
_SOL_LOCAL = 0
_LOCAL_PEERCRED = 0x001
_LOCAL_PEERPID = 0x002


@dataclass(frozen=True)
class Peer:
    uid: int
    #: 0 where the platform does not say
    pid: int


def peer_of(sock: socket.socket) -> Peer:
    """The peer's uid and pid; OSError where the platform cannot tell (then the connection is refused)."""
    if sys.platform.startswith("linux"):
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        pid, uid, _gid = struct.unpack("3i", raw)
        return Peer(uid=uid, pid=pid)
    if sys.platform == "darwin":
        raw = sock.getsockopt(_SOL_LOCAL, _LOCAL_PEERCRED, struct.calcsize("IIh"))
        _version, uid, _ngroups = struct.unpack_from("IIh", raw)
        pid = struct.unpack("i", sock.getsockopt(_SOL_LOCAL, _LOCAL_PEERPID, 4))[0]
        return Peer(uid=uid, pid=pid)
    raise OSError(f"cannot tell a Unix socket peer's uid on {sys.platform}")
