"""State tokens: tagged activation and damage tokens laid beside a base, attached to the
fighter they belong to (issue #8, recognition; optional per table: the game config's
``state_tokens:`` section).

Pure Python (numpy, the rules core's measuring; no OpenCV, no I/O).

**Which fighter a token belongs to.** The fighter whose base edge is nearest the token's
*centre*, if that is within ``reach_in`` (1" by default; "within" includes exactly 1").
Measured from the base edge because a token is laid beside a base, whatever its size
(a 60 mm base's token lies farther from its centre than a 25 mm base's); measured to the
token's centre because that is how the rules measure to "other markers" ("always measure
to and from the centre of the marker or token"), and because the centre is what the
camera finds best (the disc's edge blurs, its centre does not move). Bases are measured
exactly (round, oval, rectangular) by :mod:`tracker.rules.measure`. When another fighter
is as near as the nearest, within ``tie_in`` (measuring error), the attachment is
*ambiguous*: the nearest is still named, the others are listed.

>>> from tracker.world import Base, Fighter
>>> a = Fighter("a", 0, 0.0, 0.0, 0.0, Base("round", 1.0, 1.0))
>>> b = Fighter("b", 1, 4.0, 0.0, 0.0, Base("round", 1.0, 1.0))
>>> attach([a, b], 1.5, 0.0)                   # 1" from a's edge: within
Attachment(fighter='a', distance_in=1.0, ambiguous=())
>>> attach([a, b], 2.0, 0.0)                   # 1.5" from both edges: nobody
Attachment(fighter=None, distance_in=None, ambiguous=())
>>> attach([a, b], 2.0, 0.0, reach_in=1.5)     # equidistant: ambiguous
Attachment(fighter='a', distance_in=1.5, ambiguous=('b',))

**Over frames** (:class:`StateTokenTracker`): tokens lie still, and move only with their
fighter (a player moves both), so a token keeps its fighter (hysteresis) until another
fighter is clearly nearer (by ``switch_margin_in``) in two looks running, or its own
fighter has gone out of reach or off the table. Between looks (the detector reads tokens
every few frames) a token rides with its fighter. A token hidden by a hand keeps its place
and its fighter; one that stays unseen with no hand over it is removed.

Tokens "do not interact with the battle in any way": they never appear among the
objectives or treasure; they only say something about a fighter
(:func:`recognised`, :func:`apply_to_states`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

from tracker.world import Fighter, StateToken, WorldState

REACH_IN = 1.0
TIE_IN = 0.1  # two fighters whose edges are this close in distance are "as near" (a few sigma)


@dataclass(frozen=True)
class Attachment:
    fighter: str | None
    distance_in: float | None
    ambiguous: tuple[str, ...] = ()


def edge_distance(f: Fighter, x: float, y: float) -> float:
    """Horizontal distance from the fighter's base edge to the point (0 inside the base)."""
    from tracker.rules.measure import fighter_shape

    px, py = fighter_shape(f).project(float(x), float(y))
    return math.hypot(px - x, py - y)


def attach(fighters: Iterable[Fighter], x: float, y: float, reach_in: float = REACH_IN,
           tie_in: float = TIE_IN) -> Attachment:
    """The fighter a token at (x, y) belongs to (see the module docstring). Ties are
    broken by fighter id, so the answer never depends on the order fighters come in."""
    near = sorted((edge_distance(f, x, y), f.id) for f in fighters)
    # A token's centre inside a base is not beside it: that "base" is the token itself
    # (a paper disc read as a rim) or a token that cannot be seen.
    near = [(d, fid) for d, fid in near if 0.0 < d <= reach_in + 1e-9]
    if not near:
        return Attachment(None, None)
    d0, f0 = near[0]
    return Attachment(f0, round(d0, 6), tuple(fid for d, fid in near[1:] if d - d0 <= tie_in))


