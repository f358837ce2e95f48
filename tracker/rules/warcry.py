"""Warcry objectives: who controls each objective token at the end of a battle round.

Control persists across rounds, so it is passed in (``previous``) and returned, never
stored here.

>>> from tracker.world import Base, Fighter, Token, WorldState
>>> b = Base("round", 1.0, 1.0)
>>> s = WorldState(fighters=(Fighter("a", 0, 0.0, 2.0, 0.0, b), Fighter("b", 0, 0.0, -2.0, 0.0, b),
...                          Fighter("c", 1, 2.0, 0.0, 0.0, b)),
...                tokens=(Token("obj1", "objective", 0.0, 0.0),))
>>> r = objective_control(s)
>>> r.control
{'obj1': 0}
>>> r.rulings[0].outcome
'side 0 gains control (side 0: 2, side 1: 1 within 3")'
>>> s2 = s.with_fighters(s.fighters[1:])          # one each: a tie changes nothing
>>> objective_control(s2, previous=r.control, battle_round=2).control
{'obj1': 0}
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Mapping

from tracker.world import PATCH_SIGMA_IN, WorldState

from . import quotes
from .measure import closest, sigma_of
from .ruling import NO, TOO_CLOSE, YES, Measurement, Ruling, combined_sigma, distance_verdict, unsure_sides_note

#: "within 3\"" of an objective.
CONTROL_RANGE_IN = 3.0
# A fighter whose middle a hand hides reaches out of the hidden area by its base's
# radius (a 50 mm base: 1 in): an area this far beyond 3" of an objective may still hide
# one within 3" of it. (One less hidden is found: the detector looks round the hand.)
HIDDEN_REACH_IN = 1.0


@dataclass(frozen=True)
class ControlResult:
    """``control``: objective id -> controlling side (``None``: nobody yet);
    ``rulings``: one per objective token in the state."""

    control: dict[str, int | None]
    rulings: tuple[Ruling, ...]

    def to_dict(self) -> dict[str, object]:
        return {"control": dict(self.control), "rulings": [r.to_dict() for r in self.rulings]}


def gainer(counts: Mapping[int, int]) -> int | None:
    """The side that gains control from counts of fighters within 3": the side with more
    friendly fighters than there are enemy fighters (all other sides together); ``None``
    if no side has (a tie, or nobody near).

    >>> gainer({0: 2, 1: 1}), gainer({0: 1, 1: 1}), gainer({0: 2, 1: 1, 2: 1}), gainer({})
    (0, None, None, None)
    """
    total = sum(counts.values())
    for side, n in counts.items():
        if n > total - n:
            return side
    return None


def _possible_gainers(lo: Mapping[int, int], hi: Mapping[int, int]) -> set[int | None]:
    sides = sorted(set(lo) | set(hi))
    ranges = [range(lo.get(s, 0), hi.get(s, 0) + 1) for s in sides]
    out: set[int | None] = set()
    for combo in itertools.product(*ranges):
        out.add(gainer(dict(zip(sides, combo))))
        if len(out) > 1:
            break
    return out


def objective_control(state: WorldState, previous: Mapping[str, int | None] | None = None,
                      battle_round: int = 1) -> ControlResult:
    """Control of every objective at the end of ``battle_round``.

    A side gains an objective when it has more fighters within 3" (closest point of the
    base to the token's centre, in 3D) than there are enemy fighters within 3"; otherwise
    control stays as in ``previous`` (ties change nothing). Objectives in ``previous``
    that are not in the state are carried over unchanged.

    Each ruling's verdict answers "does a side gain control this round?"; it is
    ``"too close to call"`` when fighters whose distance is within 2 sigma of 3" could,
    between them, change who gains. ``control`` always follows the measured distances.
    Occluded fighters count at their last known position and the ruling says so.
    An objective the state lists as unseen (``WorldState.unseen_objectives``) gets a
    ruling too: too close to call, look at the table (its control, if any, carried over).
    """
    prev = dict(previous or {})
    control: dict[str, int | None] = dict(prev)
    rulings = []
    sides = sorted({f.side for f in state.fighters})
    for tok in state.objectives():
        before = prev.get(tok.id)
        counts = {s: 0 for s in sides}
        lo = {s: 0 for s in sides}
        hi = {s: 0 for s in sides}
        lo_plain, hi_plain = dict(lo), dict(hi)  # (every side taken as read: whether the unsure sides matter)
        unsure: list[dict[str, object]] = []
        meas: list[Measurement] = []
        notes: list[str] = []
        uncertain: list[str] = []
        lines: dict[str, object] = {}
        for f in state.fighters:
            c = closest(f, tok)
            sig = combined_sigma(sigma_of(f), sigma_of(tok))
            v = distance_verdict(c.distance, CONTROL_RANGE_IN, sig)
            inside = c.distance <= CONTROL_RANGE_IN + 1e-9
            note = None
            if f.occluded:
                note = "occluded: counted at last known position"
                if c.distance <= CONTROL_RANGE_IN + 2 * sig + 1.0:
                    notes.append(f"fighter {f.id} is occluded; counted at its last known position "
                                 f"({f.x:.2f}, {f.y:.2f}, {f.z:.2f})")
            counts[f.side] += inside
            lo_plain[f.side] += v == YES
            hi_plain[f.side] += v != NO
            # A fighter whose side the camera is not sure of (its rim seen too little)
            # counts surely for no side, and may count for its own or any it could be.
            lo[f.side] += v == YES and not f.rival_sides
            hi[f.side] += v != NO
            if v != NO and f.rival_sides:
                for other in f.rival_sides:
                    hi[other] = hi.get(other, 0) + 1
                unsure.append({"fighter": f.id, "side": f.side, "could_be": list(f.rival_sides)})
            if v == TOO_CLOSE:
                uncertain.append(f.id)
            meas.append(Measurement(f"{f.id} (side {f.side})", c.distance, CONTROL_RANGE_IN, sig, v, "<=", note))
            lines[f.id] = {"from": list(c.a), "to": list(c.b), "side": f.side}
        doubts = []
        hi_seen = dict(hi)  # (what the fighters alone allow: whether the doubts are what makes it close)
        for q in state.doubts:
            # A place the camera could not name that may hold a fighter: counted as one
            # that might be within 3" (of any side it could be) where its base could reach.
            reach = max(0.0, math.hypot(q.x - tok.x, q.y - tok.y) - q.radius_in)
            if reach <= CONTROL_RANGE_IN + 2 * combined_sigma(PATCH_SIGMA_IN, sigma_of(tok)):
                for side in q.sides:
                    hi[side] = hi.get(side, 0) + 1
                doubts.append({"x": q.x, "y": q.y, "sides": list(q.sides), "distance": round(reach, 3)})
        hidden = [h for h in state.hidden if h.distance_to(tok.x, tok.y) <= CONTROL_RANGE_IN + HIDDEN_REACH_IN]
        hi_unhidden = dict(hi)
        if hidden:
            # A hand over the table near the objective may hide a fighter of any side
            # within 3" of it: each side might have one more there.
            for side in sides:
                hi[side] = hi.get(side, 0) + 1
        if tok.occluded:
            notes.append(f"objective {tok.id} is occluded; measured at its last known position")
        g = gainer(counts)
        after = g if g is not None else before
        control[tok.id] = after
        possible = _possible_gainers(lo, hi)
        verdict = TOO_CLOSE if len(possible) > 1 else (YES if g is not None else NO)
        if verdict == TOO_CLOSE:
            pivotal = uncertain
            if pivotal:
                notes.append("too close to call: " + ", ".join(pivotal) + " within 2 sigma of 3\" could change who gains control")
            if unsure and len(_possible_gainers(lo_plain, hi_plain)) < 2:
                notes.append(unsure_sides_note(unsure))
            if hidden and len(_possible_gainers(lo, hi_unhidden)) < 2:
                notes.append("too close to call: a " + " and a ".join(sorted({h.why for h in hidden}))
                             + f" hides part of the table within {CONTROL_RANGE_IN + HIDDEN_REACH_IN:g}\" of "
                             + f"{tok.id}, where a fighter may stand unseen: look at the table")
            if doubts and len(_possible_gainers(lo, hi_seen)) < 2:
                notes.append("too close to call: the camera saw something of a base's size it could not name "
                             + "; ".join(f"at ({q['x']:.1f}, {q['y']:.1f}), {q['distance']:.1f}\" away, "
                                         f"perhaps a fighter of side {' or '.join(map(str, q['sides']))}" for q in doubts)
                             + ": look at the table")
        else:
            pivotal = []
        count_txt = ", ".join(f"side {s}: {n}" for s, n in counts.items()) or "no fighters"
        if g is not None:
            outcome = (f"side {g} gains control" if before != g else f"side {g} keeps control") + f" ({count_txt} within 3\")"
        elif before is not None:
            outcome = f"no side gains control; side {before} keeps it ({count_txt} within 3\")"
        else:
            outcome = f"no side gains control; uncontrolled ({count_txt} within 3\")"
        # the deciding measurement: the fighter distance nearest the threshold
        key = min(meas, key=lambda m: abs(m.measured - CONTROL_RANGE_IN), default=None)
        rulings.append(Ruling(
            question="control", subject=tok.id, rule=quotes.CONTROL, verdict=verdict,
            measured=key.measured if key else None, threshold=CONTROL_RANGE_IN,
            margin=key.margin if key else 0.0, comparison="<=", outcome=outcome,
            measurements=tuple(meas), notes=tuple(dict.fromkeys(notes)),
            also=(quotes.CONTROL_PERSISTS, quotes.MEASURE_TO_TOKEN_CENTRE),
            details={"battle_round": battle_round, "token": [tok.x, tok.y, tok.z],
                     "counts": {str(s): n for s, n in counts.items()},
                     "previous": before, "controller": after, "gained_by": g,
                     "uncertain_fighters": uncertain, "pivotal_fighters": pivotal,
                     "possible_gainers": sorted(possible, key=lambda x: (x is None, x)), "doubts": doubts,
                     "unsure_sides": unsure, "lines": lines,
                     "hidden": [{"why": h.why, "distance": round(h.distance_to(tok.x, tok.y), 3)} for h in hidden]}))
    for oid in state.unseen_objectives:
        # An objective the set-up lists and the camera does not see (hidden, moved off,
        # its tag unreadable): no distance to it can be measured, so no call is made.
        before = prev.get(oid)
        keeps = f"side {before} keeps it until it is seen" if before is not None else "uncontrolled until seen"
        rulings.append(Ruling(
            question="control", subject=oid, rule=quotes.CONTROL, verdict=TOO_CLOSE,
            measured=None, threshold=CONTROL_RANGE_IN, margin=0.0, comparison="<=",
            outcome=f"not in sight of the camera: control cannot be measured; {keeps}",
            notes=(f"too close to call: the set-up lists {oid} but the camera does not see it now "
                   "(hidden, moved, or its tag unreadable): look at the table",),
            also=(quotes.CONTROL_PERSISTS,),
            details={"battle_round": battle_round, "token": None, "unseen": True, "counts": {},
                     "previous": before, "controller": before, "gained_by": None,
                     "uncertain_fighters": [], "pivotal_fighters": [], "possible_gainers": [], "doubts": [],
                     "unsure_sides": [], "lines": {}}))
    return ControlResult(control=control, rulings=tuple(rulings))
