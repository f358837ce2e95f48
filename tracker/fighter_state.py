"""Fighter state beside positions: activation, half-activation, damage and Wounds,
taken down, carried treasure, reset at the start of each battle round.

Pure Python (no OpenCV, no I/O), immutable: every change returns a :class:`Change`,
the new :class:`FighterStates` plus the :class:`Event`\\ s it caused; nothing is kept
anywhere else.

>>> s = FighterStates.of(["f1", "f2"], wounds={"f1": 8, "f2": 10})
>>> s, ev = s.activate("f1")
>>> s["f1"].activation, [e.kind for e in ev]
('activated', ['activated'])
>>> s, ev = s.half_activate("f2")
>>> s["f2"].activation
'half-activated'
>>> s, ev = s.pick_up("f1", "treasure-78")
>>> s, ev = s.add_damage("f1", 8)
>>> [e.kind for e in ev], s["f1"].taken_down, s["f1"].carrying
(['damaged', 'taken-down', 'treasure-dropped'], True, None)
>>> s.still_ready()
()
>>> s, ev = s.new_battle_round()
>>> s.battle_round, s["f2"].activation, [e.kind for e in ev]
(2, 'ready', ['new-battle-round'])
>>> s.add_damage("f9", 1)
Traceback (most recent call last):
...
tracker.fighter_state.UnknownFighter: no fighter 'f9' (known: f1, f2)

Half activation, a named reading: the rules excerpt in ``shared/rules`` lists the
"half activated" state as something to track without defining it; here it is a fighter
that has used one of its activation's two actions (or a reaction) and may still finish
its activation. So a fighter goes ready -> half-activated -> activated (or straight from
ready to activated) within a battle round, and every fighter still in play is ready again
at the start of the next one.

Wounds come from the roster or are set per fighter (:meth:`FighterStates.set_wounds`);
a fighter whose Wounds are not known (``None``) takes damage but cannot be taken down
until they are set. A fighter is taken down when its damage reaches its Wounds: it drops
any treasure it carries (:func:`drop_offer` gives legal points from the rules core), it
no longer counts for objective control (:func:`in_play` removes it from the world state)
and it is shown as removed.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Literal, Mapping, NamedTuple

from tracker.errors import UserError

Activation = Literal["ready", "half-activated", "activated"]
READY: Activation = "ready"
HALF_ACTIVATED: Activation = "half-activated"
ACTIVATED: Activation = "activated"
#: Order of the activation states within a battle round (never goes back but at a new round).
ACTIVATION_ORDER: dict[str, int] = {READY: 0, HALF_ACTIVATED: 1, ACTIVATED: 2}


class FighterStateError(UserError):
    """A change that cannot be made (one line saying why)."""


class UnknownFighter(FighterStateError, KeyError):
    """No fighter with that id."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class DamageError(FighterStateError):
    """Damage that is not a whole number of at least 1, or that would go below zero."""


class ActivationError(FighterStateError):
    """An activation the fighter cannot make (already activated, taken down)."""


@dataclass(frozen=True)
class FighterState:
    """One fighter's state. ``wounds`` ``None``: not known yet.

    >>> f = FighterState("f1", wounds=3, damage=3)
    >>> f.taken_down, f.in_play, f.wounds_left
    (True, False, 0)
    """

    id: str
    side: int | None = None
    activation: Activation = READY
    damage: int = 0
    wounds: int | None = None
    carrying: str | None = None

    @property
    def taken_down(self) -> bool:
        """Damage has reached Wounds."""
        return self.wounds is not None and self.damage >= self.wounds

    @property
    def in_play(self) -> bool:
        return not self.taken_down

    @property
    def ready(self) -> bool:
        """In play and not yet activated (or half-activated) this battle round."""
        return self.in_play and self.activation == READY

    @property
    def wounds_left(self) -> int | None:
        return None if self.wounds is None else max(0, self.wounds - self.damage)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "side": self.side, "activation": self.activation, "damage": self.damage,
                "wounds": self.wounds, "wounds_left": self.wounds_left, "taken_down": self.taken_down,
                "carrying": self.carrying}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "FighterState":
        act = d.get("activation", READY)
        if act not in ACTIVATION_ORDER:
            raise FighterStateError(f"fighter {d.get('id')!r}: unknown activation state {act!r}")
        w = d.get("wounds")
        return cls(id=str(d["id"]), side=None if d.get("side") is None else int(d["side"]), activation=act,
                   damage=int(d.get("damage", 0)), wounds=None if w is None else int(w),
                   carrying=d.get("carrying"))