# ----------------------------------------------------------------------------------------
@dataclass
class _Track:
    id: str
    tag: int
    xy: np.ndarray
    z: float
    fighter: str | None = None
    anchor: np.ndarray | None = None  # the fighter's position when xy was last set or carried
    distance_in: float | None = None
    ambiguous: tuple[str, ...] = ()
    missing_looks: int = 0
    occluded: bool = False
    rival: str | None = None  # a fighter clearly nearer than ``fighter`` in the last look(s)
    rival_looks: int = 0


@dataclass
class StateTokenTracker:
    """Keeps each state token's place and fighter over frames (see the module docstring).

    ``spec``: the config's :class:`~tracker.config.StateTokens` (meanings, reach).
    """

    spec: Any
    tie_in: float = TIE_IN
    gate_in: float = 0.6  # a token re-seen this close to where it should be is the same token
    switch_margin_in: float = 0.15
    switch_looks: int = 2
    drop_looks: int = 2  # looks in a row a token may go unseen (no hand over it) before it is gone
    tracks: list[_Track] = field(default_factory=list)
    events: list[dict] = field(default_factory=list)
    _n: dict[int, int] = field(default_factory=dict)

    @property
    def reach_in(self) -> float:
        return float(getattr(self.spec, "reach_in", REACH_IN))

    def update(self, seen: Sequence[tuple[int, float, float, float]], fighters: Sequence[Fighter], *,
               looked: bool = True, hands: bool = False,
               hand_over: Callable[[float, float], bool] | None = None) -> tuple[StateToken, ...]:
        """One frame: ``seen`` the state tokens detected, as (tag, x, y, z) (ignored when
        ``looked`` is False: tokens were not looked for this frame); ``fighters`` the
        world state's fighters. Returns every token now on the table."""
        by_id = {f.id: f for f in fighters}
        self.events = []
        # Ride with the fighter: a player moves a fighter's tokens with it.
        for t in self.tracks:
            f = by_id.get(t.fighter) if t.fighter else None
            if f is not None and t.anchor is not None:
                t.xy = t.xy + (np.array([f.x, f.y]) - t.anchor)
            t.anchor = None if f is None else np.array([f.x, f.y])
        if not looked:
            # A token with no fighter yet (seen before its fighter was confirmed) takes
            # one as soon as there is one; the rest keep theirs until the next look.
            for t in self.tracks:
                if t.fighter is None and t.missing_looks == 0 and not t.occluded:
                    self._reattach(t, fighters)
                    if t.fighter is not None:
                        f = by_id[t.fighter]
                        t.anchor = np.array([f.x, f.y])
                        self.events.append({"kind": "state token moved", "subject": t.id, "fighter": t.fighter,
                                            "from": None})
            return self._out()
        matched_t: set[int] = set()
        matched_d: set[int] = set()
        if self.tracks and seen:
            cost = np.full((len(self.tracks), len(seen)), 1e6)
            for i, t in enumerate(self.tracks):
                for j, (tag, x, y, _z) in enumerate(seen):
                    d = float(np.hypot(x - t.xy[0], y - t.xy[1]))
                    if int(tag) == t.tag and d <= self.gate_in:
                        cost[i, j] = d
            for i, j in zip(*linear_sum_assignment(cost)):
                if cost[i, j] < 1e6:
                    t = self.tracks[i]
                    t.xy = np.array(seen[j][1:3], float)
                    t.z = float(seen[j][3])
                    t.missing_looks, t.occluded = 0, False
                    matched_t.add(int(i))
                    matched_d.add(int(j))
        keep = []
        for i, t in enumerate(self.tracks):
            if i not in matched_t:
                hidden = hands and (hand_over is None or hand_over(float(t.xy[0]), float(t.xy[1])))
                t.occluded = bool(hidden)
                if not hidden:
                    t.missing_looks += 1
                if t.missing_looks >= self.drop_looks:
                    self.events.append({"kind": "state token removed", "subject": t.id, "fighter": t.fighter})
                    continue
            keep.append(t)
        self.tracks = keep
        new: set[str] = set()
        for j, (tag, x, y, z) in enumerate(seen):
            if j in matched_d:
                continue
            n = self._n.get(int(tag), 0) + 1
            self._n[int(tag)] = n
            t = _Track(f"state-{int(tag)}-{n}", int(tag), np.array([x, y], float), float(z))
            self.tracks.append(t)
            new.add(t.id)
        for t in self.tracks:
            before = t.fighter
            if t.missing_looks == 0 and not t.occluded:
                self._reattach(t, fighters)
            elif t.fighter is not None and t.fighter not in by_id:
                t.fighter, t.distance_in, t.ambiguous = None, None, ()
            f = by_id.get(t.fighter) if t.fighter else None
            t.anchor = None if f is None else np.array([f.x, f.y])
            if t.id in new:
                self.events.append({"kind": "state token placed", "subject": t.id, "fighter": t.fighter})
            elif before != t.fighter:
                self.events.append({"kind": "state token moved", "subject": t.id, "fighter": t.fighter,
                                    "from": before})
        return self._out()

    def _reattach(self, t: _Track, fighters: Sequence[Fighter]) -> None:
        """Attach a token seen this look: keep its fighter unless that one is out of
        reach or gone, or another is clearly nearer in ``switch_looks`` looks running."""
        x, y = float(t.xy[0]), float(t.xy[1])
        a = attach(fighters, x, y, self.reach_in, self.tie_in)
        mine = next((f for f in fighters if f.id == t.fighter), None) if t.fighter else None
        d_mine = None if mine is None else edge_distance(mine, x, y)
        if d_mine is None or d_mine > self.reach_in + 1e-9:
            t.fighter, t.rival, t.rival_looks = a.fighter, None, 0
        elif a.fighter != t.fighter and a.distance_in is not None and a.distance_in < d_mine - self.switch_margin_in:
            t.rival_looks = t.rival_looks + 1 if t.rival == a.fighter else 1
            t.rival = a.fighter
            if t.rival_looks >= self.switch_looks:
                t.fighter, t.rival, t.rival_looks = a.fighter, None, 0
        else:
            t.rival, t.rival_looks = None, 0
        if t.fighter is None:
            t.distance_in, t.ambiguous = None, ()
        elif t.fighter == a.fighter:
            t.distance_in, t.ambiguous = a.distance_in, a.ambiguous
        else:  # kept by hysteresis: its own distance, and who else is as near
            d = edge_distance(next(f for f in fighters if f.id == t.fighter), x, y)
            t.distance_in = round(d, 6)
            t.ambiguous = tuple(sorted(fid for fid in (a.fighter, *a.ambiguous)
                                       if fid is not None and fid != t.fighter and a.distance_in <= d + self.tie_in
                                       and edge_distance(next(f for f in fighters if f.id == fid), x, y) <= d + self.tie_in))

    def explains(self, x: float, y: float, within_in: float | None = None) -> bool:
        """A state token seen at (x, y) or near it: a base detection there is the token
        itself (a real base's centre is at least its radius plus the token's away:
        ~1 in for a 25 mm base and a 1 in token; the default is 0.7 token diameters)."""
        if within_in is None:
            within_in = 0.7 * float(getattr(self.spec, "diameter_in", 1.0))
        return any(t.missing_looks == 0 and not t.occluded and np.hypot(t.xy[0] - x, t.xy[1] - y) < within_in
                   for t in self.tracks)

    def _out(self) -> tuple[StateToken, ...]:
        out = []
        for t in self.tracks:
            s = self.spec.meaning(t.tag) if self.spec is not None else None
            out.append(StateToken(id=t.id, tag_id=t.tag, meaning=s.meaning if s else "unknown",
                                  count=s.count if s else 1, x=round(float(t.xy[0]), 4), y=round(float(t.xy[1]), 4),
                                  z=t.z, fighter=t.fighter, distance_in=t.distance_in, ambiguous=t.ambiguous,
                                  occluded=t.occluded))
        return tuple(sorted(out, key=lambda s: s.id))


