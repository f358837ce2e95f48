"""The Army Morale ledger: each objective's Morale effect, applied at the end of each
Rally phase (and at once when a bunker is destroyed), with the history per round.

Pure: a :class:`MoraleLedger` in, a new one out; nothing is stored between calls. Dice
are entered by the players (:class:`Dice` ``entered``, keyed by marker id) or rolled by
the tool: each roll comes from ``random.Random("<seed>:<round>:<marker>:<die>")``, so
the same seed gives the same rolls in any order, and every roll is logged with its source.

>>> from tracker.epic import EpicConfig, EpicSide, DeploymentZone, ObjectiveSpec
>>> z = DeploymentZone(0, ((0, 0), (1, 0), (1, 1)))
>>> cfg = EpicConfig(sides=(EpicSide(0, z), EpicSide(1, z)),
...                  objectives=(ObjectiveSpec("th", 0, "take-and-hold"), ObjectiveSpec("cl", 1, "cleanse")))
>>> led = MoraleLedger.start({0: 10, 1: 10})
>>> led = led.rally_phase(1, cfg, control={"th": 0, "cl": 1}, dice=Dice(entered={"th": 2}))
>>> led.morale, [(c.marker_id, c.side, c.delta, c.source) for c in led.history[-1].changes]
({0: 12, 1: 11}, [('th', 0, 2, 'entered'), ('cl', 1, 1, 'fixed')])
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

from tracker.epic import MORALE_TIMINGS, EpicConfig
from tracker.errors import UserError

from . import epic_quotes as q
from .quotes import Rule

CAPTURE_CHOICES = ("capture", "destroy")


class MoraleError(UserError):
    """A die value out of range, a missing Capture choice, a roll with no seed."""


@dataclass(frozen=True)
class Dice:
    """Where dice come from: ``entered`` values (marker id -> the score the players
    rolled), else the tool rolls with ``seed``; with neither, a needed die is an error.

    >>> Dice(seed=7).roll("r1:th:D3", 3, "th") == Dice(seed=7).roll("r1:th:D3", 3, "th")
    True
    >>> Dice(entered={"th": 4}).roll("r1:th:D3", 3, "th")
    Traceback (most recent call last):
    ...
    tracker.rules.epic_morale.MoraleError: die for th: 4 is not a D3 score (1-3)
    """

    seed: int | str | None = None
    entered: Mapping[str, int] = field(default_factory=dict)

    def roll(self, key: str, sides: int, marker_id: str) -> tuple[int, str]:
        """(score, source) for one D``sides``: ``"entered"`` or ``"rolled"``."""
        if marker_id in self.entered:
            v = self.entered[marker_id]
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= sides:
                raise MoraleError(f"die for {marker_id}: {v!r} is not a D{sides} score (1-{sides})")
            return v, "entered"
        if self.seed is None:
            raise MoraleError(f"die for {marker_id}: enter the D{sides} score the players rolled, or give a seed")
        return random.Random(f"{self.seed}:{key}").randint(1, sides), "rolled"


@dataclass(frozen=True)
class MoraleChange:
    """One change to one side's Army Morale, with the rule and the die behind it."""

    battle_round: int
    side: int
    delta: int
    marker_id: str
    objective: str
    effect: str
    rule: Rule
    die: str | None = None
    roll: int | None = None
    source: str = "fixed"  # "entered", "rolled" (with ``seed``) or "fixed"
    seed: int | str | None = None
    when: str = "end of Rally phase"

    def to_dict(self) -> dict[str, Any]:
        return {"battle_round": self.battle_round, "side": self.side, "delta": self.delta,
                "marker": self.marker_id, "objective": self.objective, "effect": self.effect,
                "die": self.die, "roll": self.roll, "source": self.source, "seed": self.seed,
                "when": self.when, "rule": self.rule.to_dict()}


@dataclass(frozen=True)
class RoundRecord:
    """One round's entry in the history: Army Morale before and after, the changes, and
    the value step R4 (check the game end conditions) sees under ``morale_timing``."""

    battle_round: int
    start: Mapping[int, int]
    changes: tuple[MoraleChange, ...]
    end: Mapping[int, int]
    at_game_end_check: Mapping[int, int]

    def to_dict(self) -> dict[str, Any]:
        return {"battle_round": self.battle_round, "start": {str(k): v for k, v in self.start.items()},
                "changes": [c.to_dict() for c in self.changes], "end": {str(k): v for k, v in self.end.items()},
                "at_game_end_check": {str(k): v for k, v in self.at_game_end_check.items()}}


