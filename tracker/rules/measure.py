"""Measuring: closest points of bases, to token centres, in three dimensions.

Conventions (rules README): distances between fighters are measured between the closest
points of their bases; to tokens and markers, to the token's centre; distances are
three-dimensional (a fighter on a platform is measured through the air); a base occupies
``z .. z + thickness_in`` above the point it stands on; "within" means "at that distance
or less". A vertical-only distance is used only where a rule asks for one
(:func:`vertical_gap`).

Round, oval and rectangular bases are measured exactly (ovals by an exact point-to-
ellipse projection, refined pairwise by alternating projections; result within 1e-6").

>>> from tracker.world import Base, Fighter, Token
>>> a = Fighter("a", 0, 0.0, 0.0, 0.0, Base("round", 1.0, 1.0))
>>> b = Fighter("b", 1, 4.0, 0.0, 0.0, Base("round", 1.0, 1.0))
>>> distance(a, b)
3.0
>>> round(distance(a, Token("t", "objective", 0.0, 3.5)), 6)
3.0
>>> up = Fighter("u", 0, 0.0, 0.0, 3.0, Base("round", 1.0, 1.0))   # on a 3" platform
>>> distance(up, Token("t", "objective", 0.0, 0.0))                # straight through the air
3.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Union

import numpy as np
import shapely
from shapely.geometry import Point, Polygon

from tracker.world import Base, Fighter, TerrainPart, Token

XY = tuple[float, float]
XYZ = tuple[float, float, float]


# ---------------------------------------------------------------------------------------
# Horizontal shapes
# ---------------------------------------------------------------------------------------
class Shape2D:
    """A convex horizontal shape that can project a point onto itself exactly."""

    cx: float
    cy: float

    def project(self, x: float, y: float) -> XY:  # pragma: no cover - abstract
        raise NotImplementedError

    def polygon(self, resolution: int = 64) -> Polygon:  # pragma: no cover - abstract
        raise NotImplementedError

    def contains(self, x: float, y: float) -> bool:
        px, py = self.project(x, y)
        return math.hypot(px - x, py - y) <= 1e-12


@dataclass(frozen=True)
class PointShape(Shape2D):
    cx: float
    cy: float

    def project(self, x: float, y: float) -> XY:
        return (self.cx, self.cy)

    def polygon(self, resolution: int = 64) -> Polygon:
        return Point(self.cx, self.cy).buffer(1e-9, 4)


@dataclass(frozen=True)
class Circle(Shape2D):
    cx: float
    cy: float
    r: float

    def project(self, x: float, y: float) -> XY:
        dx, dy = x - self.cx, y - self.cy
        d = math.hypot(dx, dy)
        if d <= self.r:
            return (x, y)
        return (self.cx + dx * self.r / d, self.cy + dy * self.r / d)

    def polygon(self, resolution: int = 64) -> Polygon:
        return _ellipse_polygon(self.cx, self.cy, self.r, self.r, 0.0, resolution)


def _rot(angle_deg: float) -> tuple[float, float]:
    a = math.radians(angle_deg)
    return math.cos(a), math.sin(a)


@dataclass(frozen=True)
class Ellipse(Shape2D):
    cx: float
    cy: float
    a: float  # semi-axis along the base's own x
    b: float  # semi-axis along the base's own y
    angle_deg: float = 0.0

    def project(self, x: float, y: float) -> XY:
        c, s = _rot(self.angle_deg)
        dx, dy = x - self.cx, y - self.cy
        u, v = c * dx + s * dy, -s * dx + c * dy
        if (u / self.a) ** 2 + (v / self.b) ** 2 <= 1.0:
            return (x, y)
        pu, pv = _ellipse_closest(self.a, self.b, u, v)
        return (self.cx + c * pu - s * pv, self.cy + s * pu + c * pv)

    def polygon(self, resolution: int = 64) -> Polygon:
        return _ellipse_polygon(self.cx, self.cy, self.a, self.b, self.angle_deg, resolution)


@dataclass(frozen=True)
class Rect(Shape2D):
    cx: float
    cy: float
    hw: float
    hd: float
    angle_deg: float = 0.0

    def project(self, x: float, y: float) -> XY:
        c, s = _rot(self.angle_deg)
        dx, dy = x - self.cx, y - self.cy
        u, v = c * dx + s * dy, -s * dx + c * dy
        u, v = min(max(u, -self.hw), self.hw), min(max(v, -self.hd), self.hd)
        return (self.cx + c * u - s * v, self.cy + s * u + c * v)

    def polygon(self, resolution: int = 64) -> Polygon:
        c, s = _rot(self.angle_deg)
        pts = [(u, v) for u, v in ((-self.hw, -self.hd), (self.hw, -self.hd), (self.hw, self.hd), (-self.hw, self.hd))]
        return Polygon([(self.cx + c * u - s * v, self.cy + s * u + c * v) for u, v in pts])


@lru_cache(maxsize=256)
def _unit_ellipse(resolution: int) -> np.ndarray:
    t = np.linspace(0.0, 2 * math.pi, resolution, endpoint=False)
    return np.stack([np.cos(t), np.sin(t)], axis=1)


def _ellipse_polygon(cx: float, cy: float, a: float, b: float, angle_deg: float, resolution: int) -> Polygon:
    u = _unit_ellipse(max(8, int(resolution))) * np.array([a, b])
    c, s = _rot(angle_deg)
    x = cx + c * u[:, 0] - s * u[:, 1]
    y = cy + s * u[:, 0] + c * u[:, 1]
    return Polygon(np.stack([x, y], axis=1))


def _ellipse_closest(a: float, b: float, u: float, v: float) -> XY:
    """Closest point on the ellipse (u/a)^2 + (v/b)^2 = 1 to an outside point (u, v)
    (Eberly, "Distance from a point to an ellipse": bisection on the Lagrange root)."""
    su, sv = (1.0 if u >= 0 else -1.0), (1.0 if v >= 0 else -1.0)
    u, v = abs(u), abs(v)
    swap = a < b
    if swap:
        a, b, u, v = b, a, v, u
    if v > 0:
        if u > 0:
            z0, z1 = u / a, v / b
            g = z0 * z0 + z1 * z1 - 1.0
            r0 = (a / b) ** 2
            n0 = r0 * z0
            s0, s1 = z1 - 1.0, (math.hypot(n0, z1) if g >= 0 else 0.0) - 1.0
            s = 0.0
            for _ in range(200):
                s = 0.5 * (s0 + s1)
                if s == s0 or s == s1:
                    break
                ratio0, ratio1 = n0 / (s + r0), z1 / (s + 1.0)
                gs = ratio0 * ratio0 + ratio1 * ratio1 - 1.0
                if gs > 0:
                    s0 = s
                elif gs < 0:
                    s1 = s
                else:
                    break
            pu, pv = r0 * u / (s + r0), v / (s + 1.0)
        else:
            pu, pv = 0.0, b
    else:
        numer0, denom0 = a * u, a * a - b * b
        if numer0 < denom0:
            xde0 = numer0 / denom0
            pu, pv = a * xde0, b * math.sqrt(max(0.0, 1.0 - xde0 * xde0))
        else:
            pu, pv = a, 0.0
    if swap:
        pu, pv = pv, pu
    return (su * pu, sv * pv)


def base_shape(base: Base, x: float, y: float) -> Shape2D:
    """The horizontal shape of a base centred at (x, y).

    >>> base_shape(Base("oval", 2.0, 1.0), 0, 0).project(5, 0)
    (1.0, 0.0)
    """
    if base.shape in ("round", "oval"):
        if abs(base.width_in - base.depth_in) < 1e-12:
            return Circle(x, y, base.width_in / 2.0)
        return Ellipse(x, y, base.width_in / 2.0, base.depth_in / 2.0, base.angle_deg)
    if base.shape == "rect":
        return Rect(x, y, base.width_in / 2.0, base.depth_in / 2.0, base.angle_deg)
    raise ValueError(f"{base.shape!r} is not a base shape (round, oval, rect)")


def fighter_shape(f: Fighter) -> Shape2D:
    return base_shape(f.base, f.x, f.y)


def footprint(f: Fighter, resolution: int = 64) -> Polygon:
    """The base's footprint as a shapely polygon (ovals and circles as ``resolution``-gons)."""
    return fighter_shape(f).polygon(resolution)


