"""Treasure (warcry-objectives-and-treasure.txt, "Carrying Treasure", "Dropping Treasure")."""

from __future__ import annotations

import pytest

from tracker.rules import treasure as TR
from tracker.world import TerrainPiece

from test_rules_helpers import B1, box, fighter, part, piece, state, treasure


def test_pick_up_within_one_inch():
    s = state([fighter("f", 0, 0, 0)], [treasure("t", 1.5, 0)])          # exactly 1.0"
    r = TR.pick_up(s, "f", "t")
    assert r.verdict == "yes" and r.measured == pytest.approx(1.0) and r.rule.id == "pick-up"
    s = state([fighter("f", 0, 0, 0)], [treasure("t", 1.51, 0)])
    assert TR.pick_up(s, "f", "t").verdict == "no"


def test_pick_up_at_any_point_during_the_move():
    s = state([fighter("f", 0, 0, 0)], [treasure("t", 3.0, 1.4)])
    path = [(0, 0), (6, 0)]                     # passes 1.4 - 0.5 = 0.9" from the token at x = 3
    r = TR.pick_up(s, "f", "t", path=path)
    assert r.verdict == "yes"
    assert r.measured == pytest.approx(0.9, abs=1e-3)
    moved = r.details["moved_before"]
    assert moved == pytest.approx(3.0 - (1.5**2 - 1.4**2) ** 0.5, abs=0.011)   # first came within 1"
    assert TR.pick_up(s, "f", "t", path=[(0, 0), (0, 6)]).verdict == "no"


def test_cannot_pick_up_when_already_carrying():
    s = state([fighter("f", 0, 0, 0, carrying="t0")], [treasure("t", 1, 0)])
    r = TR.pick_up(s, "f", "t")
    assert r.verdict == "no" and r.rule.id == "already-carrying"


@pytest.mark.parametrize("mark", ["Beast", "Monster", "beast"])
def test_beast_or_monster_cannot_pick_up(mark):
    s = state([fighter("f", 0, 0, 0, runemarks=frozenset({mark}))], [treasure("t", 1, 0)])
    r = TR.pick_up(s, "f", "t")
    assert r.verdict == "no" and r.rule.id == "monster-beast-no-treasure"
    assert not TR.can_carry(s.fighters[0])


def test_objectives_are_not_treasure():
    from test_rules_helpers import objective
    s = state([fighter("f", 0, 0, 0)], [objective("o", 1, 0)])
    assert TR.pick_up(s, "f", "o").verdict == "no"


def test_pick_up_from_a_platform_is_three_dimensional():
    s = state([fighter("f", 0, 0, 0, z=0.0)], [treasure("t", 1.0, 0, z=1.2)])   # token 1.2" up, 0.5" across
    r = TR.pick_up(s, "f", "t")
    assert r.measured == pytest.approx((0.5**2 + (1.2 - B1.thickness_in) ** 2) ** 0.5)
    assert r.verdict == "no"


@pytest.mark.parametrize("move,carrying", [(4, 3), (6, 4), (3, 3), (5, 3), (8, 6)])
def test_move_when_carrying_minus_two_minimum_three(move, carrying):
    assert TR.carrying_move(move) == carrying
    r = TR.move_when_carrying(move)
    assert r.details["modified_move"] == carrying and r.rule.id == "begin-move-carrying"


def test_move_4_pick_up_after_2_inches_leaves_1():
    r = TR.move_after_pick_up(4, 2.0)
    assert r.details == {"modified_move": 3, "remaining": 1.0, "can_fly": False, "move_ends": False}
    assert r.verdict == "no"


def test_move_4_pick_up_after_3_5_ends_the_move():
    r = TR.move_after_pick_up(4, 3.5)
    assert r.verdict == "yes" and r.details["move_ends"] and r.rule.id == "pick-up-move-ends"


def test_move_6_pick_up_after_exactly_4_does_not_end_by_the_rule():
    r = TR.move_after_pick_up(6, 4.0)          # not "further than" 4
    assert r.verdict == "no" and r.details["remaining"] == 0.0
    r = TR.move_after_pick_up(6, 4.01)
    assert r.verdict == "yes"


