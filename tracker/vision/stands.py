"""Oval and rectangular bases found as what is not the empty table (foreground pursuit).

At 720p over an Epic table a 40 x 20 mm stand is some 19 x 9 pixels of the rectified
floor, its rim a pixel wide and blurred into the mat and its miniature: too little rim
colour to fit its outline (``base_shapes.fit_shapes``), which found 5 % of the stands
on one such tuning table. What does show is the stand as a whole: a patch of the
base's size and shape where the picture is not the empty table's.

``vision.foreground`` says, per pixel of a rectified view, how surely it differs from the
empty table. ``pursue`` explains the foreground with placements of one base outline, best
first (matching pursuit): each placement must be nearly all foreground inside and
nearly none in a band just outside (beyond the blur's reach), and what it covers is
then taken out, so that the stands of a packed block are placed one by one from its
edges in, never two over one patch.

Stands in contact (an Epic unit in a block) are one patch of foreground, which outlines
tile many ways equally well; their rims tile it one way: each stand shows a ring of rim
colour round its miniature. Given each side's map of rim evidence, ``pursue`` also reads
each placement's rim band against its core (``rim_kernel``), for the side that shows it best.

In: Lab views (``colour.detector_lab``) of the frame and of the empty table, where the
view can be seen, the outlines the table's bases have (``Outline``), and optionally how
surely each pixel is each side's rim colour. Out: ``Placement``s (which outline, centre
in view pixels, angle in radians as ``base_shapes`` turns outlines, response, rim).
Which side a placement belongs to is the caller's (the rim's colour along its outline).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import cv2
import numpy as np

from ..base_shapes import _signed_distance
from .filters import _subpixel_peak

# The outline's outer band starts this many pixels out: the views are sampled near the
# camera's own resolution, where blur and the base's own shadow spread its foreground
# by 1.5-2.5 px (a 19 x 9 px stand showed as 22 x 14 px).
OUTER_GAP_PX, OUTER_WIDTH_PX = 2.5, 2.0
# Already explained pixels (a placed base) in the outer band count this much foreground:
# bases in contact touch there.
TOUCHING = 0.5
# Two stands make a square (retile) when their sizes, their offset along their long axis
# and their distance across it are within this share of a stand's half depth of a
# square's, and they are turned alike within SQUARE_PAIR_TURN.
SQUARE_PAIR_TOL = 0.6
SQUARE_PAIR_TURN = math.radians(15.0)


@dataclass(frozen=True)
class Outline:
    """A base's outline in view pixels: ``shape`` "round", "oval" or "rect", half sizes
    ``hx`` >= ``hy`` (a round base's radius twice)."""

    shape: str
    hx: float
    hy: float

    @property
    def area(self) -> float:
        return 4 * self.hx * self.hy if self.shape == "rect" else math.pi * self.hx * self.hy

    @property
    def turns(self) -> bool:
        return self.shape != "round" and self.hx != self.hy


@dataclass(frozen=True)
class Placement:
    """One outline (``outline``: its index in what ``pursue`` was given) placed at
    (``col``, ``row``) turned ``theta`` (radians, as base_shapes turns outlines), and how
    well it explained the foreground there (``response``)."""

    outline: int
    col: float
    row: float
    theta: float
    response: float
    rim: float = 0.0  # how much more rim evidence its rim band holds than its inside


def _sd(shape: str, u: np.ndarray, v: np.ndarray, hx: float, hy: float) -> np.ndarray:
    return _signed_distance("rect" if shape == "rect" else "oval", u, v, hx, hy)


def _outline_distance(outline: Outline, theta: float) -> np.ndarray:
    """Signed distance (px, negative inside) to the outline turned ``theta``, on a square
    grid centred on the base that reaches past its outer band: the grid every kernel of
    one outline shares."""
    R = int(math.ceil(math.hypot(outline.hx, outline.hy) + OUTER_GAP_PX + OUTER_WIDTH_PX + 1))
    yy, xx = np.mgrid[-R:R + 1, -R:R + 1].astype(np.float32)
    c, s = math.cos(theta), math.sin(theta)
    return _sd(outline.shape, xx * c + yy * s, -xx * s + yy * c, outline.hx, outline.hy)


@functools.lru_cache(maxsize=256)
def outline_masks(outline: Outline, theta: float) -> tuple[np.ndarray, np.ndarray]:
    """The outline's inside (weights summing to 1, anti-aliased) and its outer band
    (weights summing to 1), as kernels centred on the base (kept: a table's outlines and
    turns are the same every look; read-only)."""
    sd = _outline_distance(outline, theta)
    inside = np.clip(0.5 - sd, 0.0, 1.0)
    outer = ((sd > OUTER_GAP_PX) & (sd <= OUTER_GAP_PX + OUTER_WIDTH_PX)).astype(np.float32)
    kernels = (inside / inside.sum()).astype(np.float32), (outer / outer.sum()).astype(np.float32)
    for k in kernels:
        k.setflags(write=False)
    return kernels


@functools.lru_cache(maxsize=256)
def rim_kernel(outline: Outline, theta: float, rim_w: float) -> np.ndarray:
    """The mean over the outline's rim band (``rim_w`` px just inside it) less the mean
    over its core (inside the band, a pixel clear of it), as one kernel the size of
    ``outline_masks``' (read-only)."""
    sd = _outline_distance(outline, theta)
    band = np.clip(1.0 - np.abs(sd + rim_w / 2) / (rim_w / 2 + 0.5), 0.0, 1.0)
    core = np.clip(-sd - rim_w - 1.0, 0.0, 1.0)
    k = (band / band.sum() - core / max(core.sum(), 1e-6)).astype(np.float32)
    k.setflags(write=False)
    return k


def pursue(fg: np.ndarray, outlines: list[Outline], *, threshold: float, n_angles: int = 12,
           explained: np.ndarray | None = None, max_n: int = 200, rims: list[np.ndarray] | None = None,
           rim_w: float = 1.5, rim_weight: float = 1.0) -> list[Placement]:
    """Placements of the ``outlines`` that explain ``fg``, best first, each responding at
    least ``threshold`` (1: all foreground inside, none in the outer band). The outlines
    compete: a patch goes to the one that explains it best (a round base's patch to its
    circle, not to an oval laid over it). ``explained``: pixels bases found otherwise
    cover (a placement over them is penalised, one beside them touches them; a patch
    they cover all but a fleck of is not looked at).

    ``rims``: how surely each pixel is each side's rim colour. The foreground of a block
    of stands in contact is one patch, which outlines tile in many ways equally well;
    their rims are not: each stand shows a ring of rim colour round a core of miniature.
    Where given, a placement's response adds ``rim_weight`` times its rim band's mean
    evidence less its core's, on the map of the side that shows it best
    (``Placement.rim``; a miniature painted another side's colour fills the core on that
    side's map only), so that the tiling whose rings lie on the rims wins, and a lone
    stand is placed by its rim's sharp edge rather than by its foreground's blurred one.

    >>> fg = np.zeros((40, 90), np.float32); fg[15:25, 10:30] = 1; fg[15:25, 30:50] = 1
    >>> fg[13:28, 63:78] = 1  # a round base beside two stands in contact
    >>> sorted((p.outline, round(p.col), round(p.row)) for p in
    ...        pursue(fg, [Outline("rect", 9.5, 4.5), Outline("round", 7.5, 7.5)], threshold=0.6))
    [(0, 20, 20), (0, 40, 20), (1, 70, 20)]
    """
    fg = fg.astype(np.float32)
    rims = [r.astype(np.float32) for r in rims or ()]
    inner_map = fg.copy()  # what a placement's inside sees: taken pixels count against it
    outer_map = fg.copy()  # what its outer band sees: taken pixels as touching neighbours
    if explained is not None:
        inner_map[explained] = -1.0
        outer_map[explained] = TOUCHING
    layers = [(i, a) for i, o in enumerate(outlines)
              for a in (np.arange(n_angles) * (math.pi / n_angles) if o.turns else [0.0])]
    kernels = [outline_masks(outlines[i], a) for i, a in layers]
    rim_kernels = [rim_kernel(outlines[i], a, rim_w) for i, a in layers] if rims else []
    R = max(k[0].shape[0] for k in kernels) // 2
    H, W = fg.shape

    def respond(r0: int, r1: int, c0: int, c1: int) -> np.ndarray:
        """Responses at the centres [r0:r1, c0:c1], the maps read R beyond them."""
        e0, e1, f0, f1 = max(r0 - R, 0), min(r1 + R, H), max(c0 - R, 0), min(c1 + R, W)
        ins, out = inner_map[e0:e1, f0:f1], outer_map[e0:e1, f0:f1]
        resp = np.stack([cv2.filter2D(ins, -1, ki, borderType=cv2.BORDER_CONSTANT)
                         - cv2.filter2D(out, -1, ko, borderType=cv2.BORDER_CONSTANT)
                         for ki, ko in kernels])
        if rims:
            resp += rim_weight * rim_stack(e0, e1, f0, f1)
        return resp[:, r0 - e0:r1 - e0, c0 - f0:c1 - f0]

    def rim_stack(e0: int, e1: int, f0: int, f1: int) -> np.ndarray:
        return np.max([np.stack([cv2.filter2D(r[e0:e1, f0:f1], -1, k, borderType=cv2.BORDER_CONSTANT)
                                 for k in rim_kernels]) for r in rims], axis=0)

    # Only where there is foreground enough for a base: blobs of it at least half the
    # smallest base's area (whole-view filtering at 24 angles would cost ~0.5 s a look).
    # (A found base's foreground reaches past its outline by the blur: not a patch.)
    seed = inner_map > 0.5
    if explained is not None:
        g = 2 * int(math.ceil(OUTER_GAP_PX)) + 1
        seed &= ~cv2.dilate(explained.astype(np.uint8), np.ones((g, g), np.uint8)).astype(bool)
    n, _, stats, _ = cv2.connectedComponentsWithStats(seed.astype(np.uint8), connectivity=8)
    least = min(o.area for o in outlines)
    out: list[Placement] = []
    for b in range(1, n):
        x, y, w, h, a = stats[b]
        if a < 0.5 * least:
            continue
        # Centres within the blob's box: a base on the blob lies over its middle.
        r0, r1, c0, c1 = y, y + h, x, x + w
        resp = respond(r0, r1, c0, c1)
        while len(out) < max_n:
            li, rr, cc = np.unravel_index(int(np.argmax(resp)), resp.shape)
            best = float(resp[li, rr, cc])
            if best < threshold:
                break
            i, theta = layers[li]
            pr, pc = _subpixel_peak(resp[li], rr, cc)
            if outlines[i].turns:  # the angle between its two neighbours' (same outline, half a turn round)
                prev = li - 1 if li > 0 and layers[li - 1][0] == i else li + n_angles - 1
                nxt = li + 1 if li + 1 < len(layers) and layers[li + 1][0] == i else li - n_angles + 1
                theta = (theta + _parabola(resp[prev, rr, cc], best, resp[nxt, rr, cc]) * math.pi / n_angles) % math.pi
            if rims:
                k = rim_kernels[li]
                ring = max(float((_window(r, k.shape[0] // 2, c0 + pc, r0 + pr) * k).sum()) for r in rims)
                p = Placement(i, c0 + pc, r0 + pr, float(theta), best - rim_weight * ring, ring)
            else:
                p = Placement(i, c0 + pc, r0 + pr, float(theta), best)
            out.append(p)
            _take(inner_map, outer_map, outlines[i], p)
            # Only responses within reach of what was taken change.
            q0, q1 = max(int(p.row) - 2 * R, r0), min(int(p.row) + 2 * R + 2, r1)
            s0, s1 = max(int(p.col) - 2 * R, c0), min(int(p.col) + 2 * R + 2, c1)
            resp[:, q0 - r0:q1 - r0, s0 - c0:s1 - c0] = respond(q0, q1, s0, s1)
    return retile(out, outlines, rims, rim_w) if rims else out


def retile(placements: list[Placement], outlines: list[Outline], rims: list[np.ndarray],
           rim_w: float) -> list[Placement]:
    """``placements`` with every square of two stands re-tiled the way its rims say.

    Two rectangles twice as long as deep, in contact along their long sides, make a
    square that the same two turned a quarter tile as well: the foreground cannot tell
    the tilings apart, and ``pursue`` places such a pair by its first stand alone (on 24
    Epic tuning tables, 62 of 5,083 stands were placed turned a quarter, 58 of them
    touching another stand, each 0.2-0.7 in off). The rims can: the two stands' rims meet
    along the line between them, which runs along their long axis one way and across it
    the other, while the other midline of the square crosses their miniatures. Each such
    pair is kept as it is or turned, whichever midline holds more rim evidence (on the
    map of the side that shows most), until none turns. (On those tables: stands turned
    a quarter 62 -> 28, floor RMS 0.095 -> 0.084 in; judged instead by each stand's rim
    band less its core, ``rim_kernel``, where miniatures of the rim's colour fill the
    cores: 34, 0.086 in.)

    >>> rim = np.zeros((60, 60), np.float32)
    >>> rim[20:41, 20] = rim[20:41, 40] = rim[20, 20:41] = rim[40, 20:41] = 1.0
    >>> rim[20:41, 30] = 1.0  # the line between two stands 20 deep and 10 wide
    >>> o = Outline("rect", 10.0, 5.0)
    >>> wrong = [Placement(0, 30.0, 25.0, 0.0, 1.0), Placement(0, 30.0, 35.0, 0.0, 1.0)]
    >>> sorted((round(p.col), round(p.row), round(math.degrees(p.theta))) for p in retile(wrong, [o], [rim], 1.5))
    [(25, 30, 90), (35, 30, 90)]
    """
    out = list(placements)

    def ring(o: Outline, theta: float, col: float, row: float) -> float:
        k = rim_kernel(o, theta, rim_w)
        return max(float((_window(r, k.shape[0] // 2, col, row) * k).sum()) for r in rims)

    def divider(mc: float, mr: float, dc: float, dr: float, length: float) -> float:
        """The mean rim evidence along the middle 80 % of the line of ``length`` through
        (mc, mr) in direction (dc, dr), on the map of the side that shows most."""
        k = np.arange(-0.4 * length, 0.4 * length + 0.5, 0.5)
        cols, rows = (mc + k * dc).astype(np.float32), (mr + k * dr).astype(np.float32)
        return max(float(cv2.remap(r, cols[None], rows[None], cv2.INTER_LINEAR).mean()) for r in rims)

    halves = [k for k, o in enumerate(outlines) if o.shape == "rect" and abs(o.hx - 2 * o.hy) <= SQUARE_PAIR_TOL * o.hy]
    square = [k for k, p in enumerate(out) if p.outline in halves]  # (rectangles twice as long as deep)
    if len(square) < 2:
        return out
    for _ in range(3):  # (a turned pair may make another pair square; blocks are small)
        turned = False
        xy = np.array([(out[k].col, out[k].row) for k in square])
        reach = np.array([(2 + 2 * SQUARE_PAIR_TOL) * outlines[out[k].outline].hy for k in square])
        near = np.linalg.norm(xy[:, None] - xy[None], axis=2) <= reach[:, None]
        for ia, ib in zip(*np.nonzero(np.triu(near, 1))):
            a, b = square[ia], square[ib]
            p, q = out[a], out[b]
            o = outlines[p.outline]
            if q.outline != p.outline:  # (both are twice as long as deep: ``square``)
                continue
            if abs((q.theta - p.theta + math.pi / 2) % math.pi - math.pi / 2) > SQUARE_PAIR_TURN:
                continue
            c, s = math.cos(p.theta), math.sin(p.theta)  # the long axis, in (col, row)
            dc, dr = q.col - p.col, q.row - p.row
            if abs(dc * c + dr * s) > SQUARE_PAIR_TOL * o.hy \
                    or abs(abs(-dc * s + dr * c) - 2 * o.hy) > SQUARE_PAIR_TOL * o.hy:
                continue
            mc, mr = (p.col + q.col) / 2, (p.row + q.row) / 2
            theta = (p.theta + math.pi / 2) % math.pi
            alt = [(mc + k * o.hy * c, mr + k * o.hy * s) for k in (1, -1)]
            # The line between the two stands runs along their long axis; turned, across it.
            if divider(mc, mr, -s, c, 2 * o.hx) > divider(mc, mr, c, s, 2 * o.hx):
                rings = [ring(o, theta, col, row) for col, row in alt]
                out[a] = Placement(p.outline, alt[0][0], alt[0][1], theta, p.response, rings[0])
                out[b] = Placement(q.outline, alt[1][0], alt[1][1], theta, q.response, rings[1])
                turned = True
        if not turned:
            break
    return out


def response_at(fg: np.ndarray, outline: Outline, theta: float, col: float, row: float) -> float:
    """How well one outline placed at (``col``, ``row``), turned ``theta``, explains
    ``fg`` on its own: its inside's mean foreground less its outer band's (``pursue``'s
    response on an untouched map). Asked of a token's disc where a stand was placed, it
    tells a disc from a stand: each fits its own outline best."""
    ki, ko = outline_masks(outline, theta)
    pad = _window(fg, ki.shape[0] // 2, col, row)
    return float((pad * ki).sum() - (pad * ko).sum())


def inside_mean(fg: np.ndarray, outline: Outline, theta: float, col: float, row: float) -> float:
    """The mean of ``fg`` over one outline's inside placed at (``col``, ``row``), turned
    ``theta`` (``pursue``'s inside weights)."""
    ki, _ = outline_masks(outline, theta)
    return float((_window(fg, ki.shape[0] // 2, col, row) * ki).sum())


def _window(fg: np.ndarray, R: int, col: float, row: float) -> np.ndarray:
    """``fg``'s (2R+1)-square window centred on the pixel nearest (``col``, ``row``), 0
    beyond its edges."""
    c, r = int(round(col)), int(round(row))
    H, W = fg.shape
    pad = np.zeros((2 * R + 1, 2 * R + 1), np.float32)
    r0, r1, c0, c1 = max(r - R, 0), min(r + R + 1, H), max(c - R, 0), min(c + R + 1, W)
    if r0 < r1 and c0 < c1:
        pad[r0 - (r - R):r1 - (r - R), c0 - (c - R):c1 - (c - R)] = fg[r0:r1, c0:c1]
    return pad


def covered(shape: tuple[int, int], outlines: list[Outline], placements: list[Placement]) -> np.ndarray:
    """Where ``placements`` (of ``outlines``) cover a view of ``shape``: a mask.

    >>> m = covered((20, 40), [Outline("rect", 6, 3)], [Placement(0, 10.0, 10.0, 0.0, 1.0)])
    >>> int(m.sum()), bool(m[10, 10]), bool(m[10, 20])
    (55, True, False)
    """
    inner, outer = np.zeros(shape, np.float32), np.zeros(shape, np.float32)
    for p in placements:
        _take(inner, outer, outlines[p.outline], p)
    return inner < 0


def _take(inner_map: np.ndarray, outer_map: np.ndarray, outline: Outline, p: Placement) -> None:
    """Mark a placement's inside as explained in both maps."""
    R = int(math.ceil(math.hypot(outline.hx, outline.hy))) + 1
    H, W = inner_map.shape
    r0, r1 = max(int(p.row) - R, 0), min(int(p.row) + R + 2, H)
    c0, c1 = max(int(p.col) - R, 0), min(int(p.col) + R + 2, W)
    yy, xx = np.mgrid[r0:r1, c0:c1].astype(np.float32)
    xx, yy = xx - p.col, yy - p.row
    c, s = math.cos(p.theta), math.sin(p.theta)
    inside = _sd(outline.shape, xx * c + yy * s, -xx * s + yy * c, outline.hx, outline.hy) < 0
    inner_map[r0:r1, c0:c1][inside] = -1.0
    outer_map[r0:r1, c0:c1][inside] = TOUCHING


def _parabola(a: float, b: float, c: float) -> float:
    """The peak's offset (-0.5..0.5 steps) of the parabola through three evenly spaced values."""
    den = a - 2 * b + c
    return 0.0 if den >= 0 else float(np.clip(0.5 * (a - c) / den, -0.5, 0.5))


def ends_filled(fg: np.ndarray, outline: Outline, theta: float, col: float, row: float, beyond: float) -> float:
    """The lesser of the mean ``fg`` over the two ends of an outline placed at (``col``,
    ``row``), turned ``theta``: its inside farther than ``beyond`` px from its centre
    along its length. A patch that fills both is as long as the outline: no disc of
    radius ``beyond`` or less explains it. 0 for an outline no longer than that.

    >>> fg = np.zeros((20, 40), np.float32); fg[6:14, 4:36] = 1.0  # a strip 32 px long
    >>> o = Outline("rect", 10, 4)
    >>> ends_filled(fg, o, 0.0, 20, 10, 6), ends_filled(fg, o, 0.0, 6, 10, 6)  # in it / one end past it
    (1.0, 0.0)
    """
    if outline.hx - 0.7 <= beyond:
        return 0.0
    u = np.linspace(beyond, outline.hx - 0.7, max(2, int(outline.hx - beyond) + 1))
    v = np.linspace(-(outline.hy - 0.7), outline.hy - 0.7, max(2, int(2 * outline.hy)))
    uu, vv = np.meshgrid(u, v)
    c, s = np.cos(theta), np.sin(theta)
    means = []
    for sign in (1.0, -1.0):
        du, dv = c * sign * uu - s * vv, s * sign * uu + c * vv
        r = np.rint(row + dv).astype(int)
        k = np.rint(col + du).astype(int)
        inside = (r >= 0) & (r < fg.shape[0]) & (k >= 0) & (k < fg.shape[1])
        at = fg[np.clip(r, 0, fg.shape[0] - 1), np.clip(k, 0, fg.shape[1] - 1)]
        means.append(float(np.where(inside, at, 0.0).mean()))
    return min(means)


def in_file(p: Placement, placements: list[Placement], outline: Outline, tol: float) -> bool:
    """Whether another of ``placements`` of ``p``'s outline lies end to end with ``p``: its
    centre one outline's length (2 hx) along ``p``'s long axis and turned alike, within
    ``tol`` px along and across (a file of stands; a stand's outline put on a token's disc
    beside a stand lies nearer it, a disc's radius and half a length).

    >>> o = Outline("rect", 10, 5)
    >>> a, b, c = Placement(0, 50, 50, 0.0, 0.6), Placement(0, 70.5, 50.5, 3.1, 0.8), Placement(0, 64, 50, 0.0, 0.8)
    >>> in_file(a, [a, b], o, 1.5), in_file(a, [a, c], o, 1.5)
    (True, False)
    """
    c, s = math.cos(p.theta), math.sin(p.theta)
    for q in placements:
        if q is p or q.outline != p.outline:
            continue
        dx, dy = q.col - p.col, q.row - p.row
        along, across = dx * c + dy * s, -dx * s + dy * c
        turn = abs((q.theta - p.theta + math.pi / 2) % math.pi - math.pi / 2)
        if abs(abs(along) - 2 * outline.hx) <= tol and abs(across) <= tol and turn <= math.radians(15):
            return True
    return False