def part_polygon(part: TerrainPart) -> Polygon:
    poly = Polygon(part.footprint)
    return poly if poly.is_valid else poly.buffer(0)


@dataclass(frozen=True)
class PolygonShape(Shape2D):
    """A terrain footprint (not necessarily convex): projection via shapely."""

    poly: Polygon

    @property
    def cx(self) -> float:  # type: ignore[override]
        return self.poly.centroid.x

    @property
    def cy(self) -> float:  # type: ignore[override]
        return self.poly.centroid.y

    def project(self, x: float, y: float) -> XY:
        p = Point(x, y)
        if self.poly.covers(p):
            return (x, y)
        q = shapely.shortest_line(self.poly, p).coords[0]
        return (q[0], q[1])

    def polygon(self, resolution: int = 64) -> Polygon:
        return self.poly


# ---------------------------------------------------------------------------------------
# Closest points
# ---------------------------------------------------------------------------------------
def closest_points_2d(a: Shape2D, b: Shape2D) -> tuple[float, XY, XY]:
    """(horizontal distance, point on ``a``, point on ``b``); overlapping shapes give
    distance 0 and a common point.

    >>> closest_points_2d(Circle(0, 0, 1), Rect(3, 0, 0.5, 0.5))
    (1.5, (1.0, 0.0), (2.5, 0.0))
    """
    if isinstance(b, PointShape) and not isinstance(a, PointShape):
        d, pb, pa = closest_points_2d(b, a)
        return d, pa, pb
    if isinstance(a, PointShape):
        px, py = b.project(a.cx, a.cy)
        return math.hypot(px - a.cx, py - a.cy), (a.cx, a.cy), (px, py)
    if isinstance(a, Circle) or isinstance(b, Circle):
        flip = not isinstance(a, Circle)
        c, o = (b, a) if flip else (a, b)
        assert isinstance(c, Circle)
        qx, qy = o.project(c.cx, c.cy)
        dx, dy = qx - c.cx, qy - c.cy
        dc = math.hypot(dx, dy)
        if dc > c.r:
            p = (c.cx + dx * c.r / dc, c.cy + dy * c.r / dc)
            d = dc - c.r
            q = (qx, qy)
        else:
            d = 0.0
            p = q = _common_point(a, b)
        return (d, q, p) if flip else (d, p, q)
    pa_, pb_ = a.polygon(128), b.polygon(128)
    if pa_.intersects(pb_):
        m = _common_point(a, b)
        return 0.0, m, m
    line = shapely.shortest_line(pa_, pb_).coords
    p, q = line[0], line[1]
    if isinstance(a, Rect) and isinstance(b, Rect):
        d = math.hypot(q[0] - p[0], q[1] - p[1])
        # parallel edges have a stretch of closest pairs: take the middle of it, so the
        # answer does not depend on which end a library happens to pick. The middle is
        # that of both shapes' stretches together, and each point the nearest on its own
        # shape to it: the same pair whichever shape is named first (edges a hundredth of
        # a degree off parallel had given pairs 1e-4 in apart, one way round or the other)
        near_a = pa_.intersection(pb_.buffer(d + 1e-7, quad_segs=64))
        near_b = pb_.intersection(pa_.buffer(d + 1e-7, quad_segs=64))
        if not near_a.is_empty and near_a.area > 0 and not near_b.is_empty and near_b.area > 0:
            m = shapely.union(near_a, near_b).centroid
            p = a.project(m.x, m.y)
            q = b.project(m.x, m.y)
            d = math.hypot(q[0] - p[0], q[1] - p[1])
        return d, (p[0], p[1]), (q[0], q[1])
    # Refine the polygon approximation exactly. Alternating projections crawl where two
    # boundaries nearly touch along flat stretches (an oval's end 0.0005 in from another's
    # side: 4,300 steps); instead the point on the oval is found by its outward normal's
    # angle (the nearest point of it to a far point that way), the angle minimising the
    # gap to the other shape's nearest point, near the polygons' answer.
    if isinstance(a, Ellipse):
        return closest_points_2d_refined(a, b, p, q)
    if isinstance(b, Ellipse):
        d, pb, pa = closest_points_2d_refined(b, a, q, p)
        return d, pa, pb
    # (no oval: straight edges, where alternating projections settle in a step or two)
    p = a.project(*q)
    for _ in range(100):
        q2 = b.project(*p)
        p2 = a.project(*q2)
        done = math.hypot(p2[0] - p[0], p2[1] - p[1]) < 1e-12
        p, q = p2, q2
        if done:
            break
    return math.hypot(q[0] - p[0], q[1] - p[1]), (p[0], p[1]), (q[0], q[1])


