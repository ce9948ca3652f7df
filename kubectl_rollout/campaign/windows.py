"""Maintenance windows: when a campaign may start nodes. Outside every window it may not (deny by default,
kured#891); with no window at all it always may.

A window is written ``[DAYS] START-END [ZONE]``: ``Mon-Fri 22:00-04:00 Europe/Berlin``, ``Sat,Sun
01:00-05:00``, ``daily 10:15:30-10:16:00 UTC``. DAYS name the day a window *opens* on (default: every day); a
window whose END is not after its START crosses midnight and closes the next day; times may carry seconds;
ZONE is an IANA time zone (default UTC), read with ``zoneinfo``, so daylight saving moves the window with the
wall clock. Pure: every function takes the time (epoch seconds) it answers for.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

DAY_NAMES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_EVERY_DAY = frozenset(range(7))
_FULL_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_DAYS_BY_NAME = {name: i for names in (DAY_NAMES, _FULL_NAMES) for i, name in enumerate(names)}
_TIME = re.compile(r"([01]?\d|2[0-4]):([0-5]\d)(?::([0-5]\d))?")
#: how far ahead a next opening is looked for: a week of days and the day before
_DAYS_AHEAD = 9


@dataclass(frozen=True, kw_only=True)
class Window:
    days: frozenset[int]
    #: seconds after local midnight; ``end`` may be 86400 (24:00)
    start: int
    end: int
    zone: str
    text: str

    @property
    def crosses_midnight(self) -> bool:
        return self.end <= self.start

    def _tz(self) -> ZoneInfo:
        return ZoneInfo(self.zone)

    def occurrences(self, after: float) -> Iterator[tuple[float, float]]:
        """(opens, closes) in epoch seconds, in order, of every occurrence that closes after ``after``, for a
        week and a bit ahead."""
        tz = self._tz()
        today = dt.datetime.fromtimestamp(after, tz).date()
        for offset in range(-1, _DAYS_AHEAD):
            day = today + dt.timedelta(days=offset)
            if day.weekday() not in self.days:
                continue
            opens = _at(day, self.start, tz)
            closes = _at(day + dt.timedelta(days=1) if self.crosses_midnight else day, self.end, tz)
            if closes > after:
                yield opens, closes

    def __str__(self) -> str:
        return self.text


def _at(day: dt.date, seconds: int, tz: ZoneInfo) -> float:
    midnight = dt.datetime.combine(day, dt.time(), tzinfo=tz)
    hours, rest = divmod(seconds, 3600)
    # Wall-clock arithmetic: 22:00 is 22:00 local on a day daylight saving changes, too.
    if hours == 24:
        return dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), tzinfo=tz).timestamp()
    return midnight.replace(hour=hours, minute=rest // 60, second=rest % 60).timestamp()


@dataclass(frozen=True, kw_only=True)
class Schedule:
    """Every window of a campaign; open when any one is."""

    windows: tuple[Window, ...]

    def _intervals(self, after: float) -> list[tuple[float, float]]:
        return sorted(interval for w in self.windows for interval in w.occurrences(after))

    def is_open_at(self, t: float) -> bool:
        return any(opens <= t < closes for opens, closes in self._intervals(t))

    def next_opening(self, t: float) -> float | None:
        """``t`` itself when open now; else when the next window opens (None: never within a week, which
        a valid window cannot be)."""
        for opens, _closes in self._intervals(t):
            return max(opens, t)
        return None

    def closes_at(self, t: float) -> float | None:
        """When the open time around ``t`` ends (windows that overlap or touch count as one); None if closed."""
        end: float | None = None
        for opens, closes in self._intervals(t):
            if end is None:
                if opens <= t < closes:
                    end = closes
            elif opens <= end:
                end = max(end, closes)
        return end


def parse_window(text: str) -> Window:
    """One ``--window``; a ``ValueError`` naming what is wrong and what is accepted."""
    words = text.split()
    if not 1 <= len(words) <= 3:
        raise ValueError(_usage(text, "expected [DAYS] START-END [ZONE]"))
    days = _EVERY_DAY
    if "-" in words[0] and ":" in words[0]:
        times, rest = words[0], words[1:]
    else:
        days = _parse_days(words[0], text)
        if len(words) < 2:
            raise ValueError(_usage(text, "missing START-END"))
        times, rest = words[1], words[2:]
    start_text, dash, end_text = times.partition("-")
    if not dash:
        raise ValueError(_usage(text, f"{times!r} is not START-END"))
    start, end = _parse_time(start_text, text), _parse_time(end_text, text)
    if start == 86400:
        raise ValueError(_usage(text, "a window cannot start at 24:00; write 00:00"))
    if start == end:
        raise ValueError(_usage(text, "START and END are equal; for all day write 00:00-24:00"))
    zone = rest[0] if rest else "UTC"
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError) as err:
        raise ValueError(
            f"--window {text!r}: unknown time zone {zone!r}; use an IANA name such as Europe/Berlin or UTC"
        ) from err
    return Window(days=days, start=start, end=end, zone=zone, text=" ".join(words))


def schedule_of(texts: Sequence[str]) -> Schedule | None:
    """The schedule of ``--window`` flags; None when there is none (always open)."""
    return Schedule(windows=tuple(parse_window(t) for t in texts)) if texts else None


def _usage(text: str, problem: str) -> str:
    return (
        f"--window {text!r}: {problem}; e.g. --window 'Mon-Fri 22:00-04:00 Europe/Berlin' "
        "(DAYS: Mon-Fri, Sat,Sun or daily; times HH:MM or HH:MM:SS)"
    )


def _parse_time(word: str, text: str) -> int:
    match = _TIME.fullmatch(word)
    if match is None:
        raise ValueError(_usage(text, f"{word!r} is not a time of day"))
    hours, minutes, seconds = int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)
    if hours == 24 and (minutes or seconds):
        raise ValueError(_usage(text, f"{word!r} is past 24:00"))
    return hours * 3600 + minutes * 60 + seconds


def _day(word: str, text: str) -> int:
    index = _DAYS_BY_NAME.get(word.strip().lower())
    if index is None:
        raise ValueError(_usage(text, f"{word!r} is not a day"))
    return index


def _parse_days(word: str, text: str) -> frozenset[int]:
    if word.lower() in ("daily", "*"):
        return _EVERY_DAY
    days: set[int] = set()
    for part in word.split(","):
        first, dash, last = part.partition("-")
        if not dash:
            days.add(_day(first, text))
            continue
        start, stop = _day(first, text), _day(last, text)
        index = start
        days.add(index)
        while index != stop:  # Fri-Mon wraps over the weekend
            index = (index + 1) % 7
            days.add(index)
    return frozenset(days)
