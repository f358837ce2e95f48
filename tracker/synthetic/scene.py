"""What is on the table, as 3D shapes, and the ray-casting renderer that draws it.

A :class:`Table` is the static part (mat, the four table markers, terrain boxes with
their tags, the light). Movers (:class:`Fighter`, :class:`Token`, :class:`Hand`,
:class:`Board`) are lists of simple parts (upright cylinders, ellipsoids, a flat
rectangle). :class:`Renderer` casts one ray per subpixel: the static table once per
camera pose (cached), then per frame only the image regions the movers and their
shadows can touch, with a z-buffer and an id buffer (for the truth's visibility).

>>> import numpy as np
>>> from tracker.synthetic.camera import overhead_camera
>>> rng = np.random.default_rng(1)
>>> table = Table.random(rng)
>>> cam = overhead_camera(rng, 320, 180)
>>> img, info = Renderer(table, cam).render([])
>>> img.shape, img.dtype
((180, 320, 3), dtype('float32'))
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import cv2
import numpy as np
from shapely.geometry import Point, Polygon, box as shp_box
from shapely import affinity

from .camera import Camera
from .raycast import INF, hit_box, hit_cylinder, hit_ellipsoid, hit_plane_z, hit_rect
from .textures import PAPER, cloth_texture, fractal_noise, mat_texture, sample, stone_texture, tag_image, token_texture

MM = 1 / 25.4
AMBIENT, DIFFUSE = 0.42, 0.62
ID_FLOOR, ID_TERRAIN, ID_FIGHTER, ID_TOKEN, ID_HAND, ID_BOARD = 0, 1000, 1, 2000, 3000, 4000


# ----------------------------------------------------------------------------- parts
@dataclass
class Cyl:
    """Upright cylinder; ``top`` colours its cap from local (x, y) in inches."""
    cx: float
    cy: float
    r: float
    z0: float
    z1: float
    side_bgr: tuple
    top: object  # callable(lx, ly) -> (h, w, 3) albedo

    def aabb(self):
        return np.array([self.cx - self.r, self.cy - self.r, self.z0]), np.array([self.cx + self.r, self.cy + self.r, self.z1])

    def hit(self, o, d):
        t, n, top = hit_cylinder(o, d, self.cx, self.cy, self.r, self.z0, self.z1)
        alb = np.empty(t.shape + (3,), np.float32)
        alb[:] = self.side_bgr
        if top.any():
            tt = np.where(top, t, 0)
            px = o[0] + tt * d[0] - self.cx
            py = o[1] + tt * d[1] - self.cy
            alb = np.where(top[..., None], self.top(px, py), alb)
        return t, n, alb


@dataclass
class Prism:
    """Upright prism turned ``yaw`` (rad) about z: a box (``shape`` "rect", half sizes
    ``hx``, ``hy`` along its own axes) or an elliptic cylinder ("oval", semi-axes
    ``hx``, ``hy``). ``top`` colours its top face from local (u, v) inches, u along
    the prism's own x axis."""
    cx: float
    cy: float
    hx: float
    hy: float
    yaw: float
    z0: float
    z1: float
    side_bgr: tuple
    top: object  # callable(u, v) -> (h, w, 3) albedo
    shape: str = "rect"

    def aabb(self):
        c, s = abs(math.cos(self.yaw)), abs(math.sin(self.yaw))
        if self.shape == "rect":
            ex, ey = c * self.hx + s * self.hy, s * self.hx + c * self.hy
        else:
            ex, ey = math.hypot(c * self.hx, s * self.hy), math.hypot(s * self.hx, c * self.hy)
        return np.array([self.cx - ex, self.cy - ey, self.z0]), np.array([self.cx + ex, self.cy + ey, self.z1])

    def hit(self, o, d):
        c, s = np.float32(math.cos(self.yaw)), np.float32(math.sin(self.yaw))
        if self.shape == "rect":
            t, n, face = hit_box(o, d, self.cx, self.cy, self.yaw, self.hx, self.hy, self.z0, self.z1)
            top = (face == 4) & np.isfinite(t)
        else:
            # An elliptic cylinder is a unit cylinder in coordinates scaled by 1/hx, 1/hy
            # along its own axes; the ray parameter t is the same in both.
            ox, oy = o[0] - self.cx, o[1] - self.cy
            lo = ((ox * c + oy * s) / self.hx, (-ox * s + oy * c) / self.hy, o[2])
            ld = ((d[0] * c + d[1] * s) / self.hx, (-d[0] * s + d[1] * c) / self.hy, d[2])
            t, (ux, uy, nz), top = hit_cylinder(lo, ld, 0.0, 0.0, 1.0, self.z0, self.z1)
            lnx, lny = ux / self.hx, uy / self.hy
            ln = np.sqrt(lnx * lnx + lny * lny + nz * nz) + 1e-12
            n = ((lnx * c - lny * s) / ln, (lnx * s + lny * c) / ln, nz / ln)
        alb = np.empty(t.shape + (3,), np.float32)
        alb[:] = self.side_bgr
        if top.any():
            tt = np.where(top, t, 0)
            px = o[0] + tt * d[0] - self.cx
            py = o[1] + tt * d[1] - self.cy
            alb = np.where(top[..., None], self.top(px * c + py * s, -px * s + py * c), alb)
        return t, n, alb

    def moved(self, dx: float, dy: float, dz: float) -> "Prism":
        return Prism(self.cx + dx, self.cy + dy, self.hx, self.hy, self.yaw, self.z0 + dz, self.z1 + dz,
                     self.side_bgr, self.top, self.shape)


def _flat(bgr):
    col = np.asarray(bgr, np.float32)

    def top(u, v):
        return np.broadcast_to(col, np.shape(u) + (3,))
    return top


@dataclass
class Ell:
    """Ellipsoid c + M u, |u| <= 1, of one colour (a slight mottling is added)."""
    c: np.ndarray
    M: np.ndarray
    bgr: tuple
    zmin: float = -np.inf

    def __post_init__(self):
        self.Minv = np.linalg.inv(self.M)

    def aabb(self):
        e = np.sqrt((self.M ** 2).sum(axis=1))
        lo, hi = self.c - e, self.c + e
        lo[2] = max(lo[2], self.zmin)
        return lo, hi

    def hit(self, o, d):
        t, n = hit_ellipsoid(o, d, self.c, self.Minv, self.zmin)
        alb = np.empty(t.shape + (3,), np.float32)
        alb[:] = self.bgr
        return t, n, alb

    def moved(self, dx: float, dy: float, dz: float) -> "Ell":
        return Ell(self.c + np.array([dx, dy, dz]), self.M, self.bgr, self.zmin + dz)


