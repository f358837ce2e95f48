"""An Epic-scale game followed frame by frame: stands grouped into units, objective
markers found, Rescue markers picked up, carried and dropped, and control "if the Rally
phase ended now".

The rules themselves live in :mod:`tracker.rules.epic` (pure functions of one state);
this is the little memory a table needs between frames, kept explicit in one object:
where each unit was (so grouping is stable), each Rescue marker's state, and the rulings
the table produced on its own (pick-ups, refusals, drops). No OpenCV, no I/O.

A Rescue marker is picked up when its token disappears from the table while a stand of a
ground unit stands over its centre (the escort carries it away, as a player would); it
rides with the escort; when every stand of the escort leaves the table the marker is
dropped where the escort was (and the token is expected back there).

>>> from tracker.epic import parse_epic_section
>>> from tracker.world import Base, Fighter, Token, WorldState
>>> cfg = parse_epic_section({"sides": [
...     {"index": 0, "deployment_zone": {"edge": "west", "depth_cm": 30}},
...     {"index": 1, "deployment_zone": {"edge": "east", "depth_cm": 30}}],
...     "units": [{"id": "a", "side": 0, "stands": 1}],
...     "objectives": [{"id": "r", "owner": 0, "type": "rescue", "tag_id": 41}]})
>>> stand = Fighter("s1", 0, 20.0, 10.0, 0.0, Base("rect", 40 / 25.4, 20 / 25.4))
>>> table = EpicTable(cfg)
>>> v = table.observe(WorldState(fighters=(stand,), tokens=(Token("t41", "objective", 20.0, 10.0, tag_id=41),)))
>>> v.rescues[0].escorted
False
>>> v = table.observe(WorldState(frame_index=1, fighters=(stand,)))   # the token is gone under the stand
>>> v.rescues[0].escort, [r.outcome for r in v.new_rulings]
('a', ['a picks up r and becomes the escort unit'])
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from .epic import EpicConfig, ObjectiveMarker, Unit, cm_to_in, group_by_coherency, markers_in_state, units_in_state
from .rules.epic import (CONTROL_RANGE_CM, EpicControl, PlacementCheck, Rescue, control, escort_destroyed,
                         escorts_by_side, follow_escort, pick_up_rescue, placements)
from .rules.epic_morale import Dice, MoraleLedger
from .rules.ruling import Ruling
from .world import WorldState


@dataclass(frozen=True)
class EpicView:
    """What the Epic table looks like at one instant (for the overlay and the API)."""

    state: WorldState  # stands carry their ``unit`` ids
    units: tuple[Unit, ...]
    markers: tuple[ObjectiveMarker, ...]  # on the table (Rescue markers: where they are, carried or not)
    rescues: tuple[Rescue, ...]
    control: EpicControl  # if the Rally phase ended now
    placements: tuple[PlacementCheck, ...] = ()
    new_rulings: tuple[Ruling, ...] = ()  # rulings this frame made (pick-ups, refusals, drops)

    def to_dict(self) -> dict[str, Any]:
        """Everything, rulings included (the API)."""
        return {**self.summary(), "control": self.control.to_dict(),
                "placements": [p.to_dict() for p in self.placements],
                "new_rulings": [r.to_dict() for r in self.new_rulings]}

    def summary(self) -> dict[str, Any]:
        """Plain data, small enough for every frame's world state (the overlay draws it)."""
        ctl = self.control.control
        return {
            "ring_cm": CONTROL_RANGE_CM,
            "units": [{"id": u.id, "side": u.side, "type": u.type, "ground": u.ground,
                       "stands": [s.id for s in u.stands], "occluded": u.occluded,
                       "centre_in": [round(sum(s.x for s in u.stands) / len(u.stands), 4),
                                     round(sum(s.y for s in u.stands) / len(u.stands), 4)]}
                      for u in self.units],
            "markers": [{"id": m.id, "owner": m.owner, "type": m.type, "x_cm": round(m.x_cm, 3),
                         "y_cm": round(m.y_cm, 3), "x_in": round(cm_to_in(m.x_cm), 4), "y_in": round(cm_to_in(m.y_cm), 4),
                         "controller": ctl.get(m.id)} for m in self.markers],
            "rescues": [{"marker": r.marker_id, "owner": r.owner, "x_cm": round(r.x_cm, 3), "y_cm": round(r.y_cm, 3),
                         "escort": r.escort, "escort_side": r.escort_side, "carrier": r.carrier,
                         "initial_pick_up_made": r.initial_pick_up_made} for r in self.rescues],
            "placement": {p.marker_id: p.verdict for p in self.placements},
        }


