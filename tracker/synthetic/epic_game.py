"""A scripted Epic-scale game (180 x 120 cm, units of 40 x 20 mm stands), rendered by the
same renderer and in the same set format as the Warcry games (:func:`render_epic_set`).

Two sides deploy along the west and east edges. Each unit is a few rectangular stands
in base contact, moving together. The script: a unit advances to within 15 cm of its
Take & Hold marker; another takes a Rescue marker (the token leaves the table as the
stand arrives on it) and carries it away; an enemy unit charges into base contact and
the escort is destroyed, its stands lifted off by a hand; the marker is put back where
the escort fell. The truth records every stand's unit, size and yaw, the markers'
owners and types (the game config's ``epic:`` section) and, per frame, where each
Rescue marker is and who escorts it.

>>> d = render_epic_set("/tmp/epic", width=640, height=360, seconds=1, fps=4, n_calib_views=1)  # doctest: +SKIP
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import numpy as np

from ..epic import EPIC_TABLE_CM, cm_to_in
from .game import (BASE_THICKNESS_IN, SIDE_COLOURS, SKIN, SLEEVES, TOKEN_TAG_IN, FighterScript, FrameState, Game,
                   HandScript, Move, TokenScript, render_set)
from .scene import MM, FighterLook, Table, TerrainBox
from .textures import token_texture

STAND_MM = (40.0, 20.0)
EPIC_SIDES = ("red", "white")
CAMERA_HEIGHT_IN = 62.0  # a 6 x 4 ft table needs the camera higher than a Warcry board
# 40 mm objective markers: seen from 62 in, a 1 in token's printed tag is ~1.5 px a cell
# at 1080p, too small to read reliably in the far corners.
MARKER_DIAMETER_IN = 40 / 25.4
TERRAIN_TAG_IN = 2.0


@dataclass
class UnitScript:
    id: str
    side: int
    type: str
    stands: list[int]  # fighter ids


@dataclass
class RescueScript:
    """A Rescue marker's story: picked up by ``escort`` at ``t_pick`` (its stand
    ``carrier`` over the marker), put back at ``t_drop`` where the escort fell."""
    token: str
    owner: int
    escort: str
    carrier: int
    t_pick: float
    t_destroyed: float
    t_drop: float


@dataclass
class EpicGame(Game):
    kind = "epic"
    units: list[UnitScript] = field(default_factory=list)
    objectives: list[dict] = field(default_factory=list)  # the epic: section's objectives
    rescue: RescueScript | None = None
    yaw: dict[int, float] = field(default_factory=dict)

    def config(self, width: int, height: int) -> dict:
        cfg = super().config(width, height)
        cfg["name"] = "epic-demo"
        cfg["kind"] = "epic"
        cfg["units"] = "inches (the Epic rules measure in cm, converted at the rules boundary)"
        cfg["sides"] = [{"index": s["index"], "colour": s["colour"], "rim_bgr": s["rim_bgr"],
                         "bases_mm": [{"shape": "rect", "mm": list(STAND_MM)}]} for s in self.sides]
        cfg["epic"] = {
            "sides": [{"index": 0, "entry_edge": "west", "deployment_zone": {"edge": "west", "depth_cm": 30}},
                      {"index": 1, "entry_edge": "east", "deployment_zone": {"edge": "east", "depth_cm": 30}}],
            "units": [{"id": u.id, "side": u.side, "stands": len(u.stands), "stand_mm": list(STAND_MM), "type": u.type}
                      for u in self.units],
            "objectives": self.objectives,
        }
        return cfg

    def play(self, fps: float, n_frames: int) -> Iterator[FrameState]:
        r = self.rescue
        for i in range(n_frames):
            t = i / fps
            fs = [(f, f.at(t), None) for f in self.fighters if f.removed_at is None or t < f.removed_at]
            toks = []
            for tk in self.tokens:
                if r is not None and tk.id == r.token:
                    if r.t_pick <= t < r.t_drop:
                        continue  # carried by the escort
                    if t >= r.t_drop:
                        tk = TokenScript(tk.id, tk.kind, tk.tag_id, self._drop_xy(), tk.theta, tk.tex, tk.diameter)
                toks.append(tk)
            hs = [(h, h.at(t)) for h in self.hands if h.at(t) is not None]
            yield FrameState(t, fs, toks, hs)

    def _carrier(self) -> FighterScript:
        return next(f for f in self.fighters if f.id == self.rescue.carrier)

    def _drop_xy(self) -> tuple[float, float]:
        return self._carrier().at(self.rescue.t_destroyed)

    def frame_extra(self, state: FrameState) -> dict:
        r = self.rescue
        if r is None:
            return {}
        t = state.time_s
        carried = r.t_pick <= t < r.t_destroyed
        xy = self._carrier().at(t) if carried else (self._drop_xy() if t >= r.t_destroyed else
                                                     next(tk.xy for tk in self.tokens if tk.id == r.token))
        return {"rescue": [{"marker": r.token, "escort": r.escort if carried else None,
                            "x_in": round(xy[0], 5), "y_in": round(xy[1], 5)}]}

    def truth_extra(self) -> dict:
        return {"stands": [{"id": f.id, "unit": u.id, "side": u.side, "shape": "rect", "size_mm": list(STAND_MM),
                            "yaw_deg": round(math.degrees(self.yaw[f.id]), 4)}
                           for u in self.units for f in self.fighters if f.id in u.stands],
                "epic_units": [{"id": u.id, "side": u.side, "type": u.type, "stands": u.stands} for u in self.units],
                "objective_markers": self.objectives,
                "epic_events": {} if self.rescue is None else {
                    "rescue_pick_up": {"marker": self.rescue.token, "unit": self.rescue.escort, "time_s": self.rescue.t_pick},
                    "escort_destroyed": {"unit": self.rescue.escort, "time_s": self.rescue.t_destroyed},
                    "marker_put_back": {"time_s": self.rescue.t_drop}}}


def _cm(x: float, y: float) -> tuple[float, float]:
    return (cm_to_in(x), cm_to_in(y))


def plan_epic_game(rng: np.random.Generator, seconds: float = 18.0) -> EpicGame:
    """The fixed story of the module docstring on a table with a little random dressing
    (terrain, models, exact spots)."""
    W, D = (cm_to_in(v) for v in EPIC_TABLE_CM)
    table = Table.random(rng, play_area_in=(W, D), n_terrain=0, n_platforms=0)
    # Terrain clear of the action: a hill block and two ruins, tagged.
    # Terrain tags 2 in square: seen from 62 in, a 1 in tag is ~2.7 px a cell at 1080p.
    table.terrain = [
        TerrainBox(10, "obstacle", 2.4, _cm(90, 20), 0.3, (-2.5, -1.5, 2.5, 1.5), (110, 115, 112), TERRAIN_TAG_IN),
        TerrainBox(11, "obstacle", 3.0, _cm(70, 100), -0.5, (-2.0, -2.0, 2.0, 2.5), (110, 115, 112), TERRAIN_TAG_IN),
        TerrainBox(12, "platform", 2.0, _cm(110, 60), 0.1, (-3.0, -2.2, 3.0, 2.2), (120, 140, 160), TERRAIN_TAG_IN),
        # A wood: a 1 mm felt template (infantry cover), tagged in a corner; the Rescue
        # marker lies in its middle.
        TerrainBox(13, "low", 0.04, (cm_to_in(135) - 2.2, cm_to_in(84) - 1.2), 0.0, (-1.3, -1.3, 5.7, 3.7), (50, 75, 60),
                   TERRAIN_TAG_IN),
    ]
    sides = [{"index": i, "colour": c, "rim_bgr": list(SIDE_COLOURS[c]), "bases_mm": []} for i, c in enumerate(EPIC_SIDES)]
    game = EpicGame(table, sides, [], [], [], seconds)
    sd = STAND_MM[1] * MM

    def unit(uid: str, side: int, kind: str, n: int, centre_cm: tuple[float, float], yaw_deg: float,
             packed: bool = True) -> UnitScript:
        yaw = math.radians(yaw_deg + rng.uniform(-4, 4))
        ax, ay = math.cos(yaw), math.sin(yaw)
        bx, by = -ay, ax
        c = _cm(*centre_cm)
        ids = []
        for k in range(n):
            # Packed: long edges touching (a line along the stands' depth); loose: a gap.
            off = (k - (n - 1) / 2) * (sd + (0.0 if packed else rng.uniform(0.25, 0.5)))
            jitter = rng.uniform(-0.08, 0.08)
            p = (c[0] + bx * off + ax * jitter, c[1] + by * off + ay * jitter)
            fid = len(game.fighters)
            look = FighterLook.random_shaped(rng, "rect", STAND_MM, SIDE_COLOURS[EPIC_SIDES[side]], yaw)
            game.fighters.append(FighterScript(fid, side, EPIC_SIDES[side], SIDE_COLOURS[EPIC_SIDES[side]],
                                               STAND_MM[0], look, p, 0.0))
            game.yaw[fid] = yaw
            ids.append(fid)
        u = UnitScript(uid, side, kind, ids)
        game.units.append(u)
        return u

    # Units of a side differ in size, as rosters do: 4 and 5 infantry stands, 3 tanks.
    inf_a = unit("red-infantry-a", 0, "infantry", 4, (120, 38), 90, packed=True)
    inf_b = unit("red-infantry-b", 0, "infantry", 5, (116, 92), 90, packed=False)
    unit("red-tanks", 0, "armoured-vehicle", 3, (28, 40), 0, packed=False)
    blu_a = unit("white-infantry-a", 1, "infantry", 4, (46, 78), 90, packed=True)
    blu_b = unit("white-infantry-b", 1, "infantry", 5, (156, 96), 90, packed=False)
    unit("white-tanks", 1, "armoured-vehicle", 3, (165, 112), 0, packed=False)

    # Objective markers: tagged 1 in tokens; owner and type in the config's epic: section.
    markers = [("red-take-and-hold", 0, "take-and-hold", 41, (160, 38)),
               ("red-rescue", 0, "rescue", 42, (135, 84)),
               ("red-cleanse", 0, "cleanse", 43, (15, 28)),
               ("white-take-and-hold", 1, "take-and-hold", 44, (20, 76)),
               ("white-cleanse", 1, "cleanse", 45, (168, 70))]
    for mid, owner, typ, tag, (x, y) in markers:
        game.tokens.append(TokenScript(mid, "objective", tag, _cm(x, y), float(rng.uniform(-math.pi, math.pi)),
                                       token_texture("objective", tag, TOKEN_TAG_IN), MARKER_DIAMETER_IN))
        game.objectives.append({"id": mid, "owner": owner, "type": typ, "tag_id": tag})
    for s in sides:
        s["bases_mm"] = [{"shape": "rect", "mm": list(STAND_MM)}]

    def advance(u: UnitScript, t0: float, t1: float, d_cm: tuple[float, float]) -> None:
        d = _cm(*d_cm)
        for fid in u.stands:
            f = game.fighters[fid]
            p = f.at(t0)
            f.moves.append(Move(t0, t1, p, (p[0] + d[0], p[1] + d[1])))

    T = seconds
    k = T / 14.0
    # 1. Red infantry A advances to within 15 cm of its Take & Hold marker (160, 38).
    advance(inf_a, 0.5 * k, 2.0 * k, (28, 0))
    # 2. White infantry A closes on its Take & Hold marker (20, 76).
    advance(blu_a, 2.3 * k, 3.8 * k, (-14, 0))
    # 3. Red infantry B walks onto the Rescue marker: its second stand ends on it.
    carrier = game.fighters[inf_b.stands[1]]
    target = game.tokens[1].xy
    p = carrier.at(4.0 * k)
    advance(inf_b, 4.0 * k, 5.5 * k, ((target[0] - p[0]) * 2.54, (target[1] - p[1]) * 2.54))
    # 4. ... and carries it back west.
    advance(inf_b, 6.0 * k, 7.5 * k, (-24, 0))
    # 5. White infantry B charges into base contact with it.
    # Stands are turned ~90 deg: their long edges face east and west, and stand 0 of a
    # unit is its easternmost. White's westernmost stand ends touching red's easternmost.
    b_end = game.fighters[inf_b.stands[0]].at(7.5 * k)
    w_now = game.fighters[blu_b.stands[-1]].at(8.0 * k)
    dx = (b_end[0] + sd + 0.02) - w_now[0]
    advance(blu_b, 8.0 * k, 9.5 * k, (dx * 2.54, (b_end[1] - w_now[1]) * 2.54))
    # 6. Red infantry B is destroyed: a hand lifts its stands off; the marker is put back.
    t_gone = 10.6 * k
    for fid in inf_b.stands:
        game.fighters[fid].removed_at = t_gone
    centre = carrier.at(10.0 * k)
    entry = (centre[0] - 6, D + 14.0) if centre[1] > D / 2 else (centre[0] - 6, -14.0)
    game.hands.append(HandScript(0, 9.9 * k, 10.4 * k, 11.0 * k, 11.9 * k, entry,
                                 lambda _t, c=centre: (c[0] - 0.3, c[1]), BASE_THICKNESS_IN + 1.6, 5.8,
                                 SKIN[int(rng.integers(len(SKIN)))], SLEEVES[int(rng.integers(len(SLEEVES)))],
                                 "take-down"))
    game.rescue = RescueScript("red-rescue", 0, inf_b.id, carrier.id, 5.5 * k, t_gone, 11.9 * k)
    return game


def render_epic_set(out_dir: str | Path, seed: int = 7, width: int = 1920, height: int = 1080,
                    seconds: float = 18.0, fps: float = 8.0, **kw) -> Path:
    """Render the Epic game as a footage/eval set (see :func:`tracker.synthetic.game.render_set`)."""
    game = plan_epic_game(np.random.default_rng(seed), seconds)
    return render_set(out_dir, seed=seed, width=width, height=height, seconds=seconds, fps=fps, game=game,
                      camera_height_in=CAMERA_HEIGHT_IN, **kw)


def truth_world_state(truth: dict, frame: dict):
    """The world state a rendered Epic set's truth describes at one frame (stands with
    their units, sizes and yaw; the tokens on the table): what the rules core is run on
    to check the tracker against."""
    from ..world import Base, Fighter, Token, WorldState

    stands = {s["id"]: s for s in truth["stands"]}
    fighters = []
    for f in frame["fighters"]:
        s = stands[f["id"]]
        w, d = (v / 25.4 for v in s["size_mm"])
        fighters.append(Fighter(str(f["id"]), f["team"], f["x"], f["y"], f["z"], Base("rect", w, d, s["yaw_deg"]),
                                unit=s["unit"]))
    tokens = [Token(t["id"], t["kind"], t["x"], t["y"], t["z"], t["diameter_in"], t["tag_id"]) for t in frame["tokens"]]
    return WorldState(frame_index=frame["frame"], fighters=tuple(fighters), tokens=tuple(tokens))