@dataclass
class Rect:
    """Flat printed rectangle (the calibration board): texture columns along ``ex``."""
    origin: np.ndarray
    ex: np.ndarray
    ey: np.ndarray
    w: float
    h: float
    tex: np.ndarray
    ppi: float

    def corners(self):
        o, ex, ey = self.origin, self.ex, self.ey
        return np.array([o, o + self.w * ex, o + self.w * ex + self.h * ey, o + self.h * ey])

    def aabb(self):
        c = self.corners()
        return c.min(0), c.max(0)

    def hit(self, o, d):
        t, a, b = hit_rect(o, d, self.origin, self.ex, self.ey, self.w, self.h)
        n = -np.cross(self.ex, self.ey)  # printed face looks up at the camera
        shp = t.shape
        alb = sample(self.tex, np.broadcast_to(a * self.ppi, shp), np.broadcast_to(b * self.ppi, shp))
        return t, tuple(np.full(shp, v, np.float32) for v in n), alb


def ellipsoid(centre, axes, yaw: float = 0.0, pitch: float = 0.0, zmin: float = -np.inf, bgr=(128, 128, 128)) -> Ell:
    """Ellipsoid with semi-axes ``axes`` (along its own x, y, z), pitched about its y axis
    then turned ``yaw`` about world z."""
    cy, sy, cp, sp = math.cos(yaw), math.sin(yaw), math.cos(pitch), math.sin(pitch)
    Rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1.0]])
    Ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    return Ell(np.asarray(centre, float), Rz @ Ry @ np.diag(axes), tuple(float(c) for c in bgr), zmin)


# ----------------------------------------------------------------------------- movers
@dataclass
class Mover:
    """Anything drawn per frame: ``uid`` is its id-buffer value."""
    uid: int
    parts: list
    casts_shadow: bool = True

    def aabb(self):
        los, his = zip(*(p.aabb() for p in self.parts))
        return np.min(los, 0), np.max(his, 0)


PAINTS = [  # realistic miniature paints (BGR)
    (60, 70, 80), (35, 40, 45), (150, 160, 170), (110, 120, 125), (40, 80, 120), (30, 60, 95),
    (120, 170, 200), (140, 190, 215), (80, 110, 150), (60, 90, 60), (45, 70, 40), (100, 60, 90),
    (70, 40, 110), (50, 50, 140), (30, 100, 160), (90, 150, 180), (160, 150, 140), (200, 205, 210),
    (40, 130, 170), (20, 30, 60), (110, 90, 70), (150, 110, 80), (70, 110, 90), (95, 95, 100),
]
SKIN = [(150, 180, 225), (120, 150, 200), (90, 120, 170), (70, 90, 130), (160, 190, 230)]
BASING = [(40, 60, 75), (45, 75, 60), (55, 58, 62), (35, 45, 50), (50, 75, 95), (60, 85, 100)]  # earth, grass, stone


def _hue_far(bgr, rim, min_dist=70.0) -> bool:
    return float(np.linalg.norm(np.subtract(bgr, rim, dtype=float))) >= min_dist


