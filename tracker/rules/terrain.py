"""Terrain: obstacles, low terrain, platforms and their open edges, falling tests, deadly
and unscalable terrain, stairs and ladders, archways and doors.

A terrain piece is made of :class:`~tracker.world.TerrainPart` s; a piece given without
parts is one part of its own type standing on the floor.

>>> from tracker.world import TerrainPart
>>> wall = TerrainPart("w", "obstacle", ((0, 0), (3, 0), (3, 0.2), (0, 0.2)), height_in=1.0)
>>> terrain_kind(wall)
'obstacle'
>>> terrain_kind(TerrainPart("rubble", "obstacle", ((0, 0), (3, 0), (3, 2), (0, 2)), height_in=0.9))
'low terrain'
>>> terrain_kind(TerrainPart("floor", "platform", ((0, 0), (1, 0), (1, 1), (0, 1)), height_in=3.0))
'obstacle'
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Iterable

import shapely
from shapely import affinity
from shapely.geometry import LineString, Point, Polygon, box as sbox
from shapely.ops import unary_union

from tracker.world import Fighter, TerrainPart, TerrainPiece, WorldState

from . import quotes
from .measure import closest, footprint, part_polygon, sigma_of
from .ruling import NO, TOO_CLOSE, YES, Measurement, Ruling, distance_verdict

#: An obstacle "extends vertically 1\" or more"; anything lower is low terrain.
OBSTACLE_HEIGHT_IN = 1.0
#: A platform's surface must be "larger than 1\" by 1\"".
PLATFORM_MIN_IN = 1.0
#: "within ½\" of the edge of an open platform".
FALLING_EDGE_IN = 0.5
#: "placed within 1\" of any deadly terrain".
DEADLY_FALL_IN = 1.0
#: How close (vertically) a fighter's z must be to a surface to stand on it.
STAND_TOL_IN = 0.1
#: A wall within this distance of a platform edge encloses it.
ENCLOSE_TOL_IN = 0.1

OBSTACLE_LIKE = frozenset({"obstacle", "deadly", "unscalable", "stairs", "ladder", "platform"})
CLIMBABLE_AIDS = frozenset({"stairs", "ladder"})


def _runemarks(f: Fighter) -> frozenset[str]:
    return frozenset(r.strip().lower() for r in f.runemarks)


def has_runemark(f: Fighter, mark: str) -> bool:
    """Case-insensitive runemark test (``"Fly"``, ``"fly"`` ...)."""
    return mark.lower() in _runemarks(f)


#: Type of a piece found without a tag and not yet typed by a judge (tracker.footprints).
UNKNOWN_TYPE = "unknown"


def is_untyped(piece: TerrainPiece | TerrainPart) -> bool:
    """A piece (or part) nobody has typed yet: the rules cannot say what it is."""
    return piece.type == UNKNOWN_TYPE


def untyped_terrain(state_or_terrain: WorldState | Iterable[TerrainPiece]) -> tuple[TerrainPiece, ...]:
    """Pieces of type ``"unknown"`` (untagged pieces a judge has not typed)."""
    pieces = state_or_terrain.terrain if isinstance(state_or_terrain, WorldState) else tuple(state_or_terrain)
    return tuple(p for p in pieces if is_untyped(p) and not p.parts)


def untyped_note(state: WorldState, geom) -> str | None:
    """A caveat when ``geom`` (shapely, world inches, 2D) meets untyped terrain: the
    ruling left it out, since nobody has said what it is."""
    hit = sorted(p.id for p in untyped_terrain(state) if len(p.footprint) >= 3 and Polygon(p.footprint).intersects(geom))
    if not hit:
        return None
    return (f"untyped terrain {', '.join(hit)} ignored (no tag; a judge must type it on the calibration page "
            f"before rulings use it)")


def terrain_parts(state_or_terrain: WorldState | Iterable[TerrainPiece]) -> tuple[TerrainPart, ...]:
    """Every rules part on the table; a piece without parts becomes one part. Untyped
    pieces (type ``"unknown"``) are left out until a judge types them."""
    pieces = state_or_terrain.terrain if isinstance(state_or_terrain, WorldState) else tuple(state_or_terrain)
    out: list[TerrainPart] = []
    for p in pieces:
        if is_untyped(p) and not p.parts:
            continue
        if p.parts:
            out.extend(p.parts)
        else:
            out.append(TerrainPart(id=p.id, type=p.type, footprint=p.footprint, height_in=p.height_in))
    return tuple(out)


def find_part(state: WorldState, part_id: str) -> TerrainPart:
    for p in terrain_parts(state):
        if p.id == part_id:
            return p
    raise KeyError(part_id)


# ---------------------------------------------------------------------------------------
# Classification
# ---------------------------------------------------------------------------------------
def is_low_terrain(part: TerrainPart) -> bool:
    """Extends vertically less than 1" from what it stands on (archways and doors are
    openings, not low terrain)."""
    return part.type == "low" or (part.type not in ("archway", "door", UNKNOWN_TYPE)
                                  and float(part.height_in) < OBSTACLE_HEIGHT_IN)


def is_obstacle(part: TerrainPart) -> bool:
    """A part that blocks horizontal movement and extends 1" or more: walls, deadly and
    unscalable terrain, stairs and ladders (treated as obstacles), closed doors, and the
    solid sides of a platform block.

    >>> is_obstacle(TerrainPart("d", "door", ((0, 0), (1, 0), (1, .1), (0, .1)), 2.0, closed=True))
    True
    >>> is_obstacle(TerrainPart("d", "door", ((0, 0), (1, 0), (1, .1), (0, .1)), 2.0, closed=False))
    False
    """
    if is_low_terrain(part) or not part.solid:
        return False
    if part.type == "door":
        return bool(part.closed)
    return part.type in OBSTACLE_LIKE


def surface_fits(poly: Polygon, side: float = PLATFORM_MIN_IN, angle_step_deg: float = 5.0) -> bool:
    """Does a ``side`` x ``side`` square fit on the surface (any position, any turn)?

    >>> surface_fits(sbox(0, 0, 1.2, 1.2)), surface_fits(sbox(0, 0, 3, 0.9))
    (True, False)
    """
    if poly.is_empty or poly.area < side * side:
        return False
    core = poly.buffer(-side / 2.0)  # the square's centre must be at least side/2 from the edge
    if core.is_empty:
        return False
    h = side / 2.0
    for k in range(int(round(90 / angle_step_deg))):
        sq = affinity.rotate(sbox(-h, -h, h, h), k * angle_step_deg, origin=(0, 0))
        cands = [core.representative_point(), core.centroid]
        minx, miny, maxx, maxy = core.bounds
        n = 7
        cands += [Point(minx + (maxx - minx) * i / (n - 1), miny + (maxy - miny) * j / (n - 1))
                  for i in range(n) for j in range(n)]
        for c in cands:
            if poly.covers(affinity.translate(sq, c.x, c.y)):
                return True
    return False


def is_platform(part: TerrainPart) -> bool:
    """A horizontally flat surface larger than 1" by 1": a ``platform`` part (not low
    terrain) whose surface has more than 1 square inch and fits a 1" x 1" square."""
    if part.type != "platform" or is_low_terrain(part):
        return False
    poly = part_polygon(part)
    return poly.area > PLATFORM_MIN_IN ** 2 and surface_fits(poly)


def terrain_kind(part: TerrainPart) -> str:
    """``"platform"``, ``"obstacle"``, ``"low terrain"``, ``"archway"``, ``"door"`` or
    ``"open"`` (a surface too small for a platform and too low for an obstacle), or
    ``"unknown"`` (untyped: a judge has not said what it is)."""
    if part.type == UNKNOWN_TYPE:
        return "unknown"
    if part.type == "archway":
        return "archway"
    if part.type == "door":
        return "door"
    if is_low_terrain(part):
        return "low terrain"
    if is_platform(part):
        return "platform"
    if part.solid and part.type in OBSTACLE_LIKE:
        return "obstacle"
    return "open"


def classify(part: TerrainPart) -> Ruling:
    """A ruling on what a part is, measured by its height (and surface, for platforms)."""
    kind = terrain_kind(part)
    h = float(part.height_in)
    if kind == "platform":
        poly = part_polygon(part)
        return Ruling("terrain", part.id, quotes.PLATFORM, YES, measured=poly.area, threshold=1.0,
                      comparison=">", outcome="platform", also=(quotes.OBSTACLE,) if part.solid else (),
                      details={"area_sq_in": poly.area, "height_in": h, "top_z": part.top_z})
    if kind == "low terrain":
        return Ruling("terrain", part.id, quotes.LOW_TERRAIN, YES, measured=h, threshold=OBSTACLE_HEIGHT_IN,
                      comparison="<", outcome="low terrain (treated as part of the floor or platform below)",
                      also=(quotes.LOW_TERRAIN_IS_FLOOR,), details={"height_in": h})
    if kind == "obstacle":
        rule = {"deadly": quotes.DEADLY_CLIMB, "unscalable": quotes.UNSCALABLE}.get(part.type, quotes.OBSTACLE)
        note = () if part.type != "platform" else ("too small to be a platform (needs more than 1\" by 1\")",)
        return Ruling("terrain", part.id, rule, YES, measured=h, threshold=OBSTACLE_HEIGHT_IN, comparison=">=",
                      outcome=f"obstacle ({part.type})", notes=note, also=(quotes.OBSTACLE,) if rule is not quotes.OBSTACLE else (),
                      details={"height_in": h})
    if kind == "unknown":
        return Ruling("terrain", part.id, quotes.OBSTACLE, TOO_CLOSE, outcome="unknown terrain: a judge must type it",
                      notes=("no tag and not typed yet: rulings ignore it until it is typed",),
                      details={"height_in": h})
    return Ruling("terrain", part.id, quotes.PASSAGE_MEASURE if kind in ("archway", "door") else quotes.OBSTACLE,
                  YES if kind in ("archway", "door") else NO, measured=h, threshold=OBSTACLE_HEIGHT_IN,
                  comparison=">=", outcome=kind, details={"height_in": h, "closed": part.closed})


# ---------------------------------------------------------------------------------------
# Platforms, open edges, falling
# ---------------------------------------------------------------------------------------
def platform_edges(part: TerrainPart) -> list[LineString]:
    pts = list(part.footprint)
    return [LineString([pts[i], pts[(i + 1) % len(pts)]]) for i in range(len(pts))]


def open_edges(part: TerrainPart, parts: Iterable[TerrainPart] = ()) -> shapely.Geometry:
    """The open part of a platform's rim (lines): the edges listed in ``open_edges``, or,
    when it is ``None``, every edge minus the stretches an obstacle encloses (a wall at
    least 1" above the platform top standing along the edge).

    >>> from tracker.world import TerrainPart
    >>> floor = TerrainPart("f", "platform", ((0, 0), (4, 0), (4, 4), (0, 4)), 3.0)
    >>> wall = TerrainPart("w", "obstacle", ((0, 3.9), (4, 3.9), (4, 4.1), (0, 4.1)), 2.0, base_z=3.0)
    >>> round(open_edges(floor, [wall]).length, 6)   # 16" of rim less the walled 4" (and 0.2" of each side)
    11.6
    """
    edges = platform_edges(part)
    if part.open_edges is not None:
        keep = [edges[i % len(edges)] for i in part.open_edges]
        return unary_union(keep) if keep else LineString()
    top = part.top_z
    walls = [part_polygon(p) for p in parts
             if p.id != part.id and is_obstacle(p) and p.type != "platform"
             and p.base_z <= top + STAND_TOL_IN and p.top_z >= top + OBSTACLE_HEIGHT_IN - 1e-9]
    rim = unary_union(edges)
    if walls:
        rim = rim.difference(unary_union(walls).buffer(ENCLOSE_TOL_IN))
    return rim


def platform_under(state: WorldState, f: Fighter) -> TerrainPart | None:
    """The platform the fighter stands on (its top at the fighter's z, under its base)."""
    if float(f.z) <= STAND_TOL_IN:
        return None
    fp = footprint(f)
    best = None
    for p in terrain_parts(state):
        if p.type != "platform" or is_low_terrain(p) or abs(p.top_z - float(f.z)) > STAND_TOL_IN:
            continue
        poly = part_polygon(p)
        if poly.covers(Point(f.x, f.y)) or poly.intersects(fp):
            if best is None or poly.covers(Point(f.x, f.y)):
                best = p
    return best


def climbing_part(state: WorldState, f: Fighter) -> TerrainPart | None:
    """The stairs or ladder the fighter is on part way up: ``Fighter.climbing`` if set,
    else a fighter above the floor, on no platform, touching stairs or a ladder."""
    parts = terrain_parts(state)
    if f.climbing:
        for p in parts:
            if p.id == f.climbing:
                return p
    if float(f.z) <= STAND_TOL_IN or platform_under(state, f) is not None:
        return None
    fp = footprint(f)
    for p in parts:
        if p.type in CLIMBABLE_AIDS and part_polygon(p).distance(fp) <= 0.05 and p.base_z - 0.05 <= f.z <= p.top_z + 0.05:
            return p
    return None


def falls(roll: int) -> bool:
    """A falling test: roll a dice; on a 1, the fighter falls.

    >>> falls(1), falls(2)
    (True, False)
    """
    if not 1 <= int(roll) <= 6:
        raise ValueError(f"a dice roll is 1 to 6, not {roll}")
    return int(roll) == 1


def falling_test(state: WorldState, target_id: str) -> Ruling:
    """Must the target of an attack action take a falling test after it is resolved?

    Yes if the target stands on a platform within ½" of an open edge, or ended its
    activation climbing stairs or a ladder; never for fighters with the Fly runemark.
    Measured: the distance from the base to the nearest open edge.
    """
    f = state.fighter(target_id)
    subject = target_id
    if has_runemark(f, "fly"):
        return Ruling("falling", subject, quotes.FALLING_FLY, NO, outcome="no falling test: Fly runemark",
                      also=(quotes.FALLING_EDGE,))
    climb = climbing_part(state, f)
    if climb is not None:
        return Ruling("falling", subject, quotes.STAIRS_FALLING_TEST, YES,
                      outcome=f"falling test: ended activation climbing {climb.type} {climb.id}",
                      also=(quotes.STAIRS_NO_FALL,), details={"part": climb.id})
    plat = platform_under(state, f)
    if plat is None:
        note = untyped_note(state, footprint(f)) if float(f.z) > STAND_TOL_IN else None
        return Ruling("falling", subject, quotes.FALLING_EDGE, NO, outcome="not on a platform",
                      notes=(note,) if note else (), details={"z": f.z})
    rim = open_edges(plat, terrain_parts(state))
    sig = sigma_of(f)
    if rim.is_empty:
        return Ruling("falling", subject, quotes.FALLING_EDGE, NO, outcome=f"platform {plat.id} has no open edge",
                      details={"platform": plat.id})
    fp = footprint(f, 720)
    d = float(fp.distance(rim)) if not fp.intersects(rim) else 0.0
    if fp.intersects(rim):
        d = 0.0
    elif f.base.shape == "round" and f.base.width_in == f.base.depth_in:
        d = max(0.0, float(Point(f.x, f.y).distance(rim)) - f.base.width_in / 2)
    v = distance_verdict(d, FALLING_EDGE_IN, sig)
    near = shapely.shortest_line(fp, rim)
    line = [list(c) + [plat.top_z] for c in near.coords] if near is not None and not near.is_empty else []
    outcome = {YES: "falling test after the attack action", NO: "no falling test",
               TOO_CLOSE: "too close to call: falling test?"}[v]
    return Ruling("falling", subject, quotes.FALLING_EDGE, v, measured=d, threshold=FALLING_EDGE_IN, margin=sig,
                  outcome=outcome,
                  measurements=(Measurement(f"{target_id} to open edge of {plat.id}", d, FALLING_EDGE_IN, sig, v),),
                  details={"platform": plat.id, "edge_line": line,
                           "open_edges": shapely.to_geojson(rim)})


# ---------------------------------------------------------------------------------------
# Deadly, unscalable, climbing
# ---------------------------------------------------------------------------------------
def can_climb(fighter: Fighter, part: TerrainPart, *, mounts_climb_only_stairs: bool = True) -> Ruling:
    """May the fighter climb this part? Unscalable terrain: never. Mounts: stairs, which
    the text allows explicitly; other parts are refused when ``mounts_climb_only_stairs``
    (the core rules forbid Mounts to climb; that sentence is not in these texts).
    Deadly terrain can be climbed, at a price (see :func:`deadly_climb`)."""
    subj = f"{fighter.id} on {part.id}"
    if part.type == "unscalable":
        return Ruling("climb", subj, quotes.UNSCALABLE, NO, outcome="cannot climb unscalable terrain")
    if has_runemark(fighter, "mount"):
        if part.type == "stairs":
            return Ruling("climb", subj, quotes.MOUNT_STAIRS, YES, outcome="a Mount can climb stairs")
        if mounts_climb_only_stairs:
            return Ruling("climb", subj, quotes.MOUNT_STAIRS, NO,
                          outcome="a Mount climbs only stairs (option mounts_climb_only_stairs)",
                          notes=("core-rules restriction: Mounts cannot climb; the text grants stairs only",))
    if part.type == "deadly":
        return Ruling("climb", subj, quotes.DEADLY_CLIMB, YES, outcome="can climb: allocate D6 damage points first")
    return Ruling("climb", subj, quotes.OBSTACLE, YES, outcome="can climb")


def deadly_climb(fighter: Fighter, part: TerrainPart) -> Ruling:
    """Beginning to climb deadly terrain: allocate D6 damage points first."""
    yes = part.type == "deadly"
    return Ruling("deadly", f"{fighter.id} climbs {part.id}", quotes.DEADLY_CLIMB, YES if yes else NO,
                  outcome="allocate D6 damage points before climbing" if yes else "not deadly terrain",
                  details={"part": part.id, "damage": "D6" if yes else None})


def deadly_after_fall(state: WorldState, fighter_id: str) -> Ruling:
    """A fighter placed after falling within 1" (3D, base to the part) of any deadly
    terrain: allocate D6 damage points."""
    f = state.fighter(fighter_id)
    sig = sigma_of(f)
    meas = []
    best = None
    for p in terrain_parts(state):
        if p.type != "deadly":
            continue
        c = closest(f, p)
        v = distance_verdict(c.distance, DEADLY_FALL_IN, sig)
        meas.append(Measurement(f"{fighter_id} to {p.id}", c.distance, DEADLY_FALL_IN, sig, v))
        if best is None or c.distance < best[1].distance:
            best = (p, c)
    if best is None:
        return Ruling("deadly", fighter_id, quotes.DEADLY_FALL, NO, outcome="no deadly terrain on the table")
    p, c = best
    v = distance_verdict(c.distance, DEADLY_FALL_IN, sig)
    return Ruling("deadly", fighter_id, quotes.DEADLY_FALL, v, measured=c.distance, threshold=DEADLY_FALL_IN,
                  margin=sig, outcome={YES: "allocate D6 damage points", NO: "no damage",
                                       TOO_CLOSE: "too close to call: D6 damage?"}[v],
                  measurements=tuple(meas), details={"part": p.id, "line": [list(c.a), list(c.b)]})


def on_unscalable(state: WorldState, fighter_id: str) -> Ruling:
    """A fighter ending an action on unscalable terrain (standing on its top, or its base
    inside it above the floor) first suffers impact damage and then falls."""
    f = state.fighter(fighter_id)
    fp = footprint(f)
    for p in terrain_parts(state):
        if p.type != "unscalable":
            continue
        poly = part_polygon(p)
        if poly.intersection(fp).area <= 1e-9:
            continue
        if abs(float(f.z) - p.top_z) <= STAND_TOL_IN or (p.base_z + STAND_TOL_IN < float(f.z) < p.top_z):
            return Ruling("unscalable", fighter_id, quotes.UNSCALABLE_END, YES,
                          outcome="suffers impact damage, then falls", also=(quotes.UNSCALABLE,),
                          details={"part": p.id})
    return Ruling("unscalable", fighter_id, quotes.UNSCALABLE_END, NO, outcome="not on unscalable terrain")


def stairs_no_fall(state: WorldState, fighter_id: str) -> Ruling:
    """Finishing an activation part way up stairs or a ladder: the fighter does not fall."""
    f = state.fighter(fighter_id)
    p = climbing_part(state, f)
    if p is None:
        return Ruling("climbing", fighter_id, quotes.STAIRS_NO_FALL, NO, outcome="not on stairs or a ladder")
    return Ruling("climbing", fighter_id, quotes.STAIRS_NO_FALL, YES,
                  outcome=f"does not fall; remains part way up {p.type} {p.id}", details={"part": p.id, "z": f.z})


# ---------------------------------------------------------------------------------------
# Archways and doors
# ---------------------------------------------------------------------------------------
def _support_half_width(f: Fighter, ux: float, uy: float) -> float:
    """Half the base's extent along the unit direction (ux, uy)."""
    b = f.base
    a = math.radians(b.angle_deg)
    c, s = math.cos(a), math.sin(a)
    lu, lv = c * ux + s * uy, -s * ux + c * uy  # direction in the base's own frame
    hw, hd = b.width_in / 2.0, b.depth_in / 2.0
    if b.shape == "rect":
        return abs(lu) * hw + abs(lv) * hd
    return math.hypot(lu * hw, lv * hd)


def passage_axis(part: TerrainPart) -> tuple[tuple[float, float], tuple[float, float], float, float]:
    """(centre, unit direction through the opening, thickness along it, opening width):
    the straight line through the horizontal centre, across the part's short side."""
    poly = part_polygon(part)
    rect = poly.minimum_rotated_rectangle
    xs = list(rect.exterior.coords)[:4]
    e1 = (xs[1][0] - xs[0][0], xs[1][1] - xs[0][1])
    e2 = (xs[2][0] - xs[1][0], xs[2][1] - xs[1][1])
    l1, l2 = math.hypot(*e1), math.hypot(*e2)
    # the passage runs across the short side (the wall's thickness)
    short, width = (e1, l2) if l1 <= l2 else (e2, l1)
    t = min(l1, l2)
    ux, uy = (short[0] / t, short[1] / t) if t > 0 else (1.0, 0.0)
    c = rect.centroid
    return (c.x, c.y), (ux, uy), t, width


def passage(state: WorldState, fighter_id: str, part_id: str, move_remaining: float,
            *, open_door_as_archway: bool = False) -> Ruling:
    """Can the fighter move through this archway or door with ``move_remaining`` inches?

    Measured along the straight line through the opening's horizontal centre, across it:
    from where the fighter's base is to where it is placed clear of the far side
    (the part's thickness plus the base's full length along the line). Monsters and
    Mounts cannot move through archways; Monsters, Mounts and Beasts not through closed
    doors. An open door is not restricted (the literal reading); with
    ``open_door_as_archway`` it is restricted like an archway.
    """
    f = state.fighter(fighter_id)
    p = find_part(state, part_id)
    subj = f"{fighter_id} through {part_id}"
    if p.type not in ("archway", "door"):
        return Ruling("passage", subj, quotes.PASSAGE_MEASURE, NO, outcome=f"{part_id} is a {p.type}, not an archway or door")
    marks = _runemarks(f)
    if p.type == "archway" or (p.type == "door" and not p.closed and open_door_as_archway):
        barred = marks & {"monster", "mount"}
        if barred:
            return Ruling("passage", subj, quotes.ARCHWAY_RESTRICTION, NO,
                          outcome=f"{'/'.join(sorted(barred)).title()} cannot move through archways")
    if p.type == "door" and p.closed:
        barred = marks & {"monster", "mount", "beast"}
        if barred:
            return Ruling("passage", subj, quotes.DOOR_RESTRICTION, NO,
                          outcome=f"{'/'.join(sorted(barred)).title()} cannot move through closed doors")
    (cx, cy), (ux, uy), thick, width = passage_axis(p)
    s_f = (f.x - cx) * ux + (f.y - cy) * uy
    if s_f > 0:  # approach from the other side: turn the line round
        ux, uy, s_f = -ux, -uy, -s_f
    h = _support_half_width(f, ux, uy)
    entry = (cx - (thick / 2 + h) * ux, cy - (thick / 2 + h) * uy)
    exit_ = (cx + (thick / 2 + h) * ux, cy + (thick / 2 + h) * uy)
    to_entry = math.hypot(f.x - entry[0], f.y - entry[1])
    needed = to_entry + thick + 2 * h
    sig = sigma_of(f)
    v = distance_verdict(needed, float(move_remaining), sig)
    # "be placed on the other side": the base, placed just clear, may not overlap another fighter
    placed = replace(f, x=exit_[0], y=exit_[1])
    blocked = [o.id for o in state.fighters if o.id != f.id and abs(o.z - f.z) < 0.5 and closest(placed, o).horizontal <= 0]
    outcome = {YES: "can move through", NO: "not enough movement to pass and be placed beyond",
               TOO_CLOSE: "too close to call: enough movement?"}[v]
    notes: tuple[str, ...] = ()
    if blocked:
        v, outcome = NO, "cannot be placed on the other side: " + ", ".join(blocked) + " in the way"
        notes = ("all other movement rules must still be followed (no moving through another fighter)",)
    return Ruling("passage", subj, quotes.PASSAGE_MEASURE, v, measured=needed, threshold=float(move_remaining),
                  margin=sig, comparison="<=", outcome=outcome, notes=notes,
                  details={"line": [[f.x, f.y, f.z], list(entry) + [f.z], list(exit_) + [f.z]],
                           "thickness_in": thick, "opening_width_in": width, "base_length_in": 2 * h})
