"""Times and durations as the screens print them (short: the table must fit 80 columns)."""

from __future__ import annotations

from datetime import datetime


def duration(seconds: float | None) -> str:
    """``45s``, ``3m05s``, ``2h04m``; ``-`` for None."""
    if seconds is None:
        return "-"
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def clock_time(epoch: float | None) -> str:
    """Local ``HH:MM:SS``; ``-`` for None."""
    if epoch is None:
        return "-"
    return datetime.fromtimestamp(epoch).strftime("%H:%M:%S")


def countdown(deadline: float, now: float) -> str:
    """``in 12s``, or ``now`` once it is due."""
    left = deadline - now
    return "now" if left <= 0.5 else f"in {duration(left)}"
