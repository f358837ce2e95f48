"""Where the shared evaluation sets are (``../shared/eval/sets`` beside the repository),
and truth-matching helpers used only to score the tracker in tests."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

SHARED = Path(__file__).resolve().parents[2] / "shared"
EVAL_SETS = SHARED / "eval" / "sets"


def eval_set(name: str) -> Path:
    folder = EVAL_SETS / name
    if not (folder / "setup.json").exists():
        pytest.fail(f"{folder} is missing: the shared evaluation sets must sit beside the repository (../shared)")
    return folder


def truth(folder: Path) -> dict:
    return json.loads((folder / "truth.json").read_text())


def match(truth_xy, pred_xy, gate: float = 0.75):
    """Minimum-cost matching within ``gate`` inches: [(truth index, pred index, distance)]."""
    if len(truth_xy) == 0 or len(pred_xy) == 0:
        return []
    d = np.linalg.norm(np.asarray(truth_xy)[:, None, :2] - np.asarray(pred_xy)[None, :, :2], axis=2)
    r, c = linear_sum_assignment(np.where(d <= gate, d, 1e3))
    return [(int(i), int(j), float(d[i, j])) for i, j in zip(r, c) if d[i, j] <= gate]


def judged_bases(pipe, frame, truth_frame: dict):
    """One photo judged alone: its bases (Detections), the true fighters at least half
    in sight, and their matches ``(true index, base index, distance)``."""
    from tracker.detection import KIND_BASE

    d = pipe.judge_still(frame, 0).detections
    bases = d[d.kind == KIND_BASE]
    vis = [f for f in truth_frame["fighters"] if f["visible_fraction"] >= 0.5]
    return bases, vis, match([(f["x"], f["y"]) for f in vis], bases.xyz[:, :2])



def camera_floor_rms(model, truth: dict) -> float:
    """How far (RMS, in) a camera model puts the floor, seen where the rendered set's true
    camera (``truth``) sees it: the held-out benchmark's own measure
    (``benchmarks.heldout_run.camera_floor_errors``)."""
    import sys

    repo = str(Path(__file__).resolve().parents[1])
    if repo not in sys.path:
        sys.path.insert(0, repo)  # benchmarks/ is not installed
    from benchmarks.heldout_run import camera_floor_errors, camera_of

    return float(np.sqrt(np.mean(np.square(camera_floor_errors(camera_of(model), truth)))))


@contextmanager
def rules_only(det):
    """The detector's hand rules alone, for a test of one of them: the learned refiner's
    naming of patches (``doubt_base_p``: doubts and offered patches) and reading of sides
    (``read_sides``) off, as before it was trained to. (Its placing stays.)"""
    kept = det.doubt_base_p, det.read_sides
    det.doubt_base_p, det.read_sides = 2.0, False
    try:
        yield det
    finally:
        det.doubt_base_p, det.read_sides = kept
