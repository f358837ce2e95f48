"""Test tables with oval and rectangular bases (and Epic-scale stands), rendered as stills
with their truth: centre, surface height, side, shape, size and angle of every base.

>>> import numpy as np
>>> sc = plan_shaped(np.random.default_rng(0), n_per_side=2)
>>> img, empty, truth = render_shaped(sc, 320, 180)            # doctest: +SKIP
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from shapely import affinity
from shapely.geometry import Point, Polygon, box as shp_box
from shapely.ops import unary_union

from ..world import TerrainPiece
from .camera import Camera, overhead_camera
from .game import BASE_THICKNESS_IN, SIDE_COLOURS, Sensor
from .scene import MM, FighterLook, Renderer, Table, fighter_mover


@dataclass
class ShapedBase:
    id: int
    side: int
    shape: str  # round | oval | rect
    size_mm: tuple[float, float]  # width (long) x depth
    x: float
    y: float
    z: float
    angle_deg: float  # the long axis, counter-clockwise from +x, in [0, 180)
    look: FighterLook

    def polygon(self, grow: float = 0.0) -> Polygon:
        return base_polygon(self.shape, self.size_mm, self.x, self.y, self.angle_deg, grow)


def base_polygon(shape: str, size_mm, x: float, y: float, angle_deg: float, grow: float = 0.0) -> Polygon:
    hx, hy = size_mm[0] * MM / 2 + grow, size_mm[1] * MM / 2 + grow
    if shape == "rect":
        p = shp_box(-hx, -hy, hx, hy)
    else:
        p = affinity.scale(Point(0, 0).buffer(1.0, 32), hx, hy)
    return affinity.translate(affinity.rotate(p, angle_deg, origin=(0, 0)), x, y)


@dataclass
class ShapedScene:
    table: Table
    colours: list[str]
    bases: list[ShapedBase] = field(default_factory=list)
    camera_height_in: float | None = None

    def config(self, width: int, height: int) -> dict:
        """The game config (GameConfig.from_dict) with each side's bases as listed."""
        W, D = self.table.play_area_in
        sides = []
        for i, c in enumerate(self.colours):
            entries = []
            for b in self.bases:
                if b.side != i:
                    continue
                e = b.size_mm[0] if b.shape == "round" else {"shape": b.shape, "mm": list(b.size_mm)}
                if e not in entries:
                    entries.append(e)
            sides.append({"index": i, "colour": c, "rim_bgr": list(SIDE_COLOURS[c]), "bases_mm": entries})
        return {
            "kind": "warcry" if W < 40 else "epic", "image": {"width": width, "height": height},
            "table": {"play_area_in": [W, D],
                      "markers": [{"id": m, "centre_in": list(c), "size_in": s} for m, c, s in self.table.markers]},
            "sides": sides, "base_thickness_in": BASE_THICKNESS_IN,
            "terrain_library": [{"tag_id": tb.tag_id, "tag_size_in": tb.tag_size, "type": tb.type,
                                 "height_in": tb.height, "footprint_in_tag_frame": [list(p) for p in tb.footprint_local()]}
                                for tb in self.table.terrain],
        }

    def terrain(self) -> tuple[TerrainPiece, ...]:
        return tuple(TerrainPiece(id=f"terrain-{tb.tag_id}", type=tb.type, footprint=tuple(tb.footprint_world()),
                                  height_in=tb.height, tag_id=tb.tag_id) for tb in self.table.terrain)


def _free(scene: ShapedScene, poly: Polygon, z: float, gap: float) -> bool:
    W, D = scene.table.play_area_in
    if not shp_box(0.3, 0.3, W - 0.3, D - 0.3).contains(poly):
        return False
    for tb in scene.table.terrain:
        tp = tb.polygon()
        if z > 0 and abs(tb.height - z) < 1e-9:
            if not tp.buffer(-0.12).contains(poly) or Point(tb.tag_xy).distance(poly) < 0.75:
                return False
        elif tp.distance(poly) < 0.35:
            return False
    return all(b.polygon().distance(poly) >= gap for b in scene.bases)


def _add(scene: ShapedScene, rng, side: int, shape: str, size, x, y, z, angle_deg, gap: float = 0.25) -> bool:
    angle_deg = float(angle_deg) % 180.0
    poly = base_polygon(shape, size, x, y, angle_deg)
    if not _free(scene, poly, z, gap):
        return False
    rim = SIDE_COLOURS[scene.colours[side]]
    if shape == "round":
        look = FighterLook.random(rng, size[0], rim)
    else:
        look = FighterLook.random_shaped(rng, shape, size, rim, math.radians(angle_deg))
    scene.bases.append(ShapedBase(len(scene.bases), side, shape, tuple(float(v) for v in size), float(x), float(y),
                                  float(z), angle_deg, look))
    return True


SIDE_BASES = (  # what each side fields in plan_shaped
    (("oval", (60.0, 35.0)), ("round", (32.0, 32.0)), ("oval", (75.0, 42.0))),
    (("rect", (50.0, 25.0)), ("oval", (60.0, 35.0))),
    (("rect", (40.0, 20.0)), ("round", (25.0, 25.0))),
)


