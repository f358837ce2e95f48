"""Token tags read up close: the ArUco tag printed to fill a token's disc.

Its corners nearly touch the disc's edge, which defeats ArUco's own square finder; but
the tag is centred on a disc already found, so it is read there: its dark square cut out
and straightened (``read_cut_out``), or, when that fails (a shadow or a miniature
touching it), by a search over every turn, size and small shift of the cell grid,
read softly against every code (``search_costs``). Which ids a token may carry, and
votes over several looks, stay with the detector.

In: a grey close-up of the disc (top-down at the token's top, centred on it), its
scale (pixels an inch), the disc's diameter (inches), the dictionary's name. Out: the
id read, or the face score and each id's cost.
"""

from __future__ import annotations

import functools

import cv2
import numpy as np


_CODES: dict[str, tuple[np.ndarray, np.ndarray]] = {}


def _dictionary_codes(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Every marker of an ArUco dictionary in its four turns, as 0/1 rows of its inner
    cells (row-major): (codes (4n, bits), ids (4n,))."""
    if name not in _CODES:
        from calibration.markers import get_dictionary

        d = get_dictionary(name)
        n, size = d.bytesList.shape[0], d.markerSize
        rows, ids = [], []
        for i in range(n):
            bits = cv2.aruco.Dictionary.getBitsFromByteList(d.bytesList[i:i + 1], size)
            for k in range(4):
                rows.append(np.rot90(bits, k).ravel().astype(np.float32))
                ids.append(i)
        _CODES[name] = (np.array(rows), np.array(ids))
    return _CODES[name]


SEARCH_SHIFT_IN = 0.045  # half the span of search_costs' shifts of the grid, inches


@functools.lru_cache(maxsize=16)
def _search_grids(h: int, w: int, S: float, diam: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """search_costs' sampling points in an ``h`` x ``w`` close-up: every turn, cell
    size and shift of the 6x6 cell grid (36 cell centres) plus the 16 paper points just
    outside its border, as float32 remap maps (one row per grid); and which of the 36
    cells are border. They depend on the close-up's size alone, so they are made once,
    not at every disc. (Read-only.)"""
    k = np.arange(6) - 2.5
    cu, cv_ = (a.ravel() for a in np.meshgrid(k, k))  # cell centres, in cells, row-major
    border = (np.abs(cu) > 2) | (np.abs(cv_) > 2)
    # Paper just outside the border, along the middle of each side (the corners
    # would fall off the disc).
    m = np.array([-1.5, -0.5, 0.5, 1.5])
    ou = np.concatenate([m, m, np.full(4, -3.5), np.full(4, 3.5)])
    ov = np.concatenate([np.full(4, -3.5), np.full(4, 3.5), m, m])
    U = np.concatenate([cu, ou])
    V = np.concatenate([cv_, ov])
    ang = np.deg2rad(np.arange(0, 90, 3.0))
    sides = np.arange(0.5, 0.81, 0.05) * diam * S / 6  # cell size in pixels
    # The disc's centre is known to about 0.04 in whatever the close-up's scale: the
    # shifts span that in inches (at least 2 px), not a fixed count of pixels (at 4K a
    # 45-degree tag 2.5 px off centre was never read).
    shifts = np.linspace(-1.0, 1.0, 5) * max(2.0, SEARCH_SHIFT_IN * S)
    A, C, DX, DY = np.meshgrid(ang, sides, shifts, shifts, indexing="ij")
    A, C, DX, DY = (a.ravel()[:, None] for a in (A, C, DX, DY))
    ca, sa = np.cos(A), np.sin(A)
    X = ((w - 1) / 2 + DX + C * (U[None] * ca - V[None] * sa)).astype(np.float32)
    Y = ((h - 1) / 2 + DY + C * (U[None] * sa + V[None] * ca)).astype(np.float32)
    for a in (X, Y, border):
        a.setflags(write=False)
    return X, Y, border


@functools.lru_cache(maxsize=16)
def _ellipse(k: int) -> np.ndarray:
    el = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k))
    el.setflags(write=False)
    return el


def _mean(a: np.ndarray) -> np.ndarray:
    """a.mean(axis=1) of a 2-d float32 array: the same sum and division, without
    numpy's bookkeeping (search_costs calls it on thousands of short rows)."""
    r = np.add.reduce(a, axis=1)
    return np.true_divide(r, np.intp(a.shape[1]), out=r, casting="unsafe")


def _std(a: np.ndarray, mean: np.ndarray | None = None) -> np.ndarray:
    """a.std(axis=1) of a 2-d float32 array, as numpy works it out (mean, squared
    deviations, their mean, root); ``mean``: _mean(a), if worked out already."""
    n = np.intp(a.shape[1])
    if mean is None:
        m = np.add.reduce(a, axis=1, keepdims=True)
        np.true_divide(m, n, out=m, casting="unsafe")
    else:
        m = mean[:, None]
    x = np.subtract(a, m)
    np.square(x, out=x)
    r = np.add.reduce(x, axis=1)
    np.true_divide(r, n, out=r, casting="unsafe")
    return np.sqrt(r, out=r)


def read_cut_out(gray: np.ndarray, S: float, diam: float, dictionary: str) -> tuple[bool, int | None]:
    """A tag read from its dark square cut out alone: the disc's dark part (Otsu's
    threshold inside it), straightened to a 6x6 cell grid (border plus 4x4 bits) and
    looked up in the dictionary in all four rotations. ``gray``: the close-up centred on
    the disc, ``S`` pixels an inch, the disc ``diam`` inches across. Returns (worth a
    search, id): (False, None) when the disc has too little contrast to hold a tag at
    all; else the id read, or None when the square could not be cut out alone or read
    (``search_costs`` then)."""
    from calibration.markers import get_dictionary

    h, w = gray.shape
    disc = np.zeros((h, w), np.uint8)
    cv2.circle(disc, (w // 2, h // 2), int(round(diam / 2 * S * 0.9)), 255, -1)
    vals = gray[disc > 0]
    if vals.size < 50 or vals.max() - vals.min() < 60:
        return False, None
    thr, _ = cv2.threshold(vals.reshape(-1, 1), 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    dark = ((gray < thr) & (disc > 0)).astype(np.uint8)
    dark = cv2.morphologyEx(dark, cv2.MORPH_CLOSE, np.ones((5, 5), np.uint8))
    n, labels, stats, _ = cv2.connectedComponentsWithStats(dark)
    if n < 2:
        return True, None
    big = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
    # The square's smallest box is its convex hull's, and every corner of that hull
    # lies on the region's outline: the outline's pixels give the same box as all
    # of them, a few hundred points instead of thousands.
    outline, _ = cv2.findContours((labels == big).astype(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    at = np.unique(np.concatenate(outline).reshape(-1, 2) @ np.array([1, 1 << 16]))  # (once each)
    pts = np.column_stack([at & 0xFFFF, at >> 16]).astype(np.float32)
    (cx, cy), (rw, rh), ang = cv2.minAreaRect(pts)
    side = 0.5 * (rw + rh)
    if side < 0.4 * diam * S or abs(rw - rh) > 0.2 * side:
        return True, None
    box = cv2.boxPoints(((cx, cy), (side, side), ang)).astype(np.float32)
    cell = 8
    dst = np.array([[0, 0], [6 * cell, 0], [6 * cell, 6 * cell], [0, 6 * cell]], np.float32)
    M = cv2.getPerspectiveTransform(box, dst)
    flat = cv2.warpPerspective(gray, M, (6 * cell, 6 * cell))
    centres = flat[cell // 2::cell, cell // 2::cell][:6, :6].astype(float)
    bits = (centres > thr).astype(np.uint8)
    if bits[0, :].any() or bits[-1, :].any() or bits[:, 0].any() or bits[:, -1].any():
        return True, None  # not a marker border
    ok, idx, _rot = get_dictionary(dictionary).identify(bits[1:-1, 1:-1], 0.0)
    return True, (int(idx) if ok else None)


def _border_scores(gray: np.ndarray, S: float, diam: float):
    """Every grid of ``_search_grids`` sampled from the close-up (brightness relative to
    the paper nearby) and scored by how dark its border is against the paper just
    outside it. Returns (grids' x and y maps, border mask, cell values (n, 36), paper
    values (n, 16), border values (n, 20), scores (n,))."""
    g8 = cv2.GaussianBlur(gray, (0, 0), 0.6)
    h, w = g8.shape
    # A shadow across the disc: brightness relative to the paper nearby (the local
    # maximum over about a third of the disc), not absolute. (The blurred close-up
    # is still whole levels: dilated as 8-bit, then made float, it is the same, in
    # half the time.)
    k = int(diam * S * 0.35) | 1
    paper_level = cv2.GaussianBlur(cv2.dilate(g8, _ellipse(k)).astype(np.float32), (0, 0), k / 4)
    g = 200.0 * g8.astype(np.float32) / np.maximum(paper_level, 20.0)
    X, Y, border = _search_grids(h, w, float(S), float(diam))
    vals = cv2.remap(g, X, Y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    cells, paper = vals[:, :36], vals[:, 36:]
    b = cells[:, border]
    mb, mp = _mean(b), _mean(paper)
    score = mp - mb - 0.5 * _std(b, mb) - 0.5 * _std(paper, mp)
    return X, Y, border, cells, paper, b, score


def border_poses(gray: np.ndarray, S: float, diam: float, k: int) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """The ``k`` poses of a tag's 6x6 cell grid whose black border fits the close-up
    best (``search_costs``' search): each as (the grid's centre in pixels, one cell's
    step along its rows in pixels)."""
    X, Y, _, _, _, _, score = _border_scores(gray, S, diam)
    out = []
    for i in np.argsort(-score)[:k]:
        xs, ys = X[i, :36], Y[i, :36]
        out.append(((float(xs.mean()), float(ys.mean())), (float(xs[1] - xs[0]), float(ys[1] - ys[0]))))
    return out


def search_costs(gray: np.ndarray, S: float, diam: float, dictionary: str) -> tuple[float, np.ndarray | None]:
    """The tag read by search when its dark square cannot be cut out alone (a shadow
    or a miniature touching it, a corner clipped by the disc's edge at 45 degrees):
    every turn (3 degree steps), size (the tag fills 50-80 % of the disc) and small
    shift of a 6x6 cell grid about the disc's centre is sampled (``_search_grids``), and
    the grids whose border cells are darkest against the paper just outside them are
    read softly against every code. ``gray``, ``S``, ``diam``: as ``read_cut_out``'s.
    Returns (face: the best border's score, how much the disc looks like a printed
    tag, read or not; each id's cost, the least over the codes of its four turns), the
    costs None when no grid has a border dark enough, or whole, to be read."""
    X, Y, border, cells, paper, b, score = _border_scores(gray, S, diam)
    face = float(score.max())
    # Soft reading: the few grids that fit the border best, each cell as a fraction
    # between border black and paper white, against every code of the dictionary in
    # its four turns. The nearest code must be near, and clearly nearer than any other.
    top = np.argsort(-score)[:24]
    lo = b[top].mean(axis=1, keepdims=True)
    hi = paper[top].mean(axis=1, keepdims=True)
    ok = (hi - lo)[:, 0] >= 40
    if not ok.any():
        return face, None
    top, lo, hi = top[ok], lo[ok], hi[ok]
    v = np.clip((cells[top] - lo) / (hi - lo), 0, 1)
    if (v[:, border] > 0.5).any(axis=1).all():
        return face, None  # no grid with a whole black border
    inner = v[:, ~border]  # (n, 16), row-major
    codes, ids = _dictionary_codes(dictionary)
    cost = np.abs(inner[:, None, :] - codes[None]).sum(axis=2) + 4.0 * (v[:, border] > 0.5).sum(axis=1)[:, None]
    per_id = np.full(int(ids.max()) + 1, np.inf)
    np.minimum.at(per_id, ids, cost.min(axis=0))
    return face, per_id


def disc_centre(gray: np.ndarray, S: float, diam: float) -> tuple[float, float] | None:
    """The token disc's centre in its close-up (pixels), from the circle of its edge, or
    None when no such circle shows. The disc finder's centre leans toward the paper's
    side of the printed tag's pattern (0.13 in on a 4K tuning table: enough to clip the
    tag's corner out of the cut-out and the search); the paper's edge is round whatever
    the print. Found by OpenCV's gradient Hough transform (radius within 15 % of the
    disc's; a few pixels coarse), then fitted to the pixels round it whose gradient
    points along the radius (the tag's own edges do not), weighted by its strength.

    >>> g = np.full((150, 150), 60, np.uint8); _ = cv2.circle(g, (80, 70), 50, 230, -1, cv2.LINE_AA)
    >>> [round(v, 1) for v in disc_centre(g, 100.0, 1.0)]
    [80.0, 70.0]
    """
    r = diam / 2 * S
    blur = cv2.GaussianBlur(gray, (5, 5), 1.0)
    found = cv2.HoughCircles(blur, cv2.HOUGH_GRADIENT_ALT, dp=1.5, minDist=r, param1=100, param2=0.7,
                             minRadius=int(0.85 * r), maxRadius=int(1.15 * r) + 1)
    if found is None:
        return None
    h, w = gray.shape
    cx, cy = min(found[0][:, :2].tolist(), key=lambda c: np.hypot(c[0] - w / 2, c[1] - h / 2))
    f = blur.astype(np.float32)
    gx, gy = cv2.Sobel(f, cv2.CV_32F, 1, 0), cv2.Sobel(f, cv2.CV_32F, 0, 1)
    mag = np.hypot(gx, gy)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    for _ in range(3):
        dx, dy = xx - cx, yy - cy
        rho = np.hypot(dx, dy) + 1e-6
        ring = (rho > 0.85 * r) & (rho < 1.15 * r)
        if not ring.any():
            return None
        radial = np.abs(gx * dx + gy * dy) / (mag * rho + 1e-6)
        sel = ring & (radial > 0.9) & (mag > 0.3 * np.percentile(mag[ring], 95))
        if sel.sum() < 20:
            return None
        x, y, wt = xx[sel].astype(float), yy[sel].astype(float), mag[sel].astype(float)
        # Kasa's circle: x^2 + y^2 + D x + E y + F = 0, least squares weighted by the edge.
        A = np.column_stack([x, y, np.ones_like(x)]) * wt[:, None]
        D, E, _ = np.linalg.lstsq(A, -(x * x + y * y) * wt, rcond=None)[0]
        cx, cy = -D / 2, -E / 2
    return float(cx), float(cy)
