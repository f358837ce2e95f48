"""Round rims fitted along rays: a candidate's centre, radius and how much of its rim is seen.

Rays run out from a candidate centre across a side's evidence map; on each, the rim's
outer edge is where the evidence, past its peak, falls below half of it
(``_ray_edges``). A re-weighted circle fit through those edge points gives the rim
(``_fit_rims``, many candidates at once), leaning on the radius the side's sizes lead
one to expect when only part of it is seen, and taking in a painted side wall the
camera sees (``_wall_share_of`` reads how much of it shows as rim).

In: an evidence map in a view's pixels (or its profiles along the rays), candidate
centres and radii in pixels. Out: per candidate (col, row, radius, score: the share of
the rays whose edge lies on the circle, rms residual, thin share) or None; and
``rim_fit_sigma``: the position error (inches) such a fit adds to the calibration's.
"""

from __future__ import annotations

import numpy as np

from .remap import remap_rows


def _fit_rim_at(ev: np.ndarray, cx: float, cy: float, r_from: float, r_to: float, n_rays: int = 96,
                thin_px: float | None = None):
    """Sample ``ev`` along ``n_rays`` rays from (cx, cy), radii r_from..r_to every half
    pixel, and fit a rim there: (cx, cy, radius, score, rms residual, None), or None."""
    return _fit_rims_at(ev, np.array([cx], float), np.array([cy], float), r_from, r_to, n_rays, thin_px)[0]


def _fit_rims_at(ev: np.ndarray, cx: np.ndarray, cy: np.ndarray, r_from: float, r_to: float, n_rays: int = 96,
                 thin_px: float | None = None, mat_floor: bool = False) -> list[tuple | None]:
    """_fit_rim_at for several centres at once (one remap, one _fit_rims)."""
    ang = np.linspace(0, 2 * np.pi, n_rays, endpoint=False)
    cos, sin = np.cos(ang), np.sin(ang)
    rho = np.arange(r_from, r_to, 0.5, dtype=np.float32)
    if not len(cx):
        return []
    X = (cx[:, None, None] + rho[None, None, :] * cos[None, :, None]).astype(np.float32)
    Y = (cy[:, None, None] + rho[None, None, :] * sin[None, :, None]).astype(np.float32)
    prof = remap_rows(ev, X.reshape(-1, len(rho)), Y.reshape(-1, len(rho))).reshape(len(cx), n_rays, len(rho))
    return _fit_rims(prof, rho, cos, sin, cx, cy, thin_px=thin_px, mat_floor=np.full(len(cx), mat_floor))


def _ray_edges(prof: np.ndarray, rho: np.ndarray, valid_m: np.ndarray | None = None,
               mat_floor: np.ndarray | None = None):
    """The rim's outer edge on each ray (prof[c, i, j]: candidate c, ray i, radius rho[j]):
    where the evidence, past its peak, first falls below half the peak (sub-sample), if
    the peak is real and the evidence stays low just beyond (a rim, not a blob's ragged
    edge). Returns (edge radius, usable, edge sample index, peak), each (N, n).

    ``rho`` (m,) or per candidate (N, m); ``valid_m`` (N,): each candidate's rays end
    there, the samples after it padding of no evidence (0): never an edge."""
    m = prof.shape[2]
    # Values picked by flat index (one gather each, not take_along_axis: the same
    # values, at a fraction of its bookkeeping; this runs for every group of a look).
    flat = np.ascontiguousarray(prof).reshape(-1)
    row = np.arange(0, flat.size, m).reshape(prof.shape[:2])
    jpk = prof.argmax(axis=2)
    peak = flat[row + jpk]
    half = 0.5 * peak
    below = prof < half[..., None]
    below &= np.arange(m) > jpk[..., None]
    if valid_m is not None:
        below &= np.arange(m) < np.asarray(valid_m)[:, None, None]
    j1 = below.argmax(axis=2)
    has = below.reshape(-1)[row + j1] & (peak > 0.10)
    j1 = np.where(has, j1, 0)
    # The most evidence over the four samples from the edge out (none beyond the ray's end),
    # in one gather: an index clamped to the last sample repeats one already among the
    # four, so it leaves the maximum as masking it out would.
    at = row + np.minimum(j1 + np.arange(4)[:, None, None], m - 1)
    tail_at = np.maximum(flat[at].max(axis=0), 0)
    use = has & (tail_at < 0.6 * peak) & (j1 > 0)
    r_edge = _falls_through(flat, row, rho, j1, half)
    if mat_floor is not None and np.any(mat_floor):
        r_edge = np.where(np.asarray(mat_floor, bool)[:, None] & use,
                          _edges_above_mat(prof, rho, flat, row, j1, peak, valid_m), r_edge)
    return r_edge, use, j1, peak


