"""Controlling objectives (warcry-objectives-and-treasure.txt, "Controlling Objectives")."""

from __future__ import annotations

import json

import pytest

from tracker.rules.warcry import objective_control, gainer
from tracker.world import Base

from test_rules_helpers import B1, fighter, objective, state

# A 1" base (radius 0.5) at distance d + 0.5 from the token centre is exactly d away.


def test_more_friendly_than_enemy_gains_control():
    s = state([fighter("a", 0, 0, 2), fighter("b", 0, 0, -2), fighter("c", 1, 2, 0)], [objective()])
    r = objective_control(s)
    assert r.control == {"obj": 0}
    assert r.rulings[0].verdict == "yes"
    assert r.rulings[0].details["counts"] == {"0": 2, "1": 1}
    assert r.rulings[0].rule.id == "control"


def test_exactly_three_inches_is_within():
    s = state([fighter("a", 0, 3.5, 0)], [objective()])   # closest point exactly 3.0"
    r = objective_control(s)
    assert r.rulings[0].measurements[0].measured == pytest.approx(3.0, abs=1e-12)
    assert r.control == {"obj": 0}


def test_just_beyond_three_inches_is_not_within():
    s = state([fighter("a", 0, 3.5001, 0)], [objective()])
    assert objective_control(s).control == {"obj": None}


def test_tie_changes_nothing_uncontrolled():
    s = state([fighter("a", 0, 1, 0), fighter("b", 1, -1, 0)], [objective()])
    r = objective_control(s)
    assert r.control == {"obj": None}
    assert r.rulings[0].verdict == "no"


def test_tie_keeps_previous_controller():
    s = state([fighter("a", 0, 1, 0), fighter("b", 1, -1, 0)], [objective()])
    assert objective_control(s, previous={"obj": 1}).control == {"obj": 1}
    assert objective_control(s, previous={"obj": 0}).control == {"obj": 0}


def test_control_kept_across_rounds_until_another_side_gains():
    s1 = state([fighter("a", 0, 1, 0)], [objective()])
    r1 = objective_control(s1, battle_round=1)
    assert r1.control == {"obj": 0}
    s2 = state([], [objective()])                                 # everyone left
    r2 = objective_control(s2, previous=r1.control, battle_round=2)
    assert r2.control == {"obj": 0}
    assert "keeps it" in r2.rulings[0].outcome
    s3 = state([fighter("b", 1, 1, 0), fighter("c", 1, 0, 1), fighter("a", 0, 0, -1)], [objective()])
    r3 = objective_control(s3, previous=r2.control, battle_round=3)
    assert r3.control == {"obj": 1}
    assert r3.rulings[0].details["previous"] == 0 and r3.rulings[0].details["battle_round"] == 3


def test_previous_is_not_mutated_and_no_hidden_state():
    prev = {"obj": 1}
    s = state([fighter("a", 0, 1, 0)], [objective()])
    assert objective_control(s, previous=prev).control == {"obj": 0}
    assert prev == {"obj": 1}
    # same call again, same answer: nothing remembered between calls
    assert objective_control(state([], [objective()])).control == {"obj": None}


def test_unknown_objective_in_previous_is_carried():
    s = state([fighter("a", 0, 1, 0)], [objective("o1")])
    assert objective_control(s, previous={"o2": 1}).control == {"o1": 0, "o2": 1}


def test_fighter_on_platform_above_token_measured_through_the_air():
    # base bottom 3.2" above the token: out of range however close horizontally
    s = state([fighter("a", 0, 0, 0, z=3.2)], [objective()])
    r = objective_control(s)
    assert r.rulings[0].measurements[0].measured == pytest.approx(3.2)
    assert r.control == {"obj": None}
    # 2.5" up, base edge 1.5" across: sqrt(1.5^2 + 2.5^2) = 2.915 -> within
    s = state([fighter("a", 0, 2.0, 0, z=2.5)], [objective()])
    assert objective_control(s).rulings[0].measurements[0].measured == pytest.approx((1.5**2 + 2.5**2) ** 0.5)
    assert objective_control(s).control == {"obj": 0}
    # 2.5" up, 2" across: 3.20 -> not within, though horizontally within 3"
    s = state([fighter("a", 0, 2.5, 0, z=2.5)], [objective()])
    assert objective_control(s).control == {"obj": None}


def test_token_on_platform_fighter_below():
    # token on a 2" platform, fighter on the floor: base top is 4mm up
    s = state([fighter("a", 0, 2.5, 0, z=0.0)], [objective(z=2.0)])
    m = objective_control(s).rulings[0].measurements[0].measured
    assert m == pytest.approx((2.0**2 + (2.0 - B1.thickness_in) ** 2) ** 0.5)


