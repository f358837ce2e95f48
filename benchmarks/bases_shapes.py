"""Oval and rectangular bases (issue #4 item 1): detection on renders, against truth.

    python benchmarks/bases_shapes.py [--epic-seeds 3] [--mixed-seeds 10] [--width 1920 --height 1080]

Renders Epic tables (180 x 120 cm, three units of four 40 x 20 mm stands, in base
contact or in lines) and Warcry tables (oval, rectangular and round bases of three
sides, some on platforms), one still each, with webcam blur and noise; runs
TableDetector.detect on each through the true camera and prints recall, precision,
side accuracy, centre RMS (floor / platforms), angle error and the per-frame time
(one thread, CPU time of detect()).
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import cv2  # noqa: E402
import numpy as np  # noqa: E402
from scipy.optimize import linear_sum_assignment  # noqa: E402

cv2.setNumThreads(1)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tracker.base_shapes import SHAPE_NAMES  # noqa: E402
from tracker.config import GameConfig  # noqa: E402
from tracker.detection import KIND_BASE, TableDetector  # noqa: E402
from tracker.synthetic.shapes import ShapedRenderer, plan_epic, plan_shaped  # noqa: E402


def run(kind: str, seed: int, width: int, height: int, acc: dict) -> None:
    rng = np.random.default_rng(seed)
    sc = plan_epic(rng, n_units=4, per_unit=5) if kind == "epic" else plan_shaped(rng, n_per_side=6)
    r = ShapedRenderer(sc, width, height, seed=seed)
    frame = r.frame()
    det = TableDetector(GameConfig.from_dict(sc.config(width, height)), r.camera, background=r.empty(),
                        terrain=sc.terrain())
    det.detect(frame)  # warm-up (kernels)
    t0 = time.thread_time()
    dets = det.detect(frame)
    acc["cpu_ms"].append((time.thread_time() - t0) * 1e3)
    d = dets[dets.kind == KIND_BASE]
    tx = np.array([[b.x, b.y] for b in sc.bases])
    C = np.linalg.norm(tx[:, None] - d.xyz[None, :, :2], axis=2) if len(d) else np.zeros((len(tx), 0))
    C = np.where(C < 0.5, C, 1e6)
    ri, ci = linear_sum_assignment(C) if len(d) else ([], [])
    pairs = [(i, j) for i, j in zip(ri, ci) if C[i, j] < 1e6]
    acc["truth"] += len(sc.bases)
    acc["pred"] += len(d)
    acc["match"] += len(pairs)
    for i, j in pairs:
        b = sc.bases[i]
        acc["side_ok"] += int(d.side[j] == b.side and SHAPE_NAMES[int(d.shape[j])] == b.shape)
        e = float(np.hypot(d.xyz[j, 0] - b.x, d.xyz[j, 1] - b.y))
        acc["err_platform" if b.z > 0 else "err_floor"].append(e)
        if b.shape != "round":
            acc["angle"].append(abs((d.angle_deg[j] - b.angle_deg + 90) % 180 - 90))


def report(name: str, acc: dict) -> dict:
    rms = lambda v: float(np.sqrt(np.mean(np.square(v)))) if v else float("nan")  # noqa: E731
    out = {"set": name, "bases": acc["truth"], "recall": acc["match"] / max(acc["truth"], 1),
           "precision": acc["match"] / max(acc["pred"], 1), "side_and_shape_accuracy": acc["side_ok"] / max(acc["match"], 1),
           "rms_floor_in": rms(acc["err_floor"]), "rms_platform_in": rms(acc["err_platform"]),
           "angle_err_mean_deg": float(np.mean(acc["angle"])) if acc["angle"] else float("nan"),
           "angle_err_max_deg": float(np.max(acc["angle"])) if acc["angle"] else float("nan"),
           "detect_cpu_ms_mean": float(np.mean(acc["cpu_ms"]))}
    print(f"{name}: {out['bases']} bases  recall {out['recall']:.4f}  precision {out['precision']:.4f}  "
          f"side+shape {out['side_and_shape_accuracy']:.4f}  centre RMS floor {out['rms_floor_in']:.4f} in, "
          f"platforms {out['rms_platform_in']:.4f} in  angle error mean {out['angle_err_mean_deg']:.2f} "
          f"max {out['angle_err_max_deg']:.2f} deg  detect {out['detect_cpu_ms_mean']:.0f} ms CPU/frame")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epic-seeds", type=int, default=3)
    ap.add_argument("--mixed-seeds", type=int, default=10)
    ap.add_argument("--width", type=int, default=1920)
    ap.add_argument("--height", type=int, default=1080)
    ap.add_argument("--json", dest="json_out", type=Path, default=None)
    a = ap.parse_args()
    results = []
    for kind, n in (("epic", a.epic_seeds), ("mixed", a.mixed_seeds)):
        if n <= 0:
            continue
        acc = {"truth": 0, "pred": 0, "match": 0, "side_ok": 0, "err_floor": [], "err_platform": [], "angle": [],
               "cpu_ms": []}
        for seed in range(n):
            run(kind, 100 + seed, a.width, a.height, acc)
        results.append(report(f"{kind} {a.width}x{a.height} ({n} tables)", acc))
    if a.json_out:
        a.json_out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