def _edges_above_mat(prof, rho, flat, row, j1, peak, valid_m):
    """The edge half-way between each ray's peak and the mat's evidence just beyond its
    half-peak edge (samples 2-9 past it, median; at most 0.4 of the peak)."""
    m = prof.shape[2]
    last = m - 1 if valid_m is None else np.asarray(valid_m)[:, None, None] - 1  # (past a ray's end: padding)
    idx = np.minimum(j1[..., None] + np.arange(2, 10), last)
    floor = np.median(flat[row[..., None] + idx], axis=-1)
    thr = 0.5 * (peak + np.clip(floor, 0, 0.4 * peak))
    jpk = prof.argmax(axis=2)
    below = (prof < thr[..., None]) & (np.arange(m) > jpk[..., None])
    jn = below.argmax(axis=2)
    jn = np.where(below.reshape(-1)[row + jn], jn, j1)
    return _falls_through(flat, row, rho, jn, thr)


def _falls_through(flat, row, rho, j, level):
    """The radius (sub-sample) at which each ray's evidence falls through ``level``
    between samples j - 1 and j (``flat``/``row``: the profiles flattened, each ray's
    first index; ``rho`` (m,) or per candidate (N, m))."""
    j0 = np.maximum(j - 1, 0)
    a = flat[row + j0]
    b = flat[row + j]
    frac = np.clip((a - level) / np.maximum(a - b, 1e-6), 0, 1)
    if rho.ndim == 2:
        return np.take_along_axis(rho, j0.reshape(len(rho), -1), axis=1).reshape(j0.shape) \
            + frac * (rho[:, 1] - rho[:, 0])[:, None]
    return rho[j0] + frac * (rho[1] - rho[0])