def with_attached(fighters: Iterable[Fighter], tokens: Iterable[StateToken]) -> tuple[Fighter, ...]:
    """The fighters, each with the ids of the state tokens attached to it."""
    mine: dict[str, list[str]] = {}
    for s in tokens:
        if s.fighter is not None:
            mine.setdefault(s.fighter, []).append(s.id)
    return tuple(replace(f, state_tokens=tuple(sorted(mine.get(f.id, ())))) for f in fighters)


# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Recognised:
    """What a fighter's tokens say: ``activation`` ``None`` when no activation token is
    beside it (ready, or its token not down yet: the tokens cannot tell), ``damage``
    ``None`` when the table has no damage tokens."""

    activation: str | None
    damage: int | None


def recognised(world: WorldState, spec: Any) -> dict[str, Recognised]:
    """Per fighter in ``world``, what its attached state tokens say. Ambiguous tokens
    (as near another fighter) say nothing: better no reading than the wrong fighter's."""
    has_damage = any(s.meaning == "damage" for s in spec.tags.values())
    out = {}
    for f in world.fighters:
        toks = [s for s in world.state_tokens if s.fighter == f.id and not s.ambiguous]
        act = ("activated" if any(s.meaning == "activated" for s in toks)
               else "half-activated" if any(s.meaning == "half-activated" for s in toks) else None)
        dmg = sum(s.count for s in toks if s.meaning == "damage") if has_damage else None
        out[f.id] = Recognised(act, dmg)
    return out


