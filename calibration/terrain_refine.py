"""Joint refinement of the table pose with terrain tags on flat tops at known heights.

Unknowns: the pose (6) and, per tag, its x, y and rotation theta on the table (the tag's
top edge faces the piece's +y; corners in the tag frame (-s/2, s/2), (s/2, s/2),
(s/2, -s/2), (-s/2, -s/2), at z = height). The tags' parallax against the floor markers
adds information about the camera's height; the tag poses come out as a by-product.
"""

from __future__ import annotations

import cv2
import numpy as np
from scipy.optimize import least_squares

from .camera import CameraModel, TablePose

__all__ = ["refine_with_terrain", "tag_corners", "tag_pose_from_corners"]


def tag_corners(x: float, y: float, theta: float, size: float, z: float) -> np.ndarray:
    h = size / 2
    loc = np.array([(-h, h), (h, h), (h, -h), (-h, -h)])
    c, s = np.cos(theta), np.sin(theta)
    R = np.array([[c, -s], [s, c]])
    return np.c_[loc @ R.T + [x, y], np.full(4, z)]


def tag_pose_from_corners(world_xy: np.ndarray) -> tuple[float, float, float]:
    """(4,2) world corners (TL, TR, BR, BL) -> x, y, theta (tag +x = TL->TR)."""
    ctr = world_xy.mean(0)
    ex = (world_xy[1] - world_xy[0]) + (world_xy[2] - world_xy[3])
    return float(ctr[0]), float(ctr[1]), float(np.arctan2(ex[1], ex[0]))


def refine_with_terrain(detections, intr, obj, img, rvec, tvec, terrain, max_px: float = 2.0):
    """Returns (rvec, tvec, {tag_id: (x, y, theta, z)}, pose covariance 6x6, sigma_px) or None."""
    specs = {t.tag_id: t for t in terrain}
    cam = CameraModel(intr, TablePose(rvec, tvec, 0, (), ()))
    tags = []
    for tid, c in detections.as_dict().items():
        if tid not in specs:
            continue
        sp = specs[tid]
        xy = cam.unproject(c.astype(np.float64), sp.height_in)
        x, y, th = tag_pose_from_corners(xy)
        pred = cam.project(tag_corners(x, y, th, sp.tag_size_in, sp.height_in))
        if np.sqrt(((pred - c) ** 2).sum(1)).max() > max_px:
            continue  # not a flat tag at that height (moved, tilted, misread)
        tags.append((tid, sp, c.astype(np.float64), (x, y, th)))
    if not tags:
        return None
    obj = obj.reshape(-1, 3)
    img = img.reshape(-1, 2)

    def residual(p):
        r, t = p[:3], p[3:6]
        P = [obj] + [tag_corners(*p[6 + 3 * k: 9 + 3 * k], sp.tag_size_in, sp.height_in) for k, (_, sp, _, _) in enumerate(tags)]
        uv, _ = cv2.projectPoints(np.concatenate(P), r, t, intr.K, intr.dist)
        return (uv.reshape(-1, 2) - np.concatenate([img] + [c for _, _, c, _ in tags])).ravel()

    p0 = np.r_[rvec, tvec, np.concatenate([g for *_, g in tags])]
    sol = least_squares(residual, p0, method="lm", x_scale="jac")
    res = sol.fun
    J = sol.jac
    n = res.size
    s2 = max(float(res @ res / max(n - len(p0), 1)), 0.05 ** 2)
    cov = s2 * np.linalg.inv(J.T @ J)[:6, :6]
    out = {tid: (float(sol.x[6 + 3 * k]), float(sol.x[7 + 3 * k]), float(sol.x[8 + 3 * k]), sp.height_in)
           for k, (tid, sp, _, _) in enumerate(tags)}
    return sol.x[:3], sol.x[3:6], out, cov, float(np.sqrt(s2))