def test_oval_base_measured_from_closest_point():
    oval = Base("oval", 3.0, 1.0, angle_deg=0.0)  # long axis along x
    s = state([fighter("a", 0, 4.5, 0, base=oval)], [objective()])
    assert objective_control(s).rulings[0].measurements[0].measured == pytest.approx(3.0)
    turned = Base("oval", 3.0, 1.0, angle_deg=90.0)
    s = state([fighter("a", 0, 4.5, 0, base=turned)], [objective()])
    assert objective_control(s).rulings[0].measurements[0].measured == pytest.approx(4.0)


def test_too_close_to_call_when_it_could_change_the_outcome():
    s = state([fighter("a", 0, 3.55, 0, sigma_in=0.05), fighter("b", 1, -1, 0)], [objective()])
    r = objective_control(s).rulings[0]
    assert r.verdict == "too close to call"
    assert r.too_close_to_call
    assert r.details["pivotal_fighters"] == ["a"]
    assert r.measured == pytest.approx(3.05) and r.margin == pytest.approx(0.05)
    assert objective_control(s).control == {"obj": 1}  # control follows the measurement


def test_uncertain_fighter_that_cannot_change_outcome_is_not_too_close():
    s = state([fighter("a", 0, 3.55, 0, sigma_in=0.05), fighter("b", 1, -1, 0),
               fighter("c", 1, 1, 0), fighter("d", 1, 0, 1)], [objective()])
    r = objective_control(s).rulings[0]
    assert r.verdict == "yes"
    assert r.details["uncertain_fighters"] == ["a"]
    assert r.measurements[0].verdict == "too close to call"


def test_sigma_combines_token_and_fighter():
    s = state([fighter("a", 0, 3.5, 0, sigma_in=0.03)], [objective(sigma_in=0.04)])
    r = objective_control(s).rulings[0]
    assert r.margin == pytest.approx(0.05)


def test_outside_two_sigma_is_a_plain_call():
    s = state([fighter("a", 0, 3.72, 0, sigma_in=0.1)], [objective()])  # 3.22 = 2.2 sigma out
    r = objective_control(s).rulings[0]
    assert r.verdict == "no" and r.measurements[0].verdict == "no"


def test_occluded_fighter_counts_and_ruling_says_so():
    s = state([fighter("a", 0, 1, 0, occluded=True)], [objective()])
    r = objective_control(s)
    assert r.control == {"obj": 0}
    assert any("occluded" in n and "a" in n for n in r.rulings[0].notes)
    assert r.rulings[0].measurements[0].note.startswith("occluded")


def test_one_ruling_per_objective_and_treasure_ignored():
    from test_rules_helpers import treasure
    s = state([fighter("a", 0, 0, 0)], [objective("o1", 1, 0), objective("o2", 20, 0), treasure("t", 1, 1)])
    r = objective_control(s)
    assert [x.subject for x in r.rulings] == ["o1", "o2"]
    assert r.control == {"o1": 0, "o2": None}


def test_multiplayer_enemy_is_every_other_side():
    assert gainer({0: 2, 1: 1, 2: 1}) is None
    assert gainer({0: 3, 1: 1, 2: 1}) == 0


def test_ruling_is_json_able():
    s = state([fighter("a", 0, 1, 0, sigma_in=0.02)], [objective()])
    d = objective_control(s).to_dict()
    text = json.dumps(d)
    back = json.loads(text)
    assert back["control"] == {"obj": 0}
    ru = back["rulings"][0]
    assert ru["verdict"] == "yes" and ru["threshold"] == 3.0
    assert "more friendly fighters within 3\"" in ru["rule"]["quote"]
    assert ru["details"]["lines"]["a"]["to"] == [0.0, 0.0, 0.0]


# -- places the camera could not name (world.Doubt) -------------------------------------
def test_a_place_that_may_hold_an_enemy_fighter_in_range_makes_the_call_too_close():
    """Side 0 has one fighter within 3", side 1 none: side 0 gains, unless the camera saw
    something of a base's size within reach that it could not name and that could be a
    side 1 fighter: then the call says so instead of guessing."""
    from dataclasses import replace

    from tracker.world import Doubt

    s = state([fighter("a", 0, 2, 0)], [objective()])
    assert objective_control(s).rulings[0].verdict == "yes"
    near = replace(s, doubts=(Doubt(0.0, 3.0, 0.0, 0.63, (1,)),))  # its edge 2.37" from the token
    r = objective_control(near).rulings[0]
    assert r.verdict == "too close to call"
    assert objective_control(near).control == {"obj": 0}  # control still follows what was measured
    assert any("could not name" in n and "side 1" in n for n in r.notes), r.notes
    assert r.details["doubts"] == [{"x": 0.0, "y": 3.0, "sides": [1], "distance": 2.37}]
    far = replace(s, doubts=(Doubt(0.0, 6.0, 0.0, 0.63, (1,)),))  # 5.37" away
    assert objective_control(far).rulings[0].verdict == "yes"
    friendly = replace(s, doubts=(Doubt(0.0, 3.0, 0.0, 0.63, (0,)),))  # only side 0's: no change
    assert objective_control(friendly).rulings[0].verdict == "yes"


