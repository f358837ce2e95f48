"""Cover: is the target of an attack action in cover (+1 Toughness)?

Obstacles: a line 1mm wide between the closest points of the two bases (in 3D) gives
cover when it passes *through* an obstacle's volume (footprint x [base, top]); a line
that only passes over the top does not. If the fighters are more than 1" apart, the
parts of obstacles within ½" of the attacker do not count: the first ½" of the line
from the attacker's base (every point of that stretch is within ½" of the base, and
no later point is, because the line leaves the base along its closest-point normal).

Platforms: a target on a platform is in cover if the attacker is 2" or more
vertically below it (a vertical-only distance: the rule asks for one).

>>> from tracker.world import Base, Fighter, TerrainPiece, WorldState
>>> b = Base("round", 1.0, 1.0)
>>> wall = TerrainPiece("wall", "obstacle", ((2, -2), (2.5, -2), (2.5, 2), (2, 2)), 1.5)
>>> s = WorldState(fighters=(Fighter("a", 0, 0, 0, 0, b), Fighter("t", 1, 5, 0, 0, b)), terrain=(wall,))
>>> r = cover(s, "a", "t")
>>> r.verdict, r.outcome, r.details["through"][0]["part"]
('yes', 'in cover: +1 Toughness', 'wall')
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Iterable, Sequence

import numpy as np
import shapely
from shapely.geometry import LineString, Point

from tracker.world import Fighter, TerrainPart, WorldState

from . import quotes
from tracker.world import MM_PER_IN

from .measure import closest, part_polygon, sigma_of
from .ruling import NO, TOO_CLOSE, YES, Measurement, Ruling, combined_sigma
from .terrain import is_obstacle, platform_under, terrain_parts, untyped_note

#: "the line is considered to be 1mm wide"
LINE_WIDTH_IN = 1.0 / MM_PER_IN
#: "within ½\" of the fighter making the attack action"
NEAR_ATTACKER_IN = 0.5
#: "If the fighters are more than 1\" away from each other"
EXEMPT_BEYOND_IN = 1.0
#: "2\" or more vertically below"
PLATFORM_DROP_IN = 2.0
_EPS = 1e-9


@dataclass(frozen=True)
class Crossing:
    """Where the line passes through (or over) one obstacle part: parameters along the
    line from the attacker (0) to the target (1), and the 3D points."""

    part: str
    t0: float
    t1: float
    a: tuple[float, float, float]
    b: tuple[float, float, float]

    def to_dict(self) -> dict[str, object]:
        return {"part": self.part, "t0": self.t0, "t1": self.t1, "from": list(self.a), "to": list(self.b)}


def _point(p0: Sequence[float], p1: Sequence[float], t: float) -> tuple[float, float, float]:
    return tuple(float(p0[k] + t * (p1[k] - p0[k])) for k in range(3))  # type: ignore[return-value]


def _z_window(z0: float, z1: float, lo: float, hi: float) -> tuple[float, float] | None:
    """The t-interval in [0, 1] where z0 + t (z1 - z0) lies strictly inside (lo, hi)."""
    dz = z1 - z0
    if abs(dz) < 1e-12:
        return (0.0, 1.0) if lo + _EPS < z0 < hi - _EPS else None
    ta, tb = (lo - z0) / dz, (hi - z0) / dz
    a, b = max(0.0, min(ta, tb)), min(1.0, max(ta, tb))
    return (a, b) if b - a > _EPS else None


def _horizontal_windows(p0, p1, poly, width: float = LINE_WIDTH_IN) -> list[tuple[float, float]]:
    """t-intervals where the ``width``-wide line's horizontal trace touches the footprint."""
    grown = poly.buffer(width / 2.0, quad_segs=4) if width > 0 else poly
    dx, dy = p1[0] - p0[0], p1[1] - p0[1]
    L2 = dx * dx + dy * dy
    if L2 < 1e-18:
        return [(0.0, 1.0)] if grown.covers(Point(p0[0], p0[1])) else []
    inter = LineString([(p0[0], p0[1]), (p1[0], p1[1])]).intersection(grown)
    out = []
    for g in getattr(inter, "geoms", [inter]):
        if g.is_empty:
            continue
        cs = np.asarray(g.coords)
        ts = ((cs[:, 0] - p0[0]) * dx + (cs[:, 1] - p0[1]) * dy) / L2
        out.append((float(ts.min()), float(ts.max())))
    return out


