"""The renderer's camera: exactly OpenCV's pinhole + radial/tangential model.

Rendering is done by casting one ray per (sub)pixel. The rays come from
``cv2.undistortPointsIter`` finished with Newton steps on the forward model, so a world
point seen at a subpixel re-projects there with ``cv2.projectPoints`` to ~1e-4 px (float32
storage): the images and the truth use one and the same camera model.

>>> import numpy as np
>>> cam = overhead_camera(np.random.default_rng(0), 640, 360)
>>> u, v = cam.project([[15.0, 11.0, 0.0]])[0]
>>> bool(0 < u < 640 and 0 < v < 360)
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Sequence

import cv2
import numpy as np


@dataclass(frozen=True)
class Camera:
    """Intrinsics ``K`` (3x3), ``dist`` (k1, k2, p1, p2, k3), pose ``rvec``/``tvec``
    (world inches -> camera, OpenCV convention) and the image size in pixels."""

    K: np.ndarray
    dist: np.ndarray
    rvec: np.ndarray
    tvec: np.ndarray
    width: int
    height: int
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def R(self) -> np.ndarray:
        return cv2.Rodrigues(np.asarray(self.rvec, float))[0]

    @property
    def position(self) -> np.ndarray:
        """Camera centre in world inches."""
        return (-self.R.T @ np.asarray(self.tvec, float).reshape(3)).astype(float)

    def project(self, pts: Sequence[Sequence[float]] | np.ndarray) -> np.ndarray:
        """World points (N,3) in inches -> pixels (N,2), exactly ``cv2.projectPoints``."""
        p = np.asarray(pts, float).reshape(-1, 1, 3)
        out, _ = cv2.projectPoints(p, np.asarray(self.rvec, float), np.asarray(self.tvec, float),
                                   np.asarray(self.K, float), np.asarray(self.dist, float))
        return out.reshape(-1, 2)

    def with_pose(self, rvec: np.ndarray, tvec: np.ndarray) -> "Camera":
        return replace(self, rvec=np.asarray(rvec, float).reshape(3), tvec=np.asarray(tvec, float).reshape(3))

    def to_truth(self) -> dict:
        """The camera as the eval truth writes it."""
        C = self.position
        r = lambda a: [round(float(x), 8) for x in np.ravel(a)]
        d = {"K": [r(row) for row in np.asarray(self.K)], "dist": r(self.dist), "rvec": r(self.rvec),
             "tvec": r(self.tvec), "position_in": r(C),
             "height_in": round(float(C[2]), 6), "tilt_deg": round(self.tilt_deg(), 4)}
        d.update(self.extra)
        return d

    def tilt_deg(self) -> float:
        """Angle between the optical axis and straight down."""
        axis = self.R[2]  # optical axis in world coordinates
        return math.degrees(math.acos(max(-1.0, min(1.0, -axis[2]))))

    def ray_dirs_world(self, supersample: int = 2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per-subpixel world ray directions (dx, dy, dz), float32 arrays of shape
        (height*s, width*s). Scaled so the camera-frame z component is 1, so the ray
        parameter t is the depth in inches."""
        xn, yn = _normalised_grid(self.width, self.height, supersample,
                                  tuple(np.asarray(self.K, float).ravel()), tuple(np.asarray(self.dist, float).ravel()))
        Rt = self.R.T.astype(np.float32)  # camera -> world
        dx = Rt[0, 0] * xn + Rt[0, 1] * yn + Rt[0, 2]
        dy = Rt[1, 0] * xn + Rt[1, 1] * yn + Rt[1, 2]
        dz = Rt[2, 0] * xn + Rt[2, 1] * yn + Rt[2, 2]
        return dx, dy, dz