def _fit_rims(prof: np.ndarray, rho: np.ndarray, cos: np.ndarray, sin: np.ndarray, cx: np.ndarray, cy: np.ndarray,
              thin_px: float | None = None, expect_r: np.ndarray | None = None,
              expect_weight: float | np.ndarray = 0.0, expect_min_score: float | np.ndarray = 0.0,
              start_r: np.ndarray | None = None, valid_m: np.ndarray | None = None, wall: np.ndarray | None = None,
              mat_floor: np.ndarray | None = None) -> list[tuple | None]:
    """_fit_rim for many candidates at once: prof[c, i, j] is candidate c's evidence on
    ray i at radius rho[j]. Same edge rule, same re-weighted circle fit, same score;
    one pass of array arithmetic instead of a Python loop per candidate.

    ``expect_r`` ((K,) or (N, K), NaN for none): the edge radii the candidate's side's
    sizes lead one to expect. A rim seen only in part fixes its radius poorly, and a
    radius off by a pixel moves the centre toward the hidden side; so the centre of each
    fit scoring at least ``expect_min_score`` is taken from a geometric fit that counts
    the expected radius nearest the free one as ``expect_weight`` edge points: a whole
    rim still sets its own centre, a crescent borrows the radius. The radius and score
    returned stay the free fit's: they judge whether this is a rim of one of the sizes
    at all, and how much of one.

    ``start_r`` ((N,), NaN for none): the edge radius the candidate itself stands for
    (its ring's size). The re-weighted fit is also started from the edge points near that
    circle round the candidate, and of the two the fit seeing more of its rim is kept: a
    crescent of rim beside an overhanging miniature of a colour near the rim's, started
    from all its edge points, settles on a circle half rim, half miniature (a red 25 mm
    base read as a 32 mm one 0.12-0.15 in off in the eval sets).

    ``wall`` ((N, 2), view px): each candidate's painted side wall, as far and the way
    it widens the rim (TableDetector._wall_px). The centre returned is then that of the
    top: the same edge points, each taken in by the wall's component along its ray where
    it points the wall's way. Which points lie on the rim, the score and the radius stay
    the edge's as seen: the wall moves where a base is, not whether it is one (taken
    off before the fit, it let arcs of paper tokens close a white 60 mm "rim").

    ``expect_weight`` may be one per candidate (0: its centre is the free fit's), and
    ``mat_floor`` ((N,) bool) says whose edges are read above the mat's evidence
    (_ray_edges)."""
    N, n, m = prof.shape
    if N == 0:
        return []
    r_edge, use, j1, peak = _ray_edges(prof, rho, valid_m, mat_floor)
    out: list[tuple | None] = [None] * N
    live = np.flatnonzero(use.sum(axis=1) >= 12)
    if not len(live):
        return out
    px = cx[live, None] + r_edge[live] * cos[None, :]
    py = cy[live, None] + r_edge[live] * sin[None, :]
    use_l = use[live].astype(float)
    weight = np.ones_like(use_l)
    if thin_px is not None:
        # A rim is thin: a little way inside its outer edge the colour stops (base top,
        # miniature); a miniature's own outline is colour all the way in.
        step = float(rho[0, 1] - rho[0, 0]) if rho.ndim == 2 else float(rho[1] - rho[0])
        k_in = max(2, int(round(thin_px / step)))
        inner = prof.reshape(-1)[np.arange(0, N * n * m, m).reshape(N, n)[live] + np.clip(j1[live] - k_in, 0, m - 1)]
        weight = np.where(inner < 0.5 * peak[live], 1.0, 0.25)
    # (Giving solid edge points less say in where the circle lies, as in the score, fits
    # partly hidden rims better, eval floor RMS 0.0323 -> 0.0302 in, but lets a white die
    # pass for a 25 mm base: left off.)
    # Rows (x, y, 1, x^2 + y^2) of each edge point: one weighted product gives the
    # normal equations of the circle fit. F and its transpose are both laid out
    # contiguously once: weighting a contiguous F^T is cheaper than a strided view each
    # step, and the product's sums stay exactly the same (in view pixels the fit's
    # radius comes from a difference of large numbers: a change in rounding moves a
    # poorly seen rim's circle by up to 1e-5 px, so the arithmetic is kept as it was).
    Ft = np.stack([px, py, np.ones_like(px), px * px + py * py], axis=1)
    F = np.ascontiguousarray(Ft.transpose(0, 2, 1))
    eye = 1e-9 * np.eye(3)[None]

    def irls(w, k=slice(None)):
        Ft_, F_, px_, py_, u_ = Ft[k], F[k], px[k], py[k], use_l[k]
        last = None
        for it in range(6):
            # Kasa circle fit, re-weighted: edge points off the circle (a miniature's
            # outline, another base's rim) lose their say.
            xc, yc, R = _kasa(Ft_, F_, w, eye)
            res = np.hypot(px_ - xc[:, None], py_ - yc[:, None]) - R[:, None]
            inl = np.abs(res) < 0.9
            # The weights follow from the inliers alone: once no candidate's inliers
            # change, every further step would repeat this one exactly, so stop. (Setting
            # settled rows aside one by one instead measured slower: its bookkeeping
            # costs more than the rows it saves in these small batches.)
            if it == 5 or (last is not None and np.array_equal(inl, last)):
                break
            last = inl
            w = u_ * (inl + 1e-3)
        inl &= u_ > 0
        return [xc, yc, R, res, inl, (weight[k] * inl).sum(1) / n]

    fit = irls(use_l.copy())
    if start_r is not None:
        r0 = np.asarray(start_r, float)[live]
        xc, yc, R = fit[:3]
        # Only where the free fit left the candidate's own circle (else both starts end
        # the same). Rays run from the candidate centre: an edge point is near that
        # circle when its radius along the ray is near start_r.
        k = np.flatnonzero(np.isfinite(r0) & (np.abs(R - r0) > 1.0))
        if len(k):
            near0 = np.abs(r_edge[live[k]] - r0[k, None]) < 1.5
            fit2 = irls(use_l[k] * (near0 + 1e-3), k)
            better = fit2[5] > fit[5][k] + 1e-9
            for a, b in zip(fit, fit2):
                a[k[better]] = b[better]
    xc, yc, R, res, inl, score = fit
    n_in = inl.sum(1)
    rms = np.sqrt((np.where(inl, res, 0.0) ** 2).sum(1) / np.maximum(n_in, 1))
    # Last: the share of the edge points on the circle where the colour is thin (a
    # rim), not solid all the way in (None without ``thin_px``).
    thin = (inl & (weight == 1.0)).sum(1) / np.maximum(n_in, 1)
    if wall is not None:
        # The top's edge points, and the circle through those of them on the rim.
        off = _wall_along(np.asarray(wall, float)[live], cos, sin)
        px, py = px - off * cos[None], py - off * sin[None]
        Fw = np.stack([px, py, np.ones_like(px), px * px + py * py], axis=2)
        xw, yw, Rw = _kasa(Fw.transpose(0, 2, 1), Fw, use_l * inl, eye)
        walled = (off > 0).any(axis=1)  # (a candidate with no wall keeps its fit as it was)
        xc, yc, R_top = np.where(walled, xw, xc), np.where(walled, yw, yc), np.where(walled, Rw, R)
    else:
        R_top = R
    lam = np.broadcast_to(np.asarray(expect_weight, float), (N,))[live]
    if expect_r is not None and np.any(lam > 0):
        choices = np.broadcast_to(np.asarray(expect_r, float), (N, np.shape(expect_r)[-1]))[live]
        near = np.take_along_axis(choices, np.argmin(np.abs(np.nan_to_num(choices, nan=1e9) - R[:, None]), axis=1)[:, None],
                                  axis=1)[:, 0]
        least = np.broadcast_to(np.asarray(expect_min_score, float), (N,))[live]
        sel = np.isfinite(near) & (score >= least) & (n_in >= 10) & (lam > 0)
        if sel.any():
            xc, yc = _centre_with_radius(px[sel], py[sel], use_l[sel], xc, yc, R_top, near[sel], lam[sel], sel,
                                         inl[sel])
    # (Whole arrays to Python floats at once: the same values, fewer conversions.)
    cols = zip(live.tolist(), xc.tolist(), yc.tolist(), R.tolist(), score.tolist(), rms.tolist(), thin.tolist(),
               (n_in >= 10).tolist())
    for i, x, y, r, sc, e, th, ok in cols:
        if ok:
            out[i] = (x, y, r, sc, e, None if thin_px is None else th)
    return out


