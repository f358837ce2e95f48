"""The lens's distortion from straight edges in a picture of the table ("plumb lines").

In: a grey picture from the calibrated camera (the empty table) and the intrinsics
from the board views. Out: the long straight edges it shows, each as sub-pixel edge
points (``find_straight_edges``), and intrinsics refined so that those edges come out
straight again and the board views still fit (``refine_with_straight_edges``).

Why: a board a few feet under a wide lens covers a hundredth of the picture, so the
views say little about the distortion between them, and a table is measured
everywhere. On 720p Epic tables (a 6 ft table, 105 degree lens) the board-only
calibration put the floor 0.10-0.17 in off; the true lens with the same table markers,
0.01 in. The table's and the mat's edges run the whole picture and are straight in the
world, so whatever bends them is the lens (any straight edge serves: its plane and place
are not needed). Edges that are not straight in the world (a wavy cloth, wood grain that
happens to line up) fit worse than the rest and are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
from scipy.optimize import least_squares

from .camera import Intrinsics

__all__ = ["find_straight_edges", "refine_with_straight_edges", "straightness_px", "EdgeFit"]

MIN_EDGE_FRACTION = 0.15   # an edge spans at least this share of the picture's long side
SEGMENT_FRACTION = 0.02    # LSD segments shorter than this share are not looked at
SAMPLE_STEP_PX = 3.0       # edge points this far apart along an edge
PROFILE_HALF_PX = 4.0      # the edge is looked for this far either side of the line
CENTROID_HALF = 4          # profile samples (0.5 px) either side of the steepest step in its centroid
EDGE_SCALE_PX = 0.5        # the robust loss's scale: residuals beyond it count less than squared
# An edge straight in the world and measured cleanly is straight to 0.2-0.4 px RMS through
# the true lens (rendered tables); ragged mat edges measure 0.6-1.7 px and would bend the lens.
MAX_EDGE_RMS_PX = 0.5
# The joint fit weighs each view's residuals by VIEW_SIGMA_PX over the view's own RMS
# error (within MIN_VIEW_SIGMA_PX and VIEW_SIGMA_PX): px of a well-measured view count for
# more; a view the fit bends (edges that are not straight pulling the lens) never for less.
VIEW_SIGMA_PX = 0.2
MIN_VIEW_SIGMA_PX = 0.05
# Nine lens parameters from two edges (perhaps parallel) are weakly held; a table shows
# its four sides (and the mat's): fewer than four edges leave the boards' calibration.
MIN_EDGES = 4
BORDER_MARGIN_PX = 4.0     # an edge is looked for at least this far (and its profile's reach) inside the picture
# A group of collinear LSD segments may hold more than one physical line: a table
# marker's paper edge or a terrain piece's shadow continuing the mat's edge a pixel or
# two aside. The points of the group off the smooth curve most of them follow are
# another line, and are left out (``_one_line``).
TRIM_BAND_PX = 0.4
TRIM_SIGMAS = 3.0
TRIM_MIN_PX = 0.3
_UNDISTORT = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 50, 1e-12)


def undistort_px(uv: np.ndarray, K: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """(N,2) picture pixels -> (N,2) pixels of the same camera without distortion."""
    return cv2.undistortPointsIter(np.asarray(uv, np.float64).reshape(-1, 1, 2), K, dist, None, K,
                                   _UNDISTORT).reshape(-1, 2)


def distort_px(uv: np.ndarray, K: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """Inverse of undistort_px."""
    p = np.asarray(uv, np.float64).reshape(-1, 2)
    n = np.c_[(p - K[:2, 2]) / [K[0, 0], K[1, 1]], np.ones(len(p))]
    out, _ = cv2.projectPoints(n, np.zeros(3), np.zeros(3), K, dist)
    return out.reshape(-1, 2)


def _collinear_groups(segs: np.ndarray, angle_deg: float = 1.5, offset_px: float = 3.0) -> list[list[int]]:
    """LSD splits one long edge into pieces: group the segments that lie on one line,
    longest first."""
    d = segs[:, 2:4] - segs[:, :2]
    length = np.hypot(d[:, 0], d[:, 1])
    u = d / length[:, None]
    free = np.ones(len(segs), bool)
    groups = []
    for i in np.argsort(-length):
        if not free[i]:
            continue
        n = np.array([-u[i, 1], u[i, 0]])
        parallel = np.abs(u[i, 0] * u[:, 1] - u[i, 1] * u[:, 0]) <= np.sin(np.deg2rad(angle_deg))
        near = np.maximum(np.abs((segs[:, :2] - segs[i, :2]) @ n), np.abs((segs[:, 2:4] - segs[i, :2]) @ n)) <= offset_px
        g = np.flatnonzero(free & parallel & near)
        free[g] = False
        groups.append(list(g))
    return groups


def find_straight_edges(gray: np.ndarray, intr: Intrinsics) -> list[np.ndarray]:
    """Long straight edges of ``gray``: a list of (M,2) sub-pixel edge points, in the
    picture's own (distorted) pixels.

    Segments are found (LSD) in the picture undistorted with ``intr``, where a straight
    edge is nearly straight; each edge is then measured in the picture itself, at the
    steepest grey-level step across it, so the undistortion's resampling and its errors
    do not enter the points.

    >>> import numpy as np
    >>> from calibration.camera import Intrinsics
    >>> img = np.full((240, 320), 60, np.uint8); img[:, 150:] = 200
    >>> K = np.array([[300., 0, 159.5], [0, 300, 119.5], [0, 0, 1]])
    >>> edges = find_straight_edges(img, Intrinsics(K, np.zeros(5), (320, 240), 0.1))
    >>> len(edges), bool(abs(np.median(edges[0][:, 0]) - 149.5) < 0.1)
    (1, True)
    """
    h, w = gray.shape[:2]
    K, dist = intr.K, intr.dist
    und = cv2.undistort(gray, K, dist, None, K)
    found = cv2.createLineSegmentDetector(cv2.LSD_REFINE_STD).detect(und)[0]
    if found is None:
        return []
    segs = found.reshape(-1, 4).astype(np.float64)
    d = segs[:, 2:4] - segs[:, :2]
    segs = segs[np.hypot(d[:, 0], d[:, 1]) >= SEGMENT_FRACTION * max(w, h)]
    # Not the picture's own border: undistorted, it is a long, nearly straight step to
    # the black beyond, and it bends with the lens, not with the world. Segments are kept
    # only well inside the picture (their ends and middle), and so are the edge points.
    margin = BORDER_MARGIN_PX + PROFILE_HALF_PX
    seen = cv2.undistort(np.full((h, w), 255, np.uint8), K, dist, None, K)
    inner = cv2.erode((seen == 255).astype(np.uint8), np.ones((3, 3), np.uint8), iterations=int(margin)) > 0
    def _inside(pts: np.ndarray) -> np.ndarray:
        c = np.clip(np.rint(pts).astype(int), 0, [w - 1, h - 1])
        return inner[c[:, 1], c[:, 0]]
    segs = segs[_inside(segs[:, :2]) & _inside(segs[:, 2:4]) & _inside((segs[:, :2] + segs[:, 2:4]) / 2)]
    if len(segs) == 0:
        return []
    grey = gray.astype(np.float32)
    ts = np.arange(-PROFILE_HALF_PX, PROFILE_HALF_PX + 1e-9, 0.5)
    edges = []
    for g in _collinear_groups(segs):
        ends = segs[g].reshape(-1, 2)
        lengths = np.hypot(*(segs[g, 2:4] - segs[g, :2]).T)
        if lengths.sum() < MIN_EDGE_FRACTION * max(w, h):
            continue
        m = ends.mean(axis=0)
        _, _, vt = np.linalg.svd(ends - m)
        u, n = vt[0], vt[1]
        along = []
        for j in g:  # only where a segment saw the edge: gaps may be a hand or a token
            a, b = sorted(((segs[j, :2] - m) @ u, (segs[j, 2:4] - m) @ u))
            along.extend(np.arange(a + 2, b - 2, SAMPLE_STEP_PX))
        if len(along) < 20:
            continue
        on = m + np.outer(along, u)
        q = distort_px(on, K, dist)
        nq = distort_px(on + n, K, dist) - q
        nq /= np.linalg.norm(nq, axis=1, keepdims=True)
        X = (q[:, None, 0] + ts[None] * nq[:, None, 0]).astype(np.float32)
        Y = (q[:, None, 1] + ts[None] * nq[:, None, 1]).astype(np.float32)
        step = np.abs(np.diff(cv2.remap(grey, X, Y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE), axis=1))
        k = np.argmax(step, axis=1)
        r = np.arange(len(k))
        peak = step[r, k]
        # the edge: the centroid of the grey-level steps round the steepest one (a blurred
        # step's derivative is a bell; its centroid does not lean with the sampling phase
        # as a parabola through three samples does)
        win = np.arange(-CENTROID_HALF, CENTROID_HALF + 1)
        idx = k[:, None] + win[None]
        inside = (idx >= 0) & (idx < step.shape[1])
        g = np.where(inside, step[r[:, None], np.clip(idx, 0, step.shape[1] - 1)], 0.0)
        g = np.clip(g - 0.1 * peak[:, None], 0, None)
        t = (g * (ts[np.clip(idx, 0, len(ts) - 2)] + 0.25)).sum(1) / np.maximum(g.sum(1), 1e-9)
        # a clear step (not texture), its whole bell inside the profile
        keep = (k >= CENTROID_HALF) & (k < step.shape[1] - CENTROID_HALF) & (peak > 0.5 * np.median(peak))
        keep &= (q[:, 0] >= margin) & (q[:, 0] <= w - 1 - margin) & (q[:, 1] >= margin) & (q[:, 1] <= h - 1 - margin)
        pts = q[keep] + t[keep, None] * nq[keep]
        if len(pts) >= 20:
            pts = pts[_one_line(pts, K, dist)]
        if len(pts) >= 20:
            edges.append(pts)
    return edges


def _one_line(pts: np.ndarray, K: np.ndarray, dist: np.ndarray, tries: int = 200) -> np.ndarray:
    """Mask of an edge's points that lie on one smooth line. Undistorted with the lens as
    known so far, the points are held against a quadratic across the edge (room for the
    lens's residual bend): the one most points lie within TRIM_BAND_PX of, of ``tries``
    drawn through three points each (a least-squares curve would bend toward the other
    line and keep it), then fitted to those points and trimmed at TRIM_SIGMAS robust
    sigmas (at least TRIM_MIN_PX). A marker's paper edge carrying the mat's edge on
    1.5 px aside is such another line: kept, it bent the lens by a pixel.

    >>> K = np.array([[500., 0, 320], [0, 500, 240], [0, 0, 1]])
    >>> pts = np.c_[np.arange(100.0, 400, 3), 200 + np.random.default_rng(1).normal(0, 0.15, 100)]
    >>> pts[:15, 1] += 2.0  # another line's points, 2 px aside
    >>> keep = _one_line(pts, K, np.zeros(5))
    >>> int(keep[:15].sum()), bool(keep[15:].mean() > 0.95)  # the other line out, the edge kept
    (0, True)
    """
    u = undistort_px(pts, K, dist)
    m = u.mean(axis=0)
    _, _, vt = np.linalg.svd(u - m, full_matrices=False)
    along, across = (u - m) @ vt[0], (u - m) @ vt[1]
    x = along / max(float(np.abs(along).max()), 1.0)
    V = np.c_[x * x, x, np.ones_like(x)]
    rng = np.random.default_rng(0)  # the same points give the same edge
    best, keep = -1, np.ones(len(x), bool)
    for _ in range(tries):
        i = rng.choice(len(x), 3, replace=False)
        try:
            c = np.linalg.solve(V[i], across[i])
        except np.linalg.LinAlgError:
            continue
        near = np.abs(V @ c - across) <= TRIM_BAND_PX
        if near.sum() > best:
            best, keep = int(near.sum()), near
    for _ in range(3):
        r = across - V @ np.linalg.lstsq(V[keep], across[keep], rcond=None)[0]
        sigma = 1.4826 * float(np.median(np.abs(r[keep])))
        now = np.abs(r) <= max(TRIM_SIGMAS * sigma, TRIM_MIN_PX)
        if (now == keep).all():
            break
        keep = now
    return keep


@dataclass
class EdgeFit:
    """What ``refine_with_straight_edges`` did: the intrinsics, the edges kept, each
    kept edge's RMS straightness (px), and the board views' RMS error (px)."""

    intrinsics: Intrinsics
    edges: list[np.ndarray]
    edge_rms_px: list[float]
    views_rms_px: float


def _plumb(pts: np.ndarray, K: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """Signed distances (px) of an edge's undistorted points from their own best line."""
    p = undistort_px(pts, K, dist)
    c = p - p.mean(axis=0)
    _, _, vt = np.linalg.svd(c, full_matrices=False)
    return c @ vt[1]


def _edge_rms(pts: np.ndarray, K: np.ndarray, dist: np.ndarray) -> float:
    return float(np.sqrt(np.mean(_plumb(pts, K, dist) ** 2)))


def straightness_px(edges: list[np.ndarray], intr: Intrinsics) -> float:
    """Median over ``edges`` of each one's RMS distance (px) from its own best line once
    undistorted with ``intr``: how bent the lens model leaves them."""
    if not edges:
        return 0.0
    return float(np.median([_edge_rms(e, intr.K, intr.dist) for e in edges]))


def refine_with_straight_edges(intr: Intrinsics, views: list[tuple[np.ndarray, np.ndarray]],
                               poses: list[tuple[np.ndarray, np.ndarray]], edges: list[np.ndarray],
                               *, max_edge_rms_px: float = MAX_EDGE_RMS_PX) -> EdgeFit | None:
    """Intrinsics that keep ``views`` ((obj (N,3), img (N,2)) of known planar geometry, at
    ``poses`` (rvec, tvec) to start from) fitted and make ``edges`` straight: one robust
    least-squares over the focal lengths, principal point, distortion and every view's
    pose. An edge that stays bent after the fit (RMS over ``max_edge_rms_px``) is not
    straight in the world, or not measured well enough to teach the lens anything (a
    ragged mat edge, a soft shadow): it is dropped and the fit made again. None when
    fewer than MIN_EDGES edges are left: the board calibration stands. The intrinsics'
    uncertainty comes from the joint fit; the focal lengths' is never made smaller than the board views alone gave (the table's pose absorbs the
    focal length on the floor, the lines hardly pin it down)."""
    nd = len(intr.dist)
    views = [(np.asarray(o, np.float64).reshape(-1, 3), np.asarray(i, np.float64).reshape(-1, 2)) for o, i in views]
    edges = [np.asarray(e, np.float64).reshape(-1, 2) for e in edges]
    x0 = np.r_[intr.K[0, 0], intr.K[1, 1], intr.K[0, 2], intr.K[1, 2], intr.dist,
               np.concatenate([np.r_[np.ravel(r), np.ravel(t)] for r, t in poses])]
    ni = 4 + nd

    def unpack(x):
        K = np.array([[x[0], 0, x[2]], [0, x[1], x[3]], [0, 0, 1]])
        return K, x[4:ni], x[ni:].reshape(-1, 6)

    nv = sum(2 * len(i) for _, i in views)
    weight = np.ones(len(views))  # each view's residuals x VIEW_SIGMA_PX / its own noise

    def view_rms(x) -> np.ndarray:
        K, dist, P = unpack(x)
        return np.array([np.sqrt(np.mean((cv2.projectPoints(o, p[:3], p[3:], K, dist)[0].reshape(-1, 2) - i) ** 2))
                         for (o, i), p in zip(views, P)])

    def fit(use: list[np.ndarray], x_start: np.ndarray):
        def residuals(x):
            K, dist, P = unpack(x)
            out = [w * (cv2.projectPoints(o, p[:3], p[3:], K, dist)[0].reshape(-1, 2) - i).ravel()
                   for (o, i), p, w in zip(views, P, weight)]
            out += [_plumb(e, K, dist) for e in use]
            return np.concatenate(out)

        def jacobian(x):
            # views: OpenCV's own derivatives (rvec, tvec, fx, fy, cx, cy, dist); each view's
            # pose moves only its own rows. Edges: differences over the intrinsics alone.
            K, dist, P = unpack(x)
            J = np.zeros((nv + sum(len(e) for e in use), len(x)))
            r0 = 0
            for k, ((o, _), p) in enumerate(zip(views, P)):
                _, d = cv2.projectPoints(o, p[:3], p[3:], K, dist)
                n = 2 * len(o)
                J[r0:r0 + n, ni + 6 * k:ni + 6 * k + 6] = weight[k] * d[:, :6]
                J[r0:r0 + n, :ni] = weight[k] * d[:, 6:6 + ni]
                r0 += n
            base = np.concatenate([_plumb(e, K, dist) for e in use])
            for j in range(ni):
                h = 1e-6 * max(abs(x[j]), 1e-2)
                y = x.copy()
                y[j] += h
                Kh, dh, _ = unpack(y)
                J[nv:, j] = (np.concatenate([_plumb(e, Kh, dh) for e in use]) - base) / h
            return J

        sol = least_squares(residuals, x_start, jac=jacobian, method="trf", loss="soft_l1",
                            f_scale=EDGE_SCALE_PX, x_scale="jac", max_nfev=50)
        return sol

    use = list(edges)
    if len(use) < MIN_EDGES:
        return None
    sol = fit(use, x0)
    for _ in range(2):
        # Each view counts by how finely its points are measured, read off its own
        # residuals at the joint fit (where the lens no longer bends them): a board's
        # printed corners to 0.1 px, the table markers' tag corners to 0.3-0.5 px. Counted
        # alike, the markers pulled a lens that big boards knew (the bundled Epic clip's
        # floor 0.003 -> 0.005 in), and the board views of a weak calibration swamped them.
        weight[:] = VIEW_SIGMA_PX / np.clip(view_rms(sol.x), MIN_VIEW_SIGMA_PX, VIEW_SIGMA_PX)
        sol = fit(use, sol.x)
    for _ in range(3):
        K, dist, _ = unpack(sol.x)
        rms = np.array([_edge_rms(e, K, dist) for e in use])
        bad = rms > max_edge_rms_px
        if not bad.any():
            break
        use = [e for e, b in zip(use, bad) if not b]
        if len(use) < MIN_EDGES:
            return None
        sol = fit(use, sol.x)
    else:
        return None
    K, dist, _ = unpack(sol.x)
    per_view = view_rms(sol.x)
    views_rms = float(np.sqrt(np.sum(per_view ** 2 * [len(i) for _, i in views]) / sum(len(i) for _, i in views))) \
        if views else intr.rms_px
    # covariance of the intrinsics from the joint fit (Gauss-Newton, residual variance)
    J = np.asarray(sol.jac)
    s2 = float(np.sum(sol.fun ** 2) / max(len(sol.fun) - len(sol.x), 1))
    try:
        cov = np.linalg.inv(J.T @ J)[:ni, :ni] * s2
    except np.linalg.LinAlgError:
        cov = None
    std = None if cov is None else np.sqrt(np.clip(np.diag(cov), 0, None))
    if cov is not None and intr.std is not None and len(intr.std) >= 2:
        k = np.ones(ni)
        for a in (0, 1):
            if std[a] > 0 and intr.std[a] > std[a]:
                k[a] = intr.std[a] / std[a]
        cov = cov * np.outer(k, k)
        std = std * k
    return EdgeFit(Intrinsics(K, dist, intr.image_size, views_rms, std, cov), use,
                   [_edge_rms(e, K, dist) for e in use], views_rms)
