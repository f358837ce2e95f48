"""Regenerate the bundled sample footage, exactly (fixed seed):

    python -m tracker.synthetic.make_sample            # -> sample_footage/warcry-demo/
    python -m tracker.synthetic.make_sample --out /tmp/demo
    python -m tracker.synthetic.make_sample --epic     # -> sample_footage/epic-demo/

Warcry: 24 s at 1280x720, 15 fps (360 frames). Epic: 18 s of a 180 x 120 cm table at
1920x1080, 8 fps (144 frames). Each with 15 calibration views, the empty table,
game.yaml and truth.json. A few minutes each on two cores.
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
EPIC_SEED = 7
EPIC_SAMPLE = dict(seed=EPIC_SEED, width=1920, height=1080, seconds=18.0, fps=8.0, video=True, n_calib_views=15,
                   jpeg_quality=88)
EPIC_OUT = DEFAULT_OUT.parent / "epic-demo"


def _clear(out: Path) -> None:
    """Remove a previous render's files (only the ones this tool writes)."""
    for pat in ("calib/*.jpg", "frames/*.jpg", "clip.mp4", "truth.json", "game.yaml", "table.jpg"):
        for p in out.glob(pat):
            p.unlink()


@click.command()
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="folder to write the set into (default: sample_footage/warcry-demo or epic-demo)")
@click.option("--epic", is_flag=True, help="the Epic-scale sample (180 x 120 cm, 40 x 20 mm stands)")
def main(out: Path | None, epic: bool = False) -> None:
    """Render sample_footage/warcry-demo, or with --epic sample_footage/epic-demo (deterministic)."""
    out = out or (EPIC_OUT if epic else DEFAULT_OUT)
    out.mkdir(parents=True, exist_ok=True)
    _clear(out)
    t = time.time()
    if epic:
        from .epic_game import render_epic_set

        render_epic_set(out, progress=True, **EPIC_SAMPLE)
    else:
        render_set(out, progress=True, **SAMPLE)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    click.echo(f"wrote {out} ({size / 1e6:.1f} MB) in {time.time() - t:.0f} s")


if __name__ == "__main__":
    main()
