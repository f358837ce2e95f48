"""Where the shared evaluation sets are (``../shared/eval/sets`` beside the repository),
and truth-matching helpers used only to score the tracker in tests."""

from __future__ import annotations

import json
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


def true_floor_grid(folder: Path, play_area_in: tuple[float, float], nx: int = 12, ny: int = 8):
    """A rendered set's floor as its true camera sees it: an ``nx`` x ``ny`` grid of world
    points over the play area (z = 0) and their pixels through ``truth.json``'s camera.
    Returns (world (n, 3), pixels (n, 2))."""
    import cv2

    cam = json.loads((folder / "truth.json").read_text())["camera"]
    w, d = play_area_in
    xs, ys = np.meshgrid(np.linspace(0, w, nx), np.linspace(0, d, ny))
    world = np.c_[xs.ravel(), ys.ravel(), np.zeros(xs.size)]
    seen, _ = cv2.projectPoints(world, np.array(cam["rvec"]), np.array(cam["tvec"]), np.array(cam["K"]),
                                np.array(cam["dist"]))
    return world, seen.reshape(-1, 2)
