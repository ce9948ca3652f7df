"""Durations written the way kubectl accepts them: ``0``, ``30``, ``1.5s``, ``2m30s``, ``250ms``.

A bare number means seconds, as in kubectl's ``--request-timeout`` (client-go
appends the "s" itself). Units are Go's ``time.ParseDuration`` units.
"""

from __future__ import annotations

import re

from kubectl_rollout.kube.api_bounds import MAX_DURATION_SECONDS

_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Return ``text`` in seconds; raise ``ValueError`` naming the bad input.

    Negative durations are refused: no flag of ours means anything by them; so
    are durations longer than Go's (and kubectl's) longest, about 292 years.
    """
    raw = text.strip()
    if not raw:
        raise ValueError("empty duration; use a number of seconds or a value like 30s, 2m or 1h30m")
    if raw.startswith("-"):
        raise ValueError(f"negative duration {text!r}; use 0 or a positive value like 30s")
    if re.fullmatch(r"\d+", raw):
        return _within_bounds(float(raw), text)
    position = 0
    total = 0.0
    for match in _PART.finditer(raw):
        if match.start() != position:
            break
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    if position != len(raw) or position == 0:
        raise ValueError(f"invalid duration {text!r}; use a number of seconds or a value like 30s, 2m or 1h30m")
    return _within_bounds(total, text)


def _within_bounds(seconds: float, text: str) -> float:
    if seconds > MAX_DURATION_SECONDS:
        raise ValueError(f"duration {text!r} is too long; the longest is {go_duration(MAX_DURATION_SECONDS)}")
    return seconds


def _fraction(value: int, digits: int) -> str:
    """``value`` / 10**digits written with Go's trimming: no trailing zeros, no lone dot."""
    whole, rest = divmod(value, 10**digits)
    tail = f"{rest:0{digits}d}".rstrip("0")
    return f"{whole}.{tail}" if tail else str(whole)


def go_duration(seconds: float) -> str:
    """``seconds`` as Go's ``time.Duration.String`` writes it (``1m0s``, ``1.5s``, ``250ms``, ``1h0m0s``).

    kubectl prints its timeouts this way ("global timeout reached: 1m0s"), and
    scripts match on it, so our messages use the same form.
    """
    nanos = round(seconds * 1e9)
    sign = "-" if nanos < 0 else ""
    nanos = abs(nanos)
    if nanos == 0:
        return "0s"
    if nanos < 1_000:
        return f"{sign}{nanos}ns"
    if nanos < 1_000_000:
        return f"{sign}{_fraction(nanos, 3)}µs"
    if nanos < 1_000_000_000:
        return f"{sign}{_fraction(nanos, 6)}ms"
    hours, nanos = divmod(nanos, 3600 * 10**9)
    minutes, nanos = divmod(nanos, 60 * 10**9)
    text = f"{_fraction(nanos, 9)}s"
    if hours or minutes:
        text = f"{minutes}m{text}"
    if hours:
        text = f"{hours}h{text}"
    return sign + text
