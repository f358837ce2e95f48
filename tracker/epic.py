"""Epic-scale game model: sides, deployment zones, entry edges, units of several stands,
objective markers, and the optional ``epic:`` section of the game config.

Epic-scale rules measure in centimetres; the world state stays in inches. The rules
boundary converts at 1 in = 2.54 cm exactly (:func:`cm_to_in`, :func:`in_to_cm`).
Everything in this module that ends in ``_cm`` is centimetres, in the world frame of the
physical spec (origin at the play-area corner next to table marker 0, +x toward marker
1, +y toward marker 3).

Table edges are named by compass, with +y as north: ``south`` (y = 0), ``north``
(y = depth), ``west`` (x = 0), ``east`` (x = width).

Stands are :class:`~tracker.world.Fighter` records carrying a ``unit`` id; a
:class:`Unit` is the stands that share one. A unit's distance to a point is its closest
stand's.

>>> cfg = parse_epic_section({
...     "sides": [{"index": 0, "entry_edge": "south", "deployment_zone": {"edge": "south", "depth_cm": 30}},
...               {"index": 1, "entry_edge": "north", "deployment_zone": {"edge": "north", "depth_cm": 30}}],
...     "units": [{"id": "tac1", "side": 0, "stands": 4, "stand_mm": [40, 20], "type": "infantry"}],
...     "objectives": [{"id": "obj40", "owner": 0, "type": "take-and-hold"}]})
>>> cfg.zone(1).polygon_cm
((0.0, 90.0), (180.0, 90.0), (180.0, 120.0), (0.0, 120.0))
>>> cfg.zone(0).contains((90.0, 30.0)), cfg.zone(0).distance_cm((90.0, 45.0))
(True, 15.0)
>>> cfg.unit_spec("tac1").ground, cfg.objective("obj40").type
(True, 'take-and-hold')
>>> round(in_to_cm(cm_to_in(15.0)), 12)
15.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Literal, Mapping, Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment
from shapely.geometry import Point, Polygon

from .config import _Reader
from .errors import ConfigError
from .world import MM_PER_IN, Base, Fighter, Token, WorldState

#: Exactly, by definition of the inch.
CM_PER_IN = 2.54
EPIC_TABLE_CM = (180.0, 120.0)

XY = tuple[float, float]
Edge = Literal["south", "east", "north", "west"]
EDGES: tuple[str, ...] = ("south", "east", "north", "west")
ObjectiveType = Literal["take-and-hold", "rescue", "cleanse", "bunker", "capture"]
OBJECTIVE_TYPES: tuple[str, ...] = ("take-and-hold", "rescue", "cleanse", "bunker", "capture")
#: Unit types; every type but ``aircraft`` is a ground unit unless the roster says otherwise.
UNIT_TYPES: tuple[str, ...] = ("infantry", "light-vehicle", "armoured-vehicle", "war-engine", "aircraft")


def cm_to_in(cm: float) -> float:
    """Centimetres to inches (1 in = 2.54 cm exactly).

    >>> cm_to_in(2.54)
    1.0
    """
    return float(cm) / CM_PER_IN


def in_to_cm(inches: float) -> float:
    """Inches to centimetres.

    >>> in_to_cm(1.0)
    2.54
    """
    return float(inches) * CM_PER_IN


# ---------------------------------------------------------------------------------------
# Table, zones, sides, units, objectives
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DeploymentZone:
    """A side's deployment zone: a polygon in world centimetres.

    A point on the zone's boundary is inside it. ``distance_cm`` is 0 inside, else the
    distance to the nearest point of the zone; ``signed_distance_cm`` is negative inside
    (minus the distance to the boundary).

    >>> z = DeploymentZone(0, ((0, 0), (180, 0), (180, 30), (0, 30)))
    >>> z.signed_distance_cm((90, 20)), z.signed_distance_cm((90, 40))
    (-10.0, 10.0)
    """

    side: int
    polygon_cm: tuple[XY, ...]

    @property
    def polygon(self) -> Polygon:
        return Polygon(self.polygon_cm)

    def contains(self, p: XY) -> bool:
        return bool(self.polygon.buffer(1e-9).covers(Point(p)))

    def distance_cm(self, p: XY) -> float:
        return float(self.polygon.distance(Point(p)))

    def signed_distance_cm(self, p: XY) -> float:
        poly = self.polygon
        pt = Point(p)
        if poly.covers(pt):
            return -float(poly.exterior.distance(pt))
        return float(poly.distance(pt))


@dataclass(frozen=True)
class EpicSide:
    """A side: its index (as in the config's ``sides``), the table edge its forces enter
    from (``None``: none named) and its deployment zone."""

    index: int
    zone: DeploymentZone
    entry_edge: str | None = None
    army_morale: int = 0  # the Army Morale value the side starts the game with


@dataclass(frozen=True)
class UnitSpec:
    """A roster entry: a unit of ``stands`` stands of ``stand_mm`` (width x depth) on
    ``side``. ``ground`` is False for aircraft (and anything the roster says flies)."""

    id: str
    side: int
    stands: int
    stand_mm: XY = (40.0, 20.0)
    type: str = "infantry"
    ground: bool = True
    name: str | None = None


@dataclass(frozen=True)
class ObjectiveSpec:
    """An objective marker's owner and type; ``id`` is the world-state token's id (and
    ``tag_id`` its ArUco id, if tagged)."""

    id: str
    owner: int
    type: str
    tag_id: int | None = None


@dataclass(frozen=True)
class EpicOptions:
    """The named readings of the text's ambiguities and the tolerances the text leaves
    open (docs/epic-rules.md).

    ``morale_timing``: TODO 1 of the text. ``"after-game-end-check"`` (the literal
    reading, default): Morale effects "at the end of each Rally phase" happen after
    step R4 has checked the game end conditions, so R4 sees the Army Morale from before
    this Rally phase's objective effects. ``"before-game-end-check"``: R4 sees them.

    ``bunker_support_engages``: TODO 2. ``False`` (the literal reading, default): units
    within 15 cm of a bunker lend support; the text says nothing more, so that alone
    does not make their detachment count as engaged. ``True``: it does.

    ``contact_tolerance_cm``: how far apart (closest base edge to the marker's edge, or
    base to base) still counts as "base contact": 0.2 cm (2 mm) by default.

    ``bunker_is_enemy_unit``: the bunker marker counts as an enemy unit of its owner
    when judging "closer to it than any enemy units" (literal: "Treat the marker as if it
    were an enemy War Engine unit"); default True.

    ``infantry_cover``: terrain piece ids or types that offer an Infantry Armour bonus
    for cover; empty (default) means every terrain piece does.
    """

    morale_timing: str = "after-game-end-check"
    bunker_support_engages: bool = False
    contact_tolerance_cm: float = 0.2
    bunker_is_enemy_unit: bool = True
    infantry_cover: tuple[str, ...] = ()


MORALE_TIMINGS = ("after-game-end-check", "before-game-end-check")


@dataclass(frozen=True)
class EpicConfig:
    """The ``epic:`` section: table size (cm), sides, the roster and the objectives."""

    table_cm: XY = EPIC_TABLE_CM
    sides: tuple[EpicSide, ...] = ()
    units: tuple[UnitSpec, ...] = ()
    objectives: tuple[ObjectiveSpec, ...] = ()
    options: EpicOptions = EpicOptions()

    def side(self, index: int) -> EpicSide:
        for s in self.sides:
            if s.index == index:
                return s
        raise KeyError(index)

    def zone(self, index: int) -> DeploymentZone:
        return self.side(index).zone

    def opponents(self, index: int) -> tuple[int, ...]:
        """Every other side (with two sides: the opponent)."""
        return tuple(s.index for s in self.sides if s.index != index)

    def unit_spec(self, unit_id: str) -> UnitSpec:
        for u in self.units:
            if u.id == unit_id:
                return u
        raise KeyError(unit_id)

    def objective(self, marker_id: str) -> ObjectiveSpec:
        for o in self.objectives:
            if o.id == marker_id:
                return o
        raise KeyError(marker_id)

    def with_options(self, **kw: Any) -> "EpicConfig":
        return replace(self, options=replace(self.options, **kw))


@dataclass(frozen=True)
class ObjectiveMarker:
    """An objective marker on (or proposed for) the table: centre in world cm.

    >>> m = ObjectiveMarker("o", 0, "cleanse", 50.8, 25.4)
    >>> m.token().x, m.token().y
    (20.0, 10.0)
    """

    id: str
    owner: int
    type: str
    x_cm: float
    y_cm: float
    z_cm: float = 0.0
    sigma_cm: float = 0.0
    diameter_cm: float = 2.54

    @property
    def xy(self) -> XY:
        return (self.x_cm, self.y_cm)

    def token(self) -> Token:
        """The world-state token (inches)."""
        return Token(self.id, "objective", cm_to_in(self.x_cm), cm_to_in(self.y_cm), cm_to_in(self.z_cm),
                     diameter_in=cm_to_in(self.diameter_cm), sigma_in=cm_to_in(self.sigma_cm))

    @classmethod
    def from_token(cls, token: Token, owner: int, type: str) -> "ObjectiveMarker":
        return cls(token.id, owner, type, in_to_cm(token.x), in_to_cm(token.y), in_to_cm(token.z),
                   in_to_cm(token.sigma_in), in_to_cm(token.diameter_in))


def markers_in_state(state: WorldState, config: EpicConfig) -> tuple[ObjectiveMarker, ...]:
    """The objective tokens of the state that the config gives an owner and type (matched
    by token id, else by tag id), as markers in cm.

    An objective token whose tag could not be read (too small in the picture, blurred) is
    the one configured marker that no other token was matched to, when exactly one such
    token and one such marker are left; with more of either, which is which is unknown
    and none of them is taken.

    >>> from tracker.world import Token
    >>> cfg = EpicConfig(objectives=(ObjectiveSpec("obj50", 0, "take-and-hold", 50),
    ...                              ObjectiveSpec("obj51", 1, "cleanse", 51)))
    >>> st = WorldState(tokens=(Token("o1", "objective", 10.0, 10.0, tag_id=50),
    ...                         Token("o2", "objective", 20.0, 10.0)))
    >>> [(m.id, m.type) for m in markers_in_state(st, cfg)]
    [('obj50', 'take-and-hold'), ('obj51', 'cleanse')]
    """
    out = []
    used: set[str] = set()
    unread = []
    for t in state.objectives():
        spec = next((o for o in config.objectives if o.id == t.id), None)
        if spec is None and t.tag_id is not None:
            spec = next((o for o in config.objectives if o.tag_id == t.tag_id), None)
        if spec is not None:
            out.append(replace(ObjectiveMarker.from_token(t, spec.owner, spec.type), id=spec.id))
            used.add(spec.id)
        elif t.tag_id is None:
            unread.append(t)
    left = [o for o in config.objectives if o.id not in used and o.tag_id is not None]
    if len(unread) == 1 and len(left) == 1:
        spec = left[0]
        out.append(replace(ObjectiveMarker.from_token(unread[0], spec.owner, spec.type), id=spec.id))
    return tuple(out)


@dataclass(frozen=True)
class Unit:
    """A unit on the table: its stands (world-state fighters) and roster facts.

    >>> s = Fighter("s1", 0, 0.0, 0.0, 0.0, Base("rect", 40 / 25.4, 20 / 25.4), unit="u")
    >>> u = Unit("u", 0, (s,))
    >>> round(u.distance_cm((cm_to_in(12.0), 0.0, 0.0)), 9)
    10.0
    """

    id: str
    side: int
    stands: tuple[Fighter, ...]
    ground: bool = True
    type: str = "infantry"

    def distance_cm(self, other: Any) -> float:
        """Distance from the closest stand (closest base point) to a token / point / body, cm."""
        from .rules.measure import distance  # local: tracker.rules imports this module

        return min(in_to_cm(distance(s, other)) for s in self.stands)

    def closest_stand(self, other: Any) -> tuple[Fighter, float]:
        from .rules.measure import distance

        return min(((s, in_to_cm(distance(s, other))) for s in self.stands), key=lambda p: p[1])

    @property
    def sigma_cm(self) -> float:
        return max((in_to_cm(s.sigma_in) for s in self.stands), default=0.0)

    @property
    def occluded(self) -> bool:
        return any(s.occluded for s in self.stands)


def units_in_state(state: WorldState, config: EpicConfig | None = None) -> tuple[Unit, ...]:
    """Group the state's stands by their ``unit`` id (a stand without one is a unit of
    its own, named by its id); roster facts (ground, type) come from ``config``.

    >>> b = Base("rect", 1.5, 0.8)
    >>> st = WorldState(fighters=(Fighter("a", 0, 0, 0, 0, b, unit="u1"), Fighter("b", 0, 2, 0, 0, b, unit="u1"),
    ...                          Fighter("c", 1, 9, 0, 0, b)))
    >>> [(u.id, len(u.stands)) for u in units_in_state(st)]
    [('u1', 2), ('c', 1)]
    """
    groups: dict[str, list[Fighter]] = {}
    for f in state.fighters:
        groups.setdefault(f.unit or f.id, []).append(f)
    out = []
    for uid, stands in groups.items():
        spec = None
        if config is not None:
            spec = next((u for u in config.units if u.id == uid), None)
        out.append(Unit(uid, stands[0].side, tuple(stands), ground=spec.ground if spec else True,
                        type=spec.type if spec else "infantry"))
    return tuple(out)


# ---------------------------------------------------------------------------------------
# Grouping detected stands into units
# ---------------------------------------------------------------------------------------
def _size_matches(base: Base, stand_mm: XY, tol_mm: float) -> bool:
    got = sorted((base.width_in * MM_PER_IN, base.depth_in * MM_PER_IN))
    want = sorted(float(v) for v in stand_mm)
    return abs(got[0] - want[0]) <= tol_mm and abs(got[1] - want[1]) <= tol_mm


def group_stands(fighters: Sequence[Fighter], roster: Sequence[UnitSpec],
                 previous: Mapping[str, XY] | None = None, size_tol_mm: float = 3.0,
                 iterations: int = 20) -> tuple[Fighter, ...]:
    """Give each detected stand the ``unit`` id of a roster unit: same side, same stand
    size (either way round, within ``size_tol_mm``), no unit given more stands than the
    roster says, and the total distance from each stand to its unit's centre as small as
    possible (capacity-constrained nearest assignment, iterated from ``previous`` unit
    centres in inches if given, else from stands already carrying a unit id, else from
    spread-out seed stands). A stand that fits no roster unit keeps ``unit=None``.
    Deterministic: the same stands in any order get the same units.

    >>> b = Base("rect", 40 / 25.4, 20 / 25.4)
    >>> fs = [Fighter(f"s{k}", 0, x, 0.0, 0.0, b) for k, x in enumerate([0, 2, 4, 30, 32, 34])]
    >>> roster = [UnitSpec("a", 0, 3), UnitSpec("b", 0, 3)]
    >>> [f.unit for f in group_stands(fs, roster, previous={"a": (1, 0), "b": (33, 0)})]
    ['a', 'a', 'a', 'b', 'b', 'b']
    """
    order = sorted(range(len(fighters)), key=lambda i: (fighters[i].side, fighters[i].x, fighters[i].y, fighters[i].id))
    out: dict[int, Fighter] = {i: replace(fighters[i], unit=None) for i in range(len(fighters))}
    prev = dict(previous or {})
    for side in sorted({u.side for u in roster}):
        units = [u for u in roster if u.side == side]
        idx = [i for i in order if fighters[i].side == side and any(_size_matches(fighters[i].base, u.stand_mm, size_tol_mm) for u in units)]
        if not idx or not units:
            continue
        pts = np.array([(fighters[i].x, fighters[i].y) for i in idx], float)
        ok = np.array([[_size_matches(fighters[i].base, u.stand_mm, size_tol_mm) for u in units] for i in idx])
        # seed centres
        centres = np.zeros((len(units), 2))
        seeded = np.zeros(len(units), bool)
        for k, u in enumerate(units):
            if u.id in prev:
                centres[k] = prev[u.id]
                seeded[k] = True
            else:
                mine = [j for j, i in enumerate(idx) if fighters[i].unit == u.id]
                if mine:
                    centres[k] = pts[mine].mean(axis=0)
                    seeded[k] = True
        for k in range(len(units)):
            if seeded[k]:
                continue
            cand = [j for j in range(len(idx)) if ok[j, k]] or list(range(len(idx)))
            if seeded.any():
                dmin = np.min(np.linalg.norm(pts[cand][:, None, :] - centres[seeded][None, :, :], axis=2), axis=1)
                centres[k] = pts[cand[int(np.argmax(dmin))]]
            else:
                centres[k] = pts[cand[0]]
            seeded[k] = True
        slots = [k for k, u in enumerate(units) for _ in range(max(0, int(u.stands)))]
        assign: dict[int, int] = {}
        for _ in range(max(1, iterations)):
            cost = np.linalg.norm(pts[:, None, :] - centres[slots][None, :, :], axis=2)
            cost = np.where(ok[:, slots], cost, 1e9)
            rows, cols = linear_sum_assignment(cost)
            new = {int(r): slots[int(c)] for r, c in zip(rows, cols) if cost[r, c] < 1e8}
            if new == assign:
                break
            assign = new
            for k in range(len(units)):
                members = [j for j, kk in assign.items() if kk == k]
                if members:
                    centres[k] = pts[members].mean(axis=0)
        for j, k in assign.items():
            out[idx[j]] = replace(fighters[idx[j]], unit=units[k].id)
    return tuple(out[i] for i in range(len(fighters)))


def group_by_coherency(fighters: Sequence[Fighter], roster: Sequence[UnitSpec], *,
                       settled: Mapping[str, str] | None = None, previous: Mapping[str, XY] | None = None,
                       lost: Mapping[str, int] | None = None, coherency_cm: float = 5.0,
                       size_tol_mm: float = 3.0) -> dict[str, str | None]:
    """Stand id -> roster unit (or None), as a player sees units on the table: stands of
    one side within ``coherency_cm`` of each other (closest base edges) form one group.

    ``settled`` stands keep their unit; a new stand in a group with settled stands joins
    the nearest of their units that has room (a stand found again under a new id rejoins
    its unit). A group of new stands only goes to a unit with no settled stand present, chosen by ``linear_sum_assignment`` on: the stand count
    missing or over (weighed most), then the distance (in) from the group's centre to the
    unit's ``previous`` centre. A group bigger than its unit gives it the stands nearest
    the group's centre. ``lost``: unit -> stands gone from the table, which a group of
    new stands may not take the place of (a destroyed unit is not refilled).

    >>> b = Base("rect", 40 / 25.4, 20 / 25.4)
    >>> line = lambda p, x0, n: [Fighter(f"{p}{k}", 0, x0 + 0.8 * k, 5.0, 0.0, b) for k in range(n)]
    >>> roster = [UnitSpec("three", 0, 3), UnitSpec("four", 0, 4)]
    >>> g = group_by_coherency(line("a", 0, 4) + line("b", 30, 3), roster)
    >>> sorted(g.items())
    [('a0', 'four'), ('a1', 'four'), ('a2', 'four'), ('a3', 'four'), ('b0', 'three'), ('b1', 'three'), ('b2', 'three')]
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    from .rules.measure import distance  # local: tracker.rules imports this module

    settled = dict(settled or {})
    prev = dict(previous or {})
    out: dict[str, str | None] = {f.id: None for f in fighters}
    for side in sorted({u.side for u in roster}):
        units = {u.id: u for u in roster if u.side == side}
        stands = [f for f in fighters if f.side == side
                  and (f.id in settled or any(_size_matches(f.base, u.stand_mm, size_tol_mm) for u in units.values()))]
        if not stands:
            continue
        n = len(stands)
        reach_in = cm_to_in(coherency_cm)
        near = np.zeros((n, n), bool)
        # Each base holds the circle of half its smaller size: bases whose such circles lie
        # well within reach are within it (most pairs in a unit), without measuring their
        # outlines (shapely, the cost of this grouping every frame); those not clearly in are.
        inner = [min(f.base.width_in, f.base.depth_in) / 2 for f in stands]
        for i in range(n):
            for j in range(i + 1, n):
                a, b = stands[i], stands[j]
                gap = math.hypot(a.x - b.x, a.y - b.y)
                if gap > reach_in + a.base.radius_in + b.base.radius_in:
                    continue
                rise = max(0.0, b.z - a.z - a.base.thickness_in, a.z - b.z - b.base.thickness_in)
                if math.hypot(max(gap - inner[i] - inner[j], 0.0), rise) <= reach_in - 0.01 \
                        or distance(a, b) <= reach_in:
                    near[i, j] = near[j, i] = True
        ncomp, label = connected_components(csr_matrix(near), directed=False)
        room = {uid: u.stands for uid, u in units.items()}
        for f in stands:
            if f.id in settled and settled[f.id] in room:
                out[f.id] = settled[f.id]
                room[settled[f.id]] -= 1
        present = {settled[f.id] for f in stands if f.id in settled}
        fresh_groups = []
        for c in range(ncomp):
            members = [stands[i] for i in np.flatnonzero(label == c)]
            known = [f for f in members if f.id in settled]
            new = [f for f in members if f.id not in settled]
            if not new:
                continue
            if not known:
                fresh_groups.append(new)
                continue
            for f in new:  # joins its group's settled units, nearest first, where there is room
                for k in sorted(known, key=lambda g: math.hypot(g.x - f.x, g.y - f.y)):
                    uid = settled[k.id]
                    if room.get(uid, 0) > 0 and _size_matches(f.base, units[uid].stand_mm, size_tol_mm):
                        out[f.id] = uid
                        room[uid] -= 1
                        break
        lost = dict(lost or {})
        room = {uid: r - lost.get(uid, 0) for uid, r in room.items()}
        free = [uid for uid in units if uid not in present and room[uid] > 0]
        if not fresh_groups or not free:
            continue
        big = 1e9
        cost = np.full((len(fresh_groups), len(free)), big)
        for gi, g in enumerate(fresh_groups):
            cx, cy = float(np.mean([f.x for f in g])), float(np.mean([f.y for f in g]))
            for ui, uid in enumerate(free):
                if not all(_size_matches(f.base, units[uid].stand_mm, size_tol_mm) for f in g):
                    continue
                # A unit seen before is kept where it was (moves are a few inches a frame);
                # one never seen costs as much as a jump across most of the table.
                cost[gi, ui] = 100.0 * abs(len(g) - room[uid]) + (math.dist((cx, cy), prev[uid]) if uid in prev else 60.0)
        for gi, ui in zip(*linear_sum_assignment(cost)):
            if cost[gi, ui] >= big:
                continue
            g, uid = fresh_groups[gi], free[ui]
            cx, cy = float(np.mean([f.x for f in g])), float(np.mean([f.y for f in g]))
            for f in sorted(g, key=lambda f: math.hypot(f.x - cx, f.y - cy))[:room[uid]]:
                out[f.id] = uid
    return out


# ---------------------------------------------------------------------------------------
# Config section
# ---------------------------------------------------------------------------------------
class _R(_Reader):
    """The game config's reader (tracker.config), asked by kind name."""

    KINDS = {"num": float, "int": int, "str": str, "list": list, "dict": dict, "bool": bool}

    def get(self, key: str, kind: str, default: Any = ...) -> Any:
        return super().get(key, self.KINDS.get(kind, kind), default)


def edge_strip(edge: str, depth_cm: float, table_cm: XY = EPIC_TABLE_CM) -> tuple[XY, ...]:
    """The zone ``depth_cm`` deep along a whole table edge.

    >>> edge_strip("west", 20)
    ((0.0, 0.0), (20.0, 0.0), (20.0, 120.0), (0.0, 120.0))
    """
    W, D = (float(v) for v in table_cm)
    d = float(depth_cm)
    return {"south": ((0.0, 0.0), (W, 0.0), (W, d), (0.0, d)),
            "north": ((0.0, D - d), (W, D - d), (W, D), (0.0, D)),
            "west": ((0.0, 0.0), (d, 0.0), (d, D), (0.0, D)),
            "east": ((W - d, 0.0), (W, 0.0), (W, D), (W - d, D))}[edge]


def _zone(d: Any, where: str, side: int, table_cm: XY) -> DeploymentZone:
    r = _R(d, where)
    forms = [k for k in ("polygon_cm", "rect_cm", "edge") if k in r.d]
    if len(forms) != 1:
        raise ConfigError(f"{where}: give exactly one of polygon_cm [[x, y], ...], rect_cm [x0, y0, x1, y1], "
                          f"or edge + depth_cm")
    if forms[0] == "polygon_cm":
        pts = r.get("polygon_cm", "list")
        try:
            poly = tuple((float(p[0]), float(p[1])) for p in pts)
            assert all(len(p) == 2 for p in pts)
        except (TypeError, ValueError, IndexError, AssertionError, KeyError):
            raise ConfigError(f"{where}.polygon_cm: expected a list of [x, y] points in cm") from None
        if len(poly) < 3 or Polygon(poly).area <= 0:
            raise ConfigError(f"{where}.polygon_cm: a zone needs at least three points enclosing an area")
    elif forms[0] == "rect_cm":
        v = r.get("rect_cm", "list")
        try:
            x0, y0, x1, y1 = (float(a) for a in v)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}.rect_cm: expected [x0, y0, x1, y1] in cm") from None
        if x1 <= x0 or y1 <= y0:
            raise ConfigError(f"{where}.rect_cm: x1 must exceed x0 and y1 exceed y0")
        poly = ((x0, y0), (x1, y0), (x1, y1), (x0, y1))
    else:
        edge = r.choice("edge", EDGES)
        depth = r.get("depth_cm", "num")
        if depth <= 0:
            raise ConfigError(f"{where}.depth_cm: must be greater than 0")
        poly = edge_strip(edge, depth, table_cm)
    r.done()
    return DeploymentZone(side, poly)


