"""A scripted Warcry game on a random table, rendered into an evaluation-style set.

The script is a sequence of activations, as at a real table: one fighter at a time glides
a few inches over 1-2 s (often carried by a player's hand), one fighter walks onto a
treasure and picks it up, one is taken down mid-clip, and now and then a hand sweeps in
from a table edge. Everything is drawn from one seed.

>>> import tempfile
>>> d = render_set(tempfile.mkdtemp(), seed=3, width=320, height=180, seconds=0.4, fps=5,
...                n_calib_views=1, n_fighters=4)            # doctest: +SKIP
>>> sorted(p.name for p in d.iterdir())                       # doctest: +SKIP
['calib', 'clip.mp4', 'game.yaml', 'table.jpg', 'truth.json']
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import cv2
import numpy as np
import yaml
from shapely.geometry import LineString, Point, box as shp_box
from shapely.ops import unary_union

from .camera import Camera, bumped, overhead_camera
from .scene import (ID_BOARD, ID_FIGHTER, ID_HAND, ID_TOKEN, MM, SKIN, TOKEN_THICKNESS, FighterLook, Mover, Rect,
                    Renderer, Table, board_mover, fighter_mover, hand_mover, token_mover)
from .textures import charuco_board, token_texture

SIDE_COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (40, 38, 200), "blue": (190, 95, 25), "white": (238, 238, 236),
    "green": (55, 165, 45), "yellow": (40, 200, 230),
}
BASES_MM = (25.0, 25.0, 28.5, 32.0, 32.0, 32.0, 40.0, 50.0, 60.0)
BASE_THICKNESS_IN = round(4.0 * MM, 5)
TOKEN_DIAMETER_IN = 1.0
TOKEN_TAG_IN = 0.66  # a square tag printed inside a 1 in disc
SLEEVES = [(90, 60, 40), (40, 40, 45), (60, 90, 120), (130, 130, 135), (50, 100, 60), (150, 80, 110)]


def _ease(a: float) -> float:
    a = min(max(a, 0.0), 1.0)
    return a * a * (3 - 2 * a)


# ----------------------------------------------------------------------------- game state
@dataclass
class Move:
    t0: float
    t1: float
    start: tuple[float, float]
    end: tuple[float, float]


@dataclass
class FighterScript:
    """One fighter: who it is, what it looks like and where it goes."""
    id: int
    team: int
    colour: str
    rim_bgr: tuple[int, int, int]
    base_mm: float
    look: FighterLook
    start: tuple[float, float]
    z: float
    moves: list[Move] = field(default_factory=list)
    removed_at: float | None = None

    @property
    def r(self) -> float:
        return self.base_mm * MM / 2

    def at(self, t: float) -> tuple[float, float]:
        p = self.start
        for m in self.moves:
            if t >= m.t1:
                p = m.end
            elif t > m.t0:
                a = _ease((t - m.t0) / (m.t1 - m.t0))
                return (m.start[0] + a * (m.end[0] - m.start[0]), m.start[1] + a * (m.end[1] - m.start[1]))
        return p


@dataclass
class TokenScript:
    id: str
    kind: str
    tag_id: int | None
    xy: tuple[float, float]
    theta: float
    tex: np.ndarray
    diameter: float = TOKEN_DIAMETER_IN


@dataclass
class HandScript:
    """A hand: enters from ``entry`` over [t0, t1], hovers over ``target(t)`` until t2,
    leaves by t3. ``z_hover`` is the palm height while hovering."""
    id: int
    t0: float
    t1: float
    t2: float
    t3: float
    entry: tuple[float, float]
    target: Callable[[float], tuple[float, float]]
    z_hover: float
    z_travel: float
    skin: tuple
    sleeve: tuple
    purpose: str

    def at(self, t: float) -> tuple[float, float, float, float] | None:
        """Palm (x, y, z) and pointing angle, or None when off the table."""
        if not (self.t0 <= t <= self.t3):
            return None
        if t < self.t1:
            e = _ease((t - self.t0) / (self.t1 - self.t0))
            a, b = self.entry, self.target(self.t1)
        elif t <= self.t2:
            e, a, b = 1.0, self.target(t), self.target(t)
        else:
            e = 1 - _ease((t - self.t2) / (self.t3 - self.t2))
            a, b = self.entry, self.target(self.t2)
        x, y = a[0] + e * (b[0] - a[0]), a[1] + e * (b[1] - a[1])
        # High while crossing the table (clear of terrain), down to hover height at the end.
        z = self.z_hover + (self.z_travel - self.z_hover) * (1 - _ease((e - 0.55) / 0.45))
        z += 8.0 * (1 - e)  # coming down from the player's height
        tb = self.target(min(max(t, self.t1), self.t2))
        ang = math.atan2(tb[1] - self.entry[1], tb[0] - self.entry[0])
        return (x, y, z, ang)


@dataclass
class Game:
    """The table, the fighters, the tokens and the hands, over ``seconds``."""
    table: Table
    sides: list[dict]
    fighters: list[FighterScript]
    tokens: list[TokenScript]
    hands: list[HandScript]
    seconds: float
    pickups: dict[str, int] = field(default_factory=dict)  # token id -> fighter id (filled while playing)
    kind = "warcry"  # the game's rules (an Epic-scale game subclasses this: tracker.synthetic.epic_game)

    def play(self, fps: float, n_frames: int) -> Iterator["FrameState"]:
        return play(self, fps, n_frames)

    def frame_extra(self, state: "FrameState") -> dict:
        """More truth for one frame (none for Warcry)."""
        return {}

    def truth_extra(self) -> dict:
        """More truth for the whole set (none for Warcry)."""
        return {}

    def config(self, width: int, height: int) -> dict:
        """The game config (the eval setup.json schema, loadable by GameConfig)."""
        W, D = self.table.play_area_in
        tok = {}
        for kind in ("objective", "treasure"):
            ts = [t for t in self.tokens if t.kind == kind]
            tok[kind] = {"diameter_in": max([t.diameter for t in ts], default=TOKEN_DIAMETER_IN), "tag_ids": sorted(t.tag_id for t in ts if t.tag_id is not None),
                         "untagged": sum(t.tag_id is None for t in ts)}
        return {
            "name": "warcry-demo",
            "kind": "warcry",
            "units": "inches; world frame of the physical spec",
            "image": {"width": width, "height": height},
            "table": {"play_area_in": [W, D], "dictionary": "DICT_4X4_100",
                      "markers": [{"id": m, "centre_in": [float(c[0]), float(c[1])], "size_in": s} for m, c, s in self.table.markers]},
            "calibration_board": {"type": "charuco", "squares": [7, 5], "square_in": 1.25, "marker_in": 0.9,
                                  "dictionary": "DICT_5X5_100", "margin_in": 0.5},
            "sides": self.sides,
            "tokens": tok,
            "token_colours": {"treasure": "gold", "objective": "white disc, black ring or tag"},
            "terrain_library": [{"tag_id": tb.tag_id, "tag_size_in": tb.tag_size, "type": tb.type,
                                 "height_in": round(tb.height, 5),
                                 "footprint_in_tag_frame": [[round(x, 5), round(y, 5)] for x, y in tb.footprint_local()]}
                                for tb in self.table.terrain if tb.tagged],
            "base_thickness_in": BASE_THICKNESS_IN,
        }


def plan_game(rng: np.random.Generator, seconds: float = 24.0, n_fighters: int = 12, n_sides: int | None = None,
              hands: bool = True, n_terrain: int = 5, side_colours: tuple[str, ...] | None = None,
              n_untagged_terrain: int = 0) -> Game:
    """Lay out a table and script a game on it (see the module docstring)."""
    table = Table.random(rng, n_terrain=n_terrain, n_untagged=n_untagged_terrain)
    W, D = table.play_area_in
    n_sides = int(rng.integers(2, 5)) if n_sides is None else n_sides
    names = [str(c) for c in rng.permutation(list(SIDE_COLOURS))[:n_sides]]
    if side_colours is not None:  # chosen by the caller (and so is the number of sides, if not given)
        names = list(side_colours)[:n_sides]
        n_sides = len(names)
    terrain_polys = [tb.polygon() for tb in table.terrain]
    blocked = unary_union(terrain_polys) if terrain_polys else Point(-99, -99).buffer(0.1)
    platforms = [tb for tb in table.terrain if tb.type == "platform"]

    # Tokens first: objectives (one plain, the rest tagged) and treasure (one gold, one tagged).
    tokens: list[TokenScript] = []
    obj_ids = list(rng.permutation(np.arange(40, 60))[:3])
    tre_ids = list(rng.permutation(np.arange(60, 80))[:1])
    kinds = [("objective", None), ("objective", int(obj_ids[0])), ("objective", int(obj_ids[1])),
             ("treasure", None), ("treasure", int(tre_ids[0]))]
    for k, (kind, tag) in enumerate(kinds):
        for _ in range(500):
            p = (rng.uniform(2, W - 2), rng.uniform(2, D - 2))
            if blocked.distance(Point(p)) < 1.2 or any(math.dist(p, t.xy) < 3.0 for t in tokens):
                continue
            theta = rng.uniform(-math.pi, math.pi)
            tokens.append(TokenScript(f"{kind}-{k}", kind, tag, p, theta, token_texture(kind, tag, TOKEN_TAG_IN)))
            break

    # Fighters: sides take turns; two stand on platform tops, the rest on the floor.
    # Our bases' side walls are painted in the rim colour (scene.fighter_mover).
    sides = [{"index": i, "colour": c, "rim_bgr": list(SIDE_COLOURS[c]), "bases_mm": [], "rim_style": "painted_edge"}
             for i, c in enumerate(names)]
    fighters: list[FighterScript] = []
    for fid in range(n_fighters):
        team = fid % n_sides
        base = float(BASES_MM[int(rng.integers(len(BASES_MM)))])
        r = base * MM / 2
        on_platform = fid < min(2, len(platforms)) and n_fighters >= 4
        for attempt in range(3000):
            if on_platform and attempt == 400:
                on_platform = False  # no room up there for this base: stand on the floor
            if on_platform:
                tb = platforms[fid % len(platforms)]
                area = tb.polygon().buffer(-(r + 0.15))
                if area.is_empty:
                    base, r = 25.0, 25.0 * MM / 2
                    continue
                x0, y0, x1, y1 = area.bounds
                p = (rng.uniform(x0, x1), rng.uniform(y0, y1))
                if not area.contains(Point(p)):
                    continue
                z = tb.height
                # Keep the tag readable: do not stand on it.
                if math.dist(p, tb.tag_xy) < r + 0.8:
                    continue
            else:
                p = (rng.uniform(r + 0.3, W - r - 0.3), rng.uniform(r + 0.3, D - r - 0.3))
                if blocked.distance(Point(p)) < r + 0.3:
                    continue
                z = 0.0
            if any(math.dist(p, f.start) < r + f.r + 0.3 for f in fighters):
                continue
            if any(math.dist(p, t.xy) < r + 0.8 for t in tokens):
                continue
            break
        else:
            raise RuntimeError("could not place every fighter; use fewer fighters")
        sides[team]["bases_mm"].append(base)
        look = FighterLook.random(rng, base, SIDE_COLOURS[names[team]])
        fighters.append(FighterScript(fid, team, names[team], SIDE_COLOURS[names[team]], base, look, p, z))

    game = Game(table, sides, fighters, tokens, [], seconds)
    _script(rng, game, hands, blocked)
    return game


def _script(rng: np.random.Generator, game: Game, hands: bool, blocked) -> None:
    """Activations one at a time: glides (some carried by a hand), the treasure pickup,
    the take-down, and free hand sweeps in between."""
    W, D = game.table.play_area_in
    T = game.seconds
    hmax = max([tb.height for tb in game.table.terrain] + [0.0])
    hand_busy_until = -1.0
    treasures = [tk for tk in game.tokens if tk.kind == "treasure"]
    picked = False
    t = 0.5
    k = 0
    removal_time = 0.55 * T
    removal_done = False

    def positions(at: float, skip: int) -> list[tuple[tuple[float, float], float, float]]:
        return [(f.at(at), f.r, f.z) for f in game.fighters
                if f.id != skip and (f.removed_at is None or f.removed_at > at)]

    def edge_entry(p):
        d = {(p[0], -12.0): p[1], (p[0], D + 12.0): D - p[1], (-12.0, p[1]): p[0], (W + 12.0, p[1]): W - p[0]}
        e = min(d, key=d.get)
        return (e[0] + rng.uniform(-3, 3), e[1] + rng.uniform(-3, 3))

    def add_hand(t0, t1, t2, t3, target, z_hover, purpose):
        nonlocal hand_busy_until
        entry = edge_entry(target(t1))
        game.hands.append(HandScript(len(game.hands), t0, t1, t2, t3, entry, target, z_hover,
                                     max(z_hover, hmax + 2.6), SKIN[int(rng.integers(len(SKIN)))],
                                     SLEEVES[int(rng.integers(len(SLEEVES)))], purpose))
        hand_busy_until = t3 + 0.2

    while t < T - 1.0:
        alive = [f for f in game.fighters if f.removed_at is None]
        if hands and not removal_done and t >= removal_time and len(alive) > 3:
            # Take one fighter down: a hand reaches it, lifts it off, leaves.
            cands = [f for f in alive if f.z == 0]
            f = cands[int(rng.integers(len(cands)))]
            t0 = max(t, hand_busy_until)
            if t0 + 2.2 < T:
                p = f.at(t0)
                add_hand(t0, t0 + 0.8, t0 + 1.4, t0 + 2.2, lambda _t, p=p: (p[0] - 0.4, p[1]),
                         f.z + BASE_THICKNESS_IN + f.look.height + 1.1, "take-down")
                f.removed_at = t0 + 1.1
                t = t0 + 2.4
            removal_done = True
            continue
        if hands and k % 4 == 3 and t > hand_busy_until and t + 2.5 < T:
            # A free sweep: a hand reaches over the table and goes back.
            p = (rng.uniform(3, W - 3), rng.uniform(3, D - 3))
            z = game.table.surface_height(*p)
            z = max(z, max((tb.height for tb in game.table.terrain if tb.polygon().distance(Point(p)) < 3), default=0.0))
            add_hand(t, t + 0.9, t + 1.5, t + 2.3, lambda _t, p=p: p, z + 3.2, "sweep")
            t += 1.2
            k += 1
            continue
        # From the second activation on, until it happens: walk onto a treasure.
        pick = k >= 1 and not picked and bool(treasures)
        floor = [f for f in alive if f.z == 0]
        if pick:
            pairs = sorted(((f, tk) for f in floor for tk in treasures), key=lambda p: math.dist(p[0].at(t), p[1].xy))[:8]
        else:
            pairs = [(f, None) for f in rng.permutation(alive)[:6]]
        dur = float(rng.uniform(1.0, 2.0))
        planned = False
        for f, treasure in pairs:
            start = f.at(t)
            others = positions(t, f.id)
            for _ in range(60):
                if pick:
                    v = np.subtract(treasure.xy, start)
                    dist = float(np.linalg.norm(v))
                    end = tuple(float(c) for c in np.add(start, v * (dist - 0.4) / dist)) if dist > 0.5 else start
                    dur = max(dur, dist / 4.0)
                else:
                    a = rng.uniform(0, 2 * math.pi)
                    L = rng.uniform(3.0, 6.0) if f.z == 0 else rng.uniform(0.6, 1.5)
                    end = (start[0] + L * math.cos(a), start[1] + L * math.sin(a))
                path = LineString([start, end]).buffer(f.r + 0.05)
                if f.z == 0:
                    ok = shp_box(f.r + 0.2, f.r + 0.2, W - f.r - 0.2, D - f.r - 0.2).contains(Point(end)) \
                        and path.distance(blocked) > 0.1
                else:
                    top = next(tb for tb in game.table.terrain if tb.polygon().contains(Point(start)))
                    ok = top.polygon().buffer(-(f.r + 0.1)).contains(Point(end)) and \
                        Point(top.tag_xy).distance(LineString([start, end])) > f.r + 0.6
                ok = ok and all(Point(p).distance(path) > r + 0.1 for p, r, z in others if z == f.z or f.z == 0)
                ok = ok and all(Point(tk.xy).distance(path) > 0.55 for tk in game.tokens if tk is not treasure)
                if ok:
                    break
                if pick:
                    break
            else:
                continue
            if not ok:
                continue
            f.moves.append(Move(t, t + dur, start, end))
            if pick:
                picked = True  # the pickup itself happens while playing, by distance
            if hands and t > hand_busy_until and rng.random() < 0.5 and t - 0.7 > 0 and t + dur + 0.7 < T:
                # The player picks the model up and puts it down elsewhere: the hand covers it.
                add_hand(t - 0.7, t, t + dur, t + dur + 0.7, lambda _t, f=f: (lambda q: (q[0] - 0.35, q[1]))(f.at(_t)),
                         f.z + BASE_THICKNESS_IN + f.look.height + 1.0, "move")
            planned = True
            break
        t += dur + float(rng.uniform(0.3, 0.8)) if planned else 0.3
        k += 1


# ----------------------------------------------------------------------------- playing
@dataclass
class FrameState:
    time_s: float
    fighters: list[tuple[FighterScript, tuple[float, float], str | None]]  # script, xy, carrying
    tokens: list[TokenScript]
    hands: list[tuple[HandScript, tuple[float, float, float, float]]]


def play(game: Game, fps: float, n_frames: int) -> Iterator[FrameState]:
    """The game frame by frame. A treasure is picked up by the first fighter on the
    floor whose base centre comes within 1 in of it; it then rides with that fighter."""
    carried: dict[str, int] = {}
    for i in range(n_frames):
        t = i / fps
        fs = []
        for f in game.fighters:
            if f.removed_at is not None and t >= f.removed_at:
                continue
            xy = f.at(t)
            for tk in game.tokens:
                if tk.kind == "treasure" and tk.id not in carried and f.z == 0 and math.dist(xy, tk.xy) < 1.0:
                    carried[tk.id] = f.id
            fs.append((f, xy, next((k for k, v in carried.items() if v == f.id), None)))
        toks = [tk for tk in game.tokens if tk.id not in carried]
        hs = [(h, h.at(t)) for h in game.hands if h.at(t) is not None]
        yield FrameState(t, fs, toks, hs)
    game.pickups = carried


def movers_for(state: FrameState) -> list[Mover]:
    out: list[Mover] = []
    for f, (x, y), _ in state.fighters:
        out.append(fighter_mover(f.id, f.look, x, y, f.z, BASE_THICKNESS_IN))
    for k, tk in enumerate(state.tokens):
        out.append(token_mover(k, tk.xy[0], tk.xy[1], 0.0, tk.diameter, tk.tex, tk.theta))
    for h, (x, y, z, ang) in state.hands:
        out.append(hand_mover(h.id, (x, y, z), ang, h.skin, h.sleeve))
    return out


# ----------------------------------------------------------------------------- sensor
@dataclass(frozen=True)
class Sensor:
    """What the webcam adds: vignetting, lens blur, noise (then JPEG/MPEG compression)."""
    noise_sigma: float = 3.0
    blur_sigma: float = 0.6
    vignette: float = 0.18

    @classmethod
    def random(cls, rng: np.random.Generator) -> "Sensor":
        return cls(float(rng.uniform(2.0, 4.0)), float(rng.uniform(0.45, 0.7)), float(rng.uniform(0.1, 0.25)))

    def apply(self, img: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        h, w = img.shape[:2]
        out = img * _vignette(w, h, self.vignette)[..., None]
        out = cv2.GaussianBlur(out, (0, 0), self.blur_sigma)
        # Fresh Gaussian noise per frame is the slowest step; a random window of a larger
        # fixed noise field looks the same and costs a tenth.
        bank = _noise_bank(w, h)
        oy, ox, k = int(rng.integers(0, 64)), int(rng.integers(0, 64)), int(rng.integers(0, len(bank)))
        out += bank[k][oy:oy + h, ox:ox + w] * np.float32(self.noise_sigma)
        return np.clip(out, 0, 255).astype(np.uint8)


_NOISE: dict = {}


def _noise_bank(w: int, h: int) -> list[np.ndarray]:
    if (w, h) not in _NOISE:
        r = np.random.default_rng(987654321)
        _NOISE.clear()
        _NOISE[(w, h)] = [r.standard_normal((h + 64, w + 64, 3), dtype=np.float32) for _ in range(3)]
    return _NOISE[(w, h)]


_VIG: dict = {}


def _vignette(w: int, h: int, k: float) -> np.ndarray:
    key = (w, h, round(k, 6))
    if key not in _VIG:
        yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
        r2 = ((xx - w / 2) ** 2 + (yy - h / 2) ** 2) / ((w / 2) ** 2 + (h / 2) ** 2)
        _VIG[key] = (1 - k * r2).astype(np.float32)
    return _VIG[key]


# ----------------------------------------------------------------------------- truth
def _r(v: float, n: int = 5) -> float:
    return round(float(v), n)


def frame_truth(i: int, state: FrameState, cam: Camera, info: dict, renderer: Renderer) -> dict:
    """One frame of truth in the eval format (plus hands and visibility without hands)."""
    fighters = []
    pts = [(x, y, f.z) for f, (x, y), _ in state.fighters]
    uv = cam.project(pts) if pts else np.zeros((0, 2))
    for (f, (x, y), carrying), p in zip(state.fighters, uv):
        sil, vis, vis_nh = info.get(ID_FIGHTER + f.id, (0, 0, 0))
        vf = vis / sil if sil else 0.0
        fighters.append({
            "id": f.id, "team": f.team, "team_colour": f.colour, "base_mm": f.base_mm,
            "x": _r(x), "y": _r(y), "z": _r(f.z), "occluded": bool(vf < 0.5), "visible_fraction": _r(vf, 3),
            "visible_fraction_without_hands": _r(vis_nh / sil if sil else 0.0, 3),
            "image_xy": [_r(p[0]), _r(p[1])], "carrying": carrying})
    tokens = []
    for k, tk in enumerate(state.tokens):  # movers_for draws token k as ID_TOKEN + k
        sil, vis, _ = info.get(ID_TOKEN + k, (0, 0, 0))
        vf = vis / sil if sil else 0.0
        # A token under a player's hand is not in sight: scored like a fighter's occlusion.
        tokens.append({"id": tk.id, "kind": tk.kind, "tag_id": tk.tag_id, "x": _r(tk.xy[0]), "y": _r(tk.xy[1]), "z": 0.0,
                       "diameter_in": tk.diameter,
                       "tag_size_in": round(TOKEN_TAG_IN * tk.diameter, 5) if tk.tag_id is not None else None,
                       "occluded": bool(vf < 0.5), "visible_fraction": _r(vf, 3)})
    hands = []
    for h, (x, y, z, ang) in state.hands:
        q = cam.project([(x, y, z)])[0]
        hands.append({"id": h.id, "purpose": h.purpose, "x": _r(x), "y": _r(y), "z": _r(z),
                      "pointing_deg": _r(math.degrees(ang), 2), "image_xy": [_r(q[0]), _r(q[1])]})
    return {"frame": i, "time_s": _r(state.time_s, 4), "fighters": fighters, "tokens": tokens, "hands": hands}


# ----------------------------------------------------------------------------- calibration views
def board_pose(rng: np.random.Generator, cam: Camera, table: Table, cell: tuple[int, int], grid=(3, 3),
               margin_in: float = 0.5) -> Rect:
    """The ChArUco board held up in the air, tilted 10-45 deg from the line of sight,
    over one cell of a grid on the image (so the set of views covers the frame), fully
    in view and clear of the terrain."""
    board, tex, margin, ppi = charuco_board()
    bw, bh = 7 * 1.25 + 2 * margin, 5 * 1.25 + 2 * margin
    C = cam.position
    hmax = max([tb.height for tb in table.terrain] + [0.0])
    for attempt in range(400):
        shrink = attempt / 400  # if a corner cell is hard, drift inward and use a smaller board
        u = ((cell[0] + rng.uniform(0.15, 0.85)) / grid[0] * (1 - 0.5 * shrink) + 0.25 * shrink) * cam.width
        v = ((cell[1] + rng.uniform(0.15, 0.85)) / grid[1] * (1 - 0.5 * shrink) + 0.25 * shrink) * cam.height
        ray = cv2.undistortPoints(np.array([[[u, v]]], float), cam.K, cam.dist).reshape(2)
        d = cam.R.T @ np.array([ray[0], ray[1], 1.0])
        # Held up toward the camera so it spans 30-55 % of the image width: big enough
        # for every marker to decode even when tilted, and the views cover the frame.
        dist = cam.K[0, 0] * bw / (rng.uniform(0.3 - 0.1 * shrink, 0.55 - 0.3 * shrink) * cam.width)
        centre = C + d / np.linalg.norm(d) * dist
        # Printed face toward the camera, tilted 10-45 deg away from the line of sight
        # (tilting away from the vertical would make grazing views in the image corners).
        v = (C - centre) / np.linalg.norm(C - centre)
        a = np.cross(v, rng.normal(size=3))
        a /= np.linalg.norm(a)
        n = cv2.Rodrigues(math.radians(rng.uniform(10, 45)) * a)[0] @ v
        ez = -n  # OpenCV's board z points away from the viewer
        ref = np.cross(ez, [0.0, 0.0, 1.0]) if abs(ez[2]) < 0.99 else np.array([1.0, 0.0, 0.0])
        ex0 = ref - np.dot(ref, ez) * ez
        ex0 /= np.linalg.norm(ex0)
        ey0 = np.cross(ez, ex0)
        spin = rng.uniform(0, 2 * math.pi)
        ex = math.cos(spin) * ex0 + math.sin(spin) * ey0
        ey = np.cross(ez, ex)
        Rb = np.stack([ex, ey, ez], 1)
        origin = centre - ex * bw / 2 - ey * bh / 2
        rect = Rect(origin, ex, ey, bw, bh, tex, ppi)
        cs = rect.corners()
        if cs[:, 2].min() < hmax + 1.0:
            continue
        p = cam.project(cs)
        edge = max(3.0, 0.006 * cam.width)
        if np.any(p < edge) or np.any(p[:, 0] > cam.width - edge) or np.any(p[:, 1] > cam.height - edge):
            continue
        # Far outside the view the distortion polynomial folds points back into the
        # image: accept only corners whose projection undistorts back to themselves.
        pc = (cam.R @ cs.T).T + np.asarray(cam.tvec, float)
        back = cv2.undistortPointsIter(p.reshape(-1, 1, 2), cam.K, cam.dist, None, None,
                                       (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 50, 1e-12)).reshape(-1, 2)
        if np.abs(back - pc[:, :2] / pc[:, 2:3]).max() > 1e-4:
            continue
        if np.dot(-Rb[:, 2], C - centre) <= 0:
            continue
        return rect
    raise RuntimeError("no board pose fits in view")


def board_truth(rect: Rect, cam: Camera) -> dict:
    """Board -> camera pose (OpenCV CharucoBoard object frame, inches)."""
    _, _, margin, _ = charuco_board()
    Rb = np.stack([rect.ex, rect.ey, np.cross(rect.ex, rect.ey)], 1)
    O = rect.origin + margin * rect.ex + margin * rect.ey
    R = cam.R @ Rb
    t = cam.R @ O + np.asarray(cam.tvec, float)
    ez = np.cross(rect.ex, rect.ey)
    return {"rvec": [_r(v, 6) for v in cv2.Rodrigues(R)[0].ravel()], "tvec": [_r(v, 6) for v in t],
            "origin_world": [_r(v) for v in O], "tilt_deg": _r(math.degrees(math.acos(abs(ez[2]))), 3)}


# ----------------------------------------------------------------------------- the set
def render_set(out_dir: str | Path, seed: int = 0, width: int = 1280, height: int = 720, seconds: float = 24.0,
               fps: float = 15.0, video: bool = True, n_calib_views: int = 15, hands: bool = True,
               bump_at: int | None = None, bump_shift_in: float = 1.0, bump_tilt_deg: float = 2.0,
               n_fighters: int = 12, n_sides: int | None = None, supersample: int = 2,
               jpeg_quality: int = 88, progress: bool = False, side_colours: tuple[str, ...] | None = None,
               n_untagged_terrain: int = 0, game: Game | None = None, camera_height_in: float | None = None,
               state_tokens: int = 0, clutter: int = 0) -> Path:
    """Render a whole set: game.yaml, calib/NN.jpg, table.jpg, clip.mp4 (or
    frames/NNNNNN.jpg when ``video`` is False) and truth.json. Deterministic in ``seed``.

    ``bump_at`` (a frame index) knocks the camera: from that frame on it is moved
    ``bump_shift_in`` and turned ``bump_tilt_deg``; the truth records the new camera.
    ``n_untagged_terrain`` adds terrain boxes with no tag (kept out of the game config's
    terrain library; the truth lists them under ``untagged_terrain`` with footprints).
    ``state_tokens`` lays that many tagged state tokens (ids 80-83) beside fighters and
    ``clutter`` that many untagged damage discs and dice on the table (state_props.py);
    the config gets a ``state_tokens:`` section, each frame's truth ``state_tokens``
    (with the fighter each belongs to) and ``clutter``.

    >>> render_set("/tmp/tiny", seed=1, width=640, height=360, seconds=1, fps=5,
    ...            n_calib_views=2, n_fighters=6)               # doctest: +SKIP
    PosixPath('/tmp/tiny')
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    # Separate streams, so e.g. the number of calib views does not change the game.
    r_game, r_cam, r_calib, r_sensor, r_bump = (np.random.default_rng(s) for s in rng.integers(0, 2**63, 5))
    if game is None:  # else a game planned by the caller (e.g. an Epic-scale one), rendered the same way
        game = plan_game(r_game, seconds, n_fighters, n_sides, hands, side_colours=side_colours,
                         n_untagged_terrain=n_untagged_terrain)
    cam = overhead_camera(r_cam, width, height, game.table.play_area_in, height_in=camera_height_in)
    props = []
    if state_tokens or clutter:  # own stream: without them the set is exactly as before
        from .state_props import plan_props
        props = plan_props(np.random.default_rng([seed, 8080]), game, state_tokens, clutter)
    sensor = Sensor.random(r_sensor)
    n_frames = int(round(seconds * fps))
    cam_bumped = bumped(cam, r_bump, bump_shift_in, bump_tilt_deg) if bump_at is not None else None
    params = [int(x) for x in r_sensor.integers(0, 2**31, 3)]
    enc = [int(cv2.IMWRITE_JPEG_QUALITY), jpeg_quality]

    def noise_rng(kind: int, i: int) -> np.random.Generator:
        return np.random.default_rng([params[kind], i])

    renderer = Renderer(game.table, cam, supersample)

    # The empty table and the calibration views (same camera, before the game).
    cv2.imwrite(str(out / "table.jpg"), sensor.apply(renderer.render([])[0], noise_rng(0, 0)), enc)
    (out / "calib").mkdir(exist_ok=True)
    views = []
    cells = [(c, r) for r in range(3) for c in range(3)]
    for v in range(n_calib_views):
        rect = board_pose(r_calib, cam, game.table, cells[int(r_calib.permutation(9)[0]) if v >= 9 else v])
        img, _ = renderer.render([board_mover(rect)])
        name = f"calib/{v:02d}.jpg"
        cv2.imwrite(str(out / name), sensor.apply(img, noise_rng(1, v)), enc)
        views.append({"file": name, **board_truth(rect, cam)})

    # The game.
    writer = None
    if video:
        writer = cv2.VideoWriter(str(out / "clip.mp4"), cv2.VideoWriter_fourcc(*"mp4v"), fps, (width, height))
        if not writer.isOpened():
            raise RuntimeError("cv2.VideoWriter cannot write mp4v here; pass video=False for JPEG frames")
    else:
        (out / "frames").mkdir(exist_ok=True)
    frames = []
    it = game.play(fps, n_frames)
    if progress:
        from tqdm import tqdm
        it = tqdm(it, total=n_frames, desc=f"rendering {out.name}", unit="frame")
    for i, state in enumerate(it):
        fcam = cam
        if cam_bumped is not None and i >= bump_at:
            fcam = cam_bumped
            if i == bump_at:
                renderer = Renderer(game.table, cam_bumped, supersample)
        if props:
            from .state_props import prop_movers, prop_truth
            fxy = {f.id: xy for f, xy, _ in state.fighters}
            img, info = renderer.render(movers_for(state) + prop_movers(props, fxy))
        else:
            img, info = renderer.render(movers_for(state))
        u8 = sensor.apply(img, noise_rng(2, i))
        if writer is not None:
            writer.write(u8)
        else:
            cv2.imwrite(str(out / f"frames/{i:06d}.jpg"), u8, enc)
        ft = frame_truth(i, state, fcam, info, renderer)
        if props:
            ft.update(prop_truth(props, fxy, info))
        ft.update(game.frame_extra(state))
        if cam_bumped is not None and i == bump_at:
            ft["camera"] = cam_bumped.to_truth()
        if not video:
            ft["file"] = f"frames/{i:06d}.jpg"
        frames.append(ft)
    if writer is not None:
        writer.release()

    cfg = game.config(width, height)
    if props:
        from .state_props import state_tokens_config
        cfg["state_tokens"] = state_tokens_config()
    cfg.update({"fps": fps, "video": "clip.mp4" if video else None,
                "frames": None if video else [f["file"] for f in frames],
                "calibration_views": [v["file"] for v in views], "empty_table": "table.jpg"})
    (out / "game.yaml").write_text("# Rendered by tracker.synthetic (seed %d). Units: inches.\n" % seed
                                   + yaml.safe_dump(cfg, sort_keys=False))
    truth = {
        "generator": "tracker.synthetic", "seed": seed, "kind": game.kind,
        "image": {"width": width, "height": height, "supersample": supersample},
        "camera": cam.to_truth(), "fps": fps, "video": "clip.mp4" if video else None, "n_frames": n_frames,
        "table": {"play_area_in": list(game.table.play_area_in),
                  "markers": [{"id": m, "centre": list(c), "size_in": s,
                               "corners_world": [[a, b] for a, b, _ in _marker_corners(c, s)]} for m, c, s in game.table.markers],
                  "marker_dictionary": "DICT_4X4_100"},
        "terrain": [{"tag_id": tb.tag_id, "type": tb.type, "tag_size_in": tb.tag_size, "height_in": _r(tb.height),
                     "pose": {"x": _r(tb.tag_xy[0]), "y": _r(tb.tag_xy[1]), "theta": _r(tb.theta),
                              "theta_deg": _r(math.degrees(tb.theta))},
                     "footprint": [[_r(x), _r(y)] for x, y in tb.footprint_world()],
                     "tag_corners_world": [[_r(v) for v in c] for c in tb.tag_corners_world()]}
                    for tb in game.table.terrain if tb.tagged],
        "teams": [{"index": s["index"], "colour": s["colour"], "bgr": s["rim_bgr"]} for s in game.sides],
        "light_dir": [_r(v) for v in game.table.light_dir],
        "photometric": {"noise_sigma": _r(sensor.noise_sigma, 3), "blur_sigma": _r(sensor.blur_sigma, 3),
                        "vignette": _r(sensor.vignette, 3), "jpeg_quality": jpeg_quality},
        "conventions": {"units": "inches", "fighter_xy": "centre of base bottom",
                        "fighter_z": "height of the surface the base stands on", "base_thickness_in": BASE_THICKNESS_IN,
                        "token_thickness_in": _r(TOKEN_THICKNESS),
                        "occluded": "less than half of the fighter's silhouette visible (id buffer, hands included)",
                        "image_xy": "cv2.projectPoints of (x, y, z) with the frame's camera"},
        "bump": None if bump_at is None else {"frame": bump_at, "shift_in": bump_shift_in, "tilt_deg": bump_tilt_deg},
        "events": {"take_down": [{"fighter": f.id, "time_s": _r(f.removed_at, 3)} for f in game.fighters if f.removed_at is not None],
                   "pickups": [{"token": k, "fighter": v} for k, v in game.pickups.items()]},
        "calib": {"board": {"squares": [7, 5], "square_in": 1.25, "marker_in": 0.9, "dictionary": "DICT_5X5_100",
                            "margin_in": 0.5, "pose_convention": "board frame (OpenCV CharucoBoard object points) -> camera, inches"},
                  "views": views},
        "table_image": "table.jpg",
        "frames": frames,
    }
    untagged = [tb for tb in game.table.terrain if not tb.tagged]
    if untagged:  # only then: sets without untagged terrain keep their exact truth
        truth["untagged_terrain"] = [{"type": tb.type, "height_in": _r(tb.height),
                                      "footprint": [[_r(x), _r(y)] for x, y in tb.footprint_world()],
                                      "area_sq_in": _r(tb.polygon().area)} for tb in untagged]
    truth.update(game.truth_extra())
    (out / "truth.json").write_text(json.dumps(truth, indent=None, separators=(",", ":")))
    return out


def _marker_corners(c, s):
    h = s / 2
    return [(c[0] - h, c[1] + h, 0.0), (c[0] + h, c[1] + h, 0.0), (c[0] + h, c[1] - h, 0.0), (c[0] - h, c[1] - h, 0.0)]