@dataclass
class EpicTable:
    """The memory of one Epic table between frames (see the module docstring).

    ``rulings`` keeps every ruling the table made on its own, in order."""

    config: EpicConfig
    rescues: dict[str, Rescue] = field(default_factory=dict)
    rulings: list[Ruling] = field(default_factory=list)
    _centres: dict[str, tuple[float, float]] = field(default_factory=dict)
    _last: WorldState | None = None
    _placed: dict[str, ObjectiveMarker] = field(default_factory=dict)
    _refused: set[tuple[str, str]] = field(default_factory=set)
    settle_frames: int = 3
    pick_up_memory_s: float = 2.0
    # marker -> recent (time, unit, stand, state) with a stand over it while its token lay there
    _over: dict[str, list[tuple[float, str, str, WorldState]]] = field(default_factory=dict)
    _unit_of: dict[str, str] = field(default_factory=dict)  # stand (tracker id) -> its settled unit
    _streak: dict[str, tuple[str | None, int]] = field(default_factory=dict)
    _lost: dict[str, int] = field(default_factory=dict)  # unit -> settled stands gone from the table
    _placement_cache: tuple = ((), ())
    _control_cache: tuple = (None, None)
    # marker id -> (the Rescue as it was carried, the last state with its escort): for a
    # close-combat claim made after the frame that saw the escort go.
    _dropped: dict[str, tuple[Rescue, WorldState]] = field(default_factory=dict)

    # ------------------------------------------------------------------ per frame
    def group(self, state: WorldState) -> WorldState:
        """The state with each stand given its roster unit.

        A stand keeps its unit once it has had it for ``settle_frames`` frames in a row
        (the tracker's ids persist, so the unit does too); only stands not settled yet are
        grouped as a player sees units (:func:`tracker.epic.group_by_coherency`: stands
        within 5 cm of each other, matched to roster units by stand count and by where
        each unit was), into the room their units have left (the roster's count less the
        stands lost): a destroyed unit is not refilled from its neighbours."""
        if not self.config.units:
            return state
        present = {f.id for f in state.fighters}
        for fid in [fid for fid in self._unit_of if fid not in present]:  # gone from the table
            unit = self._unit_of.pop(fid)
            self._lost[unit] = self._lost.get(unit, 0) + 1
        # Settled stands keep their units whatever the grouping says: with every stand
        # settled (most frames of a game) there is nothing to group (~5 ms a frame).
        grouped = {} if all(f.id in self._unit_of for f in state.fighters) else group_by_coherency(
            state.fighters, self.config.units, settled=self._unit_of, previous=self._centres, lost=self._lost)
        fighters = []
        for f in state.fighters:
            unit = self._unit_of.get(f.id, grouped.get(f.id))
            if f.id not in self._unit_of:
                run = self._streak.get(f.id)
                self._streak[f.id] = (unit, run[1] + 1) if run and run[0] == unit else (unit, 1)
                if unit is not None and self._streak[f.id][1] >= self.settle_frames:
                    self._unit_of[f.id] = unit
                    self._streak.pop(f.id, None)
                    if self._lost.get(unit, 0) > 0:  # one of its lost stands, back under a new id
                        self._lost[unit] -= 1
            fighters.append(replace(f, unit=unit))
        sums: dict[str, list[float]] = {}
        for f in fighters:
            if f.unit is not None:
                c = sums.setdefault(f.unit, [0.0, 0.0, 0.0])
                c[0] += f.x
                c[1] += f.y
                c[2] += 1
        self._centres.update({u: (c[0] / c[2], c[1] / c[2]) for u, c in sums.items()})
        return state.with_fighters(tuple(fighters))

    def observe(self, state: WorldState) -> EpicView:
        """Take one frame's world state; returns the Epic view of it."""
        state = self.group(state)
        markers = markers_in_state(state, self.config)
        on_table = {m.id: m for m in markers}
        new: list[Ruling] = []
        for spec in self.config.objectives:
            if spec.type != "rescue":
                continue
            r = self.rescues.get(spec.id)
            m = on_table.get(spec.id)
            if r is None:
                if m is not None:
                    self.rescues[spec.id] = r = Rescue.from_marker(m)
                    self._note_over(r, state)
                continue
            if r.escorted:
                if any((f.unit or f.id) == r.escort for f in state.fighters):
                    r = follow_escort(r, state)
                elif not state.hands_over_table or self._last is None:
                    before = self._last or state
                    self._dropped[spec.id] = (follow_escort(r, before), before)
                    r, ruling = escort_destroyed(r, before, self.config)
                    new.append(ruling)
            elif m is not None:
                r = replace(r, x_cm=m.x_cm, y_cm=m.y_cm)
                self._note_over(r, state)
            elif not state.hands_over_table:  # gone, not just under a hand
                r, ruling = self._try_pick_up(r, state)
                if ruling is not None:
                    new.append(ruling)
            self.rescues[spec.id] = r
        for m in markers:
            self._placed.setdefault(m.id, m)
        # Rescue markers are where the rules say (carried or lying); the others where seen.
        shown = [m for m in markers if m.id not in self.rescues]
        shown += [replace(self._placed[r.marker_id], x_cm=r.x_cm, y_cm=r.y_cm)
                  for r in self.rescues.values() if r.marker_id in self._placed]
        self._last = state
        self.rulings.extend(new)
        shown_t = tuple(shown)
        return EpicView(state, units_in_state(state, self.config), shown_t, tuple(self.rescues.values()),
                        self._control(state, shown_t), self._placements(state), tuple(new))

    def _control(self, state: WorldState, markers: tuple) -> EpicControl:
        """rules.epic.control of the frame, worked out again only when a stand or a marker
        changed: a still frame (every stand held where it was) costs nothing here."""
        key = (state.fighters, markers)
        if key != self._control_cache[0]:
            self._control_cache = (key, control(state, self.config, markers=markers))
        return self._control_cache[1]

    def _placements(self, state: WorldState) -> tuple[PlacementCheck, ...]:
        """Where each marker was first placed, checked (again only when that changes)."""
        key = (tuple(self._placed.values()), tuple(state.terrain))
        if key != self._placement_cache[0]:
            self._placement_cache = (key, placements(key[0], self.config, state.terrain))
        return self._placement_cache[1]

    def _note_over(self, r: Rescue, state: WorldState) -> None:
        over = self._stand_over(r, state)
        if over is not None:
            recent = [x for x in self._over.get(r.marker_id, []) if state.time_s - x[0] <= self.pick_up_memory_s]
            self._over[r.marker_id] = recent + [(state.time_s, *over, state)]

    def _unit_over(self, r: Rescue, state: WorldState) -> str | None:
        over = self._stand_over(r, state)
        return None if over is None else over[0]

    def _stand_over(self, r: Rescue, state: WorldState) -> tuple[str, str] | None:
        """(unit, stand) of the stand over the marker's centre (the nearest such), if any."""
        pt = r.point_in()
        slack = cm_to_in(self.config.options.contact_tolerance_cm) + 0.1  # a stand put down roughly on it
        best = None
        for u in units_in_state(state, self.config):
            for s in u.stands:
                a = math.radians(s.base.angle_deg)
                dx, dy = pt[0] - s.x, pt[1] - s.y
                lx, ly = dx * math.cos(a) + dy * math.sin(a), -dx * math.sin(a) + dy * math.cos(a)
                if abs(lx) <= s.base.width_in / 2 + slack and abs(ly) <= s.base.depth_in / 2 + slack:
                    d = math.hypot(dx, dy)
                    if best is None or d < best[0]:
                        best = (d, u.id, s.id)
        return None if best is None else (best[1], best[2])

    def _try_pick_up(self, r: Rescue, state: WorldState) -> tuple[Rescue, Ruling | None]:
        """The marker's token has gone: the unit whose stand is over its centre picked
        it up (or tried to: the rules may refuse). The tracker keeps a token a moment
        after it was last seen, so the unit may already be moving off: a stand over it
        in the last ``pick_up_memory_s`` counts (the one that stayed longest), judged on
        the state it was last there in.
        No stand over it: the token is just unseen."""
        over = self._stand_over(r, state)
        unit, sid, at = (over[0], over[1], state) if over else (None, None, state)
        recent = [x for x in self._over.get(r.marker_id, []) if state.time_s - x[0] <= self.pick_up_memory_s]
        if recent:
            # The stand that stayed on it longest: the one the player put down there (its
            # neighbours only pass over the spot as the unit moves off).
            dwell: dict[tuple[str, str], int] = {}
            for _, u, sid, _st in recent:
                dwell[(u, sid)] = dwell.get((u, sid), 0) + 1
            unit, sid = max(dwell, key=lambda k: (dwell[k], -min(x[0] for x in recent if (x[1], x[2]) == k)))
            at = next(x[3] for x in reversed(recent) if (x[1], x[2]) == (unit, sid))
        if unit is None:
            return r, None
        key = (r.marker_id, unit)
        if key in self._refused:
            return r, None  # refused once already: say so once, not every frame
        new, ruling = pick_up_rescue(r, at, self.config, unit)
        if not new.escorted:
            self._refused.add(key)
        else:
            # It rides on the stand that stood on it (two touching stands can both be
            # "on" a marker centre that lies on their common edge).
            new = follow_escort(replace(new, carrier=sid or new.carrier), state)
        return new, ruling

    # ------------------------------------------------------------------ player actions
    def close_combat_claim(self, marker_id: str, new_escort: str, after: WorldState | None = None) -> Ruling:
        """The escort of ``marker_id`` was destroyed in close combat and the opposing
        player names ``new_escort`` (a unit that was in base contact) to take the marker.
        Raises KeyError for an unknown marker, ValueError when no escort was destroyed."""
        if marker_id not in self.rescues:
            raise KeyError(marker_id)
        if marker_id not in self._dropped:
            raise ValueError(f"{marker_id}: no escort of it has been destroyed")
        carried, before = self._dropped[marker_id]
        new, ruling = escort_destroyed(carried, before, self.config, close_combat=True, new_escort=new_escort,
                                       after=after if after is not None else self._last)
        self.rescues[marker_id] = new
        if new.escorted:
            del self._dropped[marker_id]
        self.rulings.append(ruling)
        return ruling

    def end_rally_phase(self, ledger: MoraleLedger, state: WorldState, battle_round: int, dice: Dice = Dice(),
                        capture_choices: Mapping[str, str] | None = None) -> tuple[MoraleLedger, EpicControl]:
        """Control, then every Morale effect, at the end of the Rally phase of
        ``battle_round``: (the new ledger, control with its rulings)."""
        view = self.observe(state)
        ctl = control(view.state, self.config, markers=view.markers, removed=tuple(ledger.removed),
                      battle_round=battle_round)
        new = ledger.rally_phase(battle_round, self.config, ctl.control, escorts_by_side(view.rescues), dice,
                                 capture_choices)
        return new, ctl