@dataclass
class FighterLook:
    """A fighter's model, relative to the centre of its base's top face."""
    base_r: float
    rim_bgr: tuple
    rim_w: float
    base_bgr: tuple
    parts: list  # Ell, centred relative to base-top centre
    height: float
    shape: str = "round"  # "oval" / "rect": half sizes ``half`` (in), turned ``yaw`` (rad)
    half: tuple = (0.0, 0.0)
    yaw: float = 0.0

    @classmethod
    def random(cls, rng: np.random.Generator, base_mm: float, rim_bgr) -> "FighterLook":
        """A miniature 0.5-1.8 in tall that hides much of its base (big bases get a
        monster), painted mostly in colours away from the rim colour."""
        r = base_mm * MM / 2
        h = float(np.clip(0.5 + 0.6 * 2 * r + rng.uniform(-0.1, 0.25), 0.5, 1.8))
        phi = rng.uniform(0, 2 * math.pi)
        f = np.array([math.cos(phi), math.sin(phi), 0.0])
        s = np.array([-math.sin(phi), math.cos(phi), 0.0])
        z = np.array([0, 0, 1.0])
        paints = [p for p in PAINTS if _hue_far(p, rim_bgr)]

        def paint():
            return paints[int(rng.integers(len(paints)))]

        def jit(a=0.15):
            return 1 + rng.uniform(-a, a)

        parts = []
        zmin = 0.0
        if base_mm >= 45:  # a beast: long body, neck and head, four legs
            body = paint()
            parts.append(ellipsoid(z * 0.45 * h, (0.95 * r * jit(0.05), 0.8 * r * jit(0.08), 0.3 * h), phi, 0, zmin, body))
            parts.append(ellipsoid(-f * 0.2 * r + z * 0.38 * h, (0.6 * r, 0.9 * r * jit(0.06), 0.25 * h), phi, 0, zmin, body))
            parts.append(ellipsoid(f * 0.62 * r + z * 0.68 * h, (0.32 * r, 0.22 * r, 0.16 * h), phi, -0.4, zmin, body))
            parts.append(ellipsoid(f * 0.9 * r + z * 0.8 * h, (0.22 * r, 0.15 * r, 0.12 * h), phi, 0.2, zmin, paint()))
            for a, b in ((0.45, 0.38), (0.45, -0.38), (-0.45, 0.38), (-0.45, -0.38)):
                parts.append(ellipsoid(f * a * r + s * b * r + z * 0.2 * h, (0.12 * r, 0.12 * r, 0.2 * h), phi, 0, zmin, body))
            if rng.random() < 0.6:  # a rider
                parts.append(ellipsoid(z * 0.85 * h, (0.2 * r, 0.25 * r, 0.2 * h), phi, 0, zmin, paint()))
                parts.append(ellipsoid(z * 1.0 * h + f * 0.03, (0.12 * r, 0.12 * r, 0.1 * h), phi, 0, zmin, paint()))
            else:
                parts.append(ellipsoid(-f * 0.85 * r + z * 0.35 * h, (0.35 * r, 0.1 * r, 0.08 * h), phi, 0.3, zmin, body))
        else:  # a warrior: legs, torso, cloak, arms, head, weapon, maybe a shield
            cloth, armour, skin = paint(), paint(), SKIN[int(rng.integers(len(SKIN)))]
            parts.append(ellipsoid(z * 0.22 * h, (0.6 * r * jit(), 0.56 * r * jit(), 0.24 * h), phi, 0, zmin, cloth))
            parts.append(ellipsoid(f * 0.05 * r + z * 0.56 * h, (0.64 * r * jit(0.1), 0.8 * r * jit(0.1), 0.25 * h), phi, 0, zmin, armour))
            if rng.random() < 0.75:
                parts.append(ellipsoid(-f * 0.3 * r + z * 0.42 * h, (0.5 * r, 0.86 * r * jit(0.08), 0.36 * h), phi, 0.15, zmin, paint()))
            hr = min(0.17, 0.2 * r + 0.04)
            parts.append(ellipsoid(f * 0.08 * r + z * (0.8 * h + 0.5 * hr), (hr, hr * 0.9, hr * 1.05), phi, 0, zmin,
                                   skin if rng.random() < 0.5 else armour))
            for side in (-1, 1):
                parts.append(ellipsoid(s * side * 0.5 * r + f * 0.15 * r + z * 0.55 * h, (0.26 * r, 0.16 * r, 0.13 * h),
                                       phi + side * rng.uniform(0.2, 0.8), 0.5, zmin, armour if rng.random() < 0.5 else skin))
            L = r * rng.uniform(0.6, 1.15)
            wa = phi + rng.uniform(-1.2, 1.2)
            wdir = np.array([math.cos(wa), math.sin(wa), 0.0])
            grip = s * 0.55 * r + f * 0.2 * r + z * 0.6 * h
            parts.append(ellipsoid(grip + wdir * L * 0.5, (L * 0.55, 0.035, 0.03), wa, rng.uniform(-0.4, 0.3), zmin,
                                   (170, 175, 180) if rng.random() < 0.6 else (50, 80, 110)))
            if rng.random() < 0.45:
                parts.append(ellipsoid(-s * 0.58 * r + f * 0.1 * r + z * 0.5 * h, (0.33 * r, 0.05, 0.33 * r), phi, 0.25, zmin,
                                       tuple(rim_bgr) if rng.random() < 0.3 else paint()))
        rim_w = rng.uniform(1.0, 1.8) * MM
        return cls(r, tuple(rim_bgr), rim_w, BASING[int(rng.integers(len(BASING)))], parts, h)


    @classmethod
    def random_shaped(cls, rng: np.random.Generator, shape: str, size_mm: tuple[float, float], rim_bgr,
                      yaw: float) -> "FighterLook":
        """A model on an oval or rectangular base (``size_mm`` = width x depth, width
        along the base's own axis, turned ``yaw`` rad). Small rectangles (Epic-scale
        stands) carry a few tiny infantry figures or a vehicle block; larger bases a
        beast or a vehicle along the long axis. Models overhang the base a little."""
        hx, hy = max(size_mm) * MM / 2, min(size_mm) * MM / 2
        f = np.array([math.cos(yaw), math.sin(yaw), 0.0])
        s = np.array([-math.sin(yaw), math.cos(yaw), 0.0])
        z = np.array([0, 0, 1.0])
        paints = [p for p in PAINTS if _hue_far(p, rim_bgr)]

        def paint():
            return paints[int(rng.integers(len(paints)))]

        parts: list = []
        zmin = 0.0
        small = hx <= 1.25 and hy <= 0.6
        if small and rng.random() < 0.65:  # a stand of infantry: 3-5 figures, ~10 mm tall
            n = int(rng.integers(3, 6))
            h = float(rng.uniform(0.32, 0.45))
            cloth, armour = paint(), paint()
            for k in range(n):
                a = (k + 0.5) / n * 2 - 1
                p = f * (a * hx * 0.8 + rng.uniform(-0.05, 0.05)) + s * rng.uniform(-0.45, 0.45) * hy
                phi = yaw + rng.uniform(-0.6, 0.6)
                parts.append(ellipsoid(p + z * 0.3 * h, (0.07, 0.06, 0.3 * h), phi, 0, zmin, cloth))
                parts.append(ellipsoid(p + z * 0.68 * h, (0.08, 0.1, 0.2 * h), phi, 0, zmin, armour))
                parts.append(ellipsoid(p + z * 0.92 * h, (0.045, 0.045, 0.05), phi, 0, zmin, SKIN[int(rng.integers(len(SKIN)))]))
                wa = phi + rng.uniform(-0.5, 0.5)  # a gun or spear, often over the rim
                L = rng.uniform(0.12, 0.25)
                parts.append(ellipsoid(p + z * 0.7 * h + np.array([math.cos(wa), math.sin(wa), 0]) * L * 0.6,
                                       (L * 0.6, 0.02, 0.02), wa, rng.uniform(-0.3, 0.3), zmin, (60, 60, 65)))
        elif shape == "rect":  # a vehicle: a block on the base (its gun overhangs), a turret
            body = paint()
            L, Wd = hx * rng.uniform(0.8, 0.95), hy * rng.uniform(0.55, 0.75)
            h = float(rng.uniform(0.22, 0.38)) * max(1.0, hx / 0.8) ** 0.5
            parts.append(Prism(0.0, 0.0, L, Wd, yaw, 0.02, 0.02 + 0.6 * h, tuple(float(c) * 0.85 for c in body),
                               _flat(body), "rect"))
            parts.append(ellipsoid(f * rng.uniform(-0.2, 0.1) * hx + z * 0.65 * h, (0.45 * hy, 0.4 * hy, 0.3 * h),
                                   yaw, 0, zmin, paint()))
            parts.append(ellipsoid(f * 0.55 * hx + z * 0.75 * h, (0.5 * hx, 0.03, 0.03), yaw, 0, zmin, (60, 60, 65)))
        else:  # a beast (with a rider, often) along the long axis; its head overhangs
            body = paint()
            h = float(np.clip(0.6 + 0.5 * hx, 0.6, 1.8))
            parts.append(ellipsoid(z * 0.45 * h, (0.75 * hx, 0.7 * hy, 0.3 * h), yaw, 0, zmin, body))
            parts.append(ellipsoid(f * 0.85 * hx + z * 0.7 * h, (0.25 * hx, 0.35 * hy, 0.15 * h), yaw, -0.3, zmin, body))
            parts.append(ellipsoid(f * 1.02 * hx + z * 0.78 * h, (0.12 * hx, 0.25 * hy, 0.1 * h), yaw, 0.2, zmin, paint()))
            for a, b in ((0.5, 0.5), (0.5, -0.5), (-0.5, 0.5), (-0.5, -0.5)):
                parts.append(ellipsoid(f * a * hx + s * b * hy + z * 0.2 * h, (0.12 * hx, 0.15 * hy, 0.2 * h), yaw, 0,
                                       zmin, body))
            parts.append(ellipsoid(-f * 0.95 * hx + z * 0.35 * h, (0.3 * hx, 0.08, 0.06), yaw, 0.3, zmin, body))
            if rng.random() < 0.6:
                parts.append(ellipsoid(z * 0.85 * h, (0.25 * hy, 0.35 * hy, 0.2 * h), yaw, 0, zmin, paint()))
        # Epic-scale stands have a bevelled edge, painted: ~2-3 mm seen from above.
        rim_w = (rng.uniform(2.0, 2.8) if small else rng.uniform(1.0, 1.8)) * MM
        return cls(hx, tuple(rim_bgr), rim_w, BASING[int(rng.integers(len(BASING)))], parts,
                   max(0.3, max((p.aabb()[1][2] for p in parts), default=0.3)), shape, (hx, hy), float(yaw))


