"""Calls the web UI asks of the rules core: objective control at the end of a battle
round, and a judge's distance between a fighter and another fighter or a token."""

from __future__ import annotations

from typing import Any

from tracker.rules import warcry
from tracker.rules.cover import cover
from tracker.rules.measure import closest
from tracker.rules.ruling import combined_sigma, distance_verdict
from tracker.world import Fighter, Token, WorldState

from .errors import ApiError

def objective_control(state: WorldState, previous: dict[str, int | None] | None, battle_round: int):
    """(control, [ruling dicts]) from the rules core."""
    result = warcry.objective_control(state, previous, battle_round)
    control = {str(k): (None if v is None else int(v)) for k, v in dict(result.control).items()}
    return control, [r.to_dict() for r in result.rulings]


def find(state: WorldState, ident: str) -> Fighter | Token:
    for f in state.fighters:
        if f.id == ident:
            return f
    for t in state.tokens:
        if t.id == ident:
            return t
    known = ", ".join([f.id for f in state.fighters] + [t.id for t in state.tokens]) or "none"
    raise ApiError(404, f"no fighter or token '{ident}' on the table now (known: {known})")


def measure(state: WorldState, a_id: str, b_id: str, threshold: float | None = None) -> dict[str, Any]:
    """Distance between two things on the table (closest points of bases, token centres,
    in 3D, as the rules core measures) with its 1-sigma margin and, given a threshold,
    whether the second is within it of the first."""
    if a_id == b_id:
        raise ApiError(400, "'from' and 'to' are the same; pick two different fighters or tokens")
    a, b = find(state, a_id), find(state, b_id)
    c = closest(a, b)
    dist, h, v, pa, pb = c.distance, c.horizontal, c.vertical, list(c.a), list(c.b)
    method = "closest points, 3D (tracker.rules.measure)"
    margin = combined_sigma(a.sigma_in, b.sigma_in)
    out: dict[str, Any] = {
        "from": a_id, "to": b_id, "distance_in": round(dist, 4), "horizontal_in": round(h, 4),
        "vertical_in": round(v, 4), "margin_in": round(margin, 4), "margin_sigmas": 1,
        "from_point": [round(float(x), 4) for x in pa], "to_point": [round(float(x), 4) for x in pb],
        "method": method,
        "notes": [f"{x.id} is occluded: its last seen position is used" for x in (a, b) if x.occluded],
    }
    if threshold is not None:
        out["threshold_in"] = threshold
        out["verdict"] = distance_verdict(dist, threshold, margin)
    if isinstance(a, Fighter) and isinstance(b, Fighter):
        out["cover"] = cover_ruling(state, a_id, b_id)
    return out


def cover_ruling(state: WorldState, attacker: str, target: str) -> dict[str, Any]:
    """The rules core's cover call for an attack by ``attacker`` on ``target``."""
    return cover(state, attacker, target).to_dict()


def fighter_rulings(state: WorldState, fighter_id: str) -> dict[str, Any]:
    """What a judge asks of one fighter: may it pick up the nearest treasure (within 1"
    now, not carrying, not a Monster or Beast), and must it take a falling test if it is
    targeted now (within ½" of an open platform edge, or left on stairs or a ladder)."""
    from tracker.rules.measure import distance
    from tracker.rules.terrain import falling_test
    from tracker.rules.treasure import pick_up

    f = find(state, fighter_id)
    if not isinstance(f, Fighter):
        raise ApiError(400, f"'{fighter_id}' is a token; click a fighter")
    out: dict[str, Any] = {"fighter": fighter_id, "carrying": f.carrying, "treasure": None,
                           "falling": falling_test(state, fighter_id).to_dict()}
    treasure = [t for t in state.tokens if t.kind == "treasure" and not t.occluded]
    if treasure:
        nearest = min(treasure, key=lambda t: distance(f, t))
        out["treasure"] = pick_up(state, fighter_id, nearest.id).to_dict()
    return out

