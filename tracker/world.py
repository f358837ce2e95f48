"""World state: what is on the table, in inches, in the world frame of the physical spec.

Pure Python (no OpenCV, no I/O): the rules core reads these types, the vision pipeline
writes them, the web page serialises them. Positions are the centre of a base's bottom
face (x, y) and the height of the surface it stands on (z); ``sigma_in`` is the 1-sigma
horizontal position error the calibration states for that point.

>>> f = Fighter(id="f1", side=0, x=3.0, y=4.0, z=0.0, base=Base.round_mm(32))
>>> round(f.base.radius_in, 3)
0.63
>>> WorldState.from_dict(WorldState(fighters=(f,)).to_dict()).fighters[0] == f
True
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

MM_PER_IN = 25.4

BaseShape = Literal["round", "oval", "rect"]
TokenKind = Literal["objective", "treasure"]


@dataclass(frozen=True)
class Base:
    """A fighter's base: ``width_in`` along its own x axis, ``depth_in`` along its y axis,
    turned ``angle_deg`` counter-clockwise in the world frame (0 for round bases)."""

    shape: BaseShape
    width_in: float
    depth_in: float
    angle_deg: float = 0.0
    thickness_in: float = 4.0 / MM_PER_IN

    @classmethod
    def round_mm(cls, diameter_mm: float) -> "Base":
        d = diameter_mm / MM_PER_IN
        return cls("round", d, d)

    @property
    def radius_in(self) -> float:
        """Half the larger dimension (the radius for round bases)."""
        return max(self.width_in, self.depth_in) / 2.0

    @property
    def size_mm(self) -> tuple[float, float]:
        return (round(self.width_in * MM_PER_IN, 1), round(self.depth_in * MM_PER_IN, 1))


@dataclass(frozen=True)
class Fighter:
    id: str
    side: int
    x: float
    y: float
    z: float
    base: Base
    sigma_in: float = 0.0
    occluded: bool = False  # hidden (e.g. under a hand): position is the last one seen
    name: str | None = None
    runemarks: frozenset[str] = frozenset()
    move: int | None = None
    carrying: str | None = None  # id of the treasure token carried, if any
    climbing: str | None = None  # id of the stairs/ladder part the fighter ended its activation climbing
    unit: str | None = None  # Epic-scale games: id of the unit (roster entry) this stand belongs to
    state_tokens: tuple[str, ...] = ()  # ids of the state tokens (activation, damage) attached to it
    # The other sides it could be: its rim was seen too little to be sure of its side.
    rival_sides: tuple[int, ...] = ()


@dataclass(frozen=True)
class Token:
    id: str
    kind: TokenKind
    x: float
    y: float
    z: float = 0.0
    diameter_in: float = 1.0
    tag_id: int | None = None
    sigma_in: float = 0.0
    occluded: bool = False


#: The 1-sigma of where a base placed from its patch of foreground lies (a large base
#: found so, or a Doubt): its patch's boundary is its rim only where the rim differs from
#: the mat; on a tuning table of white rims on a pale mat, 0.1-0.25 in off (a 60 mm base
#: sized 50 from its miniature's outline), one 0.5-0.6.
PATCH_SIGMA_IN = 0.2


@dataclass(frozen=True)
class Doubt:
    """A place where the camera saw something of a base's size that it could not name:
    perhaps a fighter of one of ``sides`` (a base whose rim shows too little, under a
    large miniature), perhaps not. Rulings that such a fighter would change say "too
    close to call" instead of guessing. ``radius_in``: half the base's long size."""

    x: float
    y: float
    z: float
    radius_in: float
    sides: tuple[int, ...]


@dataclass(frozen=True)
class HiddenArea:
    """A part of the table the camera cannot see now (a hand or an arm over it, as the
    frame shows it): fighters may stand under it unseen. ``outline``: its outline on the
    table, (x, y) in inches; rulings it could change say "too close to call"."""

    outline: tuple[tuple[float, float], ...]
    why: str = "hand"

    def distance_to(self, x: float, y: float) -> float:
        """How far the point (``x``, ``y``) is from this area (0 inside it).

        >>> HiddenArea(((0.0, 0.0), (2.0, 0.0), (2.0, 2.0), (0.0, 2.0))).distance_to(5.0, 1.0)
        3.0
        """
        if len(self.outline) < 3:
            return math.inf
        from shapely.geometry import Point, Polygon

        return float(Polygon(self.outline).distance(Point(x, y)))


