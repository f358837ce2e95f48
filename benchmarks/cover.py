"""Benchmark: all-pairs cover for 30 fighters and 10 terrain pieces (goal < 50 ms).

Run: python benchmarks/cover.py [--repeat N] [--seed S]
Prints the median (and min/max) wall time of ``tracker.rules.cover.cover_all_pairs``
over N runs on a seeded random Warcry table (30 x 22 in): 30 fighters on mixed round and
oval bases, some on platforms; 10 pieces (walls, ruins with a floor and walls, a tower).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tracker.rules.cover import cover, cover_all_pairs  # noqa: E402
from tracker.world import Base, Fighter, TerrainPart, TerrainPiece, WorldState  # noqa: E402


def _box(x0, y0, x1, y1):
    return ((x0, y0), (x1, y0), (x1, y1), (x0, y1))


def table(seed: int = 1, n_fighters: int = 30, n_pieces: int = 10) -> WorldState:
    rnd = random.Random(seed)
    terrain = []
    for k in range(n_pieces):
        x, y = rnd.uniform(1, 26), rnd.uniform(1, 18)
        if k % 3 == 0:  # a ruin: a 3" floor and two walls on it, one wall below
            floor = TerrainPart(f"r{k}.floor", "platform", _box(x, y, x + 4, y + 3), 3.0)
            w1 = TerrainPart(f"r{k}.wall1", "obstacle", _box(x, y + 2.8, x + 4, y + 3), 2.0, base_z=3.0)
            w2 = TerrainPart(f"r{k}.wall2", "obstacle", _box(x + 3.8, y, x + 4, y + 3), 2.0, base_z=3.0)
            terrain.append(TerrainPiece(f"r{k}", "platform", floor.footprint, 5.0, parts=(floor, w1, w2)))
        else:
            w, d = rnd.uniform(0.3, 4), rnd.uniform(0.3, 1.5)
            terrain.append(TerrainPiece(f"w{k}", "obstacle", _box(x, y, x + w, y + d), rnd.uniform(1, 4)))
    fighters = []
    bases = [Base.round_mm(25), Base.round_mm(32), Base.round_mm(40), Base.round_mm(50), Base.round_mm(60)]
    for k in range(n_fighters):
        base = bases[k % len(bases)] if k % 10 else Base("oval", 60 / 25.4, 35 / 25.4, rnd.uniform(0, 180))
        fighters.append(Fighter(f"f{k}", k % 2, rnd.uniform(0.5, 29.5), rnd.uniform(0.5, 21.5), 0.0, base))
    return WorldState(fighters=tuple(fighters), terrain=tuple(terrain))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--check", action="store_true", help="also compare against the one-pair ruling")
    a = ap.parse_args(argv)
    s = table(a.seed)
    cover_all_pairs(s)  # warm up (imports, caches)
    times = []
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        res = cover_all_pairs(s)
        times.append((time.perf_counter() - t0) * 1000)
    med = statistics.median(times)
    n_cover = sum(res.values())
    print(f"all-pairs cover: {len(s.fighters)} fighters, {len(s.terrain)} terrain pieces, "
          f"{len(res)} attacker->target pairs ({n_cover} in cover)")
    print(f"median {med:.1f} ms over {a.repeat} runs (min {min(times):.1f}, max {max(times):.1f}); goal < 50 ms: "
          f"{'OK' if med < 50 else 'MISSED'}")
    if a.check:
        t0 = time.perf_counter()
        bad = [(k, v) for k, v in res.items() if (cover(s, *k).verdict == "yes") != v]
        print(f"one-pair rulings agree on {len(res) - len(bad)}/{len(res)} pairs "
              f"({(time.perf_counter() - t0) * 1000:.0f} ms for all one-pair rulings)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