def _kasa(Ft: np.ndarray, F: np.ndarray, w: np.ndarray, eye: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weighted Kasa circle fits, one per candidate: ``F`` (N, n, 4) rows (x, y, 1,
    x^2 + y^2) of its edge points, ``Ft`` their transpose, ``w`` (N, n) the weights;
    ``eye`` a small ridge. Returns centre x, y and radius, each (N,)."""
    G = np.matmul(Ft * w[:, None, :], F)
    sol = np.linalg.solve(G[:, :3, :3] + eye, G[:, :3, 3:])[..., 0]
    xc, yc = sol[:, 0] / 2, sol[:, 1] / 2
    return xc, yc, np.sqrt(np.maximum(sol[:, 2] + xc ** 2 + yc ** 2, 1e-6))


def _wall_along(wall: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """(N, n): how far past the top's edge a painted wall ``wall`` ((N, 2), view px)
    puts each of the n rays' edge: its component along the ray, on the wall's side."""
    wall = np.asarray(wall, float).reshape(-1, 2)
    return np.maximum(wall[:, :1] * cos[None] + wall[:, 1:] * sin[None], 0.0)


def _wall_share_of(prof: np.ndarray, rho: np.ndarray, cos: np.ndarray, sin: np.ndarray,
                   wall: np.ndarray) -> tuple[float, float] | None:
    """How much of a painted wall ``wall`` ((2,), view px: its whole apparent width) one
    whole rim (its rays ``prof`` (n, m), as _fit_rims reads them) shows as rim: the
    edge radii fitted as R + (a shift of the centre) + share * the wall along each ray,
    re-weighted to the rays within 0.9 px. The wall widens only the side facing the
    camera, so it is told from a shift of the centre (which moves both sides). Returns
    (R, share), or None when too few rays have an edge."""
    r_edge, use = _ray_edges(prof[None], rho)[:2]
    r, u = r_edge[0], use[0]
    A = np.column_stack([np.ones_like(cos), cos, sin, _wall_along(wall, cos, sin)[0]])
    keep = u.copy()
    for _ in range(4):
        if keep.sum() < 24:
            return None
        sol = np.linalg.lstsq(A[keep], r[keep], rcond=None)[0]
        keep = u & (np.abs(A @ sol - r) < 0.9)
    return float(sol[0]), float(sol[3])


def _ray_edge_points(prof: np.ndarray, rho: np.ndarray, cx: float, cy: float, cos: np.ndarray,
                     sin: np.ndarray, wall: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One candidate's rim edge on each of its rays (``prof`` (n, m) from (cx, cy), as
    _fit_rims reads them): its col, row and whether the ray has one (_ray_edges); with
    ``wall`` (2,), the top's edge (_fit_rims)."""
    r_edge, use = _ray_edges(prof[None], rho)[:2]
    if wall is not None:
        r_edge = r_edge - _wall_along(wall, cos, sin)
    return cx + r_edge[0] * cos, cy + r_edge[0] * sin, use[0]


def _rim_edge_points(prof: np.ndarray, rho: np.ndarray, cx: float, cy: float, cos: np.ndarray, sin: np.ndarray,
                     x0: float, y0: float, r: float) -> np.ndarray:
    """The edge points (k, 2: col, row) of one candidate's rays that lie on the circle of
    radius ``r`` round (x0, y0): those its score counts (as _circle_at_radius's)."""
    X, Y, U = _ray_edge_points(prof, rho, cx, cy, cos, sin)
    on = U & (np.abs(np.hypot(X - x0, Y - y0) - r) < 0.9)
    return np.stack([X[on], Y[on]], axis=1)


def _inside_rims(pts: np.ndarray, rims: list[tuple[float, float, float]], margin: float) -> np.ndarray:
    """Which of the points (k, 2: col, row) lie on or inside any of the rims (col, row,
    edge radius; all in one view's pixels), up to ``margin`` outside its edge."""
    inside = np.zeros(len(pts), bool)
    for col, row, rad in rims:
        inside |= np.hypot(pts[:, 0] - col, pts[:, 1] - row) < rad + margin
    return inside


def _circle_at_radius(prof: np.ndarray, rho: np.ndarray, cx: float, cy: float, cos: np.ndarray, sin: np.ndarray,
                      x0: float, y0: float, r: float, wall: np.ndarray | None = None) -> tuple[float, float, float]:
    """The circle of radius ``r`` through one candidate's rim edges (its rays ``prof``
    (n, m) from (cx, cy), as _fit_rims reads them), started at (x0, y0): a geometric fit
    of the centre alone, re-weighted to the edge points within 0.9 px. Returns its
    centre and the share of the rays whose edge lies on it (``wall``: _fit_rims')."""
    X, Y, U = _ray_edge_points(prof, rho, cx, cy, cos, sin, wall)
    a, b = float(x0), float(y0)
    for _ in range(6):
        dx, dy = X - a, Y - b
        d = np.maximum(np.hypot(dx, dy), 1e-6)
        e = d - r
        w = U & (np.abs(e) < 0.9)
        if w.sum() < 3:
            break
        J = np.stack([-dx[w] / d[w], -dy[w] / d[w]], axis=1)
        step = np.linalg.lstsq(J, -e[w], rcond=None)[0]
        a, b = a + float(step[0]), b + float(step[1])
    on = U & (np.abs(np.hypot(X - a, Y - b) - r) < 0.9)
    return a, b, float(on.sum()) / len(X)


def _centre_with_radius(X, Y, U, xc, yc, R, r0, lam, sel, inl):
    """Gauss-Newton on the geometric circle fit of edge points (X, Y; inliers within
    0.9 px, re-chosen each step) with lam * (radius - r0)^2 added, started from the free
    fit (xc, yc, R) of rows ``sel``; returns xc, yc with those rows' centres replaced."""
    xc, yc = xc.copy(), yc.copy()
    a, b, r = xc[sel], yc[sel], R[sel].copy()
    w = U * (inl + 1e-3)
    eye = 1e-9 * np.eye(3)[None]
    dx, dy = X - a[:, None], Y - b[:, None]
    h = np.hypot(dx, dy)
    for it in range(3):
        d = np.maximum(h, 1e-6)
        e = d - r[:, None]
        # Rows (J, e), J the Jacobian (-dx/d, -dy/d, -1) of each residual e: one
        # weighted product gives both J^T W J and the gradient J^T W e.
        T = np.stack([-dx / d, -dy / d, np.full_like(d, -1.0), e], axis=1)
        M = np.matmul(T * w[:, None, :], T.transpose(0, 2, 1))
        A = M[:, :3, :3].copy()
        g = M[:, :3, 3].copy()
        A[:, 2, 2] += lam
        g[:, 2] += lam * (r - r0)
        step = np.linalg.solve(A + eye, -g[..., None])[..., 0]
        a, b, r = a + step[:, 0], b + step[:, 1], r + step[:, 2]
        if it < 2:  # (the inliers re-chosen after the last step would not be used)
            dx, dy = X - a[:, None], Y - b[:, None]
            h = np.hypot(dx, dy)
            w = U * ((np.abs(h - r[:, None]) < 0.9) + 1e-3)
    xc[sel], yc[sel] = a, b
    return xc, yc


def rim_fit_sigma(xyz: np.ndarray, score: np.ndarray, camera_xyz: np.ndarray, thickness_in: float,
                  prior_weight: float = 16.0, n_rays: int = 96) -> np.ndarray:
    """(N,) 1-sigma position error (inches) a round base's rim fit adds to the
    calibration's, from how much of the rim was seen (``score``: the share of its circle
    fitted as rim edge) and where the base stands (``xyz``: centre on the surface).

    A base seen from off its nadir shows its painted side wall on the side facing the
    camera: there its outer edge lies on the wall's foot, one wall's apparent width
    ``w = thickness * d / (H - z)`` past the top's edge (d its distance from the camera's
    nadir, H the camera's height), or on the top, depending on paint and light, which
    one frame cannot tell: a whole rim's centre may be off by half of that. A rim seen in
    part also leans on the radius its size leads one to expect (counted as
    ``prior_weight`` edge points, _fit_rims), and a radius off by ``w`` moves the centre
    of an arc of half-angle phi, seen on n rays, by ``w * (m1 / m2) * prior_weight /
    (n (1 - m1^2 / m2) + prior_weight)`` (m1, m2 the mean of cos and cos^2 over the arc):
    1.1 w for a 30 % crescent, 0.8 w for half a rim, next to nothing for a whole one.
    (Our unpaced renders' rims fitted from under 40 % of their circle were 0.09 in off,
    at w ~0.07 in, where the calibration alone said 0.024 in.)

    >>> s = rim_fit_sigma(np.array([[10.0, 0, 0], [10.0, 0, 0]]), np.array([1.0, 0.3]), np.array([0.0, 0, 36]), 0.16)
    >>> np.round(s, 3).tolist()  # w = 0.16 * 10 / 36 = 0.044 in: whole rim w/2, a 30 % crescent 1.1 w
    [0.022, 0.049]
    """
    xyz = np.asarray(xyz, float).reshape(-1, 3)
    d = np.hypot(xyz[:, 0] - camera_xyz[0], xyz[:, 1] - camera_xyz[1])
    w = thickness_in * d / np.maximum(camera_xyz[2] - xyz[:, 2], 1.0)
    s = np.clip(np.asarray(score, float), 0.05, 1.0)
    phi = np.pi * s  # half the arc seen, taken as one arc
    m1 = np.sin(phi) / phi
    m2 = 0.5 + np.sin(2 * phi) / (4 * phi)
    lean = (m1 / m2) * prior_weight / (n_rays * s * (1 - m1 * m1 / m2) + prior_weight)
    return w * np.maximum(lean, 0.5)