def closest_points_2d_refined(a: "Ellipse", b: Shape2D, p: XY, q: XY) -> tuple[float, XY, XY]:
    """``closest_points_2d`` of an oval ``a`` and a separate shape ``b`` from a first
    guess (``p`` on ``a``, ``q`` on ``b``): the exact pair, within 1e-10 in."""
    from scipy.optimize import minimize_scalar

    far = 1e3 * (max(a.a, a.b) + math.hypot(q[0] - a.cx, q[1] - a.cy))

    def on_a(t: float) -> XY:
        return a.project(a.cx + far * math.cos(t), a.cy + far * math.sin(t))

    def gap(t: float) -> float:
        pa = on_a(t)
        pb = b.project(*pa)
        return math.hypot(pb[0] - pa[0], pb[1] - pa[1])

    t0 = math.atan2(q[1] - p[1], q[0] - p[0])  # (at the closest pair, a's outward normal points at b)
    res = minimize_scalar(gap, bounds=(t0 - 0.2, t0 + 0.2), method="bounded", options={"xatol": 1e-12})
    pa = on_a(float(res.x))
    pb = b.project(*pa)
    return math.hypot(pb[0] - pa[0], pb[1] - pa[1]), (pa[0], pa[1]), (pb[0], pb[1])


def _common_point(a: Shape2D, b: Shape2D) -> XY:
    """A point both overlapping shapes cover, the same whichever is named first: the
    centroid of their overlap (e.g. where a fighter on a platform stands over another)."""
    inter = a.polygon(128).intersection(b.polygon(128))
    if inter.is_empty or inter.area <= 0:
        px, py = a.project(b.cx, b.cy)
        qx, qy = b.project(a.cx, a.cy)
        return (0.5 * (px + qx), 0.5 * (py + qy))
    m = inter.centroid
    return (m.x, m.y)


