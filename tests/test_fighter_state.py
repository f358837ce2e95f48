"""The pure fighter-state model (tracker.fighter_state): a scripted game of activations,
half-activations and damage, a carrier taken down (its treasure dropped at points the
rules core says are legal), the battle-round reset; properties with hypothesis."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracker.errors import UserError
from tracker.fighter_state import (ACTIVATED, ACTIVATION_ORDER, HALF_ACTIVATED, READY, ActivationError, DamageError,
                                   FighterStateError, FighterStates, UnknownFighter, drop_offer, end_of_round_check,
                                   in_play)
from tracker.rules.ruling import YES
from tracker.rules.treasure import apply_drop, drop_point
from tracker.rules.warcry import objective_control
from tracker.world import Base, Fighter, TerrainPiece, Token, WorldState

B = Base.round_mm(32)


def table() -> WorldState:
    """Two sides around an objective; f1 (side 0) stands on a 3" platform beside it."""
    platform = TerrainPiece("p1", "platform", ((4.0, 4.0), (8.0, 4.0), (8.0, 8.0), (4.0, 8.0)), 3.0)
    return WorldState(
        fighters=(Fighter("f1", 0, 7.0, 6.0, 3.0, B), Fighter("f2", 0, 12.0, 9.0, 0.0, B),
                  Fighter("f3", 1, 11.0, 4.0, 0.0, B)),
        tokens=(Token("obj1", "objective", 10.0, 6.0),),
        terrain=(platform,))


def test_scripted_game():
    world = table()
    s = FighterStates.of([f.id for f in world.fighters], wounds={"f1": 3, "f2": 8, "f3": 10},
                         sides={f.id: f.side for f in world.fighters})
    assert s.battle_round == 1 and s.still_ready() == ("f1", "f2", "f3")

    # battle round 1: f3 activates, f2 uses one action (half-activated) then finishes
    s, ev = s.activate("f3")
    assert s["f3"].activation == ACTIVATED and [e.kind for e in ev] == ["activated"]
    s, ev = s.half_activate("f2")
    assert s["f2"].activation == HALF_ACTIVATED and ev[0].text == "f2 is half-activated"
    with pytest.raises(ActivationError, match="already half-activated"):
        s.half_activate("f2")
    s, ev = s.activate("f2")
    assert s["f2"].activation == ACTIVATED and ev[0].details["previous"] == HALF_ACTIVATED
    with pytest.raises(ActivationError, match="f2 has already activated in battle round 1"):
        s.activate("f2")

    # f1 picks up treasure and is hit twice; the end-of-round check reminds that f1 is still ready
    s, ev = s.pick_up("f1", "treasure-78")
    assert s["f1"].carrying == "treasure-78"
    s, ev = s.add_damage("f1", 2)
    assert (s["f1"].damage, s["f1"].wounds_left, s["f1"].taken_down) == (2, 1, False)
    assert [e.kind for e in ev] == ["damaged"]
    assert end_of_round_check(s) == ("f1 has not activated in battle round 1",)

    # control before f1 is taken down: side 0 has f1 (on the platform edge) and f2 near obj1
    before = objective_control(in_play(world, s)).control["obj1"]

    s, ev = s.new_battle_round()
    assert s.battle_round == 2 and all(f.activation == READY for f in s.fighters)
    assert [e.kind for e in ev] == ["new-battle-round"]

    # battle round 2: f1 takes 5 more damage: taken down at 3 (damage stops at Wounds), drops treasure
    s, ev = s.add_damage("f1", 5)
    assert [e.kind for e in ev] == ["damaged", "taken-down", "treasure-dropped"]
    assert s["f1"].damage == 3 and s["f1"].taken_down and s["f1"].carrying is None
    assert ev[2].details["treasure"] == "treasure-78"
    assert s.taken_down() == ("f1",) and "f1" not in s.still_ready()

    offer = drop_offer(world, "f1", "treasure-78")
    assert offer.question == "drop" and offer.verdict == YES and offer.rule.id == "drop-taken-down"
    points = offer.details["points"]
    assert len(points) >= 4
    carrier = world.with_fighters(tuple(f if f.id != "f1" else Fighter("f1", 0, 7.0, 6.0, 3.0, B, carrying="treasure-78")
                                        for f in world.fighters))
    for p in points:  # every offered point passes the rules core's drop validator
        assert drop_point(carrier, "f1", p).verdict == YES
        assert p[2] <= 3.0 + 1e-9
    assert apply_drop(carrier, "f1", points[0]).treasure()[0].id == "treasure-78"

    # the taken-down fighter leaves control counts and cannot act
    w2 = in_play(world, s)
    assert [f.id for f in w2.fighters] == ["f2", "f3"]
    r = objective_control(w2).rulings[0]
    assert "f1 (side 0)" not in [m.subject for m in r.measurements]
    assert before in (0, None)
    with pytest.raises(ActivationError, match="taken down"):
        s.activate("f1")
    with pytest.raises(DamageError, match="already taken down"):
        s.add_damage("f1", 1)

    # the next round: f1 stays down, the others are ready again
    s, _ = s.activate("f2")
    s, _ = s.new_battle_round()
    assert s.battle_round == 3 and s.still_ready() == ("f2", "f3") and s["f1"].taken_down

    # a correction brings f1 back (damage removed), never below zero
    s, ev = s.remove_damage("f1", 1)
    assert [e.kind for e in ev] == ["damage-removed", "restored"] and s["f1"].in_play
    with pytest.raises(DamageError, match="below zero"):
        s.remove_damage("f1", 3)
    assert FighterStates.from_dict(s.to_dict()) == s


