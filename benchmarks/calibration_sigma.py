"""Is calibration's stated sigma honest? Rendered cameras of known K and distortion
(``tracker.synthetic.board_views``: a chessboard rendered through the lens, blur, noise,
hand-held views), calibrated with the lens model chosen by held-out views
(``calibrate_camera(..., lens_model="auto")``); the share of cameras whose true fx, cx,
cy lie within the stated 1 and 2 sigma (want 60-75 % and >= 93 %), against the sigma
OpenCV's default model states of itself. Then the real photographs
(``../shared/real-calibration/circles-grid-left``): the model chosen, fx +- sigma, and
whether 2 sigma covers the published fx. Truth is used here only to score. Seeds
1000-1059 and 5000-5049 set lens_model.SIGMA_FACTOR; the default 9000 was kept apart.

    python benchmarks/calibration_sigma.py [--cameras 50] [--seed 9000]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calibration.boards import ChessBoard, CirclesGrid  # noqa: E402
from calibration.intrinsics import calibrate_camera  # noqa: E402
from tracker.errors import CalibrationError  # noqa: E402
from tracker.synthetic.board_views import BOARD_COLS, BOARD_ROWS, random_camera, render_board_views  # noqa: E402

REAL = Path(__file__).resolve().parents[2] / "shared" / "real-calibration" / "circles-grid-left"
PUBLISHED_FX = 522.78124071224499
NAMES = ("fx", "cx", "cy")


def _fx_cx_cy(K: np.ndarray) -> np.ndarray:
    return np.array([K[0, 0], K[0, 2], K[1, 2]])


def opencv_default_sigma(points, size) -> tuple[np.ndarray, np.ndarray]:
    """What calibration stated before: OpenCV's default model on the same corners, its
    own (Jacobian) sigma of fx, cx, cy."""
    obj = [o.reshape(-1, 1, 3).astype(np.float32) for o, _ in points]
    img = [i.reshape(-1, 1, 2).astype(np.float32) for _, i in points]
    out = cv2.calibrateCameraExtended(obj, img, size, None, None)
    std = np.asarray(out[5]).ravel()
    return _fx_cx_cy(out[1]), std[[0, 2, 3]]


def rendered(n_cameras: int, seed: int) -> None:
    board = ChessBoard(BOARD_COLS, BOARD_ROWS, 1.0)
    ks, ks_old, models, fx_err, secs = [], [], Counter(), [], []
    print(f"== {n_cameras} rendered cameras (seeds {seed}-{seed + n_cameras - 1}): |error| / stated sigma ==")
    for c in range(n_cameras):
        rng = np.random.default_rng(seed + c)
        cam = random_camera(rng)
        views = render_board_views(cam, int(rng.integers(15, 26)), rng)
        truth = _fx_cx_cy(cam.K)
        t0 = time.perf_counter()
        try:
            r = calibrate_camera(views, board, progress=False, lens_model="auto")
        except CalibrationError as e:  # counted as outside every interval
            print(f"   camera {c}: refused ({e})")
            ks.append(np.full(3, np.inf)); ks_old.append(np.full(3, np.inf)); models["refused"] += 1
            continue
        secs.append(time.perf_counter() - t0)
        i = r.intrinsics
        est, sig = _fx_cx_cy(i.K), i.std[[0, 2, 3]]
        k = np.abs(est - truth) / np.maximum(sig, 1e-12)
        old_est, old_sig = opencv_default_sigma([r.points[n] for n in r.views_used], cam.size)
        ks.append(k)
        ks_old.append(np.abs(old_est - truth) / np.maximum(old_sig, 1e-12))
        models[i.lens_model] += 1
        fx_err.append(est[0] - truth[0])
        tang = "tangential" if np.any(cam.dist[2:4] != 0) else "radial only"
        print(f"   camera {c}: {cam.size[0]}x{cam.size[1]}, {tang}, {len(r.views_used)} views -> {i.lens_model}; "
              + ", ".join(f"{n} {e:.1f}±{s:.2f} (true {t:.1f}, {kk:.1f}σ)"
                          for n, e, s, t, kk in zip(NAMES, est, sig, truth, k))
              + (f"; warned: {len(r.warnings)}" if r.warnings else "") + f"; {secs[-1]:.1f} s")
    ks, ks_old = np.array(ks), np.array(ks_old)
    for label, kk in (("stated now (views + lens models)", ks), ("OpenCV default model, its own sigma (before)", ks_old)):
        print(f"   {label}: within 1 sigma " + ", ".join(f"{n} {v:.0%}" for n, v in zip(NAMES, (kk <= 1).mean(0)))
              + "; within 2 sigma " + ", ".join(f"{n} {v:.0%}" for n, v in zip(NAMES, (kk <= 2).mean(0))))
    fx_err = np.array(fx_err)
    print(f"   models chosen: {dict(models)}; fx error RMS {np.sqrt(np.mean(fx_err ** 2)):.2f} px "
          f"(median |error| {np.median(np.abs(fx_err)):.2f} px); calibration {np.mean(secs):.1f} s a camera on average")


def real() -> None:
    print("== real photographs: circles-grid-left (25 views, 640x512), default calibrate-camera ==")
    t0 = time.perf_counter()
    r = calibrate_camera(REAL, CirclesGrid(4, 11, 20), progress=False, lens_model="auto")
    dt = time.perf_counter() - t0
    i = r.intrinsics
    c = r.model_choice
    print(f"   chosen model: {i.lens_model} ({c.reason})")
    print("   held-out error / weight: " + ", ".join(f"{n} {c.heldout_rms[n]:.3f} px / {c.weights[n]:.0%}"
                                                      for n in c.heldout_rms))
    print(f"   fx {i.fx:.2f} ± {i.std[0]:.2f} px, cx {i.K[0, 2]:.2f} ± {i.std[2]:.2f}, cy {i.K[1, 2]:.2f} ± {i.std[3]:.2f}; "
          f"published fx {PUBLISHED_FX:.2f} is {abs(i.fx - PUBLISHED_FX) / i.std[0]:.1f} sigma off: "
          f"{'inside' if abs(i.fx - PUBLISHED_FX) <= 2 * i.std[0] else 'OUTSIDE'} 2 sigma; {dt:.1f} s")
    for w in r.warnings:
        print(f"   warning: {w}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cameras", type=int, default=50)
    ap.add_argument("--seed", type=int, default=9000)
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    t0 = time.time()
    real()
    rendered(a.cameras, a.seed)
    print(f"total {time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