class _Noise:
    """A small shared noise image for surface mottling, sampled by local inches."""
    img = None

    @classmethod
    def get(cls):
        if cls.img is None:
            cls.img = (0.8 + 0.4 * fractal_noise(np.random.default_rng(12345), 256, 256, ((8, 1.0), (32, 0.7), (100, 0.5)))).astype(np.float32)
        return cls.img


def fighter_mover(uid: int, look: FighterLook, x: float, y: float, z: float, thickness: float) -> Mover:
    """The fighter at (x, y) standing on a surface at height z."""
    top_z = z + thickness
    r, rim_w, rim, basing = look.base_r, look.rim_w, np.array(look.rim_bgr, np.float32), np.array(look.base_bgr, np.float32)
    noise = _Noise.get()

    def top(lx, ly):
        rho = np.sqrt(lx * lx + ly * ly)
        m = sample(noise, (lx + x) * 40 % 256, (ly + y) * 40 % 256)[..., None]
        inner = basing * m
        return np.where((rho > r - rim_w)[..., None], rim, inner).astype(np.float32)

    if look.shape != "round":
        hx, hy = look.half
        oval = look.shape == "oval"

        def top_shaped(u, v):
            m = sample(noise, (u + x) * 40 % 256, (v + y) * 40 % 256)[..., None]
            if oval:
                edge = (u / (hx - rim_w)) ** 2 + (v / (hy - rim_w)) ** 2 > 1
            else:
                edge = (np.abs(u) > hx - rim_w) | (np.abs(v) > hy - rim_w)
            return np.where(edge[..., None], rim, basing * m).astype(np.float32)

        parts = [Prism(x, y, hx, hy, look.yaw, z, top_z, tuple(float(c) for c in rim * 0.9), top_shaped, look.shape)]
        parts += [p.moved(x, y, top_z) for p in look.parts]
        return Mover(ID_FIGHTER + uid, parts)
    parts = [Cyl(x, y, r, z, top_z, tuple(float(c) for c in rim * 0.9), top)]
    parts += [p.moved(x, y, top_z) for p in look.parts]
    return Mover(ID_FIGHTER + uid, parts)


TOKEN_THICKNESS = 2 * MM


