"""Oval and rectangular bases in a rectified view: oriented outline kernels for candidates,
and a sub-pixel fit of centre, angle and edge offset to the rim's outer edge.

Everything works in a PlaneView's pixels (column x to the right, row y down); an angle
``theta`` is the direction of the base's long axis in those pixels (radians, measured
from +column toward +row). World angles (counter-clockwise from +x, y up) are
``-theta``. Ovals and rectangles look the same turned half a turn: angles are kept in
[0, pi).

The fit mirrors the round one (detection._fit_rims): along the outline's normals the
outer edge of the side's colour is found where the evidence falls to half its peak;
then centre, angle and a common edge offset are solved by re-weighted least squares, so
edge points off the outline (a miniature, the touching stand's rim) lose their say.
The share of the outline whose edge lies on it is the score.

>>> k = outline_kernel("rect", 12.0, 6.0, 0.3, 1.5)
>>> k.shape[0] == k.shape[1] and abs(float(k[k > 0].sum()) - 1.0) < 1e-4
True
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple, Sequence

import cv2
import numpy as np

from .vision.remap import remap_rows

SHAPE_CODES = {"round": 0, "oval": 1, "rect": 2}
SHAPE_NAMES = {v: k for k, v in SHAPE_CODES.items()}


def _signed_distance(shape: str, u: np.ndarray, v: np.ndarray, hx: float, hy: float) -> np.ndarray:
    """Approximate signed distance to the outline (negative inside), in pixels."""
    if shape == "rect":
        qx, qy = np.abs(u) - hx, np.abs(v) - hy
        outside = np.hypot(np.maximum(qx, 0), np.maximum(qy, 0))
        return np.where((qx > 0) | (qy > 0), outside, np.maximum(qx, qy))
    f = (u / hx) ** 2 + (v / hy) ** 2 - 1.0
    g = 2 * np.hypot(u / hx ** 2, v / hy ** 2) + 1e-6
    return f / g


def outline_kernel(shape: str, hx: float, hy: float, theta: float, width: float, outer_gap: float = 1.0,
                   outer_width: float = 2.0, outer_weight: float = 0.6) -> np.ndarray:
    """The ring_kernel of a turned oval or rectangle: a band of +1 total weight just
    inside the outline (the rim), and -``outer_weight`` just outside it (table)."""
    R = int(np.ceil(math.hypot(hx, hy) + outer_gap + outer_width + 1))
    yy, xx = np.mgrid[-R:R + 1, -R:R + 1].astype(np.float32)
    c, s = math.cos(theta), math.sin(theta)
    u, v = xx * c + yy * s, -xx * s + yy * c
    sd = _signed_distance(shape, u, v, hx, hy)
    inner = np.clip(1.0 - np.abs(sd + width / 2) / (width / 2 + 0.5), 0, 1)
    outer = np.clip(1.0 - np.abs(sd - outer_gap - outer_width / 2) / (outer_width / 2 + 0.5), 0, 1)
    k = inner / inner.sum() - outer_weight * outer / max(outer.sum(), 1e-6)
    return k.astype(np.float32)


def outline_samples(shape: str, hx: float, hy: float, step: float = 1.0,
                    with_parts: bool = False) -> tuple[np.ndarray, ...]:
    """Points on the outline (local pixels, u along the long axis) about ``step`` apart,
    with their outward unit normals (and, ``with_parts``, which of the four sides or
    quarter arcs each lies on: 0 +u, 1 -u, 2 +v, 3 -v). A rectangle's corners are left
    out (no normal)."""
    if shape == "rect":
        pts, nrm, part = [], [], []
        for k, (a, b, nx, ny, L) in enumerate(((1, 0, 1, 0, hy), (-1, 0, -1, 0, hy), (0, 1, 0, 1, hx), (0, -1, 0, -1, hx))):
            e = min(0.7, 0.3 * L)  # near the corners: the other sides' rims end there
            n = max(3, int(round(2 * (L - e) / step)))
            t = np.linspace(-(L - e), L - e, n)
            if a:
                pts.append(np.column_stack([np.full(n, a * hx), t]))
            else:
                pts.append(np.column_stack([t, np.full(n, b * hy)]))
            nrm.append(np.tile([nx, ny], (n, 1)))
            part.append(np.full(n, k))
        out = np.vstack(pts).astype(np.float64), np.vstack(nrm).astype(np.float64)
        return out + (np.concatenate(part),) if with_parts else out
    per = math.pi * (3 * (hx + hy) - math.sqrt((3 * hx + hy) * (hx + 3 * hy)))
    n = max(24, int(round(per / step)))
    t = np.linspace(0, 2 * math.pi, n, endpoint=False)
    p = np.column_stack([hx * np.cos(t), hy * np.sin(t)])
    g = np.column_stack([np.cos(t) / hx, np.sin(t) / hy])
    out = p, g / np.linalg.norm(g, axis=1, keepdims=True)
    if not with_parts:
        return out
    q = np.round(t / (math.pi / 2)).astype(int) % 4  # the quarter arc round +u, +v, -u, -v
    return out + (np.array([0, 2, 1, 3])[q],)


@lru_cache(maxsize=64)
def _outline(shape: str, hx: float, hy: float, step: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                                         tuple[np.ndarray, ...]]:
    """outline_samples(shape, hx, hy, step, with_parts=True), kept: a stand is followed
    every frame at the same size, and the samples cost more than the fit's arithmetic on
    them. Also each part's indices. Read-only arrays (shared between calls)."""
    p, nrm, part = outline_samples(shape, hx, hy, step, with_parts=True)
    idx = tuple(np.flatnonzero(part == k) for k in range(4))
    for a in (p, nrm, part, *idx):
        a.setflags(write=False)
    return p, nrm, part, idx


