"""Progress bars as text, so that they sit in table cells and survive NO_COLOR and a plain terminal."""

from __future__ import annotations

FULL = "█"
EMPTY = "░"
#: eighths of a cell, for a smooth edge
_PARTS = " ▏▎▍▌▋▊▉"


def bar(fraction: float, width: int) -> str:
    """``width`` cells filled to ``fraction`` (0..1), in eighths of a cell."""
    fraction = min(1.0, max(0.0, fraction))
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    text = FULL * full
    if part and full < width:
        text += _PARTS[part]
    return text + EMPTY * (width - len(text))


def count_bar(value: int, total: int, width: int) -> str:
    """``value/total`` with a bar, e.g. ``███░░ 3/5``."""
    fraction = value / total if total > 0 else 0.0
    return f"{bar(fraction, width)} {value}/{total}"
