"""An error nobody foresaw: one line for the person, the traceback in a log they can send us.

A traceback on the terminal helps no operator in the middle of a drain; a
line that says what broke and where the details are does. The log lives
beside the agent's (the state directory), is appended to, and is started
afresh once it passes LOG_LIMIT bytes, keeping one older file.
"""

from __future__ import annotations

import datetime
import os
import sys
import traceback
from pathlib import Path

#: the log is rotated (one old file kept) past this size
LOG_LIMIT = 1 << 20
LOG_NAME = "cli-errors.log"


def report_unexpected(err: BaseException) -> str:
    """Log ``err`` with its traceback; the one line to print (naming the log, when it could be written)."""
    what = " ".join(str(err).split())[:200]
    line = f"unexpected error: {type(err).__name__}" + (f": {what}" if what else "")
    log = _write(err)
    return f"{line} (details in {log})" if log is not None else line


def _write(err: BaseException) -> Path | None:
    from kubectl_rollout.agent.paths import agent_paths

    try:
        folder = agent_paths().state_dir
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        log = folder / LOG_NAME
        if log.exists() and log.stat().st_size > LOG_LIMIT:
            log.replace(log.with_name(LOG_NAME + ".1"))
        stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        trace = "".join(traceback.format_exception(err))
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a") as out:
            out.write(f"--- {stamp} pid {os.getpid()}: {' '.join(sys.argv)!r}\n{trace}")
    except Exception:  # no log is no reason to hide the error line itself
        return None
    return log