@lru_cache(maxsize=2)
def _normalised_grid(width: int, height: int, s: int, Kflat: tuple, dist: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Undistorted normalised coordinates of every subpixel centre. Subpixel i of an
    s-times supersampled row sits at image x = (i + 0.5)/s - 0.5, so averaging each
    s x s block gives the pixel centred on the integer coordinate (OpenCV's convention).
    Cached: it only depends on the intrinsics (a camera bump changes only the pose)."""
    u = (np.arange(width * s) + 0.5) / s - 0.5
    v = (np.arange(height * s) + 0.5) / s - 0.5
    uu, vv = np.meshgrid(u, v)
    pts = np.stack([uu, vv], -1).reshape(-1, 1, 2)
    crit = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 50, 1e-12)
    und = cv2.undistortPointsIter(pts, np.array(Kflat).reshape(3, 3), np.array(dist), None, None, crit)
    x, y = und[:, 0, 0].astype(float), und[:, 0, 1].astype(float)
    # OpenCV's fixed-point iteration converges slowly far from the centre of a wide lens:
    # finish with Newton steps on the exact forward model (what cv2.projectPoints does).
    K = np.array(Kflat).reshape(3, 3)
    k1, k2, p1, p2, k3 = (list(dist) + [0.0] * 5)[:5]
    xd = (pts[:, 0, 0] - K[0, 2] - K[0, 1] * (pts[:, 0, 1] - K[1, 2]) / K[1, 1]) / K[0, 0]
    yd = (pts[:, 0, 1] - K[1, 2]) / K[1, 1]
    for _ in range(4):
        r2 = x * x + y * y
        rad = 1 + r2 * (k1 + r2 * (k2 + r2 * k3))
        g = k1 + r2 * (2 * k2 + 3 * k3 * r2)
        ex = x * rad + 2 * p1 * x * y + p2 * (r2 + 2 * x * x) - xd
        ey = y * rad + p1 * (r2 + 2 * y * y) + 2 * p2 * x * y - yd
        j11 = rad + 2 * g * x * x + 2 * p1 * y + 6 * p2 * x
        j12 = 2 * g * x * y + 2 * p1 * x + 2 * p2 * y
        j22 = rad + 2 * g * y * y + 6 * p1 * y + 2 * p2 * x
        det = j11 * j22 - j12 * j12
        x, y = x - (j22 * ex - j12 * ey) / det, y - (j11 * ey - j12 * ex) / det
    shape = (height * s, width * s)
    return x.reshape(shape).astype(np.float32), y.reshape(shape).astype(np.float32)


def look_from(position: Sequence[float], axis: Sequence[float], x_hint: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """rvec, tvec for a camera at ``position`` looking along ``axis`` whose image x axis
    is as close as possible to ``x_hint`` (all world vectors)."""
    z = np.asarray(axis, float)
    z /= np.linalg.norm(z)
    x = np.asarray(x_hint, float) - np.dot(x_hint, z) * z
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    R = np.stack([x, y, z])  # rows: camera axes in world coordinates -> world->camera
    rvec = cv2.Rodrigues(R)[0].ravel()
    tvec = -R @ np.asarray(position, float)
    return rvec, tvec


def overhead_camera(rng: np.random.Generator, width: int = 1280, height: int = 720,
                    play_area_in: tuple[float, float] = (30.0, 22.0), height_in: float | None = None,
                    tilt_deg: float | None = None, k1: float | None = None, margin_in: float = 3.2) -> Camera:
    """A plausible overhead webcam: 24-48 in up, tilted up to 20 deg, mild barrel
    distortion, focal length chosen so the play area and its corner markers (which sit
    up to ``margin_in`` outside it) fill the frame with a small border."""
    W, D = play_area_in
    h = float(rng.uniform(30, 40) if height_in is None else height_in)
    tilt = float(rng.uniform(3, 15) if tilt_deg is None else tilt_deg)
    az = rng.uniform(0, 2 * math.pi)
    yaw = math.radians(rng.uniform(-6, 6))
    target = np.array([W / 2 + rng.uniform(-1, 1), D / 2 + rng.uniform(-1, 1), 0.0])
    # Tilted: the camera sits off to one side and looks back at the table centre.
    off = h * math.tan(math.radians(tilt))
    pos = target + np.array([off * math.cos(az), off * math.sin(az), h])
    rvec, tvec = look_from(pos, target - pos, [math.cos(yaw), math.sin(yaw), 0.0])
    k1 = float(rng.uniform(-0.16, -0.06) if k1 is None else k1)
    dist = np.array([k1, float(rng.uniform(0.0, 0.04)), float(rng.normal(0, 4e-4)), float(rng.normal(0, 4e-4)), 0.0])
    cx = width / 2 + rng.uniform(-0.01, 0.01) * width
    cy = height / 2 + rng.uniform(-0.01, 0.01) * height
    # Focal length: largest f that keeps every marker corner (+ a border) inside, found on
    # the undistorted projection and then checked with distortion (barrel only pulls in).
    R = cv2.Rodrigues(rvec)[0]
    m = margin_in
    corners = np.array([[x, y, 0.0] for x in (-m, W + m) for y in (-m, D + m)])
    pc = (R @ corners.T).T + tvec
    xn, yn = pc[:, 0] / pc[:, 2], pc[:, 1] / pc[:, 2]
    border = 0.03
    f = min(np.min(np.where(xn > 0, (width * (1 - border) - cx) / np.maximum(xn, 1e-9), (cx - width * border) / np.maximum(-xn, 1e-9))),
            np.min(np.where(yn > 0, (height * (1 - border) - cy) / np.maximum(yn, 1e-9), (cy - height * border) / np.maximum(-yn, 1e-9))))
    K = np.array([[f, 0, cx], [0, f * (1 + rng.uniform(-0.002, 0.002)), cy], [0, 0, 1.0]])
    # Keep the whole image well inside the range where the radial polynomial still grows
    # (past its peak it folds back and nothing can be undistorted): a very wide view gets
    # a milder k1, as a real wide lens would be corrected toward rectilinear.
    rd_max = math.hypot(max(cx, width - cx), max(cy, height - cy)) / f
    for _ in range(60):
        k1, k2 = dist[0], dist[1]
        r = np.linspace(1e-3, 4.0, 4000)
        rd = r * (1 + k1 * r ** 2 + k2 * r ** 4)
        slope = np.gradient(rd, r)
        bad = np.nonzero(slope < 0.35)[0]
        if not len(bad) or rd[bad[0]] > 1.05 * rd_max:
            break
        dist[0] *= 0.85
        dist[1] *= 0.85
    cam = Camera(K, dist, rvec, tvec, width, height)
    p = cam.project(corners)
    assert np.all((p > 0) & (p < [width, height])), "table corners out of view"
    return cam


def bumped(cam: Camera, rng: np.random.Generator, shift_in: float = 1.0, tilt_deg: float = 2.0) -> Camera:
    """The same camera after a knock: moved ``shift_in`` sideways and turned
    ``tilt_deg`` about a random horizontal axis (intrinsics unchanged)."""
    a = rng.uniform(0, 2 * math.pi)
    C = cam.position + shift_in * np.array([math.cos(a), math.sin(a), 0.0])
    b = rng.uniform(0, 2 * math.pi)
    dR = cv2.Rodrigues(math.radians(tilt_deg) * np.array([math.cos(b), math.sin(b), 0.0]))[0]
    R = cam.R @ dR.T  # rotate the camera's frame in the world
    rvec = cv2.Rodrigues(R)[0].ravel()
    return cam.with_pose(rvec, -R @ C)