def parse_epic_section(d: Any, where: str = "config.epic", play_area_in: Sequence[float] | None = None,
                       sides: Sequence[int] | None = None) -> EpicConfig:
    """Read the ``epic:`` section of a game config (see docs/epic-rules.md). Every key is
    checked; a misspelt one is named with its location and the nearest valid spelling.

    >>> parse_epic_section({"sides": [], "unitz": []})
    Traceback (most recent call last):
    ...
    tracker.errors.ConfigError: config.epic: unknown key 'unitz' (did you mean 'units'?)
    """
    r = _R(d, where)
    table_cm = EPIC_TABLE_CM if play_area_in is None else tuple(in_to_cm(v) for v in play_area_in)
    table_cm = tuple(round(v, 9) for v in table_cm)
    out_sides = []
    for i, sd in enumerate(r.get("sides", "list", [])):
        sr = _R(sd, f"{where}.sides[{i}]")
        idx = sr.get("index", "int", i)
        if sides is not None and idx not in sides:
            raise ConfigError(f"{sr.where}.index: side {idx} is not among config.sides ({', '.join(map(str, sides))})")
        edge = sr.choice("entry_edge", EDGES, None)
        zone = _zone(sr.get("deployment_zone", "dict"), f"{sr.where}.deployment_zone", idx, table_cm)
        morale = sr.get("army_morale", "int", 0)
        sr.done()
        out_sides.append(EpicSide(idx, zone, edge, morale))
    if len({s.index for s in out_sides}) != len(out_sides):
        raise ConfigError(f"{where}.sides: two entries share a side index")
    known = {s.index for s in out_sides} | set(sides or ())
    units = []
    for i, ud in enumerate(r.get("units", "list", [])):
        ur = _R(ud, f"{where}.units[{i}]")
        side = ur.get("side", "int")
        if known and side not in known:
            raise ConfigError(f"{ur.where}.side: no side {side}")
        n = ur.get("stands", "int")
        if n < 1:
            raise ConfigError(f"{ur.where}.stands: a unit has at least one stand")
        sz = ur.get("stand_mm", "list", [40, 20])
        if len(sz) != 2 or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in sz):
            raise ConfigError(f"{ur.where}.stand_mm: give two positive numbers, width and depth in mm")
        utype = ur.choice("type", UNIT_TYPES, "infantry")
        units.append(UnitSpec(id=str(ur.get("id", "str")), side=side, stands=n,
                              stand_mm=(float(sz[0]), float(sz[1])), type=utype,
                              ground=ur.get("ground", "bool", utype != "aircraft"), name=ur.get("name", "str", None)))
        ur.done()
    if len({u.id for u in units}) != len(units):
        raise ConfigError(f"{where}.units: two units share an id")
    objs = []
    for i, od in enumerate(r.get("objectives", "list", [])):
        orr = _R(od, f"{where}.objectives[{i}]")
        owner = orr.get("owner", "int")
        if known and owner not in known:
            raise ConfigError(f"{orr.where}.owner: no side {owner}")
        objs.append(ObjectiveSpec(id=orr.get("id", "str"), owner=owner, type=orr.choice("type", OBJECTIVE_TYPES),
                                  tag_id=orr.get("tag_id", "int", None)))
        orr.done()
    opt = r.get("options", "dict", {})
    orr = _R(opt, f"{where}.options")
    cover = orr.get("infantry_cover", "list", [])
    options = EpicOptions(
        morale_timing=orr.choice("morale_timing", MORALE_TIMINGS, "after-game-end-check"),
        bunker_support_engages=orr.get("bunker_support_engages", "bool", False),
        contact_tolerance_cm=orr.get("contact_tolerance_cm", "num", 0.2),
        bunker_is_enemy_unit=orr.get("bunker_is_enemy_unit", "bool", True),
        infantry_cover=tuple(str(c) for c in cover))
    orr.done()
    r.done()
    return EpicConfig(table_cm=table_cm, sides=tuple(out_sides), units=tuple(units), objectives=tuple(objs),
                      options=options)
