"""Treasure: picking up, carrying (Move, flying, disengaging), dropping, and the rule that
a move may not end with a base touching a treasure token.

>>> from tracker.world import Base, Fighter, Token, WorldState
>>> f = Fighter("f", 0, 0.0, 0.0, 0.0, Base("round", 1.0, 1.0), move=4)
>>> s = WorldState(fighters=(f,), tokens=(Token("t1", "treasure", 1.5, 0.0),))
>>> pick_up(s, "f", "t1").verdict
'yes'
>>> carrying_move(4), carrying_move(6), carrying_move(3)
(3, 4, 3)
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Sequence

from shapely.geometry import LineString, Point

from tracker.world import Fighter, Token, WorldState

from . import quotes
from .cover import line_crossings
from .measure import closest, footprint, part_polygon, sigma_of
from .ruling import NO, TOO_CLOSE, YES, Measurement, Ruling, combined_sigma, distance_verdict
from .terrain import has_runemark, is_low_terrain, is_obstacle, terrain_parts, untyped_note

#: "within 1\" of a treasure token"
PICK_UP_IN = 1.0
#: "within 1\" horizontally of the fighter"
DROP_IN = 1.0
#: Move penalty and floor while carrying
CARRY_PENALTY = 2
CARRY_MIN_MOVE = 3
#: Height above the base top from which "visible to the fighter" is judged (a named
#: assumption: the texts do not say where a fighter sees from).
EYE_HEIGHT_IN = 1.0
LEVEL_TOL_IN = 0.05

NO_TREASURE_MARKS = ("monster", "beast")


def _token(state: WorldState, token_id: str) -> Token:
    for t in state.tokens:
        if t.id == token_id:
            return t
    raise KeyError(token_id)


def carrying_move(move: int) -> int:
    """Move characteristic while carrying treasure: subtract 2, to a minimum of 3 (a
    subtraction never raises a Move already below 3).

    >>> carrying_move(5), carrying_move(2)
    (3, 2)
    """
    return min(int(move), max(CARRY_MIN_MOVE, int(move) - CARRY_PENALTY))


def can_carry(f: Fighter) -> bool:
    """Fighters with the Monster or Beast runemark cannot carry treasure."""
    return not any(has_runemark(f, m) for m in NO_TREASURE_MARKS)


def _path_min_distance(f: Fighter, token: Token, path: Sequence[Sequence[float]]) -> tuple[float, float, tuple]:
    """(smallest distance from the base to the token along the move, path length up to
    the first point within 1\", that point)."""
    pts = [(float(p[0]), float(p[1]), float(p[2]) if len(p) > 2 else float(f.z)) for p in path]
    if not pts:
        pts = [(f.x, f.y, f.z)]
    samples = [(pts[0], 0.0)]
    travelled = 0.0
    for a, b in zip(pts, pts[1:]):
        seg = math.dist(a, b)
        n = max(1, int(math.ceil(seg / 0.01)))
        for k in range(1, n + 1):
            u = k / n
            samples.append(((a[0] + u * (b[0] - a[0]), a[1] + u * (b[1] - a[1]), a[2] + u * (b[2] - a[2])),
                            travelled + u * seg))
        travelled += seg
    best = (math.inf, 0.0, pts[0])
    first = None
    for p, moved in samples:
        d = closest(replace(f, x=p[0], y=p[1], z=p[2]), token).distance
        if d < best[0]:
            best = (d, moved, p)
        if first is None and d <= PICK_UP_IN + 1e-9:
            first = (d, moved, p)
    return (best[0], first[1], first[2]) if first else (best[0], math.nan, best[2])


def pick_up(state: WorldState, fighter_id: str, token_id: str,
            path: Sequence[Sequence[float]] | None = None) -> Ruling:
    """Can the fighter pick up this treasure during its move? ``path``: the base centre's
    positions through the move ((x, y) or (x, y, z)), default where the fighter is now.

    Yes if at any point of the move the base comes within 1" of the token's centre, the
    fighter is not already carrying treasure, and has neither Monster nor Beast runemark.
    ``details["moved_before"]``: how far it had moved when it first came within 1".
    """
    f = state.fighter(fighter_id)
    t = _token(state, token_id)
    subj = f"{fighter_id} picks up {token_id}"
    if t.kind != "treasure":
        return Ruling("pick-up", subj, quotes.OTHER_TOKENS, NO, outcome=f"{token_id} is not a treasure token")
    if not can_carry(f):
        return Ruling("pick-up", subj, quotes.MONSTER_BEAST_NO_TREASURE, NO,
                      outcome="Monsters and Beasts cannot carry treasure")
    if f.carrying:
        return Ruling("pick-up", subj, quotes.ALREADY_CARRYING, NO,
                      outcome=f"already carrying {f.carrying}")
    d, moved, where = _path_min_distance(f, t, path if path is not None else [(f.x, f.y, f.z)])
    sig = combined_sigma(sigma_of(f), sigma_of(t))
    v = distance_verdict(d, PICK_UP_IN, sig)
    outcome = {YES: "can pick up the treasure", NO: "never within 1\" of the treasure",
               TOO_CLOSE: "too close to call: within 1\"?"}[v]
    return Ruling("pick-up", subj, quotes.PICK_UP, v, measured=d, threshold=PICK_UP_IN, margin=sig,
                  outcome=outcome, also=(quotes.MEASURE_TO_TOKEN_CENTRE,),
                  measurements=(Measurement(f"{fighter_id} to {token_id}", d, PICK_UP_IN, sig, v),),
                  details={"moved_before": None if math.isnan(moved) else moved,
                           "pick_up_at": list(where), "token": [t.x, t.y, t.z]})


def apply_pick_up(state: WorldState, fighter_id: str, token_id: str) -> WorldState:
    """The state after the fighter picks up the treasure: the token is removed from the
    battlefield and the fighter is carrying it. Raises ValueError if it may not (already
    carrying, Monster or Beast, not treasure); the distance is :func:`pick_up`'s call.

    >>> from tracker.world import Base, Fighter, Token, WorldState
    >>> s = WorldState(fighters=(Fighter("f", 0, 0, 0, 0, Base("round", 1, 1)),), tokens=(Token("t", "treasure", 1, 0),))
    >>> s2 = apply_pick_up(s, "f", "t")
    >>> s2.fighter("f").carrying, s2.tokens
    ('t', ())
    """
    f = state.fighter(fighter_id)
    t = _token(state, token_id)
    if t.kind != "treasure" or not can_carry(f) or f.carrying:
        raise ValueError(f"{fighter_id} cannot pick up {token_id}")
    fs = tuple(replace(x, carrying=token_id) if x.id == fighter_id else x for x in state.fighters)
    return replace(state, fighters=fs, tokens=tuple(x for x in state.tokens if x.id != token_id))


def apply_drop(state: WorldState, fighter_id: str, point: Sequence[float]) -> WorldState:
    """The state after the fighter drops its treasure at ``point`` (check it first with
    :func:`drop_point`): the token is placed there and the fighter carries nothing."""
    f = state.fighter(fighter_id)
    if not f.carrying:
        raise ValueError(f"{fighter_id} is not carrying treasure")
    tok = Token(f.carrying, "treasure", float(point[0]), float(point[1]), float(point[2]))
    fs = tuple(replace(x, carrying=None) if x.id == fighter_id else x for x in state.fighters)
    return replace(state, fighters=fs, tokens=state.tokens + (tok,))


def move_after_pick_up(move: int, moved_before: float) -> Ruling:
    """Picking up treasure part way through a move: Move becomes Move - 2 (minimum 3) for
    the rest of it; if the fighter had already moved further than that, the move ends.

    >>> r = move_after_pick_up(6, 4.5)
    >>> r.verdict, r.details["modified_move"], r.details["remaining"]
    ('yes', 4, 0.0)
    >>> move_after_pick_up(6, 3.0).details["remaining"]
    1.0
    """
    m = carrying_move(move)
    ends = moved_before > m + 1e-9
    remaining = 0.0 if ends else max(0.0, m - moved_before)
    return Ruling("treasure-move", f"Move {move}, {moved_before:g}\" moved", quotes.PICK_UP_MOVE_ENDS,
                  YES if ends else NO, measured=float(moved_before), threshold=float(m), comparison=">",
                  outcome=("the move action ends" if ends else f"may move {remaining:g}\" more"),
                  also=(quotes.PICK_UP_MOVE,),
                  details={"modified_move": m, "remaining": remaining, "can_fly": False, "move_ends": ends})


def move_when_carrying(move: int) -> Ruling:
    """A move begun carrying treasure: Move - 2 (minimum 3) for that move action."""
    m = carrying_move(move)
    return Ruling("treasure-move", f"Move {move}, carrying", quotes.BEGIN_MOVE_CARRYING, YES,
                  measured=float(m), outcome=f"Move {m} for this move action",
                  details={"modified_move": m, "can_fly": False})


def can_fly(f: Fighter, *, picked_up_this_move: bool = False) -> Ruling:
    """A fighter with Fly cannot fly while carrying treasure, nor for the rest of the move
    in which it picked treasure up."""
    if not has_runemark(f, "fly"):
        return Ruling("fly", f.id, quotes.NO_FLY_CARRYING, NO, outcome="no Fly runemark")
    if f.carrying:
        return Ruling("fly", f.id, quotes.NO_FLY_CARRYING, NO, outcome=f"cannot fly while carrying {f.carrying}")
    if picked_up_this_move:
        return Ruling("fly", f.id, quotes.PICK_UP_MOVE, NO, outcome="cannot fly for the rest of this move action")
    return Ruling("fly", f.id, quotes.NO_FLY_CARRYING, YES, outcome="can fly")


def can_disengage(f: Fighter) -> Ruling:
    """Fighters cannot make disengage actions while carrying treasure."""
    if f.carrying:
        return Ruling("disengage", f.id, quotes.NO_DISENGAGE, NO, outcome=f"cannot disengage while carrying {f.carrying}")
    return Ruling("disengage", f.id, quotes.NO_DISENGAGE, YES, outcome="not carrying treasure")


def _surface_at(state: WorldState, x: float, y: float, z: float) -> str | None:
    """What the point (x, y, z) rests on: ``"floor"``, ``"platform <id>"``, or None if it
    is in the air or inside an obstacle. Low terrain counts as the floor/platform below;
    tokens count as part of the floor or platform."""
    p = Point(x, y)
    parts = terrain_parts(state)
    for part in parts:  # inside a solid part that is not low terrain: not a surface
        if part.solid and not is_low_terrain(part) and part.type not in ("archway",) and \
                part.base_z - LEVEL_TOL_IN < z < part.top_z - LEVEL_TOL_IN and part_polygon(part).covers(p):
            return None
    if abs(z) <= LEVEL_TOL_IN:
        return "floor"
    for part in parts:
        if abs(part.top_z - z) <= LEVEL_TOL_IN and part_polygon(part).covers(p):
            if part.type == "platform" or is_low_terrain(part):
                return f"{'platform' if part.type == 'platform' else 'low terrain'} {part.id}"
    return None


def visible(state: WorldState, f: Fighter, point: Sequence[float], eye_height_in: float = EYE_HEIGHT_IN) -> tuple[bool, list]:
    """Is ``point`` visible to the fighter? A named approximation of line of sight: some
    straight line from the fighter (its base centre or rim, at ``eye_height_in`` above the
    base top) to the point passes through no obstacle. Returns (visible, blocking parts)."""
    top = float(f.z) + float(f.base.thickness_in) + eye_height_in
    ring = footprint(f, 8).exterior.coords[:-1]
    eyes = [(f.x, f.y, top)] + [(x, y, top) for x, y in ring]
    target = (float(point[0]), float(point[1]), float(point[2]) + 0.01)
    obstacles = [p for p in terrain_parts(state) if is_obstacle(p)]
    blockers: list[str] = []
    for eye in eyes:
        through, _, _ = line_crossings(eye, target, obstacles, 0.0)
        if not through:
            return True, []
        blockers.extend(c.part for c in through)
    return False, sorted(set(blockers))


def drop_point(state: WorldState, fighter_id: str, point: Sequence[float]) -> Ruling:
    """Is ``point`` (x, y, z) a legal place to drop the fighter's treasure? It must be on
    a platform or the battlefield floor, within 1" horizontally of the fighter (its base),
    visible to the fighter, and level with or lower than the fighter."""
    f = state.fighter(fighter_id)
    x, y, z = float(point[0]), float(point[1]), float(point[2])
    c = closest(f, (x, y, z))
    h = c.horizontal
    sig = sigma_of(f)
    v_h = distance_verdict(h, DROP_IN, sig)
    level_ok = z <= float(f.z) + LEVEL_TOL_IN
    surface = _surface_at(state, x, y, z)
    vis, blockers = visible(state, f, (x, y, z))
    reasons = []
    if v_h == NO:
        reasons.append(f"{h:.2f}\" horizontally from the fighter (more than 1\")")
    if not level_ok:
        reasons.append(f"{z - f.z:.2f}\" higher than the fighter")
    if surface is None:
        reasons.append("not on a platform or the battlefield floor")
    if not vis:
        reasons.append("not visible to the fighter (blocked by " + ", ".join(blockers) + ")")
    if reasons:
        verdict = NO
    else:
        verdict = v_h
    outcome = "legal drop point" if verdict == YES else ("; ".join(reasons) if reasons else "too close to call: within 1\"?")
    untyped = untyped_note(state, LineString([(f.x, f.y), (x, y)]).buffer(0.05))
    return Ruling("drop", f"{fighter_id} drops at ({x:.2f}, {y:.2f}, {z:.2f})", quotes.DROP, verdict,
                  measured=h, threshold=DROP_IN, margin=sig, outcome=outcome, notes=(untyped,) if untyped else (),
                  also=(quotes.DROP_WHEN_TAKEN_DOWN, quotes.TOKENS_ARE_FLOOR),
                  measurements=(Measurement("horizontal distance", h, DROP_IN, sig, v_h),
                                Measurement("height above the fighter", z - float(f.z), 0.0, 0.0,
                                            YES if level_ok else NO, "<=")),
                  details={"point": [x, y, z], "surface": surface, "visible": vis, "blocked_by": blockers,
                           "level_or_lower": level_ok})


def drop_points(state: WorldState, fighter_id: str, rings: Sequence[float] = (0.25, 0.5, 0.75, 1.0),
                directions: int = 16) -> tuple[tuple[float, float, float], ...]:
    """Suggested legal drop points around the fighter: rings of points at ``rings`` inches
    outside its base, at its own level, on the floor and on every platform top below it.
    Nearest first; each passes :func:`drop_point`."""
    f = state.fighter(fighter_id)
    fp = footprint(f, 128)
    levels = {round(float(f.z), 6), 0.0}
    for p in terrain_parts(state):
        if (p.type == "platform" or is_low_terrain(p)) and p.top_z <= f.z + LEVEL_TOL_IN:
            levels.add(round(p.top_z, 6))
    out = []
    for r in rings:
        ring = fp.buffer(r, quad_segs=8).exterior
        for k in range(directions):
            q = ring.interpolate(k / directions, normalized=True)
            for z in sorted(levels, reverse=True):
                if z > f.z + LEVEL_TOL_IN:
                    continue
                pt = (q.x, q.y, z)
                if drop_point(state, fighter_id, pt).verdict == YES:
                    out.append((round(q.x, 4), round(q.y, 4), z))
                    break
    return tuple(out)


def touching_treasure(state: WorldState, fighter_id: str) -> Ruling:
    """Would the fighter's move end with any part of its base touching a treasure token?
    (yes = the move may not end here). Touching: the base reaches the token's rim, at the
    token's level."""
    f = state.fighter(fighter_id)
    meas = []
    hit = None
    closest_gap = None
    for t in state.treasure():
        if t.id == f.carrying:
            continue
        c = closest(f, t)
        if abs(float(t.z) - float(f.z)) > LEVEL_TOL_IN + f.base.thickness_in:
            continue  # not at the same level
        r = float(t.diameter_in) / 2.0
        sig = combined_sigma(sigma_of(f), sigma_of(t))
        v = distance_verdict(c.horizontal, r, sig)
        meas.append(Measurement(f"{fighter_id} to {t.id} centre", c.horizontal, r, sig, v))
        if closest_gap is None or c.horizontal - r < closest_gap[0]:
            closest_gap = (c.horizontal - r, c.horizontal, r, sig, t.id, v)
        if v == YES and hit is None:
            hit = t.id
    if closest_gap is None:
        return Ruling("treasure-touch", fighter_id, quotes.TREASURE_NOT_TOUCHING, NO,
                      outcome="no treasure token at this level")
    _, d, r, sig, tid, v = closest_gap
    return Ruling("treasure-touch", fighter_id, quotes.TREASURE_NOT_TOUCHING, v, measured=d, threshold=r, margin=sig,
                  outcome={YES: f"base touches {tid}: the move cannot end here", NO: "not touching treasure",
                           TOO_CLOSE: f"too close to call: touching {tid}?"}[v],
                  also=(quotes.TOKENS_ARE_FLOOR,), measurements=tuple(meas), details={"token": tid})