def test_doubts_round_trip_and_are_checked():
    from tracker.rules.schema import StateError, parse_world_state
    from tracker.world import Doubt, WorldState

    s = WorldState(doubts=(Doubt(1.0, 2.0, 0.0, 0.63, (0, 1)),))
    d = json.loads(json.dumps(s.to_dict()))
    assert WorldState.from_dict(d) == s and parse_world_state(d) == s
    d["doubts"][0]["sides"] = [-1]
    with pytest.raises(StateError, match=r"doubts\[0\]\.sides\[0\]"):
        parse_world_state(d)


# -- fighters whose side the camera is not sure of (Fighter.rival_sides) ----------------
def test_a_fighter_whose_side_is_unsure_makes_the_call_too_close_only_where_it_matters():
    """Side 0 and side 1 have a fighter each within 3" (a tie: nobody gains). If side 1's
    rim was seen too little to be sure of its side and it could be side 0's, side 0 might
    have two: too close to call, and the ruling names the fighter. Where its side cannot
    change the call (a side 0 fighter that could be side 1's, with side 0 two up), the
    verdict stands."""
    from dataclasses import replace

    s = state([fighter("a", 0, 2, 0), fighter("b", 1, -2, 0)], [objective()])
    assert objective_control(s).rulings[0].verdict == "no"
    b_unsure = replace(s.fighters[1], rival_sides=(0,))
    r = objective_control(replace(s, fighters=(s.fighters[0], b_unsure))).rulings[0]
    assert r.verdict == "too close to call"
    assert r.details["unsure_sides"] == [{"fighter": "b", "side": 1, "could_be": [0]}]
    assert any("to be sure of its side" in n and "b" in n for n in r.notes), r.notes
    assert objective_control(replace(s, fighters=(s.fighters[0], b_unsure))).control == {"obj": None}
    two_up = state([fighter("a", 0, 2, 0), fighter("c", 0, 0, 2), fighter("d", 0, 0, -2)], [objective()])
    d_unsure = replace(two_up, fighters=two_up.fighters[:2] + (replace(two_up.fighters[2], rival_sides=(1,)),))
    assert objective_control(d_unsure).rulings[0].verdict == "yes"  # 2 sure of side 0 against at most 1
    far = replace(s, fighters=(s.fighters[0], replace(b_unsure, x=-6.0)))  # out of reach: no matter
    assert objective_control(far).rulings[0].verdict == "yes"


def test_rival_sides_round_trip_and_are_checked():
    from tracker.rules.schema import StateError, parse_world_state
    from tracker.world import WorldState

    s = WorldState(fighters=(fighter("a", 0, 2, 0, rival_sides=(1, 2)),))
    d = json.loads(json.dumps(s.to_dict()))
    assert WorldState.from_dict(d) == s and parse_world_state(d) == s
    d["fighters"][0]["rival_sides"] = ["one"]
    with pytest.raises(StateError, match=r"fighters\[0\]\.rival_sides\[0\]"):
        parse_world_state(d)


# -- objectives the set-up lists and the camera does not see ----------------------------
def test_an_unseen_objective_is_ruled_too_close_to_call_and_keeps_its_control():
    """A judge's photo in which one of the set-up's objectives is hidden: the call for it
    says it cannot be measured and to look at the table, instead of being left out."""
    from dataclasses import replace

    s = replace(state([fighter("a", 0, 2, 0)], [objective("objective-41")]), unseen_objectives=("objective-42",))
    r = objective_control(s, previous={"objective-42": 1})
    assert [x.subject for x in r.rulings] == ["objective-41", "objective-42"]
    seen, unseen = r.rulings
    assert seen.verdict == "yes" and unseen.verdict == "too close to call"
    assert unseen.measured is None and unseen.details["unseen"] and unseen.details["token"] is None
    assert any("look at the table" in n for n in unseen.notes)
    assert "side 1 keeps it" in unseen.outcome
    assert r.control == {"objective-41": 0, "objective-42": 1}  # carried over, as for any objective out of the state
    assert objective_control(s).control == {"objective-41": 0}  # nothing invented for one never controlled
    json.dumps(r.to_dict())


