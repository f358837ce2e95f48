"""Store the cameras of the tests' rendered tables (``tests/table_cameras``).

Each file is the intrinsics ``tracker.calibrate.intrinsics_for_folder`` computes from a
tuning table's fifteen board views (rendered whole by ``../shared/eval/make_set.py``),
written as a ``calibrate-camera`` file is. The tests then render their tables without the
board views and read the stored camera (``tests/conftest.py::_tuning_table``): the same
camera at a third of the cost. ``tests/test_footage_intrinsics.py`` checks that a stored
camera is still what the calibration computes; after a change to the calibration, run
``--all`` to store them afresh.

    python scripts/table_cameras.py epic-100095-1280x720 warcry-100002-1280x720   # add these
    python scripts/table_cameras.py --all --jobs 2                               # recompute every one
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks import corpus  # noqa: E402

CAMERAS = REPO / "tests" / "table_cameras"
NAME = re.compile(rf"^({'|'.join(map(re.escape, corpus.KINDS))})-(\d+)-(\d+)x(\d+)$")


def _entry(name: str, root: str) -> corpus.Entry:
    m = NAME.match(name)
    if not m:
        raise SystemExit(f"error: {name!r} is not a table name; write kind-seed-WIDTHxHEIGHT, e.g. epic-100095-1280x720")
    kind, seed, w, h = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))
    return corpus.Entry("tuning", seed, kind, w, h, frames=1, root=root)


def _store(name: str, root: str) -> str:
    """Render ``name`` whole, calibrate its camera from its board views under a cache of
    its own (never an earlier result), and store it."""
    with tempfile.TemporaryDirectory() as cache:
        os.environ["XDG_CACHE_HOME"] = cache
        from tracker.calibrate import intrinsics_for_folder
        from tracker.config import GameConfig

        entry = _entry(name, root)
        corpus.render(entry)
        intr = intrinsics_for_folder(entry.path, GameConfig.load(entry.path))
        intr.to_json(CAMERAS / f"{name}.json")
    return f"{name}: fx {intr.fx:.2f} px"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", help="tables to add, as kind-seed-WIDTHxHEIGHT")
    ap.add_argument("--all", action="store_true", help="recompute every stored camera")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    names = list(a.names) + (sorted(p.stem for p in CAMERAS.glob("*.json")) if a.all else [])
    if not names:
        ap.error("name a table to add, or --all")
    for n in names:
        _entry(n, "")  # (a typo is refused before any work)
    CAMERAS.mkdir(exist_ok=True)
    root = str(corpus.cache_dir() / "table-cameras")
    with ProcessPoolExecutor(max(1, a.jobs)) as pool:
        for line in pool.map(_store, names, [root] * len(names)):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