def test_no_flying_while_carrying_or_after_pick_up():
    flyer = fighter("f", 0, runemarks=frozenset({"Fly"}))
    assert TR.can_fly(flyer).verdict == "yes"
    assert TR.can_fly(flyer, picked_up_this_move=True).verdict == "no"
    carrying = fighter("f", 0, runemarks=frozenset({"Fly"}), carrying="t")
    r = TR.can_fly(carrying)
    assert r.verdict == "no" and r.rule.id == "no-fly-carrying"
    assert TR.can_fly(fighter("g")).verdict == "no"


def test_no_disengage_while_carrying():
    assert TR.can_disengage(fighter("f", carrying="t")).verdict == "no"
    assert TR.can_disengage(fighter("f")).verdict == "yes"


def test_move_may_not_end_touching_treasure():
    # 1" token (radius 0.5): touching when the base is within 0.5" of the token centre
    s = state([fighter("f", 0, 0, 0)], [treasure("t", 1.0, 0)])
    r = TR.touching_treasure(s, "f")
    assert r.verdict == "yes" and r.rule.id == "treasure-not-touching"
    s = state([fighter("f", 0, 0, 0)], [treasure("t", 1.01, 0)])
    assert TR.touching_treasure(s, "f").verdict == "no"
    s = state([fighter("f", 0, 0, 0, z=3.0)], [treasure("t", 0.5, 0)])          # token below, on the floor
    assert TR.touching_treasure(s, "f").verdict == "no"


def _platform_state(fz=3.0, fx=1.0):
    floor = part("floor", "platform", box(0, -2, 4, 2), 3.0)
    return state([fighter("f", 0, fx, 0, z=fz, carrying="t")], terrain=[piece("tower", floor, ptype="platform")])


def test_drop_within_one_inch_horizontally_level_or_lower():
    s = _platform_state()
    assert TR.drop_point(s, "f", (2.4, 0, 3.0)).verdict == "yes"          # 0.9" away, same level
    assert TR.drop_point(s, "f", (2.5, 0, 3.0)).verdict == "yes"          # exactly 1.0"
    r = TR.drop_point(s, "f", (2.6, 0, 3.0))
    assert r.verdict == "no" and "horizontally" in r.outcome


def test_drop_lower_on_the_floor_is_fine_if_visible():
    s = _platform_state(fx=3.5)                                             # base edge at the platform edge
    r = TR.drop_point(s, "f", (4.5, 0, 0.0))                                # floor, below and 0.5" out
    assert r.verdict == "yes", r.outcome
    assert r.details["surface"] == "floor"


def test_drop_not_in_the_air_and_not_higher():
    s = _platform_state(fx=3.5)
    assert TR.drop_point(s, "f", (4.5, 0, 3.0)).verdict == "no"            # mid-air beside the platform
    s = _platform_state(fz=0.0, fx=-1.0)                                    # on the floor beside the tower
    r = TR.drop_point(s, "f", (0.2, 0, 3.0))
    assert r.verdict == "no" and "higher" in r.outcome
    assert TR.drop_point(s, "f", (0.2, 0, 0.0)).verdict == "no"            # inside the tower's block


def test_drop_must_be_visible():
    wall = TerrainPiece("w", "obstacle", box(0.7, -3, 0.8, 3), 3.0)
    s = state([fighter("f", 0, 0, 0, carrying="t")], terrain=[wall])
    r = TR.drop_point(s, "f", (1.2, 0, 0))
    assert r.verdict == "no" and r.details["blocked_by"] == ["w"]


def test_suggested_drop_points_are_all_legal():
    s = _platform_state(fx=3.5)
    pts = TR.drop_points(s, "f")
    assert pts
    assert all(TR.drop_point(s, "f", p).verdict == "yes" for p in pts)
    assert any(p[2] == 0.0 for p in pts) and any(p[2] == 3.0 for p in pts)


def test_apply_pick_up_and_drop_round_trip():
    s = state([fighter("f", 0, 0, 0)], [treasure("t", 1.2, 0)])
    s2 = TR.apply_pick_up(s, "f", "t")
    assert s2.fighter("f").carrying == "t" and s2.treasure() == ()
    with pytest.raises(KeyError):            # the token is off the battlefield
        TR.pick_up(s2, "f", "t")
    with pytest.raises(ValueError):
        TR.apply_pick_up(state([fighter("f", 0, runemarks=frozenset({"Beast"}))], [treasure("t", 1, 0)]), "f", "t")
    s3 = TR.apply_drop(s2, "f", (0, 1.2, 0))
    assert s3.fighter("f").carrying is None and s3.treasure()[0].y == 1.2
