"""Rendered calibration-board views from a camera whose K and distortion are known.

A chessboard (9x6 inner corners, OpenCV's ``ChessBoard`` layout) is drawn through the
true lens: each output pixel's sub-samples are undistorted (``cv2.undistortPointsIter``)
to rays, the rays meet the board's plane, and the checker is evaluated there (exact
anti-aliasing, no texture resampling); then blur, gain and sensor noise. Poses are
hand-held: the board anywhere in the picture, tilted by a chosen range of angles about
a random axis. Truth (``RenderedCamera``) is for scoring only.

>>> cam = random_camera(np.random.default_rng(0))
>>> cam.K.shape, cam.dist.shape
((3, 3), (5,))
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

__all__ = ["RenderedCamera", "random_camera", "render_board_views", "BOARD_COLS", "BOARD_ROWS"]

BOARD_COLS, BOARD_ROWS = 9, 6  # inner corners, as calibration.boards.ChessBoard(9, 6, 1.0)
SIZES = ((640, 480), (800, 600), (960, 720), (1280, 720))


@dataclass(frozen=True)
class RenderedCamera:
    K: np.ndarray
    dist: np.ndarray  # k1, k2, p1, p2, k3
    size: tuple[int, int]

    @property
    def fx(self) -> float:
        return float(self.K[0, 0])


def random_camera(rng: np.random.Generator, tangential: bool | None = None) -> RenderedCamera:
    """fx 0.7-1.6 x the width (450-2050 px over SIZES), principal point up to 3 % of the
    size off centre, square pixels or 0.2 % off, k1 -0.3..0.1, k2 -0.05..0.15, and
    tangential terms (|p| ~ 1e-3) on a third of the cameras unless ``tangential`` says."""
    w, h = SIZES[int(rng.integers(len(SIZES)))]
    fx = float(w * rng.uniform(0.7, 1.6))
    fy = fx * (1.0 if rng.random() < 0.5 else 1 + rng.uniform(-0.002, 0.002))
    cx = (w - 1) / 2 + rng.uniform(-0.03, 0.03) * w
    cy = (h - 1) / 2 + rng.uniform(-0.03, 0.03) * h
    if tangential is None:
        tangential = bool(rng.random() < 1 / 3)
    p = rng.normal(0, 1e-3, 2) if tangential else np.zeros(2)
    dist = np.array([rng.uniform(-0.3, 0.1), rng.uniform(-0.05, 0.15), p[0], p[1], 0.0])
    return RenderedCamera(np.array([[fx, 0, cx], [0, fy, cy], [0, 0, 1.0]]), dist, (w, h))


def _rot(axis: np.ndarray, angle: float) -> np.ndarray:
    return cv2.Rodrigues(np.asarray(axis, float).reshape(3) * angle)[0]


def _pose(rng, cam: RenderedCamera, tilt_deg: tuple[float, float]):
    """A board pose whose whole board (with its one-square white margin) is in the
    picture: centre anywhere, 30-65 % of the width across, tilted within tilt_deg."""
    w, h = cam.size
    centre_b = np.array([(BOARD_COLS - 1) / 2, (BOARD_ROWS - 1) / 2, 0.0])
    outline = np.array([[-2, -2, 0], [BOARD_COLS + 1, -2, 0], [BOARD_COLS + 1, BOARD_ROWS + 1, 0], [-2, BOARD_ROWS + 1, 0]],
                       float)
    Kinv = np.linalg.inv(cam.K)
    for _ in range(200):
        u, v = rng.uniform(0.2, 0.8) * w, rng.uniform(0.2, 0.8) * h
        z = cam.fx * (BOARD_COLS + 1) / (rng.uniform(0.3, 0.65) * w)
        a = rng.uniform(0, 2 * np.pi)
        R = _rot([np.cos(a), np.sin(a), 0], np.deg2rad(rng.uniform(*tilt_deg))) @ _rot([0, 0, 1], rng.uniform(-0.3, 0.3))
        t = z * (Kinv @ [u, v, 1.0]) - R @ centre_b
        P = outline @ R.T + t
        if P[:, 2].min() <= 0.3 * z:
            continue
        q, _ = cv2.projectPoints(outline, cv2.Rodrigues(R)[0], t, cam.K, cam.dist)
        q = q.reshape(-1, 2)
        if q[:, 0].min() > 4 and q[:, 1].min() > 4 and q[:, 0].max() < w - 5 and q[:, 1].max() < h - 5:
            return R, t
    raise RuntimeError("no board pose fits in the picture")


def _rays(cam: RenderedCamera, ss: int) -> tuple[np.ndarray, np.ndarray]:
    """Normalised undistorted coordinates of ss x ss sub-samples of every pixel, and
    which of them the iteration truly inverted (projected back within 0.01 px)."""
    w, h = cam.size
    off = (np.arange(ss) + 0.5) / ss - 0.5
    xs = (np.arange(w)[:, None] + off[None]).ravel()
    ys = (np.arange(h)[:, None] + off[None]).ravel()
    X, Y = np.meshgrid(xs, ys)
    uv = np.stack([X.ravel(), Y.ravel()], 1).reshape(-1, 1, 2)
    crit = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 40, 1e-10)
    n = cv2.undistortPointsIter(uv, cam.K, cam.dist, None, None, crit).reshape(-1, 2)
    back, _ = cv2.projectPoints(np.c_[n, np.ones(len(n))], np.zeros(3), np.zeros(3), cam.K, cam.dist)
    ok = np.linalg.norm(back.reshape(-1, 2) - uv.reshape(-1, 2), axis=1) < 0.01
    return n.reshape(h * ss, w * ss, 2), ok.reshape(h * ss, w * ss)


def render_board_views(cam: RenderedCamera, n_views: int, rng: np.random.Generator,
                       tilt_deg: tuple[float, float] = (10.0, 45.0), ss: int = 2,
                       poses: list | None = None) -> list[np.ndarray]:
    """``n_views`` grey pictures of the 9x6 chessboard (unit squares) through ``cam``;
    each view's true (R, t) appended to ``poses`` when given (scoring only)."""
    w, h = cam.size
    n, ok = _rays(cam, ss)
    out = []
    for _ in range(n_views):
        R, t = _pose(rng, cam, tilt_deg)
        if poses is not None:
            poses.append((R, t))
        H = np.c_[R[:, 0], R[:, 1], t]          # board (x, y, 1) -> camera ray
        q = np.dstack([n, np.ones(n.shape[:2])]) @ np.linalg.inv(H).T
        bx, by = q[..., 0] / q[..., 2], q[..., 1] / q[..., 2]
        # inner corner (i, j) sits at (i, j): squares run from -1 to COLS / ROWS
        inside = (bx > -1) & (bx < BOARD_COLS) & (by > -1) & (by < BOARD_ROWS) & (q[..., 2] > 0)
        dark = inside & ((np.floor(bx) + np.floor(by)) % 2 == 0)
        lo, hi = rng.uniform(25, 60), rng.uniform(170, 230)
        bg = rng.uniform(80, 140)
        margin = (bx > -2) & (bx < BOARD_COLS + 1) & (by > -2) & (by < BOARD_ROWS + 1) & (q[..., 2] > 0)
        img = np.where(dark, lo, np.where(margin, hi, bg))
        img = np.where(ok, img, bg)
        img = img.reshape(h, ss, w, ss).mean(axis=(1, 3))
        img = cv2.GaussianBlur(img, (0, 0), rng.uniform(0.5, 1.1))
        img = img + rng.normal(0, rng.uniform(1.0, 3.0), img.shape)
        out.append(np.clip(np.round(img), 0, 255).astype(np.uint8))
    return out