def plan_shaped(rng: np.random.Generator, n_sides: int = 3, n_per_side: int = 5, n_platform: int = 2,
                colours: tuple[str, ...] = ("red", "blue", "white")) -> ShapedScene:
    """A Warcry-size table: each side a mix of oval, rectangular (and some round) bases
    at random angles; ``n_platform`` of them stand on platform tops."""
    table = Table.random(rng, n_terrain=4, n_platforms=2)
    sc = ShapedScene(table, list(colours[:n_sides]))
    W, D = table.play_area_in
    platforms = [tb for tb in table.terrain if tb.type == "platform"]
    k = 0
    for side in range(n_sides):
        kinds = SIDE_BASES[side % len(SIDE_BASES)]
        for j in range(n_per_side):
            shape, size = kinds[j % len(kinds)]
            for attempt in range(2000):
                up = k < n_platform and platforms and attempt < 500
                if up:
                    tb = platforms[k % len(platforms)]
                    x0, y0, x1, y1 = tb.polygon().bounds
                    x, y, z = rng.uniform(x0, x1), rng.uniform(y0, y1), tb.height
                else:
                    x, y, z = rng.uniform(1, W - 1), rng.uniform(1, D - 1), 0.0
                if _add(sc, rng, side, shape, size, x, y, z, rng.uniform(0, 180)):
                    k += 1
                    break
            else:
                raise RuntimeError("no room for every base")
    return sc


def plan_epic(rng: np.random.Generator, n_units: int = 3, per_unit: int = 4, size_mm=(40.0, 20.0),
              colours: tuple[str, ...] = ("red", "blue", "yellow"), n_terrain: int = 3,
              formations: tuple[str, ...] | None = None) -> ShapedScene:
    """A 180 x 120 cm table with units of touching 40 x 20 mm stands: each unit a
    "block" (long edge to long edge), a "line" (end to end, touching) or a "loose" line
    (up to 2 mm apart); ``formations`` per unit, random if not given. Units take turns
    between the sides."""
    table = Table.random(rng, play_area_in=(180 / 2.54, 120 / 2.54), n_terrain=n_terrain, n_platforms=1)
    sides = max(2, min(len(colours), n_units))
    sc = ShapedScene(table, list(colours[:sides]), camera_height_in=70.0)
    W, D = table.play_area_in
    hw, hd = size_mm[0] * MM, size_mm[1] * MM
    for u in range(n_units):
        side = u % sides
        for _ in range(2000):
            cx, cy = rng.uniform(4, W - 4), rng.uniform(4, D - 4)
            a = rng.uniform(0, 180)
            ca, sa = math.cos(math.radians(a)), math.sin(math.radians(a))
            form = formations[u % len(formations)] if formations else ("block", "line", "loose")[int(rng.integers(3))]
            block = form == "block"
            gaps = rng.uniform(0.0, 0.08, per_unit) * (form == "loose")
            pos = []
            off = 0.0
            for k in range(per_unit):
                if block:  # side by side: stepping along the short axis
                    d = (k - (per_unit - 1) / 2) * hd
                    pos.append((cx - sa * d, cy + ca * d))
                else:  # end to end along the long axis
                    pos.append((cx + ca * off, cy + sa * off))
                    off += hw + gaps[k]
            angles = [a + rng.uniform(-0.5, 0.5) * (not block) for _ in pos]
            polys = [base_polygon("rect", size_mm, x, y, b) for (x, y), b in zip(pos, angles)]
            if sc.bases and unary_union(polys).distance(unary_union([b.polygon() for b in sc.bases])) < 0.6:
                continue
            before = len(sc.bases)
            if all(_add(sc, rng, side, "rect", size_mm, x, y, 0.0, b, gap=0.0) for (x, y), b in zip(pos, angles)):
                break
            del sc.bases[before:]
        else:
            raise RuntimeError("no room for every unit")
    return sc


def scene_camera(sc: ShapedScene, width: int, height: int, seed: int = 0) -> Camera:
    return overhead_camera(np.random.default_rng(seed), width, height, sc.table.play_area_in,
                           height_in=sc.camera_height_in)


class ShapedRenderer:
    """Frames of one scene through one camera: the table is cast once, each frame only
    draws the bases (moved by ``offsets``: base id -> (dx, dy) inches)."""

    def __init__(self, sc: ShapedScene, width: int, height: int, seed: int = 0, camera: Camera | None = None,
                 supersample: int = 2, sensor: bool = True):
        self.scene, self.seed = sc, seed
        self.camera = camera or scene_camera(sc, width, height, seed)
        self.renderer = Renderer(sc.table, self.camera, supersample)
        self.sensor = Sensor.random(np.random.default_rng(seed + 1)) if sensor else None

    def _out(self, img: np.ndarray, k: int) -> np.ndarray:
        if self.sensor is None:
            return np.clip(img, 0, 255).astype(np.uint8)
        return self.sensor.apply(img, np.random.default_rng([self.seed, k]))

    def empty(self) -> np.ndarray:
        return self._out(self.renderer.render([])[0], 0)

    def frame(self, offsets: dict[int, tuple[float, float]] | None = None, k: int = 1) -> np.ndarray:
        off = offsets or {}
        movers = [fighter_mover(b.id, b.look, b.x + off.get(b.id, (0, 0))[0], b.y + off.get(b.id, (0, 0))[1], b.z,
                                BASE_THICKNESS_IN) for b in self.scene.bases]
        return self._out(self.renderer.render(movers)[0], k)


def render_shaped(sc: ShapedScene, width: int, height: int, seed: int = 0, camera: Camera | None = None,
                  supersample: int = 2, sensor: bool = True) -> tuple[np.ndarray, np.ndarray, Camera]:
    """(frame, empty table, camera): BGR uint8 stills through the scene's camera, with a
    webcam's blur and noise unless ``sensor`` is False."""
    r = ShapedRenderer(sc, width, height, seed, camera, supersample, sensor)
    return r.frame(), r.empty(), r.camera