def apply_to_states(states, world: WorldState, spec: Any):
    """Take the tokens beside each fighter as its recognised state: a
    :class:`~tracker.fighter_state.Change` (new FighterStates and their events), made
    with FighterStates' own changes, so every rule of theirs holds.

    - Activation only goes forward within a battle round (ready → half-activated →
      activated): a token seen beside a fighter activates it; a token not seen (hidden,
      or picked up for the next round) changes nothing; the round's reset is
      ``new_battle_round``.
    - Damage, if the table has damage tokens: the fighter's damage becomes the sum of its
      damage tokens (added or removed to match), while it is in play.
    - Fighters under a hand, not in ``states``, or whose token is ambiguous are left as
      they are.

    >>> from tracker.config import StateTokens, StateTokenSpec
    >>> from tracker.fighter_state import FighterStates
    >>> from tracker.world import Base, Fighter, StateToken, WorldState
    >>> spec = StateTokens({80: StateTokenSpec(80, "activated"), 82: StateTokenSpec(82, "damage", 2)})
    >>> w = WorldState(fighters=(Fighter("a", 0, 0, 0, 0, Base("round", 1, 1)),), state_tokens=(
    ...     StateToken("state-80-1", 80, "activated", 1.2, 0, fighter="a"),
    ...     StateToken("state-82-1", 82, "damage", -1.2, 0, count=2, fighter="a")))
    >>> s, ev = apply_to_states(FighterStates.of(["a"], wounds=5), w, spec)
    >>> s["a"].activation, s["a"].damage, [e.kind for e in ev]
    ('activated', 2, ['activated', 'damaged'])
    """
    from tracker.fighter_state import ACTIVATION_ORDER, Change

    events: list = []
    seen = recognised(world, spec)
    for f in world.fighters:
        if f.occluded or f.id not in states:
            continue
        r, cur = seen[f.id], states[f.id]
        if cur.taken_down:
            continue
        if r.activation is not None and ACTIVATION_ORDER[r.activation] > ACTIVATION_ORDER[cur.activation]:
            states, ev = states.activate(f.id) if r.activation == "activated" else states.half_activate(f.id)
            events += ev
        if r.damage is not None and r.damage != states[f.id].damage:
            diff = r.damage - states[f.id].damage
            states, ev = states.add_damage(f.id, diff) if diff > 0 else states.remove_damage(f.id, -diff)
            events += ev
    return Change(states, tuple(events))
