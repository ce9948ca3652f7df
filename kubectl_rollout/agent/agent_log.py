"""The agent's log: one line per record, what clients send quoted, floods written once per period.

A record's message may carry what a client sent (a hello's name, a job's
target, an error's text): a newline in it would start a line of the client's
choosing, one that looks like the agent's own record ("2026-... INFO job ...
succeeded"), and an ESC sequence would reach whoever reads the log on a
terminal. So control characters are written as escapes (``\\n``, ``\\x1b``), and a
traceback's lines are indented under ``|`` so that none starts like a record.

Some failures repeat as fast as the loop turns (``accept`` without a free file
descriptor): those are written once per ``PERIOD`` with a count of the ones
left out, and nothing of them goes to ``agent-start.err`` (``capture_stderr``),
which nobody rotates.
"""

from __future__ import annotations

import logging
import re
import sys
import threading
import time
from typing import Any, TextIO

#: how often a repeating record is written
PERIOD = 60.0
#: lines per PERIOD that reach the log through ``sys.stderr`` (a thread's traceback, a warning)
STDERR_LINES = 200

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def quote_controls(text: str) -> str:
    """``text`` with every control character written as an escape, so that it is one line and inert."""
    return _CONTROL.sub(lambda found: _NAMED.get(found.group(), f"\\x{ord(found.group()):02x}"), text)


class OneLineFormatter(logging.Formatter):
    """Formats a record as one line (control characters escaped); its traceback indented under ``|``."""

    def format(self, record: logging.LogRecord) -> str:
        record.message = quote_controls(record.getMessage())
        if self.usesTime():
            record.asctime = self.formatTime(record, self.datefmt)
        line = self.formatMessage(record)
        extra = []
        if record.exc_info:
            extra.append(self.formatException(record.exc_info))
        if record.stack_info:
            extra.append(self.formatStack(record.stack_info))
        for block in extra:
            line += "".join(f"\n    | {quote_controls(part)}" for part in block.splitlines())
        return line


class Throttle(logging.Filter):
    """Lets a record through once per ``period`` per message template; says how many it held back."""

    def __init__(self, period: float = PERIOD, *, clock: Any = time.monotonic) -> None:
        super().__init__()
        self.period = period
        self._clock = clock
        self._last: dict[tuple[str, str], float] = {}
        self._held: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, str(record.msg))
        now = self._clock()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self.period:
                self._held[key] = self._held.get(key, 0) + 1
                return False
            self._last[key] = now
            held = self._held.pop(key, 0)
        if held:
            record.msg = f"{record.msg} ({held} more like it in the last {self.period:.0f} s, not written)"
        # A flood's traceback is the same each time: the first one had it.
        if last is not None:
            record.exc_info = None
            record.exc_text = None
        return True


class LogStream:
    """A ``sys.stderr`` that writes into the log, at most ``STDERR_LINES`` lines per ``PERIOD``."""

    def __init__(self, logger: logging.Logger, *, clock: Any = time.monotonic) -> None:
        self._logger = logger
        self._clock = clock
        self._partial = ""
        self._window_start = clock()
        self._lines = 0
        self._dropped = 0
        self._lock = threading.RLock()
        self._inside = threading.local()

    def write(self, text: str) -> int:
        # A failing log handler reports on stderr: that report must not come back here and fail again.
        if getattr(self._inside, "active", False):
            return len(text)
        self._inside.active = True
        try:
            self._write(text)
        finally:
            self._inside.active = False
        return len(text)

    def _write(self, text: str) -> None:
        with self._lock:
            self._partial += text
            *lines, self._partial = self._partial.split("\n")
            if len(self._partial) > 64 * 1024:  # no newline ever: written as a line of its own
                lines.append(self._partial)
                self._partial = ""
            for line in lines:
                self._emit(line)

    def _emit(self, line: str) -> None:
        now = self._clock()
        if now - self._window_start >= PERIOD:
            if self._dropped:
                self._logger.warning("stderr: %d lines left out in the last %.0f s", self._dropped, PERIOD)
            self._window_start, self._lines, self._dropped = now, 0, 0
        if self._lines >= STDERR_LINES:
            self._dropped += 1
            return
        self._lines += 1
        if line.strip():
            self._logger.warning("stderr: %s", line)

    def flush(self) -> None:
        return None

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:
        return "utf-8"


def capture_stderr(logger: logging.Logger) -> TextIO:
    """Route what Python code writes to stderr (a thread's traceback, a warning, logging's last resort) into
    the log, bounded; returns the stream it replaced. The file descriptor stays: only a dying interpreter
    writes there itself."""
    previous = sys.stderr
    sys.stderr = LogStream(logger)
    return previous