def line_crossings(p0, p1, parts: Iterable[TerrainPart], exempt_t: float = 0.0,
                   standing_on: frozenset[str] = frozenset()) -> tuple[list[Crossing], list[Crossing], list[Crossing]]:
    """Crossings of the line p0 -> p1 (3D) with obstacle ``parts``:
    (through: counted, exempt: through only within the attacker's ½", over: passing
    over the top without entering). ``exempt_t``: the line before it does not count.
    ``standing_on``: ids of the platforms the fighters stand on; the line ends on their
    surface, so their edges are met by the line itself, not its 1mm width."""
    through, exempt, over = [], [], []
    for part in parts:
        poly = part_polygon(part)
        width = 0.0 if part.id in standing_on else LINE_WIDTH_IN
        for h0, h1 in _horizontal_windows(p0, p1, poly, width):
            zw = _z_window(p0[2], p1[2], part.base_z, part.top_z)
            inside = None
            if zw is not None:
                a, b = max(h0, zw[0]), min(h1, zw[1])
                inside = (a, b) if b - a > _EPS else None
            if inside is None:
                zmin = min(p0[2] + h0 * (p1[2] - p0[2]), p0[2] + h1 * (p1[2] - p0[2]))
                if zmin >= part.top_z - _EPS:
                    over.append(Crossing(part.id, h0, h1, _point(p0, p1, h0), _point(p0, p1, h1)))
                continue
            a, b = inside
            if b <= exempt_t + _EPS:
                exempt.append(Crossing(part.id, a, b, _point(p0, p1, a), _point(p0, p1, b)))
                continue
            a = max(a, exempt_t)
            through.append(Crossing(part.id, a, b, _point(p0, p1, a), _point(p0, p1, b)))
    return through, exempt, over


def _obstacles(state: WorldState) -> tuple[TerrainPart, ...]:
    return tuple(p for p in terrain_parts(state) if is_obstacle(p))


def _obstacle_test(attacker: Fighter, target: Fighter, obstacles: Sequence[TerrainPart], exempt_whole_parts: bool,
                   standing_on: frozenset[str] = frozenset()):
    c = closest(attacker, target)
    exempting = c.distance > EXEMPT_BEYOND_IN + _EPS
    exempt_t = min(1.0, NEAR_ATTACKER_IN / c.distance) if exempting and c.distance > 0 else 0.0
    if exempting and exempt_whole_parts:
        near = {p.id for p in obstacles if closest(attacker, p).distance <= NEAR_ATTACKER_IN + _EPS}
        through, exempt, over = line_crossings(c.a, c.b, [p for p in obstacles if p.id not in near], 0.0, standing_on)
        t2, e2, _ = line_crossings(c.a, c.b, [p for p in obstacles if p.id in near], 0.0, standing_on)
        exempt = exempt + t2 + e2
    else:
        through, exempt, over = line_crossings(c.a, c.b, obstacles, exempt_t, standing_on)
    return c, exempting, through, exempt, over


def _shift(f: Fighter, dx: float, dy: float) -> Fighter:
    return replace(f, x=f.x + dx, y=f.y + dy)