def _median_rows(a: np.ndarray) -> np.ndarray:
    """np.median(a, axis=1) of a 2-d array, by a sort (the same values; np.median's
    own bookkeeping costs more than the sort of a few dozen numbers)."""
    n = a.shape[1]
    srt = np.sort(a, axis=1)
    if n % 2:
        return srt[:, n // 2]
    return (srt[:, n // 2 - 1] + srt[:, n // 2]) / 2


def _remap(ev: np.ndarray | Sequence[np.ndarray], counts: Sequence[int] | None, X: np.ndarray,
           Y: np.ndarray) -> np.ndarray:
    """cv2.remap (bilinear, 0 outside) of the points X, Y (float32 rows, each candidate's
    rows together, candidates in order) in ``ev``; or, with ``counts``, in several maps:
    the first counts[0] candidates' points in ev[0], the next counts[1] in ev[1], ...
    (stands followed in windows of their own, fitted together). Each point is sampled
    alone, so the values are those of one remap per map."""
    if counts is None:
        return remap_rows(ev, X, Y)
    per = X.shape[0] // sum(counts)
    bounds = np.cumsum([0, *counts]) * per
    return np.concatenate([remap_rows(e, X[a:b], Y[a:b]) for e, a, b in zip(ev, bounds[:-1], bounds[1:]) if b > a])


class ShapeFit(NamedTuple):
    """One fitted outline (fit_shapes): centre and angle in view pixels, the outer edge's
    offset from the outline, the share of the outline seen as a clean edge (``score``)
    and the fit's rms residual; then per side or quarter arc (+u, -u, +v, -v) the share
    seen as an edge (``sides``) and the median and mean peak evidence in a band on the
    outline (``band``, ``band_mean``); ``cross``: the evidence along lines through the centre (a stand's
    middle holds figures, not a rim; a fit lying across two touching stands has their
    shared rims through its middle)."""
    cx: float
    cy: float
    theta: float
    offset: float
    score: float
    resid: float
    sides: tuple
    band: tuple
    band_mean: tuple
    cross: float


def _band_and_cross(ev: np.ndarray | Sequence[np.ndarray], shape: str, hx: float, hy: float, cx: np.ndarray,
                    cy: np.ndarray, th: np.ndarray, shift: np.ndarray,
                    counts: Sequence[int] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per candidate: the median and the mean over each side of the peak evidence
    within a pixel or so of the outline (moved out by ``shift``), and the larger mean
    evidence along the two lines through the centre (along each axis, stopping short
    of the rim). ``ev``, ``counts``: as _remap."""
    p, nrm, _, idx = _outline(shape, hx, hy)
    c, s = np.cos(th)[:, None], np.sin(th)[:, None]
    o = np.arange(-1.5, 0.51, 0.5, dtype=np.float32)
    P = p[None] + nrm[None] * (shift[:, None, None])
    Px = cx[:, None] + c * P[..., 0] - s * P[..., 1]
    Py = cy[:, None] + s * P[..., 0] + c * P[..., 1]
    Nx = c * nrm[:, 0] - s * nrm[:, 1]
    Ny = s * nrm[:, 0] + c * nrm[:, 1]
    X = (Px[..., None] + o * Nx[..., None]).astype(np.float32).reshape(-1, len(o))
    Y = (Py[..., None] + o * Ny[..., None]).astype(np.float32).reshape(-1, len(o))
    peak = _remap(ev, counts, X, Y).max(axis=1).reshape(len(cx), -1)
    band = np.stack([_median_rows(peak[:, i]) for i in idx], axis=1)
    # Means summed in float64: float32 sums' rounding follows how many candidates are in
    # the call (numpy reduces a batch in another order), and a stand's verdict should not
    # depend on which other stands are followed with it.
    band_mean = np.stack([peak[:, i].mean(axis=1, dtype=np.float64) for i in idx], axis=1)
    a = np.linspace(-hy + 2.5, hy - 2.5, 9) if hy > 3 else np.zeros(1)
    b = np.linspace(-hx + 2.5, hx - 2.5, 15) if hx > 3 else np.zeros(1)
    u = np.concatenate([np.zeros_like(a), b])
    v = np.concatenate([a, np.zeros_like(b)])
    X = (cx[:, None] + c * u - s * v).astype(np.float32)
    Y = (cy[:, None] + s * u + c * v).astype(np.float32)
    line = _remap(ev, counts, X, Y)
    cross = np.maximum(line[:, :len(a)].mean(axis=1, dtype=np.float64), line[:, len(a):].mean(axis=1, dtype=np.float64))
    return band, band_mean, cross


def _edges(prof: np.ndarray, s: np.ndarray, thin_steps: int,
           expect: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """Outer half-peak edge on each profile (the rule of detection._fit_rims): offset,
    usable mask, and a weight (1 for a thin band of colour, 0.25 for colour all the way
    in: a miniature's outline, not a rim); then the same for the rim's inner edge.
    Profiles are the last axis of ``prof``; each value is picked by its flat index (one
    gather, not take_along_axis: the fit calls this for every stand every frame).
    ``expect``: where along each profile the rim's band is expected (broadcast over the
    leading axes); where the highest peak lies well outside it, the band taken is the
    peak nearest it among those at least half the highest: a stand a few pixels away
    whose rim shows stronger than this one's would otherwise lend its edge to this
    stand's outline."""
    lead, m = prof.shape[:-1], prof.shape[-1]
    P = prof.reshape(-1, m)
    n = P.shape[0]
    flat = P.ravel()
    row = np.arange(0, n * m, m)
    jpk = P.argmax(axis=1)
    if expect is not None:
        # Only profiles whose highest peak lies over 1.5 px outside the expected band
        # are searched (few), which keeps this cheap. (Inside, a miniature's colour is
        # weighed down by the fit already: colour all the way in.)
        ex = np.broadcast_to(expect, lead).reshape(-1)
        out_by = s[jpk] - ex
        r = np.flatnonzero(out_by > 1.5)
        if len(r):
            Q, jr = P[r], jpk[r]
            top = Q[np.arange(len(r)), jr]
            mid = Q[:, 1:-1]
            ok = (mid >= Q[:, :-2]) & (mid >= Q[:, 2:]) & (mid >= 0.5 * top[:, None])
            far = np.where(ok, np.abs(s[None, 1:-1] - ex[r, None]), np.inf)
            j = far.argmin(axis=1)
            jpk[r] = np.where(far[np.arange(len(r)), j] < out_by[r], j + 1, jr)
    peak = flat[row + jpk]
    half = 0.5 * peak
    jj = np.arange(m)
    low = P < half[:, None]
    strong = peak > 0.10
    below = low & (jj > jpk[:, None])
    j1 = below.argmax(axis=1)
    has = below.ravel()[row + j1] & strong
    j1 *= has
    # The most evidence in the 4 steps from j1 on (past the end: 0).
    pad = np.zeros((n, m + 4), P.dtype)
    pad[:, :m] = P
    # (Four gathers of a value per profile: a max along rows of 4 costs three times more.)
    g, at = pad.ravel(), row + 4 * np.arange(n) + j1
    after = np.maximum(np.maximum(g[at], g[at + 1]), np.maximum(g[at + 2], g[at + 3]))
    use = has & (after < 0.6 * peak) & (j1 > 0)
    j0 = np.maximum(j1 - 1, 0)
    a, b, inner = flat[row + np.stack([j0, j1, np.minimum(np.maximum(j1 - thin_steps, 0), m - 1)])]
    ds = s[1] - s[0]
    frac = np.minimum(np.maximum((a - half) / np.maximum(a - b, 1e-6), 0), 1)
    off = s[j0] + frac * ds
    weight = np.where(inner < 0.5 * peak, 1.0, 0.25)
    # The rim's inner edge: the last point inside the peak below half of it. A stand
    # touching this one doubles the band outside, never inside.
    before = low & (jj < jpk[:, None])
    last = m - 1 - before[:, ::-1].argmax(axis=1)
    has_in = before.ravel()[row + last] & strong
    ja = last * has_in
    a, b = flat[row + np.stack([ja, np.minimum(ja + 1, m - 1)])]
    frac = np.minimum(np.maximum((half - a) / np.maximum(b - a, 1e-6), 0), 1)
    off_in = s[ja] + frac * ds
    use_in = has_in & use
    # The inner edge is clean wherever it is found (the figures inside are not rim
    # colour): a rim shared with a touching stand doubles the band outside, so its
    # outer edge is off and "colour all the way in" from there, but its inner edge holds.
    weight_in = np.where(use_in, 1.0, weight)
    return tuple(q.reshape(lead) for q in (off, use, weight, off_in, use_in, weight_in))


def fit_shapes(ev: np.ndarray | Sequence[np.ndarray], shape: str, hx: float, hy: float, cx: np.ndarray,
               cy: np.ndarray, theta: np.ndarray, *, px_per_in: float, bias: float, n_iter: int = 4,
               counts: Sequence[int] | None = None, iter_step: float = 2.0) -> list[ShapeFit | None]:
    """Fit each candidate's rim (centre ``cx``, ``cy``, angle ``theta``, arrays) in the
    evidence map ``ev``: a ShapeFit, or None.
    ``hx``, ``hy``: the base's half sizes in pixels; ``bias``: where the half-evidence
    edge lies outside the true outline (blur), the offset's prior.
    ``counts``: ``ev`` is a list of maps (stands' follow windows), the first counts[0]
    candidates in ev[0]'s pixels, the next counts[1] in ev[1]'s, ...: one fit for them
    all costs little more than one for a single stand's few (the fit's arithmetic is
    mostly numpy's fixed cost per call); each candidate's fit is the one it gets alone.
    ``iter_step``: the outline points' spacing (px) while iterating; the fit is scored on
    points a pixel apart."""
    cx, cy, th = (np.asarray(a, np.float64).copy() for a in (cx, cy, theta))
    N = len(cx)
    if counts is not None and (len(counts) != len(ev) or sum(counts) != N):
        raise ValueError("counts must give each map's number of candidates")
    if N == 0:
        return []
    S = px_per_in
    p, nrm, _, idx = _outline(shape, hx, hy)
    K = len(p)
    s_in = max(2.5, min(0.5 * hy, 0.25 * S))
    s = np.arange(-s_in, max(4.0, 0.35 * S), 0.5, dtype=np.float32)
    thin_steps = max(2, int(round(0.2 * S / 0.5)))
    rim_px = 1.4 / 25.4 * S  # a typical rim: 1-1.8 mm
    d0, d1 = np.full(N, bias), np.full(N, bias - rim_px)

    def sample(cx, cy, th, p, nrm):
        px, py, nx, ny = p[:, 0], p[:, 1], nrm[:, 0], nrm[:, 1]
        c, sn = np.cos(th)[:, None], np.sin(th)[:, None]
        Px = cx[:, None] + c * px - sn * py
        Py = cy[:, None] + sn * px + c * py
        Nx = c * nx - sn * ny
        Ny = sn * nx + c * ny
        X = (Px[..., None] + s * Nx[..., None]).astype(np.float32).reshape(N * len(p), -1)
        Y = (Py[..., None] + s * Ny[..., None]).astype(np.float32).reshape(N * len(p), -1)
        prof = _remap(ev, counts, X, Y)
        # The rim's band is expected just inside the outline's outer edge.
        off, use, wt, off_in, use_in, wt_in = _edges(prof.reshape(N, len(p), -1), s, thin_steps,
                                                     (d0 - 0.5 * rim_px)[:, None])
        # d(point . normal)/d(theta): how the outline moves along its normal as it turns.
        Jt = Nx * (-sn * px - c * py) + Ny * (c * px - sn * py)
        return off, use, wt, off_in, use_in, wt_in, Nx, Ny, Jt

    # The iterations sample the outline every ``iter_step`` pixels, the last look at the
    # fit every pixel (its score, sides and residuals): edge points a pixel apart lie
    # within the blur of each other, and each iteration's sampling is most of the cost
    # of following an Epic unit.
    p_it, nrm_it = _outline(shape, hx, hy, iter_step)[:2]
    K_it = len(p_it)
    lam = 0.1 * K_it  # the outer edge offset's prior counts as a tenth of the outline
    # The priors and the damping, added to every normal matrix: (M + prior) + 1e-6 I.
    prior_M = np.zeros((5, 5))
    prior_M[3, 3], prior_M[4, 4] = lam, 0.25 * lam
    prior_v = np.array([0.0, 0.0, 0.0, lam * bias, 0.25 * lam * (bias - rim_px)])
    damp = 1e-6 * np.eye(5)
    # Two observations per outline point: the rim's outer edge (offset d0 from the
    # outline) and its inner edge (offset d1); both move with centre and angle. The
    # design matrix's offset columns do not change between iterations.
    A = np.zeros((N, 2 * K_it, 5))
    A[:, :K_it, 3] = 1.0
    A[:, K_it:, 4] = 1.0

    tols = [2.5, 1.5, 1.0, 0.8, 0.8, 0.8][:n_iter]
    for tol in tols:
        off, use, wt, off_in, use_in, wt_in, Nx, Ny, Jt = sample(cx, cy, th, p_it, nrm_it)
        for j, col in enumerate((Nx, Ny, Jt)):
            A[:, :K_it, j] = col
            A[:, K_it:, j] = col
        y = np.concatenate([off, off_in], axis=1)
        base = np.concatenate([use * wt, use_in * wt_in], axis=1)
        w = base
        At = A.transpose(0, 2, 1)
        for _ in range(3):
            Aw = At * w[:, None, :]
            M = Aw @ A + prior_M + damp
            v = (Aw @ y[..., None])[..., 0] + prior_v
            sol = np.linalg.solve(M, v[..., None])[..., 0]
            res = y - (A @ sol[..., None])[..., 0]
            w = base * ((np.abs(res) < tol) + 1e-3)
        step = np.hypot(sol[:, 0], sol[:, 1])
        k = np.minimum(1.0, 3.0 / np.maximum(step, 1e-9))
        cx += sol[:, 0] * k
        cy += sol[:, 1] * k
        th += np.clip(sol[:, 2], -0.2, 0.2)
        d0, d1 = sol[:, 3], sol[:, 4]
    off, use, wt, off_in, use_in, wt_in, *_ = sample(cx, cy, th, p, nrm)
    res = off - d0[:, None]
    res_in = off_in - d1[:, None]
    inl = use & (np.abs(res) < 0.9)
    inl_in = use_in & (np.abs(res_in) < 0.9)
    seen = np.maximum(wt * inl, wt_in * inl_in)
    score = seen.sum(axis=1) / K
    # The least-seen side (quarter arc): a true base shows its rim on all four; a fit
    # that borrows a neighbour's edges or lies across two touching stands leaves one bare.
    sides = np.stack([seen[:, i].mean(axis=1) for i in idx], axis=1)
    band, band_mean, cross = _band_and_cross(ev, shape, hx, hy, cx, cy, th, d0 - bias, counts)
    # The rms residual of each fit's inliers, and the fits as tuples, all at once (a
    # few numpy calls per fit added up to some 2 ms in a full look's 30).
    n_in = inl.sum(axis=1) + inl_in.sum(axis=1)
    resid = np.sqrt((np.where(inl, res * res, 0.0).sum(axis=1) + np.where(inl_in, res_in * res_in, 0.0).sum(axis=1))
                    / np.maximum(n_in, 1))
    fitted = (inl | inl_in).sum(axis=1) >= 8
    per_fit = (q.tolist() for q in (fitted, cx, cy, th % math.pi, d0, score, resid, sides, band, band_mean, cross))
    return [ShapeFit(*vals, tuple(sd), tuple(bd), tuple(bm), cr) if ok else None
            for ok, *vals, sd, bd, bm, cr in zip(*per_fit)]


def shape_polygon(shape: str, width_in: float, depth_in: float, x: float, y: float, angle_deg: float,
                  shrink: float = 0.0):
    """A base's outline as a shapely polygon in world inches (``shrink`` inward)."""
    from shapely import affinity
    from shapely.geometry import Point, box

    hx, hy = width_in / 2 - shrink, depth_in / 2 - shrink
    if shape == "rect":
        p = box(-hx, -hy, hx, hy)
    else:
        p = affinity.scale(Point(0, 0).buffer(1.0, 24), hx, hy)
    return affinity.translate(affinity.rotate(p, angle_deg, origin=(0, 0)), x, y)


def depth_inside(x: float, y: float, shape: str, width_in: float, depth_in: float, cx: float, cy: float,
                 angle_deg: float) -> float:
    """How far the world point (x, y) lies inside a base's outline (inches; negative:
    outside). A round base has width = depth = its diameter.

    >>> round(depth_inside(0.0, 0.5, "rect", 1.6, 0.8, 0.0, 0.0, 90.0), 3)
    0.3
    >>> round(depth_inside(2.0, 0.0, "round", 1.0, 1.0, 0.0, 0.0, 0.0), 3)
    -1.5
    """
    dx, dy = x - cx, y - cy
    if shape == "round":
        return width_in / 2 - math.hypot(dx, dy)
    a = math.radians(angle_deg)
    u, v = dx * math.cos(a) + dy * math.sin(a), -dx * math.sin(a) + dy * math.cos(a)
    return -float(_signed_distance(shape, np.array(u), np.array(v), width_in / 2, depth_in / 2))