@dataclass(frozen=True)
class StateToken:
    """A tagged state token (activation, half-activation, damage) laid beside a base.
    It never interacts with the battle ("If these tokens are placed upon the
    battlefield, they do not interact with the battle in any way"): it only says
    something about the fighter it is attached to. ``fighter``: the fighter whose base
    edge is nearest the token's centre, within ``reach`` (None: no fighter near);
    ``ambiguous``: other fighters as near as that one (within measuring error)."""

    id: str
    tag_id: int
    meaning: str  # activated | half-activated | damage
    x: float
    y: float
    z: float = 0.0
    count: int = 1  # damage points the token stands for (1 for activation tokens)
    fighter: str | None = None
    distance_in: float | None = None  # from the fighter's base edge to the token's centre
    ambiguous: tuple[str, ...] = ()
    occluded: bool = False


@dataclass(frozen=True)
class TerrainPart:
    """One part of a terrain feature, in the rules' words: a wall is an ``obstacle``, an
    upper floor a ``platform``, debris ``low`` terrain; also ``deadly``, ``unscalable``,
    ``stairs``, ``ladder``, ``door``, ``archway``. The part is the prism ``footprint``
    (world inches) x [``base_z``, ``base_z + height_in``]; a platform's surface is its top.

    ``open_edges``: for a platform, the indices of its footprint edges that are open
    (edge i runs from vertex i to vertex i+1); ``None`` means "work it out": an edge is
    enclosed where an obstacle part stands along it. ``closed``: a door that is shut.
    ``solid``: the volume under the top is solid (a block, a wall); ``False`` for a floor
    on legs or an archway's opening, which lines and fighters pass under.

    >>> p = TerrainPart("wall", "obstacle", ((0, 0), (4, 0), (4, 0.25), (0, 0.25)), height_in=2)
    >>> p.top_z
    2.0
    """

    id: str
    type: str
    footprint: tuple[tuple[float, float], ...]
    height_in: float
    base_z: float = 0.0
    open_edges: tuple[int, ...] | None = None
    closed: bool = False
    solid: bool = True

    @property
    def top_z(self) -> float:
        return float(self.base_z) + float(self.height_in)


@dataclass(frozen=True)
class TerrainPiece:
    """A terrain piece placed on the table: its footprint polygon in world inches and
    its top height. ``type`` uses the rules' words (obstacle, platform, ...).

    ``parts`` optionally breaks the piece into rules parts (walls, floors, doors...);
    a piece without parts is one part of its own ``type`` standing on the floor.
    ``type == "unknown"``: a piece found without a tag (``untagged-N``, its base outline
    at z = 0, tracker.footprints) that no judge has typed yet; rules leave it out."""

    id: str
    type: str
    footprint: tuple[tuple[float, float], ...]
    height_in: float
    tag_id: int | None = None
    parts: tuple[TerrainPart, ...] = ()


_ATOMS = (str, int, float, bool, type(None))
_FIELDS: dict[type, tuple[str, ...]] = {}


def _plain(v: Any) -> Any:
    """``dataclasses.asdict``'s conversion of one value: dataclasses to dicts, tuples,
    lists and dicts rebuilt, anything else deep-copied; numbers and strings as they are
    (deep-copying them returns them anyway)."""
    if isinstance(v, _ATOMS):
        return v
    cls = type(v)
    names = _FIELDS.get(cls)
    if names is None and hasattr(cls, "__dataclass_fields__") and not isinstance(v, type):
        names = _FIELDS[cls] = tuple(f.name for f in fields(v))
    if names is not None:
        return {n: _plain(getattr(v, n)) for n in names}
    if isinstance(v, tuple) and hasattr(v, "_fields"):  # a named tuple
        return cls(*[_plain(x) for x in v])
    if isinstance(v, (list, tuple)):
        return cls(_plain(x) for x in v)
    if isinstance(v, dict):
        return cls((_plain(k), _plain(x)) for k, x in v.items())
    return copy.deepcopy(v)


_terrain_seen: tuple = (None, None)  # (the last terrain converted, its dicts): one tuple, swapped whole


def _terrain_dicts(terrain: tuple) -> tuple:
    """``_plain(terrain)``, remembered for the last terrain (every state of a game
    carries the same one); its dicts and lists made afresh for each caller, whose
    changes then stay its own. (Request threads call this at once: the pair is read
    and replaced as one.)"""
    global _terrain_seen
    seen = _terrain_seen
    if seen[0] is not terrain:
        seen = _terrain_seen = (terrain, _plain(terrain))
    return _fresh(seen[1])