def token_mover(uid: int, x: float, y: float, z: float, diameter: float, tex: np.ndarray, theta: float) -> Mover:
    """A 1 in disc ~2 mm thick; ``tex`` is its top face, turned ``theta`` (rad)."""
    c, s = math.cos(theta), math.sin(theta)
    n = tex.shape[0]

    def top(lx, ly):
        u = lx * c + ly * s
        v = -lx * s + ly * c
        return sample(tex, (u / diameter + 0.5) * n, (0.5 - v / diameter) * n)

    side = tuple(float(v) * 0.8 for v in tex[n // 2, 2])
    return Mover(ID_TOKEN + uid, [Cyl(x, y, diameter / 2, z, z + TOKEN_THICKNESS, side, top)], casts_shadow=False)


def hand_mover(uid: int, palm: Sequence[float], toward: float, skin, sleeve) -> Mover:
    """A hand reaching in: palm centred at ``palm`` (x, y, z in inches), fingers pointing
    along the world angle ``toward`` (rad), forearm and sleeve rising back out of view."""
    P = np.asarray(palm, float)
    u = np.array([math.cos(toward), math.sin(toward), 0.0])
    s = np.array([-u[1], u[0], 0.0])
    z = np.array([0, 0, 1.0])
    # Adult-hand sizes: palm ~3.5 in long and wide, fingers ~3 in, forearm ~2.5 in thick.
    parts = [ellipsoid(P, (1.55, 1.35, 0.5), toward, 0.05, bgr=skin)]
    for k, off in enumerate((-0.75, -0.25, 0.25, 0.75)):
        L = 0.85 if k in (1, 2) else 0.72
        parts.append(ellipsoid(P + u * (1.25 + L) + s * off - z * 0.2, (L, 0.26, 0.22), toward + off * 0.08, 0.3, bgr=skin))
    parts.append(ellipsoid(P + u * 0.6 + s * 1.4 - z * 0.1, (0.85, 0.28, 0.24), toward + 0.8, 0.2, bgr=skin))
    a = -u * math.cos(0.35) + z * math.sin(0.35)  # forearm rises toward the player
    parts.append(ellipsoid(P + a * 4.6, (4.0, 1.2, 1.0), toward, 0.35, bgr=skin))
    parts.append(ellipsoid(P + a * 11.0, (4.0, 1.6, 1.45), toward, 0.35, bgr=sleeve))
    return Mover(ID_HAND + uid, parts)


def board_mover(rect: Rect) -> Mover:
    return Mover(ID_BOARD, [rect])


# ----------------------------------------------------------------------------- table
@dataclass
class TerrainBox:
    """A terrain piece: a box whose flat top carries its tag. ``tag_xy``/``theta`` place
    the tag (= the piece's origin, tag top edge = piece +y); ``rect`` is the footprint
    (x0, y0, x1, y1) in the tag's frame. ``tagged=False``: no tag is drawn (the piece
    is found by its footprint only; ``tag_id`` then only keys its texture)."""
    tag_id: int
    type: str
    height: float
    tag_xy: tuple[float, float]
    theta: float
    rect: tuple[float, float, float, float]
    bgr: tuple
    tag_size: float = 1.0
    tagged: bool = True

    @property
    def centre(self) -> tuple[float, float]:
        cx, cy = (self.rect[0] + self.rect[2]) / 2, (self.rect[1] + self.rect[3]) / 2
        c, s = math.cos(self.theta), math.sin(self.theta)
        return (self.tag_xy[0] + c * cx - s * cy, self.tag_xy[1] + s * cx + c * cy)

    @property
    def half(self) -> tuple[float, float]:
        return ((self.rect[2] - self.rect[0]) / 2, (self.rect[3] - self.rect[1]) / 2)

    def footprint_local(self) -> list[tuple[float, float]]:
        x0, y0, x1, y1 = self.rect
        return [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]

    def footprint_world(self) -> list[tuple[float, float]]:
        c, s = math.cos(self.theta), math.sin(self.theta)
        return [(self.tag_xy[0] + c * x - s * y, self.tag_xy[1] + s * x + c * y) for x, y in self.footprint_local()]

    def polygon(self) -> Polygon:
        return Polygon(self.footprint_world())

    def tag_corners_world(self) -> np.ndarray:
        """Tag corners in OpenCV order (TL, TR, BR, BL of the tag image) at the top."""
        h = self.tag_size / 2
        c, s = math.cos(self.theta), math.sin(self.theta)
        return np.array([(self.tag_xy[0] + c * x - s * y, self.tag_xy[1] + s * x + c * y, self.height)
                         for x, y in ((-h, h), (h, h), (h, -h), (-h, -h))])


UNTAGGED_BGR = ((110, 115, 112), (120, 140, 160), (85, 100, 105), (150, 155, 150))


@dataclass
class Table:
    """The static scene: play area, table markers, terrain and the light."""
    play_area_in: tuple[float, float]
    markers: list[tuple[int, tuple[float, float], float]]  # (id, centre, size)
    terrain: list[TerrainBox]
    light_dir: np.ndarray
    light_centre: tuple[float, float]
    seed: int = 0
    _textures: dict = field(default_factory=dict, repr=False)

    @classmethod
    def random(cls, rng: np.random.Generator, play_area_in=(30.0, 22.0), n_terrain: int = 5,
               n_platforms: int = 2, n_untagged: int = 0) -> "Table":
        """A Warcry table: default markers, ``n_terrain`` non-overlapping boxes (the
        first ``n_platforms`` are platforms, big enough to stand on), a light from above.
        ``n_untagged`` more boxes (obstacles) carry no tag; with 0 the table is the same
        as before the option existed (same random draws)."""
        W, D = play_area_in
        markers = [(0, (-1.5, -1.5), 2.0), (1, (W + 1.5, -1.5), 2.0), (2, (W + 1.5, D + 1.5), 2.0), (3, (-1.5, D + 1.5), 2.0)]
        ids = list(rng.permutation(np.arange(10, 40))[:n_terrain + n_untagged])
        pieces: list[TerrainBox] = []
        taken = []
        for k in range(n_terrain + n_untagged):
            platform = k < n_platforms
            for _ in range(200):
                wx, wy = (rng.uniform(4.0, 6.5), rng.uniform(3.5, 5.0)) if platform else (rng.uniform(2.0, 4.0), rng.uniform(1.8, 3.5))
                height = rng.uniform(2.5, 4.0) if platform else rng.uniform(1.5, 4.2)
                # Tag somewhere on the top, at least 0.25 in from its edges.
                tx = rng.uniform(-wx / 2 + 0.8, wx / 2 - 0.8)
                ty = rng.uniform(-wy / 2 + 0.8, wy / 2 - 0.8)
                rect = (-wx / 2 - tx, -wy / 2 - ty, wx / 2 - tx, wy / 2 - ty)
                theta = rng.uniform(-math.pi, math.pi)
                pos = (rng.uniform(2.5, W - 2.5), rng.uniform(2.5, D - 2.5))
                colour = (120, 140, 160) if platform else (110, 115, 112)
                if k >= n_terrain:  # untagged pieces: stone of several shades
                    colour = UNTAGGED_BGR[int(rng.integers(len(UNTAGGED_BGR)))]
                tb = TerrainBox(int(ids[k]), "platform" if platform else "obstacle", float(height), pos, float(theta),
                                tuple(float(v) for v in rect), colour, tagged=k < n_terrain)
                poly = tb.polygon()
                if not shp_box(0.5, 0.5, W - 0.5, D - 0.5).contains(poly):
                    continue
                if any(poly.distance(p) < 2.2 for p in taken):
                    continue
                pieces.append(tb)
                taken.append(poly)
                break
        az = rng.uniform(0, 2 * math.pi)
        el = math.radians(rng.uniform(55, 72))
        L = np.array([math.cos(el) * math.cos(az), math.cos(el) * math.sin(az), math.sin(el)])
        return cls(play_area_in, markers, pieces, L, (rng.uniform(0, W), rng.uniform(0, D)), int(rng.integers(1 << 30)))

    def light_gain(self, x, y):
        """Lamp fall-off across the table (a soft gradient, brighter near the lamp)."""
        lx, ly = self.light_centre
        return (0.82 + 0.28 * np.exp(-((x - lx) ** 2 + (y - ly) ** 2) / (2 * 22.0 ** 2))).astype(np.float32)

    def textures(self) -> dict:
        if not self._textures:
            rng = np.random.default_rng(self.seed)
            W, D = self.play_area_in
            ext = (-14.0, -12.0, W + 14.0, D + 12.0)
            self._textures["mat"] = (mat_texture(rng, self.play_area_in, 24.0, ext), ext, 24.0)
            self._textures["cloth"] = cloth_texture(rng)
            self._textures["stone"] = {t.tag_id: stone_texture(rng, t.bgr) for t in self.terrain}
            self._textures["marker"] = {m[0]: tag_image(m[0], 32, 0.75) for m in self.markers}
            self._textures["tag"] = {t.tag_id: tag_image(t.tag_id, 32, 1.0) for t in self.terrain}  # white label
        return self._textures

    def surface_height(self, x: float, y: float) -> float:
        """Height of the surface under (x, y): a platform's top or the floor."""
        p = Point(x, y)
        for t in self.terrain:
            if t.polygon().contains(p):
                return t.height
        return 0.0


# ----------------------------------------------------------------------------- renderer
class Renderer:
    """Ray-casting renderer for one camera. The static table is rendered once (per
    camera pose) into colour, depth, id and shadow-ratio buffers at ``supersample`` x
    resolution; :meth:`render` adds movers inside their image regions only."""

    def __init__(self, table: Table, camera: Camera, supersample: int = 2):
        self.table, self.cam, self.s = table, camera, supersample
        self.C = camera.position.astype(np.float32)
        self.D = camera.ray_dirs_world(supersample)
        self.H, self.W = self.D[0].shape
        self.L = table.light_dir.astype(np.float32)
        # The normalised-coordinate box the image sees (for regions, see :meth:`regions`).
        Rt = camera.R
        xc = Rt[0, 0] * self.D[0] + Rt[0, 1] * self.D[1] + Rt[0, 2] * self.D[2]
        yc = Rt[1, 0] * self.D[0] + Rt[1, 1] * self.D[1] + Rt[1, 2] * self.D[2]
        m = 0.02
        self._nbox = (float(xc.min()) - m, float(xc.max()) + m, float(yc.min()) - m, float(yc.max()) + m)
        # Where each box's shadow can fall (its footprint swept away from the light).
        self._shadow_hulls = []
        for tb in table.terrain:
            poly = tb.polygon()
            reach = tb.height / self.L[2]
            self._shadow_hulls.append(poly.union(affinity.translate(poly, -self.L[0] * reach, -self.L[1] * reach)).convex_hull.buffer(0.05))
        self._static()

    # -- regions
    def region(self, pts: np.ndarray, pad: int = 6):
        """Subpixel slice (rows, cols) bounding the projection of 3D points, or None."""
        return self.regions([pts], pad)[0]

    def regions(self, point_sets: list, pad: int = 6) -> list:
        """:meth:`region` for many point sets with one projection call.

        Works on the undistorted (pinhole) side: each set's bounding box in normalised
        coordinates is clipped to what the image can see, then its outline is distorted.
        Projecting far-off points directly is wrong: the polynomial distortion folds
        points well outside the view back into the image."""
        if not point_sets:
            return []
        R, t = self.cam.R, np.asarray(self.cam.tvec, float)
        x0n, x1n, y0n, y1n = self._nbox
        outlines, keep = [], []
        for pts in point_sets:
            pc = np.asarray(pts, float) @ R.T + t
            z = np.maximum(pc[:, 2], 1e-3)
            xn, yn = pc[:, 0] / z, pc[:, 1] / z
            if np.any(pc[:, 2] <= 1e-3):  # reaches behind the camera: take the whole view
                bx0, bx1, by0, by1 = x0n, x1n, y0n, y1n
            else:
                bx0, bx1, by0, by1 = max(xn.min(), x0n), min(xn.max(), x1n), max(yn.min(), y0n), min(yn.max(), y1n)
            if bx0 >= bx1 or by0 >= by1:
                keep.append(False)
                continue
            a = np.linspace(0, 1, 9)
            xs = np.concatenate([bx0 + a * (bx1 - bx0), np.full(9, bx1), bx1 - a * (bx1 - bx0), np.full(9, bx0)])
            ys = np.concatenate([np.full(9, by0), by0 + a * (by1 - by0), np.full(9, by1), by1 - a * (by1 - by0)])
            outlines.append(np.stack([xs, ys, np.ones_like(xs)], 1))
            keep.append(True)
        out = []
        if outlines:
            uv, _ = cv2.projectPoints(np.vstack(outlines).reshape(-1, 1, 3), np.zeros(3), np.zeros(3),
                                      np.asarray(self.cam.K, float), np.asarray(self.cam.dist, float))
            uv = uv.reshape(-1, 36, 2)
        k = 0
        for ok in keep:
            if not ok:
                out.append(None)
                continue
            q = (uv[k] + 0.5) * self.s - 0.5
            k += 1
            x0, y0 = np.floor(q.min(0)).astype(int) - pad
            x1, y1 = np.ceil(q.max(0)).astype(int) + pad + 1
            x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, self.W), min(y1, self.H)
            out.append(None if x0 >= x1 or y0 >= y1 else (slice(y0, y1), slice(x0, x1)))
        return out

    @staticmethod
    def _box_corners(lo, hi) -> np.ndarray:
        return np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])

    def _shadow_points(self, lo, hi) -> np.ndarray:
        c = self._box_corners(lo, hi)
        return np.vstack([c, c - (c[:, 2:3] / self.L[2]) * self.L[None, :]])

    def shadow_region(self, lo, hi):
        """Region where an object in the box lo..hi can cast its shadow (down to z=0)."""
        c = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
        g = c - (c[:, 2:3] / self.L[2]) * self.L[None, :]
        return self.region(np.vstack([c, g]), pad=4)

    def _rays(self, reg):
        return tuple(d[reg] for d in self.D)

    def _boxes_block(self, P, lit_mask, lo=None, hi=None):
        """Clear ``lit_mask`` where the ray from P toward the light hits a terrain box.
        Boxes whose shadow cannot reach the box lo..hi (xy) are skipped."""
        for k, tb in enumerate(self.table.terrain):
            if lo is not None and not self._shadow_hulls[k].intersects(shp_box(lo[0], lo[1], hi[0], hi[1])):
                continue
            (cx, cy), (hx, hy) = tb.centre, tb.half
            t, _, _ = hit_box(P, tuple(self.L), cx, cy, tb.theta, hx, hy, 0.0, tb.height)
            lit_mask &= ~np.isfinite(t)
        return lit_mask

    # -- static table
    def _static(self):
        tab, tex = self.table, self.table.textures()
        dx, dy, dz = self.D
        C = self.C
        o = (C[0], C[1], C[2])
        z = hit_plane_z(o, self.D, 0.0)
        ids = np.full(z.shape, ID_FLOOR, np.int16)
        nx, ny, nz = np.zeros_like(z), np.zeros_like(z), np.ones_like(z)
        face = np.zeros(z.shape, np.int8)
        for k, tb in enumerate(tab.terrain):
            lo = [min(p[0] for p in tb.footprint_world()), min(p[1] for p in tb.footprint_world()), 0.0]
            hi = [max(p[0] for p in tb.footprint_world()), max(p[1] for p in tb.footprint_world()), tb.height]
            reg = self.region(np.array([[x, y, zz] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for zz in (0, tb.height)]))
            if reg is None:
                continue
            (cx, cy), (hx, hy) = tb.centre, tb.half
            t, n, f = hit_box(o, self._rays(reg), cx, cy, tb.theta, hx, hy, 0.0, tb.height)
            m = t < z[reg]
            z[reg] = np.where(m, t, z[reg])
            ids[reg] = np.where(m, ID_TERRAIN + k, ids[reg])
            for a, b in ((nx, n[0]), (ny, n[1]), (nz, n[2])):
                a[reg] = np.where(m, b, a[reg])
            face[reg] = np.where(m, f, face[reg])
        X, Y, Z = C[0] + z * dx, C[1] + z * dy, C[2] + z * dz
        # Albedo: the mat, then printed markers, then terrain surfaces and tags.
        mat, (x0, y0, x1, y1), ppi = tex["mat"]
        alb = sample(mat, (X - x0) * ppi, (y1 - Y) * ppi)
        # Past the mat texture (a low or wide camera) the cloth goes on, seamlessly.
        W, D = tab.play_area_in
        far = (X < x0 + 1) | (X > x1 - 1) | (Y < y0 + 1) | (Y > y1 - 1)
        cloth = sample(tex["cloth"], X * 12.0, -Y * 12.0, cv2.BORDER_WRAP)
        inner = (X >= 0) & (X <= W) & (Y >= 0) & (Y <= D)  # the printed mat
        alb = np.where((far | ~inner)[..., None], cloth, alb)
        for mid, (cx, cy), size in tab.markers:
            mt = tex["marker"][mid]
            paper = size * mt.shape[0] / (6 * 32)  # the tag plus its white quiet zone
            reg = self.region(np.array([[cx + a * paper / 2, cy + b * paper / 2, 0] for a in (-1, 1) for b in (-1, 1)]))
            if reg is None:
                continue
            col = (X[reg] - (cx - paper / 2)) / paper * mt.shape[1]
            row = ((cy + paper / 2) - Y[reg]) / paper * mt.shape[0]
            m = (ids[reg] == ID_FLOOR) & (col >= 0) & (col < mt.shape[1]) & (row >= 0) & (row < mt.shape[0])
            alb[reg] = np.where(m[..., None], sample(mt, col, row), alb[reg])
        for k, tb in enumerate(tab.terrain):
            m = ids == ID_TERRAIN + k
            if not m.any():
                continue
            rows, cols = np.nonzero(m)
            reg = (slice(rows.min(), rows.max() + 1), slice(cols.min(), cols.max() + 1))
            mm = m[reg]
            c, s = math.cos(tb.theta), math.sin(tb.theta)
            lx = (X[reg] - tb.tag_xy[0]) * c + (Y[reg] - tb.tag_xy[1]) * s
            ly = -(X[reg] - tb.tag_xy[0]) * s + (Y[reg] - tb.tag_xy[1]) * c
            st = tex["stone"][tb.tag_id]
            on_top = face[reg] == 4
            # Sides: texture along the edge and up the wall.
            u = np.where(on_top, lx, lx + ly)
            v = np.where(on_top, ly, Z[reg])
            a = sample(st, (u * 30) % 256, (v * 30) % 256, cv2.BORDER_WRAP)
            tt = tex["tag"][tb.tag_id]
            paper = tb.tag_size * tt.shape[0] / (6 * 32)
            col = (lx + paper / 2) / paper * tt.shape[1]
            row = (paper / 2 - ly) / paper * tt.shape[0]
            on_tag = on_top & (col >= 0) & (col < tt.shape[1]) & (row >= 0) & (row < tt.shape[0])
            if tb.tagged:
                a = np.where(on_tag[..., None], sample(tt, col, row), a)
            alb[reg] = np.where(mm[..., None], a, alb[reg])
        # Light: Lambert + ambient, shadows of the terrain, the lamp gradient.
        L = self.L
        ndl = np.maximum(nx * L[0] + ny * L[1] + nz * L[2], 0)
        lit = np.ones(z.shape, bool)
        for tb in tab.terrain:
            fw = tb.footprint_world()
            lo = [min(p[0] for p in fw), min(p[1] for p in fw), 0.0]
            hi = [max(p[0] for p in fw), max(p[1] for p in fw), tb.height]
            reg = self.shadow_region(lo, hi)
            if reg is None:
                continue
            P = (X[reg] + nx[reg] * 1e-3, Y[reg] + ny[reg] * 1e-3, Z[reg] + nz[reg] * 1e-3)
            (cx, cy), (hx, hy) = tb.centre, tb.half
            t, _, _ = hit_box(P, tuple(L), cx, cy, tb.theta, hx, hy, 0.0, tb.height)
            lit[reg] &= ~np.isfinite(t)
        lam = AMBIENT + DIFFUSE * ndl * lit
        self.ratio = np.where(lit, AMBIENT / (AMBIENT + DIFFUSE * ndl + 1e-6), 1.0).astype(np.float32)
        self.col = (alb * (lam * tab.light_gain(X, Y))[..., None]).astype(np.float32)
        self.z, self.ids = z, ids

    # -- movers
    @staticmethod
    def _clip_to(reg, within):
        """``reg`` clipped to ``within``, as slices relative to ``within`` (or None)."""
        if reg is None:
            return None
        a, b = max(reg[0].start, within[0].start), min(reg[0].stop, within[0].stop)
        c, d = max(reg[1].start, within[1].start), min(reg[1].stop, within[1].stop)
        if a >= b or c >= d:
            return None
        return (slice(a - within[0].start, b - within[0].start), slice(c - within[1].start, d - within[1].start))

    def _draw(self, mv: Mover, col, zb, ids, ratio):
        lo, hi = mv.aabb()
        reg = self.region(np.array([[x, y, zz] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for zz in (lo[2], hi[2])]))
        if reg is None:
            return None, 0
        d = self._rays(reg)
        o = (self.C[0], self.C[1], self.C[2])
        t = np.full(d[0].shape, INF, np.float32)
        n = [np.zeros_like(t) for _ in range(3)]
        alb = np.zeros(t.shape + (3,), np.float32)
        part_regs = self.regions([self._box_corners(*p.aabb()) for p in mv.parts])
        for p, preg in zip(mv.parts, part_regs):
            # Each part is only cast inside its own image box (a finger is small; the
            # forearm's box is big but it is one part).
            pr = self._clip_to(preg, reg)
            if pr is None:
                continue
            tp, npp, ap = p.hit(o, tuple(a[pr] for a in d))
            m = tp < t[pr]
            if not m.any():
                continue
            t[pr] = np.where(m, tp, t[pr])
            for i in range(3):
                n[i][pr] = np.where(m, npp[i], n[i][pr])
            alb[pr] = np.where(m[..., None], ap, alb[pr])
        hit = np.isfinite(t)
        sil = int(hit.sum())
        if not sil:
            return reg, 0
        rows, cols = np.nonzero(hit)  # shade only the hit box
        sub = (slice(rows.min(), rows.max() + 1), slice(cols.min(), cols.max() + 1))
        reg = (slice(reg[0].start + sub[0].start, reg[0].start + sub[0].stop),
               slice(reg[1].start + sub[1].start, reg[1].start + sub[1].stop))
        d = tuple(a[sub] for a in d)
        t, hit, alb = t[sub], hit[sub], alb[sub]
        n = [a[sub] for a in n]
        tt = np.where(hit, t, 0)
        X, Y, Z = (self.C[i] + tt * d[i] for i in range(3))
        L = self.L
        ndl = np.maximum(n[0] * L[0] + n[1] * L[1] + n[2] * L[2], 0)
        lit = self._boxes_block((X + n[0] * 1e-3, Y + n[1] * 1e-3, Z + n[2] * 1e-3), hit.copy(), *mv.aabb())
        # A little gloss on painted models: Blinn-Phong with the view direction.
        vn = np.sqrt(d[0] ** 2 + d[1] ** 2 + d[2] ** 2)
        hx, hy, hz = L[0] - d[0] / vn, L[1] - d[1] / vn, L[2] - d[2] / vn
        hn = np.sqrt(hx * hx + hy * hy + hz * hz)
        spec = np.maximum((n[0] * hx + n[1] * hy + n[2] * hz) / hn, 0) ** 24 * 45.0 * lit
        shade = (AMBIENT + DIFFUSE * ndl * lit) * self.table.light_gain(X, Y)
        c = alb * shade[..., None] + spec[..., None]
        m = hit & (t < zb[reg])
        col[reg] = np.where(m[..., None], c, col[reg])
        zb[reg] = np.where(m, t, zb[reg])
        ids[reg] = np.where(m, mv.uid, ids[reg])
        ratio[reg] = np.where(m, np.where(lit, AMBIENT / (AMBIENT + DIFFUSE * ndl + 1e-6), 1.0), ratio[reg])
        return reg, sil

    def _work_buffers(self):
        """Per-frame buffers, reused: only the regions the previous frame touched are
        restored from the cached table (copying whole supersampled images each frame
        costs more than drawing the fighters)."""
        if not hasattr(self, "_work"):
            self._work = (self.col.copy(), self.z.copy(), self.ids.copy(), self.ratio.copy())
            self._dirty: list = []
            s = self.s
            self._col1 = cv2.resize(self.col, (self.W // s, self.H // s), interpolation=cv2.INTER_AREA) if s > 1 else self.col
        for reg in self._dirty:
            for w, st in zip(self._work, (self.col, self.z, self.ids, self.ratio)):
                w[reg] = st[reg]
        self._dirty = []
        return self._work

    def render(self, movers: Sequence[Mover], downsample: bool = True):
        """Draw ``movers`` over the cached table. Returns the image (float32 BGR, 0-255,
        at output resolution unless ``downsample`` is False) and per-mover info:
        ``{uid: (silhouette_px, visible_px, visible_px_without_hands)}`` in subpixels."""
        col, zb, ids, ratio = self._work_buffers()
        regs, sil = {}, {}
        order = sorted(movers, key=lambda m: m.uid >= ID_HAND)  # hands last, for the no-hand count
        no_hand = {}
        hands_done = False
        for mv in order:
            if mv.uid >= ID_HAND and mv.uid < ID_BOARD and not hands_done:
                hands_done = True
                no_hand = {u: int((ids[r] == u).sum()) for u, r in regs.items() if r is not None}
            regs[mv.uid], sil[mv.uid] = self._draw(mv, col, zb, ids, ratio)
            if regs[mv.uid] is not None:
                self._dirty.append(regs[mv.uid])
        if not hands_done:
            no_hand = {u: int((ids[r] == u).sum()) for u, r in regs.items() if r is not None}
        # Shadows cast by movers onto whatever is behind them (ground, terrain, others).
        shadow_regs = []
        for mv in movers:
            if not mv.casts_shadow:
                continue
            # A hand's shadow is big and soft: cast it on every other subpixel row and
            # column and spread it (4x fewer rays); fighters' shadows at full resolution.
            st = 2 if ID_HAND <= mv.uid < ID_BOARD else 1
            sregs = self.regions([self._shadow_points(*p.aabb()) for p in mv.parts], pad=4)
            for p, reg in zip(mv.parts, sregs):
                if reg is None:
                    continue
                sub = (slice(reg[0].start, reg[0].stop, st), slice(reg[1].start, reg[1].stop, st))
                d = tuple(a[sub] for a in self.D)
                zr = zb[sub]
                # Surface point, lifted along the light so it does not shadow itself.
                P = tuple(self.C[i] + zr * d[i] + self.L[i] * 2e-3 for i in range(3))
                m = np.isfinite(p.hit(P, tuple(self.L))[0])
                if st > 1:
                    m = np.repeat(np.repeat(m, st, 0), st, 1)[:reg[0].stop - reg[0].start, :reg[1].stop - reg[1].start]
                m &= ids[reg] != mv.uid
                if m.any():
                    shadow_regs.append((reg, m))
        if shadow_regs:
            y0 = min(r.start for (r, _), _m in shadow_regs)
            y1 = max(r.stop for (r, _), _m in shadow_regs)
            x0 = min(r.start for (_, r), _m in shadow_regs)
            x1 = max(r.stop for (_, r), _m in shadow_regs)
            box = (slice(y0, y1), slice(x0, x1))
            shadow = np.zeros((y1 - y0, x1 - x0), bool)
            for (ry, rx), m in shadow_regs:
                shadow[ry.start - y0:ry.stop - y0, rx.start - x0:rx.stop - x0] |= m
            col[box] = np.where(shadow[..., None], col[box] * ratio[box][..., None], col[box])
            self._dirty.append(box)
        info = {}
        for u, r in regs.items():
            vis = int((ids[r] == u).sum()) if r is not None else 0
            info[u] = (sil[u], vis, no_hand.get(u, vis))
        if not downsample or self.s == 1:
            return col.copy() if self.s == 1 or not downsample else col.copy(), info
        # Downsample only the touched box (aligned to whole output pixels) over the
        # cached downsampled table.
        out = self._col1.copy()
        if self._dirty:
            s = self.s
            y0 = min(r[0].start for r in self._dirty) // s * s
            x0 = min(r[1].start for r in self._dirty) // s * s
            y1 = min(-(-max(r[0].stop for r in self._dirty) // s) * s, self.H)
            x1 = min(-(-max(r[1].stop for r in self._dirty) // s) * s, self.W)
            out[y0 // s:y1 // s, x0 // s:x1 // s] = cv2.resize(col[y0:y1, x0:x1], ((x1 - x0) // s, (y1 - y0) // s),
                                                               interpolation=cv2.INTER_AREA)
        return out, info
