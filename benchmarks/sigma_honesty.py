"""How honest is the 1-sigma position error each base is stated with (the margin every
ruling's "too close to call" rests on)?

    python benchmarks/sigma_honesty.py [FOLDER ...] [--every K]

For each folder (default: the shared eval sets and the bundled Warcry clip; the
bundled Epic clip, sample_footage/epic-demo, for stands) the pipeline
runs over every frame (a look every frame it allows; between looks a clip's fighters are
followed, so these are the fits the tracker is given), and in every K-th frame (every one
of the eval sets' snapshots) each round base detected is matched to its truth (the
shared scorer's matching). Its error is taken along the
line to the camera's nadir, where a painted side wall pulls a rim's edge, and across it.
Printed per share of the rim fitted (the fit's score), and for oval and rectangular
stands together: how many, the error RMS, the mean
stated sigma, and the share of bases whose error along both lines is within 1 and 2
sigma, for the sigma stated now
(calibration and rim fit) and, in the same run, the calibration's alone. An honest 1
sigma holds about two errors in three, 2 sigma about 95 %.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.footage import load_scorer  # noqa: E402
from tracker.detection import KIND_BASE  # noqa: E402
from tracker.pipeline import Pipeline  # noqa: E402
from tracker.sources import open_source  # noqa: E402

EVAL = REPO.parent / "shared" / "eval" / "sets"
BINS = ((0.0, 0.4), (0.4, 0.55), (0.55, 0.7), (0.7, 0.85), (0.85, 1.01))


def measure(folder: Path, every: int) -> np.ndarray:
    """Rows (score, error along the nadir line, error across it, stated sigma,
    calibration-only sigma, shape code) of the bases detected in ``folder``'s frames."""
    scorer = load_scorer()
    truth = json.loads((folder / "truth.json").read_text())
    frames = {int(f["frame"]): f for f in truth["frames"]}
    pipe = Pipeline.from_footage(folder)
    pipe.full_every = 1  # as eval_sets.py: a look whenever the pipeline allows one
    det = pipe.detector
    nadir = np.asarray(det.camera.camera_position, float)[:2]
    lift = det.config.base_thickness_in
    rows = []
    with open_source(folder) as src:
        for index, t, frame in src:
            r = pipe.process(frame, index, t)
            if index % every or index not in frames:
                continue
            seen = [f for f in frames[index]["fighters"] if not f["occluded"]]
            d = r.detections
            d = d[d.kind == KIND_BASE]
            if not len(d) or not seen:
                continue
            calib = det.calibration_sigma(d.xyz, lift)
            for i, j, _ in scorer.match([(f["x"], f["y"]) for f in seen], [tuple(p) for p in d.xyz[:, :2]], 0.75):
                e = d.xyz[j, :2] - (seen[i]["x"], seen[i]["y"])
                u = nadir - d.xyz[j, :2]
                u /= max(float(np.hypot(*u)), 1e-9)
                rows.append((d.score[j], e @ u, e @ (-u[1], u[0]), d.sigma_in[j], calib[j], d.shape[j]))
    return np.array(rows, float).reshape(-1, 6)


def report(name: str, rows: np.ndarray) -> None:
    round_ = rows[:, 5] == 0
    print(f"== {name}: {round_.sum()} round bases, {(~round_).sum()} oval or rectangular")
    print("   rim seen    n  err RMS along/across   sigma now (calib)   within 1 / 2 sigma now   calib alone")
    for lo, hi in BINS + ((0.0, 1.01), (None, None)):
        if lo is None:  # oval and rectangular stands: their sigma is the calibration's
            k, label = ~round_, "stands"
        else:
            k = round_ & (rows[:, 0] >= lo) & (rows[:, 0] < hi)
            label = "all" if (lo, hi) == (0.0, 1.01) else f"{lo:.2f}-{min(hi, 1.0):.2f}"
        if not k.any():
            continue
        s, a, c, now, cal = rows[k, :5].T
        worst = np.maximum(np.abs(a), np.abs(c))  # (sigma is stated for any one direction)
        cov = [100 * np.mean(worst <= m * sig) for sig in (now, cal) for m in (1, 2)]
        print(f"   {label:>9} {k.sum():4d}  {np.sqrt(np.mean(a * a)):.4f} / {np.sqrt(np.mean(c * c)):.4f} in"
              f"     {now.mean():.4f} ({cal.mean():.4f})      {cov[0]:5.1f} / {cov[1]:5.1f} %"
              f"       {cov[2]:5.1f} / {cov[3]:5.1f} %")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="*", type=Path)
    ap.add_argument("--every", type=int, default=3, help="score every K-th frame of a clip (default 3)")
    a = ap.parse_args()
    folders = a.folders or sorted(p for p in EVAL.glob("*") if (p / "truth.json").exists()) + [
        REPO / "sample_footage" / "warcry-demo"]
    eval_rows = []
    for folder in folders:
        if not (folder / "truth.json").exists():
            raise SystemExit(f"{folder}: no truth.json (needed to score); give a footage or eval folder")
        rows = measure(folder, 1 if folder.parent == EVAL else a.every)
        report(folder.name, rows)
        if folder.parent == EVAL:
            eval_rows.append(rows)
    if len(eval_rows) > 1:
        report("eval sets pooled", np.concatenate(eval_rows))


if __name__ == "__main__":
    main()