def test_errors_are_one_line_user_errors():
    s = FighterStates.of(["a"], wounds=4)
    cases = [(lambda: s.activate("zz"), UnknownFighter), (lambda: s.add_damage("a", -1), DamageError),
             (lambda: s.add_damage("a", 0), DamageError), (lambda: s.remove_damage("a", 1), DamageError),
             (lambda: s.add_damage("a", 1.5), DamageError), (lambda: s.set_wounds("a", 0), FighterStateError),
             (lambda: s.drop_treasure("a"), FighterStateError), (lambda: s.new_battle_round(1), FighterStateError)]
    for call, err in cases:
        with pytest.raises(err) as e:
            call()
        assert isinstance(e.value, UserError)
        assert str(e.value) and "\n" not in str(e.value)
    with pytest.raises(UnknownFighter) as e:
        s.half_activate("zz")
    assert str(e.value) == "no fighter 'zz' (known: a)"


def test_unknown_wounds_and_set_later():
    s = FighterStates.of(["a"])
    s, _ = s.add_damage("a", 5)
    assert s["a"].damage == 5 and not s["a"].taken_down and s["a"].wounds is None
    s, ev = s.set_wounds("a", 4)
    assert [e.kind for e in ev] == ["wounds-set", "taken-down"] and s["a"].damage == 4


def test_in_play_carries_treasure_from_states_and_offer_without_fighter():
    world = table()
    s, _ = FighterStates.of(["f1", "f2", "f3"]).pick_up("f2", "t9")
    assert in_play(world, s).fighter("f2").carrying == "t9"
    off = drop_offer(world.with_fighters(world.fighters[1:]), "f1", "t9")
    assert off.verdict == "no" and off.details["points"] == []
    # lifted off before the click: the treasure drops round where the fighter was last seen
    gone = world.fighter("f1")
    seen = drop_offer(world.with_fighters(world.fighters[1:]), "f1", "t9", last_seen=gone)
    assert seen.verdict == YES and seen.details["last_seen"] and "last seen" in seen.outcome
    assert seen.details["points"] and all(
        np.hypot(p[0] - gone.x, p[1] - gone.y) <= 1.0 + gone.base.radius_in + 1e-6 for p in seen.details["points"])
    # another fighter's last place is not this one's
    assert drop_offer(world.with_fighters(world.fighters[1:]), "f1", "t9",
                      last_seen=world.fighter("f2")).verdict == "no"


# -- properties ------------------------------------------------------------------------
IDS = ["a", "b", "c"]
ops = st.lists(st.tuples(st.sampled_from(["activate", "half", "damage", "undamage", "round", "wounds"]),
                         st.sampled_from(IDS + ["zz"]), st.integers(-3, 6)), max_size=40)


@settings(max_examples=150, deadline=None)
@given(ops, st.integers(1, 6))
def test_damage_never_negative_and_activation_order(script, wounds):
    s = FighterStates.of(IDS, wounds=wounds)
    for op, fid, n in script:
        before = s
        try:
            if op == "activate":
                s, ev = s.activate(fid)
            elif op == "half":
                s, ev = s.half_activate(fid)
            elif op == "damage":
                s, ev = s.add_damage(fid, n)
            elif op == "undamage":
                s, ev = s.remove_damage(fid, n)
            elif op == "wounds":
                s, ev = s.set_wounds(fid, n)
            else:
                s, ev = s.new_battle_round()
        except UserError:
            assert s == before  # a refused change changes nothing
            continue
        assert ev  # every change says what happened
        for f in s.fighters:
            assert f.damage >= 0
            assert f.wounds is None or f.damage <= f.wounds
            assert f.taken_down == (f.wounds is not None and f.damage >= f.wounds)
        if op == "round":
            assert s.battle_round == before.battle_round + 1
            assert all(f.activation == READY for f in s.fighters if f.in_play)
        else:
            assert s.battle_round == before.battle_round
            for f0, f1 in zip(before.fighters, s.fighters):  # activations never go back within a round
                assert ACTIVATION_ORDER[f1.activation] >= ACTIVATION_ORDER[f0.activation]
                if f1.id != fid:
                    assert f1 == f0  # only the named fighter changes
        assert set(s.still_ready()) == {f.id for f in s.fighters if f.in_play and f.activation == READY}
