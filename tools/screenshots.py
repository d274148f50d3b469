"""Regenerate the README screenshots: real frames of the app, as SVG and PNG.

    python tools/screenshots.py [--out screenshots] [--size 140x44] [scene ...]

Each scene (``tests/snapshot_apps/scenes.py``) runs headless in a Pilot; the frame is saved
with Textual's ``save_screenshot`` (SVG), then turned into PNG with ``rsvg-convert``.

rsvg drops the leading spaces of a ``<text>`` run (Textual writes them as ``&#160;``) and
then stretches the rest over the run's ``textLength``, so "run_shell · local" would render as
"run_shell· local". ``fix_svg`` moves those spaces into the run's ``x`` before converting.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

README_SCENES = (
    "working",
    "approval",
    "diff_approval",
    "takeover",
    "pager",
    "grants",
    "no_provider",
    "streaming",
    "adapters",
    "trust",
    "completion",
)

_TEXT = re.compile(
    r'(<text [^>]*?x=")([\d.]+)("[^>]*?textLength=")([\d.]+)("[^>]*>)((?:&#160;)+)([^<]*)(</text>)'
)


def fix_svg(svg: str) -> str:
    """Move leading non-breaking spaces of each text run into its ``x`` (see module doc)."""

    def shift(match: re.Match[str]) -> str:
        x, length = float(match.group(2)), float(match.group(4))
        spaces = match.group(6).count("&#160;")
        rest = match.group(7)
        cells = spaces + len(html.unescape(rest))
        if not rest or cells == 0:
            return ""
        width = length / cells
        return (
            f"{match.group(1)}{x + spaces * width:.1f}{match.group(3)}"
            f"{length - spaces * width:.1f}{match.group(5)}{rest}{match.group(8)}"
        )

    return _TEXT.sub(shift, svg)


def svg_to_png(svg: Path, png: Path) -> None:
    converter = shutil.which("rsvg-convert")
    if converter is None:
        raise SystemExit("rsvg-convert not found: apt-get install -y librsvg2-bin")
    with tempfile.NamedTemporaryFile("w", suffix=".svg", delete=False) as fixed:
        fixed.write(fix_svg(svg.read_text(encoding="utf-8")))
    try:
        subprocess.run([converter, fixed.name, "-o", str(png)], check=True)
    finally:
        os.unlink(fixed.name)


async def render(name: str, out: Path, size: tuple[int, int]) -> Path:
    from tests.snapshot_apps.scenes import scene

    make, play = scene(name)
    app = make()
    async with app.run_test(size=size) as pilot:
        await play(pilot)
        await pilot.pause(0.2)
        app.save_screenshot(filename=f"{name}.svg", path=str(out))
    return out / f"{name}.svg"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenes", nargs="*", default=list(README_SCENES))
    parser.add_argument("--out", type=Path, default=ROOT / "screenshots")
    parser.add_argument("--size", default="140x44", help="COLSxROWS")
    args = parser.parse_args()
    columns, rows = (int(n) for n in args.size.lower().split("x"))
    home = Path(tempfile.mkdtemp(prefix="agent-tui-shots-"))
    os.environ["AGENT_TUI_CONFIG_DIR"] = str(home / "config")
    os.environ["AGENT_TUI_DATA_DIR"] = str(home / "data")
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.scenes:
        svg = asyncio.run(render(name, args.out, (columns, rows)))
        png = svg.with_suffix(".png")
        svg_to_png(svg, png)
        print(f"{svg.relative_to(ROOT) if svg.is_relative_to(ROOT) else svg}  {png.name}")
    shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