def test_unseen_objectives_round_trip_and_are_checked():
    from tracker.rules.schema import StateError, parse_world_state
    from tracker.world import WorldState

    s = WorldState(unseen_objectives=("objective-42", "objective-untagged-1"))
    d = json.loads(json.dumps(s.to_dict()))
    assert WorldState.from_dict(d) == s and parse_world_state(d) == s
    d["unseen_objectives"] = ["objective-42", 7]
    with pytest.raises(StateError, match=r"unseen_objectives\[1\]"):
        parse_world_state(d)


def test_a_still_lists_the_objectives_of_the_set_up_it_did_not_find():
    from tracker.config import GameConfig
    from tracker.detection import KIND_BASE, KIND_OBJECTIVE, Detections
    from tracker.tracking import still_state

    cfg = GameConfig.from_dict({"sides": [{"colour": "red", "rim_bgr": [0, 0, 200]}, {"colour": "blue", "rim_bgr": [200, 0, 0]}],
                                "tokens": {"objective": {"tag_ids": [41, 42], "untagged": 1}}})
    d = Detections.from_rows([{"xyz": (5.0, 2.0, 0.0), "kind": KIND_BASE, "side": 1, "base_mm": 32.0},
                              {"xyz": (9.0, 4.0, 0.0), "kind": KIND_OBJECTIVE, "tag_id": 42}])
    st = still_state(d, cfg)
    assert st.unseen_objectives == ("objective-41", "objective-untagged-1")
    r = objective_control(st)
    assert [x.verdict for x in r.rulings if x.details.get("unseen")] == ["too close to call"] * 2


def test_an_epic_marker_the_game_lists_and_the_state_lacks_is_ruled_unseen():
    from tracker.epic import EpicConfig, ObjectiveSpec
    from tracker.rules.epic import control

    cfg = EpicConfig(objectives=(ObjectiveSpec("obj50", 0, "take-and-hold", 50),
                                 ObjectiveSpec("obj51", 1, "cleanse", 51)))
    s = state([], [objective("objective-50", 10.0, 10.0, tag_id=50)])
    res = control(s, cfg)
    by = {r.subject: r for r in res.rulings}
    assert by["obj51"].verdict == "too close to call" and by["obj51"].details["unseen"]
    assert "obj51" not in res.control and "obj50" in res.control
    assert control(s, cfg, removed=("obj51",)).rulings[-1].subject == "obj50"  # a removed marker is not missed


# -- parts of the table the camera cannot see (world.HiddenArea) ------------------------
def test_a_hand_near_the_objective_makes_the_call_too_close_only_where_it_could_matter():
    """Side 0 has one fighter within 3", side 1 one 6" off: side 0 gains. A hand over the
    table within reach of the objective may hide a fighter of either side there: the call
    says so instead of guessing; a hand far off, or one that could not change it (side 0
    two up), leaves the verdict as measured."""
    from dataclasses import replace

    from tracker.world import HiddenArea

    def hand(x0: float, y0: float) -> HiddenArea:  # a 3 x 2 in patch, its near edge at x0
        return HiddenArea(((x0, y0), (x0 + 3.0, y0), (x0 + 3.0, y0 + 2.0), (x0, y0 + 2.0)))

    s = state([fighter("a", 0, 2, 0), fighter("b", 1, -6.5, 0)], [objective()])
    assert objective_control(s).rulings[0].verdict == "yes"
    near = replace(s, hidden=(hand(3.5, -1.0),))  # 3.5" from the token: a fighter under it may reach
    r = objective_control(near).rulings[0]
    assert r.verdict == "too close to call"
    assert objective_control(near).control == {"obj": 0}  # control still follows what was measured
    assert any("hand hides part of the table" in n and "look at the table" in n for n in r.notes), r.notes
    assert r.details["hidden"] == [{"why": "hand", "distance": 3.5}]
    assert objective_control(replace(s, hidden=(hand(4.5, -1.0),))).rulings[0].verdict == "yes"  # 4.5" off
    two_up = replace(near, fighters=near.fighters + (fighter("c", 0, -2, 0),))
    assert objective_control(two_up).rulings[0].verdict == "yes"


def test_hidden_areas_round_trip_and_are_checked():
    from tracker.rules.schema import StateError, parse_world_state
    from tracker.world import HiddenArea, WorldState

    s = WorldState(hidden=(HiddenArea(((0.0, 0.0), (2.0, 0.0), (2.0, 1.5))),))
    d = json.loads(json.dumps(s.to_dict()))
    assert WorldState.from_dict(d) == s and parse_world_state(d) == s
    d["hidden"][0]["outline"][1] = [2.0, "x"]
    with pytest.raises(StateError, match=r"hidden\[0\]\.outline\[1\]"):
        parse_world_state(d)
