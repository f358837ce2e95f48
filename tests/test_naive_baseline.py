"""The naive baseline of benchmarks/naive.py is a real tracker, not a stub: on one eval
frame it calibrates from the four table markers, finds bases where the truth has them,
and reports sides. Truth is used here only to score."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import cv2
import numpy as np

from evalsets import eval_set, match, truth

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.naive import NaiveTracker  # noqa: E402


def test_naive_baseline_finds_bases_on_an_eval_frame():
    t0 = time.perf_counter()
    folder = eval_set("warcry-1")
    tr = truth(folder)
    nt = NaiveTracker.from_folder(folder)
    assert nt.H is not None, "the four table markers were not found in table.jpg"

    # The homography is a real calibration: floor fighters' true image points map to
    # within half an inch of their true positions (no lens model, no heights: not better).
    fr0 = tr["frames"][0]
    floor = [f for f in fr0["fighters"] if f["z"] == 0.0]
    xy = nt.to_world(np.array([f["image_xy"] for f in floor]))
    err = np.hypot(*(xy - np.array([[f["x"], f["y"]] for f in floor])).T)
    assert np.median(err) < 0.5, err

    # Pixel radii come from the homography's scale: a 25-60 mm base at ~20-30 px/in.
    rmin, rmax = nt.r_px
    assert 5 <= rmin < rmax <= 60, nt.r_px

    frame = cv2.imread(str(folder / fr0["file"].replace(".png", ".jpg")), cv2.IMREAD_COLOR)
    assert frame is not None
    pred = nt.process(frame, 0)
    assert pred["frame"] == 0 and pred["tokens"] == []
    fighters = pred["fighters"]
    assert all(f["z"] == 0.0 and f["team"] in {s["index"] for s in nt.sides} for f in fighters)
    pairs = match([(t["x"], t["y"]) for t in fr0["fighters"]], [(f["x"], f["y"]) for f in fighters])
    # The README's naive tracker: about 50-80 % recall. One frame: at least a third.
    assert len(pairs) >= len(fr0["fighters"]) / 3, (len(pairs), len(fr0["fighters"]))
    d = np.array([p[2] for p in pairs])
    assert np.sqrt(np.mean(d ** 2)) < 0.5
    # Sides come from a ring of hue, not a constant: more than one side is reported.
    assert len({f["team"] for f in fighters}) >= 2
    assert time.perf_counter() - t0 < 10