def cover(state: WorldState, attacker_id: str, target_id: str, *, exempt_whole_parts: bool = False) -> Ruling:
    """Is ``target_id`` in cover from an attack action by ``attacker_id``?

    ``exempt_whole_parts``: the other reading of the ½" rule, ignoring every obstacle
    part any of which is within ½" of the attacker (default: only the stretch of the
    line within ½" of the attacker is ignored).

    The verdict is "too close to call" when moving either fighter 2 sigma (its
    ``sigma_in``) across or along the line changes the call. The ruling's details hold
    the line (``line``: two 3D points, ``width_in``) and the obstacle parts it passes
    through (``through``), for drawing.
    """
    att, tgt = state.fighter(attacker_id), state.fighter(target_id)
    obstacles = _obstacles(state)
    plat = platform_under(state, tgt)
    plat_a = platform_under(state, att)
    standing = frozenset(p.id for p in (plat, plat_a) if p is not None)
    c, exempting, through, exempt, over = _obstacle_test(att, tgt, obstacles, exempt_whole_parts, standing)
    obstacle_cover = bool(through)
    drop = float(tgt.z) - float(att.z)
    platform_cover = plat is not None and drop >= PLATFORM_DROP_IN - _EPS
    in_cover = obstacle_cover or platform_cover

    # how sure: re-rule the obstacle line with each fighter moved 2 sigma
    sa, st = sigma_of(att), sigma_of(tgt)
    flips: list[str] = []
    if (sa > 0 or st > 0) and not platform_cover:
        dx, dy = c.b[0] - c.a[0], c.b[1] - c.a[1]
        L = math.hypot(dx, dy)
        ux, uy = (dx / L, dy / L) if L > 1e-12 else (1.0, 0.0)
        offs = [(0.0, 0.0), (-uy, ux), (uy, -ux), (ux, uy), (-ux, -uy)]
        for oa in offs:
            for ot in offs:
                if oa == ot == (0.0, 0.0):
                    continue
                a2 = _shift(att, 2 * sa * oa[0], 2 * sa * oa[1])
                t2 = _shift(tgt, 2 * st * ot[0], 2 * st * ot[1])
                if (sa == 0 and oa != (0.0, 0.0)) or (st == 0 and ot != (0.0, 0.0)):
                    continue
                if bool(_obstacle_test(a2, t2, obstacles, exempt_whole_parts, standing)[2]) != obstacle_cover:
                    flips.append(f"attacker {oa[0]*2*sa:+.3f},{oa[1]*2*sa:+.3f} target {ot[0]*2*st:+.3f},{ot[1]*2*st:+.3f}")
    verdict = TOO_CLOSE if flips else (YES if in_cover else NO)
    sig = combined_sigma(sa, st)

    also = [quotes.COVER_TOUGHNESS]
    if exempting:
        also.append(quotes.COVER_NEAR_ATTACKER)
    if over:
        also.append(quotes.COVER_THROUGH_NOT_OVER)
    notes = []
    if exempting and exempt:
        notes.append("obstacle within 1/2\" of the attacker not counted: " + ", ".join(sorted({x.part for x in exempt})))
    if over and not obstacle_cover:
        notes.append("line passes over, not through: " + ", ".join(sorted({x.part for x in over})))
    if att.occluded or tgt.occluded:
        notes.append("occluded fighter measured at its last known position")
    untyped = untyped_note(state, LineString([c.a[:2], c.b[:2]]).buffer(LINE_WIDTH_IN / 2))
    if untyped:
        notes.append(untyped)
    if flips:
        notes.append(f"too close to call: {len(flips)} of the 2-sigma shifts change the call")
    length = sum((x.t1 - x.t0) * c.distance for x in through)
    if obstacle_cover or not platform_cover:
        rule, measured, threshold, comp = quotes.COVER_OBSTACLE, length, 0.0, ">"
        if platform_cover:
            also.append(quotes.COVER_PLATFORM)
    else:
        rule, measured, threshold, comp = quotes.COVER_PLATFORM, drop, PLATFORM_DROP_IN, ">="
    meas = [Measurement(f"{attacker_id}->{target_id} line length through obstacles", length, 0.0, sig,
                        TOO_CLOSE if flips else (YES if obstacle_cover else NO), ">"),
            Measurement(f"{target_id} above {attacker_id} (vertical)", drop, PLATFORM_DROP_IN, 0.0,
                        YES if platform_cover else NO, ">=",
                        None if plat is not None else "target not on a platform"),
            Measurement(f"{attacker_id}-{target_id} distance (for the 1/2\" rule)", c.distance, EXEMPT_BEYOND_IN,
                        sig, YES if exempting else NO, ">")]
    outcome = "in cover: +1 Toughness" if in_cover else "not in cover"
    if verdict == TOO_CLOSE:
        outcome = "too close to call: " + outcome
    return Ruling(
        question="cover", subject=f"{attacker_id}->{target_id}", rule=rule, verdict=verdict,
        measured=measured, threshold=threshold, margin=sig, comparison=comp, outcome=outcome,
        measurements=tuple(meas), notes=tuple(notes), also=tuple(also),
        details={"line": [list(c.a), list(c.b)], "width_in": LINE_WIDTH_IN, "distance": c.distance,
                 "through": [x.to_dict() for x in through], "exempt": [x.to_dict() for x in exempt],
                 "over": [x.to_dict() for x in over],
                 "near_attacker_radius_in": NEAR_ATTACKER_IN if exempting else None,
                 "obstacle_cover": obstacle_cover, "platform_cover": platform_cover,
                 "platform": plat.id if plat is not None else None, "toughness_bonus": 1 if in_cover else 0,
                 "shifts_that_change_the_call": flips})