@dataclass(frozen=True)
class MoraleLedger:
    """Each side's Army Morale, the markers removed from play (used Capture markers,
    destroyed bunkers), and the history per round.

    ``timing`` is the TODO-1 option (``EpicOptions.morale_timing``):
    ``"after-game-end-check"`` (literal, default) or ``"before-game-end-check"``.
    """

    morale: Mapping[int, int]
    removed: frozenset[str] = frozenset()
    history: tuple[RoundRecord, ...] = ()
    timing: str = "after-game-end-check"
    pending: tuple[MoraleChange, ...] = ()  # changes since the last Rally phase (bunkers)

    @classmethod
    def start(cls, morale: Mapping[int, int], timing: str = "after-game-end-check") -> "MoraleLedger":
        if timing not in MORALE_TIMINGS:
            raise MoraleError(f"morale_timing: '{timing}' is not one of {', '.join(MORALE_TIMINGS)}")
        return cls(morale=dict(morale), timing=timing)

    def value(self, side: int) -> int:
        return int(self.morale.get(side, 0))

    def _apply(self, changes: Sequence[MoraleChange]) -> dict[int, int]:
        m = dict(self.morale)
        for c in changes:
            m[c.side] = m.get(c.side, 0) + c.delta
        return m

    def bunker_destroyed(self, battle_round: int, marker_id: str, owner: int, config: EpicConfig,
                         dice: Dice) -> "MoraleLedger":
        """The owner destroyed their bunker objective: roll a D6, each opponent deducts the
        score at once; the marker is removed from play."""
        if marker_id in self.removed:
            raise MoraleError(f"{marker_id} has already been removed from play")
        score, src = dice.roll(f"{battle_round}:{marker_id}:D6", 6, marker_id)
        changes = tuple(MoraleChange(battle_round, opp, -score, marker_id, "bunker", "destroyed: opponent deducts D6",
                                     q.BUNKER_MORALE, "D6", score, src, dice.seed if src == "rolled" else None,
                                     "immediately")
                        for opp in config.opponents(owner))
        return replace(self, morale=self._apply(changes), removed=self.removed | {marker_id},
                       pending=self.pending + changes)

    def rally_phase(self, battle_round: int, config: EpicConfig, control: Mapping[str, int | None],
                    escorts: Mapping[int, int] | None = None, dice: Dice = Dice(),
                    capture_choices: Mapping[str, str] | None = None) -> "MoraleLedger":
        """Apply every objective's Morale effect at the end of the Rally phase of
        ``battle_round``.

        ``control``: marker id -> controlling side (from :func:`tracker.rules.epic.control`;
        only the owner's control counts); ``escorts``: side -> number of its escort units
        (:func:`tracker.rules.epic.escorts_by_side`); ``capture_choices``: Capture marker id
        -> ``"capture"`` (add D6 to the owner) or ``"destroy"`` (the opponent subtracts D6).

        Take & Hold: +D3 to the owner. Cleanse: +1. Rescue: per escort unit, +1 to its side
        and -1 to the opponent. Capture: the chosen effect, then the marker is removed.
        Markers already removed are skipped.
        """
        changes: list[MoraleChange] = []
        choices = dict(capture_choices or {})
        seed = dice.seed
        for spec in config.objectives:
            mid = spec.id
            if mid in self.removed or control.get(mid) != spec.owner:
                continue
            if spec.type == "take-and-hold":
                s, src = dice.roll(f"{battle_round}:{mid}:D3", 3, mid)
                changes.append(MoraleChange(battle_round, spec.owner, s, mid, spec.type, "add D3",
                                            q.TAKE_AND_HOLD_MORALE, "D3", s, src, seed if src == "rolled" else None))
            elif spec.type == "cleanse":
                changes.append(MoraleChange(battle_round, spec.owner, 1, mid, spec.type, "add 1", q.CLEANSE_MORALE))
            elif spec.type == "capture":
                choice = choices.get(mid)
                if choice not in CAPTURE_CHOICES:
                    raise MoraleError(f"capture_choices[{mid!r}]: side {spec.owner} controls {mid}; choose "
                                      f"'capture' (add D6) or 'destroy' (opponent subtracts D6), got {choice!r}")
                s, src = dice.roll(f"{battle_round}:{mid}:D6", 6, mid)
                if choice == "capture":
                    changes.append(MoraleChange(battle_round, spec.owner, s, mid, spec.type, "capture: add D6",
                                                q.CAPTURE_EFFECT_CAPTURE, "D6", s, src, seed if src == "rolled" else None))
                else:
                    for opp in config.opponents(spec.owner):
                        changes.append(MoraleChange(battle_round, opp, -s, mid, spec.type,
                                                    "destroy: opponent subtracts D6", q.CAPTURE_EFFECT_DESTROY, "D6", s,
                                                    src, seed if src == "rolled" else None))
        for side, n in sorted((escorts or {}).items()):
            for k in range(int(n)):
                changes.append(MoraleChange(battle_round, side, 1, f"escort {k + 1}", "rescue", "add 1",
                                            q.RESCUE_MORALE_ADD))
                for opp in config.opponents(side):
                    changes.append(MoraleChange(battle_round, opp, -1, f"escort {k + 1}", "rescue",
                                                "opponent deducts 1", q.RESCUE_MORALE_DEDUCT))
        removed = self.removed | {c.marker_id for c in changes if c.objective == "capture"}
        before_rally = dict(self.morale)
        end = self._apply(changes)
        start = self._apply([replace(c, delta=-c.delta) for c in self.pending])  # before this round's bunker effects
        seen = end if self.timing == "before-game-end-check" else before_rally
        rec = RoundRecord(battle_round, start, tuple(self.pending) + tuple(changes), end, seen)
        return replace(self, morale=end, removed=removed, history=self.history + (rec,), pending=())

    def to_dict(self) -> dict[str, Any]:
        return {"morale": {str(k): v for k, v in self.morale.items()}, "removed": sorted(self.removed),
                "timing": self.timing, "history": [h.to_dict() for h in self.history],
                "pending": [c.to_dict() for c in self.pending]}


def end_of_rally_phase(ledger: MoraleLedger, state: Any, config: EpicConfig, battle_round: int,
                       rescues: Sequence[Any] = (), dice: Dice = Dice(),
                       capture_choices: Mapping[str, str] | None = None) -> tuple[MoraleLedger, Any]:
    """Control (:func:`tracker.rules.epic.control`) then every Morale effect, for one
    Rally phase: (new ledger, the control result with its rulings)."""
    from .epic import control, escorts_by_side

    ctl = control(state, config, removed=tuple(ledger.removed), battle_round=battle_round)
    new = ledger.rally_phase(battle_round, config, ctl.control, escorts_by_side(rescues), dice, capture_choices)
    return new, ctl
