"""Regenerate the bundled sample footage, exactly (fixed seed):

    python -m tracker.synthetic.make_sample            # -> sample_footage/warcry-demo/
    python -m tracker.synthetic.make_sample --out /tmp/demo

24 s of a Warcry game at 1280x720, 15 fps (360 frames), 15 calibration views, the
empty table, game.yaml and truth.json. Takes a few minutes on two cores.
"""

from __future__ import annotations

import time
from pathlib import Path

import click

from .game import render_set

SAMPLE_SEED = 2026
SAMPLE = dict(seed=SAMPLE_SEED, width=1280, height=720, seconds=24.0, fps=15.0, video=True, n_calib_views=15,
              hands=True, bump_at=None, n_fighters=12, n_sides=3, jpeg_quality=88,
              # Rims that stand out from the green mat, as a club would paint them: the
              # tracker warns that green rims on this mat are hard to see (and they are).
              side_colours=("red", "white", "blue"))
DEFAULT_OUT = Path(__file__).resolve().parents[2] / "sample_footage" / "warcry-demo"


def _clear(out: Path) -> None:
    """Remove a previous render's files (only the ones this tool writes)."""
    for pat in ("calib/*.jpg", "frames/*.jpg", "clip.mp4", "truth.json", "game.yaml", "table.jpg"):
        for p in out.glob(pat):
            p.unlink()


@click.command()
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=DEFAULT_OUT, show_default=True,
              help="folder to write the set into")
def main(out: Path) -> None:
    """Render sample_footage/warcry-demo (deterministic)."""
    out.mkdir(parents=True, exist_ok=True)
    _clear(out)
    t = time.time()
    render_set(out, progress=True, **SAMPLE)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    click.echo(f"wrote {out} ({size / 1e6:.1f} MB) in {time.time() - t:.0f} s")


if __name__ == "__main__":
    main()
