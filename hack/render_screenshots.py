"""Render the README's TUI screenshots (docs/*.png) from the SVG snapshots the tests keep.

The snapshots are the screens as the tests see them (a frozen clock, a recorded job), so the
pictures in the README change only when a screen does. Textual writes its SVGs for the
"Fira Code" web font; we render with DejaVu Sans Mono, which Debian ships, through resvg
(the resvg-py wheel, installed by `make screenshots`).

    .venv/bin/python hack/render_screenshots.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOTS = ROOT / "tests" / "unit" / "__snapshots__" / "test_tui_snapshots"
FONT = "DejaVu Sans Mono"
FONT_DIRS = ["/usr/share/fonts/truetype/dejavu"]

#: README picture -> the snapshot it shows
SCREENSHOTS = {
    "docs/tui-drain.png": "test_drain_screen_blocker_panel_names_the_unhealthy_pod[200x50].svg",
    "docs/tui-rollout.png": "test_rollout_screen_with_its_pods[200x50].svg",
    "docs/tui-campaign.png": "test_campaign_screen_a_wave_held_by_a_pdb[200x50].svg",
}


def main() -> int:
    try:
        import resvg_py  # type: ignore[import-not-found]
    except ImportError:
        print("render_screenshots: needs resvg-py (make screenshots installs it)", file=sys.stderr)
        return 2
    for picture, snapshot in SCREENSHOTS.items():
        svg = (SNAPSHOTS / snapshot).read_text().replace('"Fira Code"', f'"{FONT}"')
        svg = svg.replace("Fira Code, monospace", f"{FONT}, monospace")
        png = resvg_py.svg_to_bytes(svg_string=svg, font_family=FONT, monospace_family=FONT, font_dirs=FONT_DIRS)
        (ROOT / picture).write_bytes(bytes(png))
        print(f"wrote {picture} from {snapshot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