def _interval_gap(a0: float, a1: float, b0: float, b1: float) -> tuple[float, float, float]:
    """(gap, z on a, z on b) between intervals [a0, a1] and [b0, b1]; overlapping
    intervals meet at the middle of their overlap."""
    if a1 < b0:
        return b0 - a1, a1, b0
    if b1 < a0:
        return a0 - b1, a0, b1
    lo, hi = max(a0, b0), min(a1, b1)
    m = 0.5 * (lo + hi)
    return 0.0, m, m


@dataclass(frozen=True)
class Closest:
    """The closest points of two bodies: ``distance`` (3D), its ``horizontal`` and
    ``vertical`` components, and the points ``a`` and ``b`` (x, y, z)."""

    distance: float
    horizontal: float
    vertical: float
    a: XYZ
    b: XYZ

    def to_dict(self) -> dict[str, object]:
        return {"distance": self.distance, "horizontal": self.horizontal, "vertical": self.vertical,
                "a": list(self.a), "b": list(self.b)}


Body = Union[Fighter, Token, TerrainPart, tuple]


def _body(x: Body) -> tuple[Shape2D, float, float]:
    if isinstance(x, Fighter):
        return fighter_shape(x), float(x.z), float(x.z) + float(x.base.thickness_in)
    if isinstance(x, Token):
        return PointShape(float(x.x), float(x.y)), float(x.z), float(x.z)
    if isinstance(x, TerrainPart):
        return PolygonShape(part_polygon(x)), float(x.base_z), x.top_z
    if isinstance(x, tuple) and len(x) == 3:
        return PointShape(float(x[0]), float(x[1])), float(x[2]), float(x[2])
    raise TypeError(f"cannot measure {type(x).__name__}")


def closest(a: Body, b: Body) -> Closest:
    """Closest points between two bodies: fighters (base prisms), tokens (their centre),
    terrain parts (footprint prisms) or (x, y, z) points.

    >>> from tracker.world import Base, Fighter
    >>> f = Fighter("a", 0, 0.0, 0.0, 0.0, Base("rect", 2.0, 1.0))
    >>> c = closest(f, (3.0, 0.0, 1.0))
    >>> c.horizontal, round(c.vertical, 4), c.a[:2]
    (2.0, 0.8425, (1.0, 0.0))
    """
    sa, a0, a1 = _body(a)
    sb, b0, b1 = _body(b)
    h, pa, pb = closest_points_2d(sa, sb)
    v, za, zb = _interval_gap(a0, a1, b0, b1)
    return Closest(math.hypot(h, v), h, v, (pa[0], pa[1], za), (pb[0], pb[1], zb))


def distance(a: Body, b: Body) -> float:
    """Three-dimensional distance between the closest points of two bodies (inches)."""
    return closest(a, b).distance


def horizontal_distance(a: Body, b: Body) -> float:
    """Horizontal distance only, for rules that say "horizontally"."""
    return closest(a, b).horizontal


def vertical_gap(a: Fighter, b: Fighter) -> float:
    """How far ``b`` stands above ``a`` (the surfaces they stand on): a vertical-only
    distance, for rules that ask for one ("2\\" or more vertically below").

    >>> from tracker.world import Base, Fighter
    >>> vertical_gap(Fighter("a", 0, 0, 0, 0.0, Base.round_mm(32)), Fighter("b", 1, 9, 9, 3.0, Base.round_mm(32)))
    3.0
    """
    return float(b.z) - float(a.z)


def sigma_of(x: Body) -> float:
    return float(getattr(x, "sigma_in", 0.0) or 0.0)
