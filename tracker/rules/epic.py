"""Epic-scale objectives (epic-objectives.txt): placement, control at the end of the Rally
phase, Rescue (pick-up, escort, drop, close-combat claim) and the Bunker.

Centimetres throughout: the world state is in inches and is converted here, at the rules
boundary (1 in = 2.54 cm exactly). Every ruling's ``measured``, ``threshold`` and
``margin`` are in cm and its ``details["units"]`` says so. Objective-related distances
are measured to marker centres (the text's recommendation); a unit's distance is its
closest stand's (closest point of the base, in 3D, as in the core rules).

Pure functions: state in, (new state, rulings) out. Nothing is remembered between calls.

>>> from tracker.epic import parse_epic_section, ObjectiveMarker, cm_to_in
>>> from tracker.world import Base, Fighter, WorldState
>>> cfg = parse_epic_section({"sides": [
...     {"index": 0, "entry_edge": "south", "deployment_zone": {"edge": "south", "depth_cm": 30}},
...     {"index": 1, "entry_edge": "north", "deployment_zone": {"edge": "north", "depth_cm": 30}}]})
>>> m = ObjectiveMarker("th", 0, "take-and-hold", 90.0, 100.0)
>>> placement(m, cfg).verdict
'yes'
>>> stand = Base("rect", cm_to_in(4), cm_to_in(2))
>>> s = WorldState(fighters=(Fighter("a", 0, cm_to_in(90), cm_to_in(89), 0.0, stand, unit="u0"),
...                          Fighter("b", 1, cm_to_in(70), cm_to_in(100), 0.0, stand, unit="u1")),
...                tokens=(m.token(),))
>>> r = control(s, cfg, markers=(m,))
>>> r.control, r.rulings[0].verdict
({'th': 0}, 'yes')
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from shapely.geometry import Point, Polygon

from tracker.epic import (
    EDGES, EpicConfig, ObjectiveMarker, Unit, cm_to_in, in_to_cm, markers_in_state, units_in_state,
)
from tracker.world import Fighter, TerrainPiece, Token, WorldState

from . import epic_quotes as q
from .measure import closest, horizontal_distance
from .ruling import (NO, TOO_CLOSE, YES, CALL_SIGMAS, Measurement, Ruling, Verdict, combined_sigma, distance_verdict,
                     unsure_sides_note)

#: "within 15 cm" (own markers, table edge, control, bunker support).
MARKER_SPACING_CM = 15.0
EDGE_CM = 15.0
CONTROL_RANGE_CM = 15.0
BUNKER_SUPPORT_CM = 15.0
#: "more than 90 cm away from your deployment zone".
FAR_FROM_ZONE_CM = 90.0

CM = {"units": "cm"}


def more_than_verdict(measured: float, threshold: float, margin: float) -> Verdict:
    """``"yes"`` if ``measured`` is *more than* ``threshold`` (so exactly on it is "within",
    a "no"), ``"too close to call"`` when the threshold is within 2 sigma.

    >>> more_than_verdict(15.0, 15.0, 0.0), more_than_verdict(15.01, 15.0, 0.0), more_than_verdict(15.01, 15.0, 0.1)
    ('no', 'yes', 'too close to call')
    """
    if margin > 0 and abs(measured - threshold) <= CALL_SIGMAS * margin + 1e-9:
        return TOO_CLOSE
    return YES if measured > threshold + 1e-9 else NO


def _all(*verdicts: Verdict) -> Verdict:
    if NO in verdicts:
        return NO
    return TOO_CLOSE if TOO_CLOSE in verdicts else YES


def _any(*verdicts: Verdict) -> Verdict:
    if YES in verdicts:
        return YES
    return TOO_CLOSE if TOO_CLOSE in verdicts else NO


# ---------------------------------------------------------------------------------------
# Placement
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlacementCheck:
    """Whether a marker may be placed where it is: one ruling per restriction (each
    ruling's verdict answers "is this restriction met?"); ``verdict`` is "yes" when all
    are met, "no" when any is broken, else "too close to call"."""

    marker_id: str
    verdict: Verdict
    rulings: tuple[Ruling, ...]

    @property
    def failures(self) -> tuple[Ruling, ...]:
        """The rulings that say the marker may not stay there (each names its rule)."""
        return tuple(r for r in self.rulings if r.verdict == NO)

    def to_dict(self) -> dict[str, Any]:
        return {"marker": self.marker_id, "verdict": self.verdict, "rulings": [r.to_dict() for r in self.rulings]}


def edge_distances_cm(p: tuple[float, float], table_cm: tuple[float, float]) -> dict[str, float]:
    """Distance from a point to each table edge, cm (negative: off the table that side).

    >>> edge_distances_cm((10.0, 100.0), (180.0, 120.0))
    {'south': 100.0, 'east': 170.0, 'north': 20.0, 'west': 10.0}
    """
    W, D = table_cm
    x, y = p
    return {"south": y, "east": W - x, "north": D - y, "west": x}


def _zone_ruling(question: str, m: ObjectiveMarker, rule, zones, whose: str) -> Ruling:
    """"inside <zone>": signed distance to the zone (negative inside) <= 0."""
    meas = []
    best = None
    for z in zones:
        d = z.signed_distance_cm(m.xy)
        v = distance_verdict(d, 0.0, m.sigma_cm)
        meas.append(Measurement(f"{m.id} -> side {z.side}'s deployment zone", d, 0.0, m.sigma_cm, v, "<=",
                                "signed distance to the zone's edge: negative inside"))
        if best is None or d < best[0]:
            best = (d, v, z.side)
    if best is None:
        return Ruling(question, m.id, rule, NO, outcome=f"no {whose} deployment zone is configured",
                      details=dict(CM))
    d, v, side = best
    if v == YES:
        outcome = f"inside side {side}'s deployment zone ({-d:.2f} cm from its edge)"
    elif v == NO:
        outcome = f"outside side {side}'s deployment zone by {d:.2f} cm"
    else:
        outcome = f"{abs(d):.2f} cm from the edge of side {side}'s deployment zone: too close to call"
    return Ruling(question, m.id, rule, v, measured=d, threshold=0.0, margin=m.sigma_cm, comparison="<=",
                  outcome=outcome, measurements=tuple(meas), also=(q.MARKER_CENTRES,),
                  details={**CM, "zone_side": side, "marker": list(m.xy)})


def _far_ruling(question: str, m: ObjectiveMarker, rule, zone) -> Ruling:
    d = zone.distance_cm(m.xy)
    v = more_than_verdict(d, FAR_FROM_ZONE_CM, m.sigma_cm)
    if v == YES:
        outcome = f"{d:.2f} cm from side {zone.side}'s deployment zone: more than 90 cm"
    elif v == NO:
        outcome = f"only {d:.2f} cm from side {zone.side}'s deployment zone: {FAR_FROM_ZONE_CM - d:.2f} cm short of more than 90 cm"
    else:
        outcome = f"{d:.2f} cm from side {zone.side}'s deployment zone: too close to call"
    return Ruling(question, m.id, rule, v, measured=d, threshold=FAR_FROM_ZONE_CM, margin=m.sigma_cm, comparison=">",
                  outcome=outcome, also=(q.MARKER_CENTRES,), details={**CM, "zone_side": zone.side, "marker": list(m.xy)})


def _gives_infantry_cover(piece: TerrainPiece, config: EpicConfig) -> bool:
    if piece.type == "unknown":  # found without a tag: no cover until a judge types it
        return False
    names = config.options.infantry_cover
    return not names or piece.id in names or piece.type in names


def placement(marker: ObjectiveMarker, config: EpicConfig, others: Sequence[ObjectiveMarker] = (),
              terrain: Sequence[TerrainPiece] = ()) -> PlacementCheck:
    """May ``marker`` be placed where it is? The general restrictions (more than 15 cm
    from the owner's other markers in ``others``; more than 15 cm from every table edge
    but the owner's entry edge) and the marker type's own (Take & Hold: in the opponent's
    zone or more than 90 cm from the owner's; Rescue: more than 90 cm from the owner's
    zone and inside a terrain piece that gives an Infantry Armour cover bonus, see
    ``EpicOptions.infantry_cover``; Cleanse: in the owner's zone; Bunker and Capture: in
    the opponent's zone). Marker centres; a point on a zone's edge is in the zone.
    Each broken restriction is a ruling with verdict "no" that says by how much.
    ``terrain`` is the world state's terrain (inches).
    """
    m = marker
    rulings: list[Ruling] = []
    # -- 15 cm from the owner's other markers
    meas = []
    worst = None
    for o in others:
        if o.id == m.id or o.owner != m.owner:
            continue
        d = math.dist(m.xy, o.xy)
        sig = combined_sigma(m.sigma_cm, o.sigma_cm)
        v = more_than_verdict(d, MARKER_SPACING_CM, sig)
        meas.append(Measurement(f"{m.id} -> {o.id}", d, MARKER_SPACING_CM, sig, v, ">"))
        if worst is None or d < worst[0]:
            worst = (d, sig, v, o.id)
    if worst is None:
        rulings.append(Ruling("placement: own markers", m.id, q.PLACEMENT_OWN_MARKERS, YES,
                              outcome=f"side {m.owner} has no other objective marker", details=dict(CM)))
    else:
        d, sig, _, oid = worst
        v = _all(*(x.verdict for x in meas))
        outcome = (f"{d:.2f} cm from {oid}: more than 15 cm from every other own marker" if v == YES else
                   f"within 15 cm of own marker {oid} ({d:.2f} cm): {MARKER_SPACING_CM - d:.2f} cm too close"
                   if v == NO else f"{d:.2f} cm from own marker {oid}: too close to call")
        rulings.append(Ruling("placement: own markers", m.id, q.PLACEMENT_OWN_MARKERS, v, measured=d,
                              threshold=MARKER_SPACING_CM, margin=sig, comparison=">", outcome=outcome,
                              measurements=tuple(meas), also=(q.MARKER_CENTRES,), details={**CM, "nearest": oid}))
    # -- 15 cm from the table edges, but the owner's entry edge
    try:
        entry = config.side(m.owner).entry_edge
    except KeyError:
        entry = None
    meas = []
    checked = []
    for edge, d in edge_distances_cm(m.xy, config.table_cm).items():
        if edge == entry:
            meas.append(Measurement(f"{m.id} -> {edge} edge", d, EDGE_CM, m.sigma_cm, YES, ">",
                                    f"side {m.owner} enters from this edge: no restriction"))
            continue
        v = more_than_verdict(d, EDGE_CM, m.sigma_cm)
        meas.append(Measurement(f"{m.id} -> {edge} edge", d, EDGE_CM, m.sigma_cm, v, ">"))
        checked.append((d, v, edge))
    d, _, edge = min(checked)
    v = _all(*(c[1] for c in checked))
    outcome = (f"{d:.2f} cm from the {edge} edge: more than 15 cm from every edge it must keep clear of" if v == YES else
               f"within 15 cm of the {edge} edge ({d:.2f} cm): {EDGE_CM - d:.2f} cm too close" if v == NO else
               f"{d:.2f} cm from the {edge} edge: too close to call")
    rulings.append(Ruling("placement: table edge", m.id, q.PLACEMENT_EDGE, v, measured=d, threshold=EDGE_CM,
                          margin=m.sigma_cm, comparison=">", outcome=outcome, measurements=tuple(meas),
                          also=(q.MARKER_CENTRES,), details={**CM, "nearest_edge": edge, "entry_edge": entry}))
    # -- the type's own restriction
    own = [s.zone for s in config.sides if s.index == m.owner]
    opp = [s.zone for s in config.sides if s.index != m.owner]
    if m.type == "take-and-hold":
        a = _zone_ruling("placement: take & hold", m, q.TAKE_AND_HOLD_PLACEMENT, opp, "opponent's")
        b = _far_ruling("placement: take & hold", m, q.TAKE_AND_HOLD_PLACEMENT, own[0]) if own else None
        v = _any(a.verdict, b.verdict if b else NO)
        parts = [a] + ([b] if b else [])
        outcome = ("; ".join(p.outcome for p in parts) + (": allowed" if v == YES else ": neither holds" if v == NO
                                                           else ": too close to call"))
        key = b if (b is not None and (v != YES or b.verdict == YES)) else a
        rulings.append(replace(key, verdict=v, outcome=outcome,
                               measurements=tuple(Measurement(p.outcome, p.measured, p.threshold, p.margin, p.verdict,
                                                              p.comparison) for p in parts if p.measured is not None)))
    elif m.type == "rescue":
        if own:
            rulings.append(_far_ruling("placement: rescue range", m, q.RESCUE_PLACEMENT, own[0]))
        else:
            rulings.append(Ruling("placement: rescue range", m.id, q.RESCUE_PLACEMENT, NO,
                                  outcome=f"side {m.owner} has no deployment zone configured", details=dict(CM)))
        rulings.append(_cover_ruling(m, config, terrain))
    elif m.type == "cleanse":
        rulings.append(_zone_ruling("placement: cleanse", m, q.CLEANSE_PLACEMENT, own, "own"))
    elif m.type in ("bunker", "capture"):
        rule = q.BUNKER_PLACEMENT if m.type == "bunker" else q.CAPTURE_PLACEMENT
        rulings.append(_zone_ruling(f"placement: {m.type}", m, rule, opp, "opponent's"))
    else:
        raise ValueError(f"{m.type!r} is not an objective type")
    return PlacementCheck(m.id, _all(*(r.verdict for r in rulings)), tuple(rulings))


def _cover_ruling(m: ObjectiveMarker, config: EpicConfig, terrain: Sequence[TerrainPiece]) -> Ruling:
    meas = []
    best = None
    for piece in terrain:
        if not _gives_infantry_cover(piece, config):
            continue
        poly = Polygon([(in_to_cm(x), in_to_cm(y)) for x, y in piece.footprint])
        poly = poly if poly.is_valid else poly.buffer(0)
        pt = Point(m.xy)
        d = -float(poly.exterior.distance(pt)) if poly.covers(pt) else float(poly.distance(pt))
        v = distance_verdict(d, 0.0, m.sigma_cm)
        meas.append(Measurement(f"{m.id} -> {piece.id}", d, 0.0, m.sigma_cm, v, "<=",
                                "signed distance to the footprint's edge: negative inside"))
        if best is None or d < best[0]:
            best = (d, v, piece.id)
    if best is None:
        return Ruling("placement: rescue terrain", m.id, q.RESCUE_PLACEMENT, NO,
                      outcome="no terrain feature that offers an Infantry Armour bonus for cover on the table",
                      details=dict(CM))
    d, v, pid = best
    outcome = (f"inside {pid}, which offers infantry cover" if v == YES else
               f"outside {pid} (the nearest cover terrain) by {d:.2f} cm" if v == NO else
               f"{abs(d):.2f} cm from the edge of {pid}: too close to call")
    return Ruling("placement: rescue terrain", m.id, q.RESCUE_PLACEMENT, v, measured=d, threshold=0.0,
                  margin=m.sigma_cm, comparison="<=", outcome=outcome, measurements=tuple(meas),
                  details={**CM, "terrain": pid})


def placements(markers: Sequence[ObjectiveMarker], config: EpicConfig,
               terrain: Sequence[TerrainPiece] = ()) -> tuple[PlacementCheck, ...]:
    """:func:`placement` for every marker, each checked against all the others."""
    return tuple(placement(m, config, markers, terrain) for m in markers)


# ---------------------------------------------------------------------------------------
# Control at the end of the Rally phase
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EpicControl:
    """``control``: marker id -> the owner if the owner controls it this turn, else
    ``None`` (only a marker's owner can control, and benefit from, it); one ruling per
    Take & Hold, Cleanse and Capture marker."""

    control: dict[str, int | None]
    rulings: tuple[Ruling, ...]

    def controlled_by(self, side: int) -> tuple[str, ...]:
        return tuple(k for k, v in self.control.items() if v == side)

    def to_dict(self) -> dict[str, Any]:
        return {"control": dict(self.control), "rulings": [r.to_dict() for r in self.rulings]}


def _unit_to_marker(u: Unit, tok: Token) -> tuple[float, float, Fighter]:
    """(distance cm, sigma cm, closest stand): the first of the unit's stands at the
    least distance.

    Only stands that could be closest are measured: the one whose centre is nearest
    first, then those whose outline could come nearer than it (centre distance less the
    half diagonal, within that stand's distance). The answer is the one measuring every
    stand gives; control is worked out whenever a stand moves, for every unit and
    marker."""
    reach = [(math.hypot(s.x - tok.x, s.y - tok.y), math.hypot(s.base.width_in, s.base.depth_in) / 2, k)
             for k, s in enumerate(u.stands)]
    near = min(reach)[2]
    bound = closest(u.stands[near], tok).distance
    best = None
    for (cd, half_diagonal, k), s in zip(reach, u.stands):
        if cd - half_diagonal > bound + 1e-9:
            continue  # (no point of its outline comes as near as the nearest-centred stand)
        d = in_to_cm(bound if k == near else closest(s, tok).distance)
        if best is None or d < best[0]:
            best = (d, in_to_cm(combined_sigma(s.sigma_in, tok.sigma_in)), s)
    return best  # type: ignore[return-value]


def _unsure_bounds(state: WorldState, tok: Token, m: ObjectiveMarker, tol: float,
                   enemy_bunker_cm: float | None) -> tuple[bool, bool, list[dict], list[dict]]:
    """Whether the owner could control marker ``m`` (best case) and whether it surely
    does (worst case), over what the camera is not sure of: stands whose side it is
    not sure of (``Fighter.rival_sides``: counted for the owner in the best case if they
    could be the owner's, as enemies in the worst if they could be another side's) and
    places that may hold a stand of one of several sides (``WorldState.doubts``).
    Distances are as measured (their sigma is the verdict's own concern). Control is
    monotone in both (more friends near never loses it, more enemies never gains it), so
    the outcome with every side as read lies between the two. Returns (could, surely,
    the unsure stands near enough to matter, the doubts near enough to matter).

    ``tol``: a Capture marker's contact tolerance (cm); ``enemy_bunker_cm``: the nearest
    Bunker counted as an enemy unit, if any."""
    capture = m.type == "capture"
    reach_cm = tol + m.diameter_cm / 2.0 if capture else CONTROL_RANGE_CM
    best_friend = worst_friend = math.inf
    best_enemy = worst_enemy = math.inf if enemy_bunker_cm is None else enemy_bunker_cm
    unsure: list[dict] = []
    for f in state.fighters:
        d = in_to_cm(closest(f, tok).distance)
        could = {f.side, *f.rival_sides}
        if m.owner in could:
            best_friend = min(best_friend, d)
        if f.side == m.owner and not f.rival_sides:
            worst_friend = min(worst_friend, d)
        if f.side != m.owner and not (f.rival_sides and m.owner in could):
            best_enemy = min(best_enemy, d)
        if could - {m.owner}:
            worst_enemy = min(worst_enemy, d)
        if f.rival_sides and d <= reach_cm + 1.0:
            unsure.append({"fighter": f.id, "side": f.side, "could_be": list(f.rival_sides),
                           "distance_cm": round(d, 2)})
    doubts: list[dict] = []
    for qd in state.doubts:
        d = max(0.0, in_to_cm(math.hypot(qd.x - tok.x, qd.y - tok.y) - qd.radius_in))
        if m.owner in qd.sides:
            best_friend = min(best_friend, d)
        if set(qd.sides) - {m.owner}:
            worst_enemy = min(worst_enemy, d)
        if d <= reach_cm + 1.0:
            doubts.append({"x": qd.x, "y": qd.y, "sides": list(qd.sides), "distance_cm": round(d, 2)})

    def holds(friend: float, enemy: float) -> bool:
        if capture:
            return friend - m.diameter_cm / 2.0 <= tol + 1e-9
        return friend <= CONTROL_RANGE_CM + 1e-9 and friend < enemy - 1e-9

    return holds(best_friend, best_enemy), holds(worst_friend, worst_enemy), unsure, doubts


def _with_unsure(r: Ruling, state: WorldState, tok: Token, m: ObjectiveMarker, tol: float,
                 bunkers: Sequence[ObjectiveMarker]) -> Ruling:
    """``r``, too close to call where stands of unsure side or doubts (``_unsure_bounds``)
    could change whether the owner controls ``m``, saying which; with them in its
    details either way (``unsure_sides``, ``doubts``)."""
    if not state.doubts and not any(f.rival_sides for f in state.fighters):
        # (Every side sure and no doubt: the bounds are the call itself, no stand to
        # measure again.)
        return replace(r, details={**r.details, "unsure_sides": [], "doubts": []})
    near = [math.dist(m.xy, b.xy) for b in bunkers if b.owner == m.owner]
    bunker = min(near) if near else None
    could, surely, unsure, doubts = _unsure_bounds(state, tok, m, tol, bunker)
    details = {**r.details, "unsure_sides": unsure, "doubts": doubts}
    if could == surely:
        return replace(r, details=details)
    # Which of the two is what makes it close: each alone, else both together.
    sure_sides = replace(state, fighters=tuple(replace(f, rival_sides=()) for f in state.fighters))
    by_unsure = len(set(_unsure_bounds(replace(state, doubts=()), tok, m, tol, bunker)[:2])) > 1
    by_doubts = len(set(_unsure_bounds(sure_sides, tok, m, tol, bunker)[:2])) > 1
    notes = list(r.notes)
    if unsure and (by_unsure or not by_doubts):
        notes.append(unsure_sides_note(unsure))
    if doubts and (by_doubts or not by_unsure):
        notes.append("too close to call: the camera saw something of a stand's size it could not name "
                     + "; ".join(f"at ({q['x']:.1f}, {q['y']:.1f}) in, {q['distance_cm']:.1f} cm away, "
                                 f"perhaps a stand of side {' or '.join(map(str, q['sides']))}" for q in doubts)
                     + ": look at the table")
    return replace(r, verdict=TOO_CLOSE, notes=tuple(notes), details=details)


def control(state: WorldState, config: EpicConfig, markers: Sequence[ObjectiveMarker] | None = None,
            removed: Sequence[str] = (), battle_round: int | None = None) -> EpicControl:
    """Who controls each Take & Hold, Cleanse and Capture marker at the end of the Rally
    phase. ``markers`` default to the state's objective tokens that the config names;
    ``removed`` markers (Capture markers already used) are skipped.

    Take & Hold, Cleanse: the owner controls it if one of the owner's units is within
    15 cm of the marker's centre and closer to it than any enemy unit (a unit's distance
    is its closest stand's; an enemy unit at exactly the same distance is not farther, so
    the owner does not control). With ``bunker_is_enemy_unit`` an unremoved Bunker marker
    of the same owner counts as an enemy unit at its centre.

    Capture: the owner controls it if one of the owner's units is in base contact with the
    marker: a stand's base within ``contact_tolerance_cm`` of the marker's rim (the
    marker's radius from its centre).

    With the markers taken from the state, a configured marker the state does not hold
    gets a ruling too: too close to call, look at the table (and no entry in ``control``).
    """
    from_state = markers is None
    if from_state:
        markers = markers_in_state(state, config)
    units = units_in_state(state, config)
    tol = config.options.contact_tolerance_cm
    out: dict[str, int | None] = {}
    rulings = []
    bunkers = [b for b in markers if b.type == "bunker" and b.id not in removed]
    for m in markers:
        if m.id in removed or m.type not in ("take-and-hold", "cleanse", "capture"):
            continue
        tok = m.token()
        meas = []
        friend = None
        enemy = None
        lines = {}
        for u in units:
            d, sig, stand = _unit_to_marker(u, tok)
            mine = u.side == m.owner
            if m.type == "capture":
                gap = d - m.diameter_cm / 2.0
                v = distance_verdict(gap, tol, sig)
                meas.append(Measurement(f"{u.id} (side {u.side}) stand {stand.id}", gap, tol, sig, v, "<=",
                                        "gap from base to marker rim" + ("" if mine else "; enemy: cannot control")))
                if mine and (friend is None or gap < friend[0]):
                    friend = (gap, sig, u.id)
            else:
                meas.append(Measurement(f"{u.id} (side {u.side}) stand {stand.id}", d, CONTROL_RANGE_CM, sig,
                                        distance_verdict(d, CONTROL_RANGE_CM, sig), "<=",
                                        None if mine else "enemy unit"))
                slot = (d, sig, u.id)
                if mine:
                    friend = slot if friend is None or d < friend[0] else friend
                else:
                    enemy = slot if enemy is None or d < enemy[0] else enemy
            lines[u.id] = {"stand": stand.id, "side": u.side}
        if m.type != "capture" and config.options.bunker_is_enemy_unit:
            for b in bunkers:
                if b.owner == m.owner:
                    d = math.dist(m.xy, b.xy)
                    sig = combined_sigma(m.sigma_cm, b.sigma_cm)
                    meas.append(Measurement(f"bunker {b.id} (an enemy War Engine)", d, CONTROL_RANGE_CM, sig,
                                            distance_verdict(d, CONTROL_RANGE_CM, sig), "<=", "enemy unit"))
                    if enemy is None or d < enemy[0]:
                        enemy = (d, sig, f"bunker {b.id}")
        if m.type == "capture":
            rule, also = q.CAPTURE_CONTROL, (q.OWN_OBJECTIVES,)
            if friend is None:
                v, ok = NO, False
                outcome = f"side {m.owner} has no unit on the table"
            else:
                gap, sig, uid = friend
                v = distance_verdict(gap, tol, sig)
                ok = gap <= tol + 1e-9
                outcome = (f"{uid} is in base contact: side {m.owner} controls {m.id}" if ok else
                           f"no unit of side {m.owner} in base contact (nearest {uid}, {gap:.2f} cm from the marker's rim)")
            r = Ruling("control", m.id, rule, v, measured=friend[0] if friend else None, threshold=tol,
                       margin=friend[1] if friend else 0.0, comparison="<=", outcome=outcome, measurements=tuple(meas),
                       also=also, details={**CM, "type": m.type, "owner": m.owner, "controller": m.owner if ok else None,
                                           "contact_tolerance_cm": tol, "battle_round": battle_round, "nearest_stands": lines})
        else:
            rule = q.TAKE_AND_HOLD_CONTROL if m.type == "take-and-hold" else q.CLEANSE_CONTROL
            also = (q.OWN_OBJECTIVES, q.MARKER_CENTRES)
            if friend is None:
                v, ok = NO, False
                outcome = f"side {m.owner} has no unit on the table"
            else:
                d, sig, uid = friend
                v_in = distance_verdict(d, CONTROL_RANGE_CM, sig)
                in_range = d <= CONTROL_RANGE_CM + 1e-9
                if enemy is None:
                    v_closer, closer = YES, True
                else:
                    de, sige, eid = enemy
                    s2 = combined_sigma(sig, sige)
                    closer = d < de - 1e-9
                    v_closer = TOO_CLOSE if s2 > 0 and abs(d - de) <= CALL_SIGMAS * s2 + 1e-9 else (YES if closer else NO)
                v = _all(v_in, v_closer)
                ok = in_range and closer
                if ok:
                    outcome = f"{uid} is {d:.2f} cm away" + (f", closer than {enemy[2]} ({enemy[0]:.2f} cm)" if enemy else
                                                               ", no enemy unit") + f": side {m.owner} controls {m.id}"
                elif not in_range:
                    outcome = f"nearest unit of side {m.owner}, {uid}, is {d:.2f} cm away: {d - CONTROL_RANGE_CM:.2f} cm beyond 15 cm"
                elif abs(d - enemy[0]) <= 1e-9:
                    outcome = f"{uid} and enemy {enemy[2]} are equally far ({d:.2f} cm): not closer, no control"
                else:
                    outcome = f"enemy {enemy[2]} ({enemy[0]:.2f} cm) is closer than {uid} ({d:.2f} cm): no control"
            r = Ruling("control", m.id, rule, v, measured=friend[0] if friend else None, threshold=CONTROL_RANGE_CM,
                       margin=friend[1] if friend else 0.0, comparison="<=", outcome=outcome, measurements=tuple(meas),
                       also=also, details={**CM, "type": m.type, "owner": m.owner, "controller": m.owner if ok else None,
                                           "nearest_friend": friend[2] if friend else None,
                                           "nearest_enemy": enemy[2] if enemy else None,
                                           "enemy_distance": enemy[0] if enemy else None,
                                           "battle_round": battle_round, "nearest_stands": lines})
        r = _with_unsure(r, state, tok, m, tol, bunkers if m.type != "capture" and config.options.bunker_is_enemy_unit
                         else ())
        out[m.id] = m.owner if ok else None
        rulings.append(r)
    if from_state:
        seen = {m.id for m in markers}
        for spec in config.objectives:
            if spec.id in seen or spec.id in removed or spec.type not in ("take-and-hold", "cleanse", "capture"):
                continue
            # A marker the config lists and the camera does not see (hidden, its tag
            # unreadable): nothing can be measured, so no call is made.
            rulings.append(Ruling(
                "control", spec.id, q.CAPTURE_CONTROL if spec.type == "capture" else (
                    q.TAKE_AND_HOLD_CONTROL if spec.type == "take-and-hold" else q.CLEANSE_CONTROL),
                TOO_CLOSE, measured=None, threshold=tol if spec.type == "capture" else CONTROL_RANGE_CM, margin=0.0,
                comparison="<=", outcome="not in sight of the camera: control cannot be measured",
                notes=(f"too close to call: the game lists {spec.id} but the camera does not see it now "
                       "(hidden, moved, or its tag unreadable): look at the table",),
                details={**CM, "type": spec.type, "owner": spec.owner, "controller": None, "unseen": True,
                         "battle_round": battle_round}))
    return EpicControl(out, tuple(rulings))


# ---------------------------------------------------------------------------------------
# Rescue
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rescue:
    """A Rescue objective's state: where the marker is (cm), the current escort unit and
    its side (``None``: on the ground), the stand carrying it, and whether the owner has
    made the initial pick-up.

    >>> Rescue("r", 0, 10.0, 20.0).escorted
    False
    """

    marker_id: str
    owner: int
    x_cm: float
    y_cm: float
    escort: str | None = None
    escort_side: int | None = None
    carrier: str | None = None
    initial_pick_up_made: bool = False

    @property
    def escorted(self) -> bool:
        return self.escort is not None

    @property
    def xy(self) -> tuple[float, float]:
        return (self.x_cm, self.y_cm)

    def point_in(self) -> tuple[float, float, float]:
        return (cm_to_in(self.x_cm), cm_to_in(self.y_cm), 0.0)

    @classmethod
    def from_marker(cls, m: ObjectiveMarker) -> "Rescue":
        return cls(m.id, m.owner, m.x_cm, m.y_cm)


def _unit(state: WorldState, config: EpicConfig | None, unit_id: str) -> Unit:
    for u in units_in_state(state, config):
        if u.id == unit_id:
            return u
    raise KeyError(unit_id)


def pick_up_rescue(rescue: Rescue, state: WorldState, config: EpicConfig, unit_id: str) -> tuple[Rescue, Ruling]:
    """The player moves ``unit_id`` onto the Rescue marker and picks it up. Allowed when
    the marker has no escort, the unit is a ground unit, it is the owner's unit or the
    owner has already made the initial pick-up, and one of its stands is over the
    marker's centre (horizontally, within ``contact_tolerance_cm``). Returns the new
    state (unchanged if refused) and the ruling."""
    u = _unit(state, config, unit_id)
    base = {**CM, "unit": unit_id, "side": u.side, "owner": rescue.owner}
    if rescue.escorted:
        return rescue, Ruling("rescue pick-up", rescue.marker_id, q.RESCUE_ESCORT_DESTROYED, NO,
                              outcome=f"{rescue.marker_id} already travels with escort unit {rescue.escort}",
                              details=base)
    if not u.ground:
        return rescue, Ruling("rescue pick-up", rescue.marker_id, q.RESCUE_PICK_UP, NO,
                              outcome=f"{unit_id} is not a ground unit ({u.type})", details=base)
    if not rescue.initial_pick_up_made and u.side != rescue.owner:
        return rescue, Ruling("rescue pick-up", rescue.marker_id, q.RESCUE_INITIAL_PICK_UP, NO,
                              outcome=f"only side {rescue.owner} can make the initial pick up of {rescue.marker_id}",
                              also=(q.RESCUE_PICK_UP,), details=base)
    pt = rescue.point_in()
    tol = config.options.contact_tolerance_cm
    meas = []
    best = None
    for s in u.stands:
        d = in_to_cm(horizontal_distance(s, pt))
        sig = in_to_cm(s.sigma_in)
        v = distance_verdict(d, tol, sig)
        meas.append(Measurement(f"{s.id}", d, tol, sig, v, "<=", "horizontal distance from the base to the marker centre"))
        if best is None or d < best[0]:
            best = (d, sig, v, s.id)
    d, sig, v, sid = best  # type: ignore[misc]
    if d <= tol + 1e-9:
        new = replace(rescue, escort=unit_id, escort_side=u.side, carrier=sid,
                      initial_pick_up_made=rescue.initial_pick_up_made or u.side == rescue.owner)
        outcome = f"{unit_id} picks up {rescue.marker_id} and becomes the escort unit"
    else:
        new = rescue
        outcome = f"{unit_id} is not on the marker (nearest stand {sid} is {d:.2f} cm from its centre)"
    rule_also = (q.RESCUE_INITIAL_PICK_UP,) if u.side == rescue.owner else (q.RESCUE_ESCORT_DESTROYED,)
    return new, Ruling("rescue pick-up", rescue.marker_id, q.RESCUE_PICK_UP, v, measured=d, threshold=tol, margin=sig,
                       comparison="<=", outcome=outcome, measurements=tuple(meas), also=rule_also,
                       details={**base, "stand": sid, "escort": new.escort})


def follow_escort(rescue: Rescue, state: WorldState) -> Rescue:
    """The marker travels with its escort unit: it moves to the carrying stand's centre
    (if that stand is gone, the escort's remaining stand nearest the marker takes it).
    An unescorted marker, or an escort not in the state, leaves it where it is."""
    if not rescue.escorted:
        return rescue
    stands = [f for f in state.fighters if (f.unit or f.id) == rescue.escort]
    if not stands:
        return rescue
    carrier = next((f for f in stands if f.id == rescue.carrier), None)
    if carrier is None:
        carrier = min(stands, key=lambda f: math.dist((in_to_cm(f.x), in_to_cm(f.y)), rescue.xy))
    return replace(rescue, x_cm=in_to_cm(carrier.x), y_cm=in_to_cm(carrier.y), carrier=carrier.id)


def escort_destroyed(rescue: Rescue, before: WorldState, config: EpicConfig, *, close_combat: bool = False,
                     new_escort: str | None = None, after: WorldState | None = None) -> tuple[Rescue, Ruling]:
    """The escort unit is destroyed. ``before`` is the state just before its stands were
    removed (the marker is left where the escort carried it); ``after``, if given, the
    state after the combat (to check that ``new_escort`` survived).

    In close combat the opposing player (of the escort's side) may name ``new_escort``:
    a surviving unit of an enemy side of the escort that was in base contact with the
    escort unit (some pair of stands within ``contact_tolerance_cm``); it picks the
    marker up at once. Otherwise the marker stays on the table, unescorted."""
    if not rescue.escorted:
        raise ValueError(f"{rescue.marker_id} has no escort unit")
    at = follow_escort(rescue, before)
    dropped = replace(at, escort=None, escort_side=None, carrier=None)
    base = {**CM, "destroyed": rescue.escort, "marker": list(dropped.xy)}
    drop_outcome = f"escort {rescue.escort} destroyed: {rescue.marker_id} left at ({dropped.x_cm:.1f}, {dropped.y_cm:.1f}) cm"
    if new_escort is None:
        return dropped, Ruling("rescue escort destroyed", rescue.marker_id, q.RESCUE_ESCORT_DESTROYED, YES,
                               outcome=drop_outcome, details=base)
    if not close_combat:
        return dropped, Ruling("rescue escort destroyed", rescue.marker_id, q.RESCUE_CLOSE_COMBAT, NO,
                               outcome=drop_outcome + f"; {new_escort} cannot claim it: the escort was not destroyed in close combat",
                               also=(q.RESCUE_ESCORT_DESTROYED,), details=base)
    try:
        esc = _unit(before, config, rescue.escort)  # type: ignore[arg-type]
        claim = _unit(before, config, new_escort)
    except KeyError as e:
        return dropped, Ruling("rescue escort destroyed", rescue.marker_id, q.RESCUE_CLOSE_COMBAT, NO,
                               outcome=drop_outcome + f"; unit {e.args[0]} is not on the table", details=base)
    if claim.side == esc.side:
        return dropped, Ruling("rescue escort destroyed", rescue.marker_id, q.RESCUE_CLOSE_COMBAT, NO,
                               outcome=drop_outcome + f"; {new_escort} is not an enemy unit of the escort", details=base)
    if after is not None and not any((f.unit or f.id) == new_escort for f in after.fighters):
        return dropped, Ruling("rescue escort destroyed", rescue.marker_id, q.RESCUE_CLOSE_COMBAT, NO,
                               outcome=drop_outcome + f"; {new_escort} did not survive", details=base)
    tol = config.options.contact_tolerance_cm
    best = None
    for a in esc.stands:
        for b in claim.stands:
            d = in_to_cm(closest(a, b).distance)
            sig = in_to_cm(combined_sigma(a.sigma_in, b.sigma_in))
            if best is None or d < best[0]:
                best = (d, sig, b.id)
    d, sig, sid = best  # type: ignore[misc]
    v = distance_verdict(d, tol, sig)
    if d <= tol + 1e-9:
        new = replace(dropped, escort=new_escort, escort_side=claim.side, carrier=sid)
        new = follow_escort(new, after if after is not None else before)
        outcome = f"escort {rescue.escort} destroyed in close combat: {new_escort} was in base contact and becomes the escort unit"
    else:
        new = dropped
        outcome = drop_outcome + f"; {new_escort} was not in base contact ({d:.2f} cm away)"
    return new, Ruling("rescue escort destroyed", rescue.marker_id, q.RESCUE_CLOSE_COMBAT, v, measured=d, threshold=tol,
                       margin=sig, comparison="<=", outcome=outcome, also=(q.RESCUE_ESCORT_DESTROYED,),
                       details={**base, "new_escort": new.escort, "stand": sid})


def escorts_by_side(rescues: Sequence[Rescue]) -> dict[int, int]:
    """How many escort units each side has (the Rescue Morale effect counts them).

    >>> escorts_by_side([Rescue("a", 0, 0, 0, "u1", 0), Rescue("b", 1, 0, 0, "u2", 0), Rescue("c", 1, 0, 0)])
    {0: 2}
    """
    out: dict[int, int] = {}
    for r in rescues:
        if r.escorted and r.escort_side is not None:
            out[r.escort_side] = out.get(r.escort_side, 0) + 1
    return out


# ---------------------------------------------------------------------------------------
# Bunker
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DataSheet:
    """A unit's data sheet, as printed in the text (Table 1)."""

    unit: str
    type: str
    speed_cm: float
    range_cm: float
    firepower: int
    assault: int
    armour: str
    notes: str
    damage_capacity: int


#: Table 1. Bunker data sheet.
BUNKER_DATA_SHEET = DataSheet("Bunker", "WE", 0.0, 0.0, 0, 2, "6+", "Damage Capacity 3", 3)


@dataclass(frozen=True)
class Bunker:
    """A bunker objective: an enemy War Engine (to its owner) in the Immobilised
    condition, Damage Capacity 3; ``damage`` taken so far.

    >>> b, r = damage_bunker(Bunker("bk", 0), hits=2)
    >>> b.damage_capacity_left, b.destroyed
    (1, False)
    >>> damage_bunker(b, critical=True)[0].destroyed
    True
    """

    marker_id: str
    owner: int
    damage: int = 0
    destroyed: bool = False
    data_sheet: DataSheet = BUNKER_DATA_SHEET
    immobilised: bool = True

    @property
    def damage_capacity_left(self) -> int:
        return max(0, self.data_sheet.damage_capacity - self.damage)

    @property
    def speed_cm(self) -> float:
        return 0.0


def damage_bunker(bunker: Bunker, hits: int = 1, critical: bool = False) -> tuple[Bunker, Ruling]:
    """Apply ``hits`` points of damage (and/or critical damage). Destroyed when the
    damage reaches Damage Capacity 3, or at once on critical damage."""
    if hits < 0:
        raise ValueError("hits must be 0 or more")
    if bunker.destroyed:
        return bunker, Ruling("bunker damage", bunker.marker_id, q.BUNKER_WAR_ENGINE, NO,
                              outcome=f"{bunker.marker_id} is already destroyed")
    dmg = bunker.damage + int(hits)
    dc = bunker.data_sheet.damage_capacity
    if critical:
        new = replace(bunker, damage=dmg, destroyed=True)
        return new, Ruling("bunker damage", bunker.marker_id, q.BUNKER_CRITICAL, YES, measured=float(dmg),
                           threshold=float(dc), comparison=">=",
                           outcome=f"critical damage: {bunker.marker_id} is destroyed"
                                   + (f" ({dc - dmg} Damage Capacity left ignored)" if dmg < dc else ""),
                           also=(q.BUNKER_STATIC_UNIT, q.BUNKER_MORALE, q.REMOVE_MARKER),
                           details={"damage": dmg, "damage_capacity": dc, "critical": True})
    destroyed = dmg >= dc
    new = replace(bunker, damage=dmg, destroyed=destroyed)
    return new, Ruling("bunker damage", bunker.marker_id, q.BUNKER_STATIC_UNIT, YES if destroyed else NO,
                       measured=float(dmg), threshold=float(dc), comparison=">=",
                       outcome=(f"{dmg} damage reaches Damage Capacity {dc}: {bunker.marker_id} is destroyed" if destroyed
                                else f"{dmg} damage of Damage Capacity {dc}: {dc - dmg} left"),
                       also=(q.BUNKER_WAR_ENGINE,) + ((q.BUNKER_MORALE, q.REMOVE_MARKER) if destroyed else ()),
                       details={"damage": dmg, "damage_capacity": dc, "critical": False})


def bunker_support(state: WorldState, config: EpicConfig, marker: ObjectiveMarker) -> tuple[Ruling, ...]:
    """Which enemy units (in the text's voice, addressed to the bunker's owner: units of
    the owner's opponents) are within 15 cm of the bunker marker's centre and so can lend
    support in an assault on it. One ruling per such-side unit; ``details["engaged"]``
    follows ``EpicOptions.bunker_support_engages`` (TODO 2: literal reading False: lending
    support does not by itself make the unit's detachment count as engaged)."""
    tok = marker.token()
    engages = config.options.bunker_support_engages
    out = []
    for u in units_in_state(state, config):
        if u.side == marker.owner:
            continue
        d, sig, stand = _unit_to_marker(u, tok)
        v = distance_verdict(d, BUNKER_SUPPORT_CM, sig)
        outcome = (f"{u.id} is {d:.2f} cm from {marker.id}: can lend support"
                   + (" (its detachment counts as engaged)" if engages else " (this alone does not engage its detachment)")
                   if d <= BUNKER_SUPPORT_CM + 1e-9 else f"{u.id} is {d:.2f} cm from {marker.id}: too far to lend support")
        out.append(Ruling("bunker support", f"{u.id}->{marker.id}", q.BUNKER_SUPPORT, v, measured=d,
                          threshold=BUNKER_SUPPORT_CM, margin=sig, comparison="<=", outcome=outcome,
                          also=(q.TODO_BUNKER_SUPPORT,),
                          details={**CM, "unit": u.id, "side": u.side, "stand": stand.id,
                                   "engaged": bool(engages) and d <= BUNKER_SUPPORT_CM + 1e-9,
                                   "option": {"bunker_support_engages": engages}}))
    return tuple(out)