def _fresh(v: Any) -> Any:
    """A copy of a structure ``_plain`` made (dicts, lists, tuples of plain values)."""
    if isinstance(v, dict):
        return {k: _fresh(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_fresh(x) for x in v]
    if isinstance(v, tuple) and not hasattr(v, "_fields"):
        return tuple(_fresh(x) for x in v)
    return v if isinstance(v, _ATOMS) else copy.deepcopy(v)


@dataclass(frozen=True)
class WorldState:
    """Everything the tracker knows at one instant."""

    frame_index: int = 0
    time_s: float = 0.0
    fighters: tuple[Fighter, ...] = ()
    tokens: tuple[Token, ...] = ()
    terrain: tuple[TerrainPiece, ...] = ()
    state_tokens: tuple[StateToken, ...] = ()
    calibration_health: str = "ok"
    hands_over_table: bool = False
    # Places the camera could not name that may hold a fighter (a whole look's; see Doubt).
    doubts: tuple[Doubt, ...] = ()
    # Objectives the game's set-up lists that the camera does not see now (see
    # tracking.unseen_objectives): their control cannot be measured.
    unseen_objectives: tuple[str, ...] = ()
    # Parts of the table the camera cannot see now (see HiddenArea): hands and arms.
    hidden: tuple[HiddenArea, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def fighter(self, fighter_id: str) -> Fighter:
        for f in self.fighters:
            if f.id == fighter_id:
                return f
        raise KeyError(fighter_id)

    def objectives(self) -> tuple[Token, ...]:
        return tuple(t for t in self.tokens if t.kind == "objective")

    def treasure(self) -> tuple[Token, ...]:
        return tuple(t for t in self.tokens if t.kind == "treasure")

    def to_dict(self) -> dict[str, Any]:
        """As ``dataclasses.asdict`` makes it, some 3x faster (the page asks for it a few
        times a second; asdict deep-copies every number): the terrain's part is made once
        per terrain and copied from then on."""
        d = {f.name: _plain(getattr(self, f.name)) for f in fields(self) if f.name != "terrain"}
        d["terrain"] = _terrain_dicts(self.terrain)
        d = {f.name: d[f.name] for f in fields(self)}  # (in field order, as asdict)
        for f in d["fighters"]:
            f["runemarks"] = sorted(f["runemarks"])
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "WorldState":
        def fighter(fd: dict[str, Any]) -> Fighter:
            fd = dict(fd)
            fd["base"] = Base(**fd["base"])
            fd["runemarks"] = frozenset(fd.get("runemarks", ()))
            fd["state_tokens"] = tuple(fd.get("state_tokens") or ())
            fd["rival_sides"] = tuple(int(si) for si in fd.get("rival_sides") or ())
            return Fighter(**_known(Fighter, fd))

        def state_token(sd: dict[str, Any]) -> StateToken:
            sd = dict(sd)
            sd["ambiguous"] = tuple(sd.get("ambiguous") or ())
            return StateToken(**_known(StateToken, sd))

        def terrain(td: dict[str, Any]) -> TerrainPiece:
            td = dict(td)
            td["footprint"] = tuple(tuple(map(float, p)) for p in td["footprint"])
            td["parts"] = tuple(part(pd) for pd in td.get("parts", ()))
            return TerrainPiece(**_known(TerrainPiece, td))

        def part(pd: dict[str, Any]) -> TerrainPart:
            pd = dict(pd)
            pd["footprint"] = tuple(tuple(map(float, p)) for p in pd["footprint"])
            if pd.get("open_edges") is not None:
                pd["open_edges"] = tuple(int(i) for i in pd["open_edges"])
            return TerrainPart(**_known(TerrainPart, pd))

        return cls(
            frame_index=int(d.get("frame_index", 0)),
            time_s=float(d.get("time_s", 0.0)),
            fighters=tuple(fighter(f) for f in d.get("fighters", ())),
            tokens=tuple(Token(**_known(Token, t)) for t in d.get("tokens", ())),
            terrain=tuple(terrain(t) for t in d.get("terrain", ())),
            state_tokens=tuple(state_token(s) for s in d.get("state_tokens") or ()),
            calibration_health=d.get("calibration_health", "ok"),
            hands_over_table=bool(d.get("hands_over_table", False)),
            doubts=tuple(Doubt(**{**_known(Doubt, q), "sides": tuple(int(s) for s in q.get("sides", ()))})
                         for q in d.get("doubts") or ()),
            unseen_objectives=tuple(str(o) for o in d.get("unseen_objectives") or ()),
            hidden=tuple(HiddenArea(tuple((float(p[0]), float(p[1])) for p in h.get("outline") or ()),
                                    str(h.get("why", "hand"))) for h in d.get("hidden") or ()),
            extra=dict(d.get("extra", {})),
        )

    def with_fighters(self, fighters: tuple[Fighter, ...]) -> "WorldState":
        return replace(self, fighters=tuple(fighters))


def _known(cls: type, d: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in d.items() if k in names}
