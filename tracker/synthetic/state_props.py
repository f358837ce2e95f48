"""State tokens and table clutter for the scripted game (issue #8, recognition).

Tagged state tokens (ArUco ids 80-99 on a 1 in paper disc: activated, half-activated,
damage) are laid beside fighters, their centre within 1 in of the base edge, some of
them between two fighters but clearly nearer one; they ride along when their fighter
moves (the player moves both) and go when it is taken down. Untagged clutter, which the
rules say never interacts with the battle: small red damage discs and white dice with
pips, some beside fighters (riding along), some loose on the table.

Everything here is drawn from its own random stream, after the game is scripted: a set
rendered without these options is byte-identical to one rendered before they existed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from shapely.geometry import Point

from .raycast import hit_box
from .scene import ID_TOKEN, Mover, token_mover
from .textures import PAPER, token_texture

STATE_DIAMETER_IN = 1.0
STATE_TAG_IN = 0.66
DAMAGE_DIAMETER_IN = 0.75  # a 19 mm red counter
DIE_IN = 0.6  # a 15 mm die
# The meanings the rendered game config gives its state-token tags.
STATE_TAGS = {80: {"meaning": "activated"}, 81: {"meaning": "half-activated"}, 82: {"meaning": "damage"},
              83: {"meaning": "damage", "count": 3}}
UID_STATE, UID_CLUTTER = ID_TOKEN + 100, ID_TOKEN + 300
RED = (40, 38, 200)
PIPS = {1: [(0, 0)], 2: [(-1, -1), (1, 1)], 3: [(-1, -1), (0, 0), (1, 1)], 4: [(-1, -1), (1, 1), (-1, 1), (1, -1)],
        5: [(-1, -1), (1, 1), (-1, 1), (1, -1), (0, 0)], 6: [(-1, -1), (1, 1), (-1, 1), (1, -1), (-1, 0), (1, 0)]}


@dataclass
class Prop:
    """One state token or piece of clutter. ``owner``: the fighter it lies beside (its
    place is ``offset`` from that fighter's centre, riding along), or None: loose, at
    ``offset`` on the table."""
    id: str
    kind: str  # state | damage | die
    tag_id: int | None
    owner: int | None
    offset: tuple[float, float]
    theta: float
    size: float  # disc diameter or die side
    pips: int = 0
    tex: np.ndarray | None = None

    def at(self, fighters_xy: dict[int, tuple[float, float]]) -> tuple[float, float] | None:
        if self.owner is None:
            return self.offset
        p = fighters_xy.get(self.owner)
        return None if p is None else (p[0] + self.offset[0], p[1] + self.offset[1])

    @property
    def r(self) -> float:
        return self.size / 2 if self.kind != "die" else self.size / math.sqrt(2)


def _red_texture(size: int = 128) -> np.ndarray:
    yy, xx = np.mgrid[0:size, 0:size]
    r = np.hypot(xx + 0.5 - size / 2, yy + 0.5 - size / 2) / (size / 2)
    tex = np.empty((size, size, 3), np.float32)
    tex[:] = RED
    tex[(r > 0.72) & (r < 0.82)] *= 0.7  # a pressed edge
    return tex


def plan_props(rng: np.random.Generator, game, n_state: int, n_clutter: int) -> list[Prop]:
    """Lay ``n_state`` tagged state tokens beside floor fighters and ``n_clutter``
    damage discs and dice (half beside fighters, half loose), each clear of every base,
    token, terrain piece and other prop at every moment of the game."""
    from shapely.ops import unary_union

    W, D = game.table.play_area_in
    polys = [tb.polygon() for tb in game.table.terrain]
    blocked = unary_union(polys) if polys else Point(-99, -99).buffer(0.1)
    times = np.arange(0.0, game.seconds + 1e-9, 0.1)
    alive = {t: {f.id: f.at(t) for f in game.fighters if f.removed_at is None or t < f.removed_at} for t in times}
    by_id = {f.id: f for f in game.fighters}
    props: list[Prop] = []

    def clear(p: Prop) -> bool:
        owner = by_id.get(p.owner) if p.owner is not None else None
        for t in times:
            xy = p.at(alive[t])
            if xy is None:
                continue
            if not (p.r + 0.1 <= xy[0] <= W - p.r - 0.1 and p.r + 0.1 <= xy[1] <= D - p.r - 0.1):
                return False
            if blocked.distance(Point(xy)) < p.r + 0.15:
                return False
            if any(math.dist(xy, tk.xy) < p.r + 0.6 for tk in game.tokens):
                return False
            d_own = None if owner is None else math.dist(xy, alive[t][owner.id]) - owner.r
            for fid, q in alive[t].items():
                f = by_id[fid]
                if f.z > 0 and f.id != p.owner:
                    continue
                gap = math.dist(xy, q) - f.r  # base edge to the prop's centre
                if gap < p.r + 0.06:
                    return False
                # A state token's truth is its owner: every other base clearly farther.
                if p.kind == "state" and fid != p.owner and d_own is not None and gap < d_own + 0.35:
                    return False
            for o in props:
                oxy = o.at(alive[t])
                if oxy is not None and math.dist(xy, oxy) < p.r + o.r + 0.12:
                    return False
        return True

    floor = [f for f in game.fighters if f.z == 0]

    def beside(kind: str, k: int, size: float, tag: int | None, between: bool) -> Prop | None:
        for _ in range(200):
            f = floor[int(rng.integers(len(floor)))]
            r = size / 2 if kind != "die" else size / math.sqrt(2)
            if kind == "state":
                gap = rng.uniform(r + 0.08, 0.85)  # base edge to token centre: within 1"
            else:
                gap = rng.uniform(r + 0.08, r + 0.5)
            ang = rng.uniform(-math.pi, math.pi)
            if between:
                # Toward the nearest other fighter: between the two, nearer its own.
                others = [g for g in floor if g.id != f.id]
                if others:
                    g = min(others, key=lambda g: math.dist(f.start, g.start))
                    ang = math.atan2(g.start[1] - f.start[1], g.start[0] - f.start[0]) + rng.uniform(-0.35, 0.35)
            off = ((f.r + gap) * math.cos(ang), (f.r + gap) * math.sin(ang))
            tex = None
            if kind == "state":
                tex = token_texture("objective", tag, STATE_TAG_IN)
            elif kind == "damage":
                tex = _red_texture()
            p = Prop(f"{kind}-{k}", kind, tag, f.id, off, float(rng.uniform(-math.pi, math.pi)), size,
                     int(rng.integers(1, 7)) if kind == "die" else 0, tex)
            if clear(p):
                return p
        return None

    tags = sorted(STATE_TAGS)
    for k in range(n_state):
        tag = tags[k % len(tags)] if k < len(tags) else int(rng.choice(tags))
        p = beside("state", k, STATE_DIAMETER_IN, tag, between=(k % 3 == 2))
        if p is not None:
            props.append(p)
    for k in range(n_clutter):
        kind = "damage" if k % 2 == 0 else "die"
        size = DAMAGE_DIAMETER_IN if kind == "damage" else DIE_IN
        p = beside(kind, k, size, None, between=False) if k % 4 < 2 else None
        for _ in range(200 if p is None else 0):
            xy = (float(rng.uniform(1, W - 1)), float(rng.uniform(1, D - 1)))
            q = Prop(f"{kind}-{k}", kind, None, None, xy, float(rng.uniform(-math.pi, math.pi)), size,
                     int(rng.integers(1, 7)) if kind == "die" else 0,
                     _red_texture() if kind == "damage" else None)
            if clear(q):
                p = q
                break
        if p is not None:
            props.append(p)
    return props


@dataclass
class _Die:
    """A die: a white cube with black pips on top, turned ``yaw`` about z."""
    cx: float
    cy: float
    h: float
    yaw: float
    pips: int

    def aabb(self):
        e = self.h / 2 * (abs(math.cos(self.yaw)) + abs(math.sin(self.yaw)))
        return np.array([self.cx - e, self.cy - e, 0.0]), np.array([self.cx + e, self.cy + e, self.h])

    def hit(self, o, d):
        t, n, face = hit_box(o, d, self.cx, self.cy, self.yaw, self.h / 2, self.h / 2, 0.0, self.h)
        alb = np.empty(np.shape(t) + (3,), np.float32)
        alb[:] = (222.0, 224.0, 226.0)
        top = (face == 4) & np.isfinite(t)
        if np.any(top):
            tt = np.where(top, t, 0)
            px, py = o[0] + tt * d[0] - self.cx, o[1] + tt * d[1] - self.cy
            c, s = math.cos(self.yaw), math.sin(self.yaw)
            u, v = px * c + py * s, -px * s + py * c
            pip = np.zeros(np.shape(t), bool)
            for a, b in PIPS[self.pips]:
                pip |= np.hypot(u - a * 0.27 * self.h, v - b * 0.27 * self.h) < 0.09 * self.h
            alb = np.where((top & pip)[..., None], np.float32(25.0), alb)
        return t, n, alb


def prop_movers(props: list[Prop], fighters_xy: dict[int, tuple[float, float]]) -> list[Mover]:
    out = []
    for k, p in enumerate(props):
        xy = p.at(fighters_xy)
        if xy is None:
            continue
        if p.kind == "die":
            out.append(Mover(UID_CLUTTER + k, [_Die(xy[0], xy[1], p.size, p.theta, p.pips)]))
        else:
            out.append(token_mover(UID_STATE + k - ID_TOKEN, xy[0], xy[1], 0.0, p.size, p.tex, p.theta))
    return out


def prop_truth(props: list[Prop], fighters_xy: dict[int, tuple[float, float]], info: dict) -> dict:
    """This frame's state tokens (with the fighter each belongs to) and clutter."""
    state, clutter = [], []
    for k, p in enumerate(props):
        xy = p.at(fighters_xy)
        if xy is None:
            continue
        uid = UID_CLUTTER + k if p.kind == "die" else UID_STATE + k
        sil, vis, vis_nh = info.get(uid, (0, 0, 0))
        d = {"id": p.id, "kind": p.kind, "x": round(xy[0], 5), "y": round(xy[1], 5), "size_in": p.size,
             "fighter": p.owner, "visible_fraction": round(vis / sil, 3) if sil else 0.0}
        if p.kind == "state":
            d.update(tag_id=p.tag_id, meaning=STATE_TAGS[p.tag_id]["meaning"])
            state.append(d)
        else:
            clutter.append(d)
    return {"state_tokens": state, "clutter": clutter}


def state_tokens_config() -> dict:
    return {"diameter_in": STATE_DIAMETER_IN, "tags": {k: dict(v) for k, v in STATE_TAGS.items()}}