@dataclass(frozen=True)
class Event:
    """Something that happened to a fighter (or, for ``new-battle-round``, to all):
    ``activated``, ``half-activated``, ``damaged``, ``damage-removed``, ``taken-down``,
    ``treasure-dropped``, ``restored`` (damage removed from a taken-down fighter: a
    correction), ``wounds-set``, ``treasure-picked-up``, ``new-battle-round``."""

    kind: str
    fighter: str | None
    battle_round: int
    text: str
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "fighter": self.fighter, "battle_round": self.battle_round,
                "text": self.text, "details": dict(self.details)}


class Change(NamedTuple):
    """What a change returns: the new states and the events, in order."""

    states: "FighterStates"
    events: tuple[Event, ...]


def _whole(n: Any, what: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise DamageError(f"{what} must be a whole number, not {n!r}")
    return n


@dataclass(frozen=True)
class FighterStates:
    """Every fighter's state in one battle round. Immutable; the fighters keep their order.

    >>> s = FighterStates.of(["a", "b"], wounds=4)
    >>> s.ids, s.battle_round, s.still_ready()
    (('a', 'b'), 1, ('a', 'b'))
    """

    fighters: tuple[FighterState, ...] = ()
    battle_round: int = 1

    # -- building ------------------------------------------------------------------------
    @classmethod
    def of(cls, ids: Iterable[str], wounds: int | Mapping[str, int] | None = None,
           sides: Mapping[str, int] | None = None, battle_round: int = 1) -> "FighterStates":
        """Fresh states (all ready, no damage) for ``ids``; ``wounds`` one number for all
        or per fighter id (from the roster)."""
        return cls((), battle_round).with_fighters(ids, wounds=wounds, sides=sides)

    def with_fighters(self, ids: Iterable[str], wounds: int | Mapping[str, int] | None = None,
                      sides: Mapping[str, int] | None = None) -> "FighterStates":
        """These states plus a fresh (ready) state for every id not known yet; known
        fighters are left as they are except that a missing side or Wounds is filled in.

        >>> FighterStates.of(["a"]).with_fighters(["a", "b"], wounds={"b": 5})["b"].wounds
        5
        """
        sides = dict(sides or {})

        def w_of(fid: str) -> int | None:
            w = wounds.get(fid) if isinstance(wounds, Mapping) else wounds
            if w is None:
                return None
            if isinstance(w, bool) or not isinstance(w, int) or w < 1:
                raise FighterStateError(f"Wounds of {fid} must be a whole number of at least 1, not {w!r}")
            return w

        out = []
        for f in self.fighters:
            if f.side is None and f.id in sides:
                f = replace(f, side=int(sides[f.id]))
            if f.wounds is None and w_of(f.id) is not None:
                f = replace(f, wounds=w_of(f.id))
            out.append(f)
        known = {f.id for f in out}
        for fid in ids:
            fid = str(fid)
            if fid not in known:
                known.add(fid)
                out.append(FighterState(fid, side=None if sides.get(fid) is None else int(sides[fid]),
                                        wounds=w_of(fid)))
        return replace(self, fighters=tuple(out))

    # -- reading -------------------------------------------------------------------------
    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(f.id for f in self.fighters)

    def __getitem__(self, fighter_id: str) -> FighterState:
        for f in self.fighters:
            if f.id == fighter_id:
                return f
        raise UnknownFighter(f"no fighter {fighter_id!r} (known: {', '.join(self.ids) or 'none'})")

    def __contains__(self, fighter_id: object) -> bool:
        return any(f.id == fighter_id for f in self.fighters)

    def __len__(self) -> int:
        return len(self.fighters)

    def still_ready(self) -> tuple[str, ...]:
        """Fighters in play that have not activated at all this battle round."""
        return tuple(f.id for f in self.fighters if f.ready)

    def taken_down(self) -> tuple[str, ...]:
        return tuple(f.id for f in self.fighters if f.taken_down)

    def in_play_ids(self) -> tuple[str, ...]:
        return tuple(f.id for f in self.fighters if f.in_play)

    def to_dict(self) -> dict[str, Any]:
        return {"battle_round": self.battle_round, "fighters": [f.to_dict() for f in self.fighters]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "FighterStates":
        """>>> s = FighterStates.of(["a"], wounds=3).add_damage("a", 1).states
        >>> FighterStates.from_dict(s.to_dict()) == s
        True
        """
        return cls(tuple(FighterState.from_dict(f) for f in d.get("fighters", ())), int(d.get("battle_round", 1)))

    # -- changes -------------------------------------------------------------------------
    def _put(self, f: FighterState) -> "FighterStates":
        return replace(self, fighters=tuple(f if x.id == f.id else x for x in self.fighters))

    def _ev(self, kind: str, fid: str | None, text: str, **details: Any) -> Event:
        return Event(kind, fid, self.battle_round, text, details)

    def _in_play(self, fighter_id: str, doing: str) -> FighterState:
        f = self[fighter_id]
        if f.taken_down:
            raise ActivationError(f"{fighter_id} is taken down and cannot {doing}")
        return f

    def activate(self, fighter_id: str) -> Change:
        """The fighter makes (or, half-activated, finishes) its activation this round."""
        f = self._in_play(fighter_id, "activate")
        if f.activation == ACTIVATED:
            raise ActivationError(f"{fighter_id} has already activated in battle round {self.battle_round}")
        text = (f"{fighter_id} finishes its activation" if f.activation == HALF_ACTIVATED
                else f"{fighter_id} activates")
        return Change(self._put(replace(f, activation=ACTIVATED)),
                      (self._ev("activated", fighter_id, text, previous=f.activation),))

    def half_activate(self, fighter_id: str) -> Change:
        """The fighter has used one of its two actions (or a reaction): half-activated."""
        f = self._in_play(fighter_id, "half-activate")
        if f.activation != READY:
            raise ActivationError(f"{fighter_id} is already {f.activation} in battle round {self.battle_round}")
        return Change(self._put(replace(f, activation=HALF_ACTIVATED)),
                      (self._ev("half-activated", fighter_id, f"{fighter_id} is half-activated"),))

    def add_damage(self, fighter_id: str, n: int = 1) -> Change:
        """Allocate ``n`` damage points. Reaching Wounds takes the fighter down (damage
        stops at Wounds) and it drops any treasure it carries."""
        n = _whole(n, "damage")
        if n < 1:
            raise DamageError(f"damage to allocate must be at least 1, not {n}")
        f = self[fighter_id]
        if f.taken_down:
            raise DamageError(f"{fighter_id} is already taken down")
        damage = f.damage + n if f.wounds is None else min(f.wounds, f.damage + n)
        g = replace(f, damage=damage)
        events = [self._ev("damaged", fighter_id, f"{fighter_id} takes {n} damage ({damage}"
                           + (f"/{f.wounds})" if f.wounds is not None else ", Wounds not set)"),
                           n=n, damage=damage, wounds=f.wounds)]
        if g.taken_down:
            events.append(self._ev("taken-down", fighter_id, f"{fighter_id} is taken down", damage=damage))
            if g.carrying:
                events.append(self._ev("treasure-dropped", fighter_id,
                                       f"{fighter_id} drops {g.carrying} as it is taken down", treasure=g.carrying))
                g = replace(g, carrying=None)
        return Change(self._put(g), tuple(events))

    def remove_damage(self, fighter_id: str, n: int = 1) -> Change:
        """Take ``n`` damage points off (healing, or correcting a mistake). Never below
        zero; a taken-down fighter brought back below its Wounds is ``restored``."""
        n = _whole(n, "damage")
        if n < 1:
            raise DamageError(f"damage to remove must be at least 1, not {n}")
        f = self[fighter_id]
        if n > f.damage:
            raise DamageError(f"{fighter_id} has {f.damage} damage; removing {n} would go below zero")
        g = replace(f, damage=f.damage - n)
        events = [self._ev("damage-removed", fighter_id, f"{n} damage removed from {fighter_id} ({g.damage} left)",
                           n=n, damage=g.damage, wounds=f.wounds)]
        if f.taken_down and not g.taken_down:
            events.append(self._ev("restored", fighter_id, f"{fighter_id} is back in play (correction)"))
        return Change(self._put(g), tuple(events))

    def set_wounds(self, fighter_id: str, wounds: int) -> Change:
        """Set the fighter's Wounds characteristic (from its fighter card)."""
        if isinstance(wounds, bool) or not isinstance(wounds, int) or wounds < 1:
            raise FighterStateError(f"Wounds must be a whole number of at least 1, not {wounds!r}")
        f = self[fighter_id]
        g = replace(f, wounds=wounds)
        if g.taken_down:
            g = replace(g, damage=wounds)  # damage stops at Wounds
        events = [self._ev("wounds-set", fighter_id, f"{fighter_id} has {wounds} Wounds", wounds=wounds)]
        if g.taken_down and not f.taken_down:
            events.append(self._ev("taken-down", fighter_id, f"{fighter_id} is taken down", damage=wounds))
            if g.carrying:
                events.append(self._ev("treasure-dropped", fighter_id,
                                       f"{fighter_id} drops {g.carrying} as it is taken down", treasure=g.carrying))
                g = replace(g, carrying=None)
        elif f.taken_down and not g.taken_down:
            events.append(self._ev("restored", fighter_id, f"{fighter_id} is back in play (correction)"))
        return Change(self._put(g), tuple(events))

    def pick_up(self, fighter_id: str, treasure_id: str) -> Change:
        """The fighter now carries ``treasure_id`` (a fighter carries at most one)."""
        f = self._in_play(fighter_id, "pick up treasure")
        if f.carrying:
            raise FighterStateError(f"{fighter_id} is already carrying {f.carrying}")
        holder = next((x.id for x in self.fighters if x.carrying == treasure_id), None)
        if holder is not None:
            raise FighterStateError(f"{treasure_id} is already carried by {holder}")
        return Change(self._put(replace(f, carrying=str(treasure_id))),
                      (self._ev("treasure-picked-up", fighter_id, f"{fighter_id} picks up {treasure_id}",
                                treasure=treasure_id),))

    def drop_treasure(self, fighter_id: str) -> Change:
        """The fighter uses an action to drop its treasure."""
        f = self[fighter_id]
        if not f.carrying:
            raise FighterStateError(f"{fighter_id} is not carrying treasure")
        return Change(self._put(replace(f, carrying=None)),
                      (self._ev("treasure-dropped", fighter_id, f"{fighter_id} drops {f.carrying}",
                                treasure=f.carrying),))

    def new_battle_round(self, battle_round: int | None = None) -> Change:
        """The start of the next battle round (or of ``battle_round``, which must be
        later): every fighter in play is ready again; taken-down fighters stay down."""
        nxt = self.battle_round + 1 if battle_round is None else battle_round
        if isinstance(nxt, bool) or not isinstance(nxt, int) or nxt <= self.battle_round:
            raise FighterStateError(f"battle round {nxt!r} does not come after battle round {self.battle_round}")
        fs = tuple(f if f.taken_down else replace(f, activation=READY) for f in self.fighters)
        new = FighterStates(fs, nxt)
        return Change(new, (new._ev("new-battle-round", None, f"battle round {nxt} begins: every fighter is ready",
                                    previous=self.battle_round),))


# -- consequences in the rules core ------------------------------------------------------
def end_of_round_check(states: FighterStates) -> tuple[str, ...]:
    """Reminders at the end of a battle round: fighters still ready (never activated).

    >>> end_of_round_check(FighterStates.of(["a", "b"]).activate("a").states)
    ('b has not activated in battle round 1',)
    """
    return tuple(f"{fid} has not activated in battle round {states.battle_round}" for fid in states.still_ready())


def in_play(world, states: FighterStates):
    """The world state without taken-down fighters (what objective control should see);
    fighters carry the treasure the states say they carry when the camera saw none.

    >>> from tracker.world import Base, Fighter, WorldState
    >>> b = Base("round", 1.0, 1.0)
    >>> w = WorldState(fighters=(Fighter("a", 0, 0, 0, 0, b), Fighter("b", 1, 3, 0, 0, b)))
    >>> s = FighterStates.of(["a", "b"], wounds=1).add_damage("b", 1).states
    >>> [f.id for f in in_play(w, s).fighters]
    ['a']
    """
    down = set(states.taken_down())
    fs = []
    for f in world.fighters:
        if f.id in down:
            continue
        if f.id in states and not f.carrying and states[f.id].carrying:
            f = replace(f, carrying=states[f.id].carrying)
        fs.append(f)
    return world.with_fighters(tuple(fs))


def drop_offer(world, fighter_id: str, treasure_id: str, last_seen=None):
    """The treasure a taken-down fighter drops: a :class:`~tracker.rules.ruling.Ruling`
    (``question="drop"``) whose ``details["points"]`` are the legal drop points the rules
    core suggests (nearest first, each passing its drop validator). The fighter should be
    in ``world`` (where it was taken down); a fighter already lifted off the table is put
    back where it was ``last_seen`` (a Fighter, when the caller knows it); with neither,
    the ruling says it cannot be placed.

    >>> from tracker.world import Base, Fighter, WorldState
    >>> f = Fighter("a", 5, 5, 0, 0, Base("round", 1.0, 1.0), carrying="t1")
    >>> drop_offer(WorldState(), "a", "t1").outcome
    'a is not on the table now: place t1 by hand within 1" of where it was taken down'
    >>> drop_offer(WorldState(), "a", "t1", last_seen=f).details["last_seen"]
    True
    """
    from tracker.rules import quotes
    from tracker.rules.ruling import NO, YES, Ruling
    from tracker.rules.treasure import drop_points

    subject = f"{fighter_id} drops {treasure_id}"
    seen_last = False
    try:
        f = world.fighter(fighter_id)
    except KeyError:
        if last_seen is None or last_seen.id != fighter_id:
            return Ruling("drop", subject, quotes.DROP_WHEN_TAKEN_DOWN, NO, also=(quotes.DROP,),
                          outcome=f"{fighter_id} is not on the table now: place {treasure_id} by hand within 1\" "
                                  f"of where it was taken down",
                          details={"fighter": fighter_id, "treasure": treasure_id, "points": []})
        f, seen_last = last_seen, True
        world = world.with_fighters(tuple(world.fighters) + (f,))
    w = world.with_fighters(tuple(replace(x, carrying=treasure_id) if x.id == fighter_id else x
                                  for x in world.fighters))
    points = drop_points(w, fighter_id)
    where = f"where {fighter_id} was last seen" if seen_last else fighter_id
    return Ruling("drop", subject, quotes.DROP_WHEN_TAKEN_DOWN, YES if points else NO, also=(quotes.DROP,),
                  outcome=(f"place {treasure_id} at one of {len(points)} legal points within 1\" of {where}"
                           if points else f"no legal drop point found around {where}: the judge places it"),
                  details={"fighter": fighter_id, "treasure": treasure_id, "at": [f.x, f.y, f.z],
                           "last_seen": seen_last, "points": [list(p) for p in points]})