# ---------------------------------------------------------------------------------------
# All pairs at once (vectorised): the web view's "who has cover from whom"
# ---------------------------------------------------------------------------------------
def _closest_all(fs: Sequence[Fighter]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Closest points of every unordered pair: (i, j, P_i, P_j, distance)."""
    n = len(fs)
    i, j = np.triu_indices(n, k=1)
    x = np.array([f.x for f in fs], float)
    y = np.array([f.y for f in fs], float)
    z0 = np.array([f.z for f in fs], float)
    z1 = z0 + np.array([f.base.thickness_in for f in fs], float)
    roundish = np.array([f.base.shape in ("round", "oval") and abs(f.base.width_in - f.base.depth_in) < 1e-12 for f in fs])
    r = np.array([f.base.width_in / 2 for f in fs], float)
    dx, dy = x[j] - x[i], y[j] - y[i]
    dc = np.hypot(dx, dy)
    h = np.maximum(dc - r[i] - r[j], 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        ux, uy = np.where(dc > 0, dx / dc, 1.0), np.where(dc > 0, dy / dc, 0.0)
    ri = np.where(h > 0, r[i], np.minimum(r[i], dc))
    pi = np.stack([x[i] + ux * ri, y[i] + uy * ri], 1)
    pj = np.stack([x[j] - ux * np.where(h > 0, r[j], dc - ri), y[j] - uy * np.where(h > 0, r[j], dc - ri)], 1)
    # vertical: interval gap, overlap meets in the middle
    lo, hi = np.maximum(z0[i], z0[j]), np.minimum(z1[i], z1[j])
    below = z1[i] < z0[j]
    above = z1[j] < z0[i]
    zi = np.where(below, z1[i], np.where(above, z0[i], 0.5 * (lo + hi)))
    zj = np.where(below, z0[j], np.where(above, z1[j], 0.5 * (lo + hi)))
    Pi = np.column_stack([pi, zi])
    Pj = np.column_stack([pj, zj])
    d = np.hypot(h, zj - zi)
    for k in np.nonzero(~(roundish[i] & roundish[j]) | (h <= 0))[0]:  # ovals, rectangles, overlaps: one by one
        c = closest(fs[i[k]], fs[j[k]])
        Pi[k], Pj[k], d[k] = c.a, c.b, c.distance
    return i, j, Pi, Pj, d


def cover_all_pairs(state: WorldState) -> dict[tuple[str, str], bool]:
    """Obstacle-or-platform cover for every ordered (attacker, target) pair of fighters
    on different sides, computed in one vectorised pass (shapely STRtree + numpy).
    Gives the same answer as :func:`cover` (without its 2-sigma uncertainty check)."""
    fs = [f for f in state.fighters]
    n = len(fs)
    out: dict[tuple[str, str], bool] = {}
    if n < 2:
        return out
    i, j, Pi, Pj, d = _closest_all(fs)
    obstacles = _obstacles(state)
    m = len(i)
    cov_ij = np.zeros(m, bool)  # i attacks j
    cov_ji = np.zeros(m, bool)  # j attacks i
    under = [platform_under(state, f) for f in fs] if any(f.z > 0 for f in fs) else [None] * n
    if obstacles:
        raw = [part_polygon(p) for p in obstacles]
        polys = [g.buffer(LINE_WIDTH_IN / 2.0, quad_segs=4) for g in raw]
        index = {p.id: k for k, p in enumerate(obstacles)}
        stand = np.array([index.get(u.id, -1) if u is not None else -1 for u in under], int)
        base_z = np.array([p.base_z for p in obstacles], float)
        top_z = np.array([p.top_z for p in obstacles], float)
        seg = np.stack([Pi[:, :2], Pj[:, :2]], 1)
        flat = np.hypot(seg[:, 1, 0] - seg[:, 0, 0], seg[:, 1, 1] - seg[:, 0, 1]) < 1e-9
        seg[flat, 1, 0] += 1e-7  # a vertical line: give it a trace shapely can use
        lines = shapely.linestrings(seg)
        tree = shapely.STRtree(polys)
        li, pk = tree.query(lines, predicate="intersects")
        if len(li):
            own = (stand[i[li]] == pk) | (stand[j[li]] == pk)   # a platform a fighter stands on
            geoms = np.where(own, np.asarray(raw, dtype=object)[pk], np.asarray(polys, dtype=object)[pk])
            inter = shapely.intersection(lines[li], geoms)
            parts, owner = shapely.get_parts(inter, return_index=True)
            li2, pk2 = li[owner], pk[owner]
            n_pts = shapely.get_num_coordinates(parts)
            ok = n_pts > 0
            parts, li2, pk2 = parts[ok], li2[ok], pk2[ok]
            c0 = shapely.get_coordinates(shapely.get_point(parts, 0))
            c1 = shapely.get_coordinates(shapely.get_point(parts, -1))
            single = shapely.get_type_id(parts) == 0
            if single.any():  # Point results
                pc = shapely.get_coordinates(parts[single])
                c0 = c0.copy(); c1 = c1.copy()
                c0[single], c1[single] = pc, pc
            a0, a1 = seg[li2, 0], seg[li2, 1]
            dd = a1 - a0
            L2 = (dd ** 2).sum(1)
            t0 = ((c0 - a0) * dd).sum(1) / L2
            t1 = ((c1 - a0) * dd).sum(1) / L2
            h0, h1 = np.minimum(t0, t1), np.maximum(t0, t1)
            z0, z1 = Pi[li2, 2], Pj[li2, 2]
            dz = z1 - z0
            lo, hi = base_z[pk2], top_z[pk2]
            with np.errstate(divide="ignore", invalid="ignore"):
                ta, tb = (lo - z0) / dz, (hi - z0) / dz
            flatz = np.abs(dz) < 1e-12
            inside_flat = (z0 > lo + _EPS) & (z0 < hi - _EPS)
            za = np.where(flatz, np.where(inside_flat, 0.0, 2.0), np.maximum(0.0, np.minimum(ta, tb)))
            zb = np.where(flatz, np.where(inside_flat, 1.0, -1.0), np.minimum(1.0, np.maximum(ta, tb)))
            a, b = np.maximum(h0, za), np.minimum(h1, zb)
            dist = d[li2]
            exempting = dist > EXEMPT_BEYOND_IN + _EPS
            with np.errstate(divide="ignore"):
                et = np.where(exempting & (dist > 0), np.minimum(1.0, NEAR_ATTACKER_IN / np.where(dist > 0, dist, 1)), 0.0)
            hit_ij = b - np.maximum(a, et) > _EPS
            hit_ji = np.minimum(b, 1.0 - et) - a > _EPS
            np.logical_or.at(cov_ij, li2, hit_ij)
            np.logical_or.at(cov_ji, li2, hit_ji)
    plat = [u is not None for u in under]
    zs = np.array([f.z for f in fs], float)
    for k in range(m):
        a_, b_ = int(i[k]), int(j[k])
        fa, fb = fs[a_], fs[b_]
        if fa.side != fb.side:
            out[(fa.id, fb.id)] = bool(cov_ij[k]) or (plat[b_] and zs[b_] - zs[a_] >= PLATFORM_DROP_IN - _EPS)
            out[(fb.id, fa.id)] = bool(cov_ji[k]) or (plat[a_] and zs[a_] - zs[b_] >= PLATFORM_DROP_IN - _EPS)
    return out
