"""Untagged terrain footprints (tracker.footprints): IoU with the truth and false pieces
on the project's renders (tagged + untagged pieces), and false pieces on the eval sets'
empty tables (another renderer; every piece there is tagged).

    python benchmarks/footprints.py [--seeds 1-8] [--width 960 --height 540]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from shapely.geometry import Polygon

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from calibration.camera import CameraModel, Intrinsics, TablePose  # noqa: E402
from calibration.markers import detect_markers  # noqa: E402
from tracker.calibrate import calibrate_folder  # noqa: E402
from tracker.config import GameConfig  # noqa: E402
from tracker.footprints import find_untagged  # noqa: E402
from tracker.synthetic import Renderer, overhead_camera, plan_game  # noqa: E402
from tracker.synthetic.game import Sensor  # noqa: E402
from tracker.terrain import terrain_from_markers  # noqa: E402


def seeds(text: str) -> list[int]:
    a, _, b = text.partition("-")
    return list(range(int(a), int(b or a) + 1))


def render(seed: int, w: int, h: int, n_untagged: int):
    game = plan_game(np.random.default_rng(seed), seconds=2, n_fighters=8, hands=False, n_untagged_terrain=n_untagged)
    cam = overhead_camera(np.random.default_rng(seed + 100), w, h, game.table.play_area_in)
    img, _ = Renderer(game.table, cam, 2).render([])
    u8 = Sensor.random(np.random.default_rng(seed)).apply(img, np.random.default_rng(1))
    cm = CameraModel(Intrinsics(cam.K, cam.dist, (w, h), 0.0), TablePose(cam.rvec, cam.tvec, 0.0, (), ()))
    return game, u8, cm, GameConfig.from_dict(game.config(w, h))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="1-8")
    ap.add_argument("--width", type=int, default=960)
    ap.add_argument("--height", type=int, default=540)
    ap.add_argument("--untagged", type=int, default=3)
    ap.add_argument("--eval", default=str(ROOT.parent / "shared" / "eval" / "sets"))
    a = ap.parse_args()
    ious, missed, false_pos, times = [], 0, 0, []
    print(f"renders {a.width}x{a.height}, {a.untagged} untagged + 5 tagged pieces each")
    for s in seeds(a.seeds):
        game, img, cam, cfg = render(s, a.width, a.height, a.untagged)
        mk = detect_markers(img, cfg.table.dictionary)
        tagged = terrain_from_markers(mk.ids, mk.corners, cam, cfg)
        t0 = time.perf_counter()
        found = find_untagged(cam, img, cfg, tagged, list(mk.corners))
        times.append(time.perf_counter() - t0)
        truth = [tb.polygon() for tb in game.table.terrain if not tb.tagged]
        polys = [Polygon(p.footprint) for p in found]
        best = [max((t.intersection(p).area / t.union(p).area for p in polys), default=0.0) for t in truth]
        fp = sum(all(not t.intersects(p) for t in truth) for p in polys)
        missed += sum(b < 0.5 for b in best)
        false_pos += fp
        ious += [b for b in best if b >= 0.5]
        print(f"  seed {s:3d}: tagged {len(tagged)}, untagged {len(truth)}, found {len(found)}, "
              f"IoU {', '.join(f'{b:.3f}' for b in best)}, false {fp}, {times[-1]:.2f} s")
    if ious:
        print(f"renders: IoU mean {np.mean(ious):.3f} min {np.min(ious):.3f} (n={len(ious)}), missed {missed}, "
              f"false pieces {false_pos}, {np.mean(times):.2f} s per table")
    sets = sorted(Path(a.eval).glob("*/table.jpg"))
    total = 0
    for t in sets:
        cfg = GameConfig.load(t.parent)
        setup = calibrate_folder(t.parent, cfg)
        total += len(setup.untagged)
        print(f"  eval {t.parent.name}: tagged {len(setup.terrain) - len(setup.untagged)} of "
              f"{len(cfg.terrain_library)}, false unknown pieces {len(setup.untagged)}")
    print(f"eval tables: {len(sets)}, false unknown pieces {total}")


if __name__ == "__main__":
    main()
