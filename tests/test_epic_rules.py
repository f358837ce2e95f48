"""Epic objectives (epic-objectives.txt): one test or more per rule sentence.

Geometry: a 40 x 20 mm stand at angle 0 reaches 1 cm above and below its centre, so a
stand centred 16 cm below a marker is exactly 15 cm from the marker's centre.
"""

from __future__ import annotations

import doctest
import json
import pathlib

import pytest

import tracker.rules.epic
import tracker.rules.epic_morale
import tracker.rules.epic_quotes
from tracker.rules import epic_quotes as q
from tracker.rules import quotes as warcry_quotes
from tracker.rules.epic import (
    BUNKER_DATA_SHEET, Bunker, Rescue, bunker_support, control, damage_bunker, escort_destroyed, escorts_by_side,
    follow_escort, pick_up_rescue, placement, placements,
)

from test_epic_helpers import config, marker, stand, wood, world

RULES_DIR = pathlib.Path(__file__).resolve().parents[2] / "shared" / "rules"


# --- quotes and doctests -----------------------------------------------------------------
@pytest.mark.parametrize("rule", q.EPIC_RULES, ids=lambda r: r.id)
def test_quote_is_verbatim(rule):
    assert rule.quote in (RULES_DIR / rule.source).read_text(encoding="utf-8")


def test_rule_ids_unique_across_games():
    ids = [r.id for r in q.EPIC_RULES] + [r.id for r in warcry_quotes.ALL_RULES]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("mod", [tracker.rules.epic, tracker.rules.epic_morale, tracker.rules.epic_quotes])
def test_doctests(mod):
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert res.attempted > 0 and res.failed == 0


# --- general placement: 15 cm from own markers --------------------------------------------
def _ruling(check, question):
    return next(r for r in check.rulings if r.question == question)


def test_own_marker_exactly_15_cm_is_within_and_refused():
    a, b = marker("th", 0, "take-and-hold", 90, 100), marker("th2", 0, "take-and-hold", 105, 100)
    r = _ruling(placement(a, config(), [a, b]), "placement: own markers")
    assert r.verdict == "no" and r.measured == pytest.approx(15.0)
    assert r.rule is q.PLACEMENT_OWN_MARKERS and "0.00 cm too close" in r.outcome
    assert placement(a, config(), [a, b]).failures[0].rule.id == "epic-placement-own-markers"


def test_own_marker_just_over_15_cm_is_allowed_and_says_by_how_much_when_not():
    a = marker("th", 0, "take-and-hold", 90, 100)
    assert _ruling(placement(a, config(), [a, marker("x", 0, "cleanse", 105.01, 100)]), "placement: own markers").verdict == "yes"
    r = _ruling(placement(a, config(), [a, marker("x", 0, "cleanse", 100, 100)]), "placement: own markers")
    assert r.verdict == "no" and "5.00 cm too close" in r.outcome


def test_opponents_markers_do_not_restrict():
    a = marker("th", 0, "take-and-hold", 90, 100)
    assert _ruling(placement(a, config(), [a, marker("x", 1, "cleanse", 91, 100)]), "placement: own markers").verdict == "yes"


def test_own_marker_spacing_too_close_to_call_with_sigma():
    a = marker("th", 0, "take-and-hold", 90, 100, sigma_cm=0.1)
    r = _ruling(placement(a, config(), [a, marker("x", 0, "cleanse", 105.1, 100, sigma_cm=0.1)]), "placement: own markers")
    assert r.verdict == "too close to call" and r.margin == pytest.approx(0.1414, abs=1e-3)


# --- general placement: table edge, entry edge ---------------------------------------------
def test_exactly_15_cm_from_an_edge_is_refused():
    r = _ruling(placement(marker("th", 0, "take-and-hold", 15, 100), config()), "placement: table edge")
    assert r.verdict == "no" and r.measured == pytest.approx(15.0) and r.details["nearest_edge"] == "west"
    assert r.rule is q.PLACEMENT_EDGE


def test_near_own_entry_edge_is_allowed():
    m = marker("cl", 0, "cleanse", 90, 5)              # 5 cm from the south edge: side 0 enters from it
    check = placement(m, config())
    assert _ruling(check, "placement: table edge").verdict == "yes"
    assert check.verdict == "yes"


def test_near_the_opponents_entry_edge_is_refused():
    m = marker("bk", 0, "bunker", 90, 115)             # 5 cm from the north edge: side 1's entry edge
    check = placement(m, config())
    r = _ruling(check, "placement: table edge")
    assert r.verdict == "no" and "10.00 cm too close" in r.outcome
    assert check.verdict == "no" and [f.rule.id for f in check.failures] == ["epic-placement-edge"]


def test_entry_edge_exempts_only_that_edge_in_a_corner():
    r = _ruling(placement(marker("cl", 0, "cleanse", 10, 5), config()), "placement: table edge")
    assert r.verdict == "no" and r.details["nearest_edge"] == "west"


def test_measured_to_marker_centres_whatever_the_marker_size():
    small = placement(marker("th", 0, "take-and-hold", 15.5, 100, diameter_cm=1), config())
    large = placement(marker("th", 0, "take-and-hold", 15.5, 100, diameter_cm=8), config())
    assert _ruling(small, "placement: table edge").verdict == _ruling(large, "placement: table edge").verdict == "yes"


# --- Take & Hold placement -----------------------------------------------------------------
def test_take_and_hold_in_opponents_zone():
    r = _ruling(placement(marker("th", 0, "take-and-hold", 90, 95), config()), "placement: take & hold")
    assert r.verdict == "yes" and r.rule is q.TAKE_AND_HOLD_PLACEMENT


def test_take_and_hold_neither_in_opponents_zone_nor_far_enough_says_by_how_much():
    cfg = config()
    r = _ruling(placement(marker("th", 0, "take-and-hold", 90, 89.0), cfg), "placement: take & hold")
    assert r.verdict == "no"   # 59 cm from own zone, outside the opponent's (y >= 90)
    assert "31.00 cm short" in r.outcome and "outside side 1's deployment zone by 1.00 cm" in r.outcome


def test_take_and_hold_more_than_90_cm_from_own_zone():
    from tracker.epic import parse_epic_section
    cfg = parse_epic_section({"sides": [
        {"index": 0, "deployment_zone": {"rect_cm": [0, 0, 20, 120]}},
        {"index": 1, "deployment_zone": {"rect_cm": [160, 0, 180, 120]}}]})
    at = lambda x: _ruling(placement(marker("th", 0, "take-and-hold", x, 60), cfg), "placement: take & hold")
    assert at(110.0).verdict == "no" and at(110.0).measured == pytest.approx(90.0)   # exactly 90: not more than
    assert at(110.5).verdict == "yes"


# --- Rescue placement ------------------------------------------------------------------------
def test_rescue_not_more_than_90_cm_from_own_zone_is_refused():
    m = marker("res", 0, "rescue", 90, 104)             # 74 cm from the zone
    check = placement(m, config(), terrain=[wood("w", 80, 95, 100, 110)])
    r = _ruling(check, "placement: rescue range")
    assert r.verdict == "no" and "16.00 cm short" in r.outcome and r.rule is q.RESCUE_PLACEMENT


def test_rescue_placement_cover_terrain_named_option():
    from tracker.epic import parse_epic_section
    sec = {"sides": [{"index": 0, "deployment_zone": {"rect_cm": [0, 0, 20, 120]}},
                     {"index": 1, "deployment_zone": {"rect_cm": [160, 0, 180, 120]}}]}
    cfg = parse_epic_section(sec)
    m = marker("res", 0, "rescue", 120, 60)             # 100 cm from own zone
    inside = placement(m, cfg, terrain=[wood("w", 110, 50, 130, 70)])
    assert inside.verdict == "yes" and _ruling(inside, "placement: rescue terrain").details["terrain"] == "w"
    outside = placement(m, cfg, terrain=[wood("w", 125, 50, 130, 70)])
    r = _ruling(outside, "placement: rescue terrain")
    assert r.verdict == "no" and "by 5.00 cm" in r.outcome
    # only pieces named in options.infantry_cover give the bonus
    cfg2 = parse_epic_section({**sec, "options": {"infantry_cover": ["ruins"]}})
    assert placement(m, cfg2, terrain=[wood("w", 110, 50, 130, 70)]).verdict == "no"
    assert placement(m, cfg2, terrain=[wood("r", 110, 50, 130, 70, ptype="ruins")]).verdict == "yes"
    assert _ruling(placement(m, cfg), "placement: rescue terrain").verdict == "no"   # no terrain at all
    # terrain found without a tag gives no cover until a judge types it
    assert placement(m, cfg, terrain=[wood("untagged-1", 110, 50, 130, 70, ptype="unknown")]).verdict == "no"


# --- Cleanse, Bunker, Capture placement ------------------------------------------------------
def test_cleanse_inside_own_zone_boundary_counts():
    assert _ruling(placement(marker("cl", 0, "cleanse", 90, 30), config()), "placement: cleanse").verdict == "yes"
    r = _ruling(placement(marker("cl", 0, "cleanse", 90, 32.5), config()), "placement: cleanse")
    assert r.verdict == "no" and "by 2.50 cm" in r.outcome and r.rule is q.CLEANSE_PLACEMENT


@pytest.mark.parametrize("mtype, rule", [("bunker", q.BUNKER_PLACEMENT), ("capture", q.CAPTURE_PLACEMENT)])
def test_bunker_and_capture_in_opponents_zone(mtype, rule):
    ok = placement(marker("m", 0, mtype, 90, 100), config())
    assert ok.verdict == "yes"
    bad = placement(marker("m", 0, mtype, 90, 80), config())
    assert bad.verdict == "no" and bad.failures[0].rule is rule and "by 10.00 cm" in bad.failures[0].outcome
    own_zone = placement(marker("m", 0, mtype, 90, 20), config())
    assert own_zone.verdict == "no"


def test_placements_checks_every_marker_against_the_others():
    ms = [marker("a", 0, "bunker", 90, 100), marker("b", 0, "capture", 100, 100)]
    assert [c.verdict for c in placements(ms, config())] == ["no", "no"]
    assert json.loads(json.dumps(placements(ms, config())[0].to_dict()))["rulings"][0]["details"]["units"] == "cm"


# --- control: Take & Hold and Cleanse ------------------------------------------------------
TH = ("th", 0, "take-and-hold", 90, 100)


@pytest.mark.parametrize("mtype, rule", [("take-and-hold", q.TAKE_AND_HOLD_CONTROL), ("cleanse", q.CLEANSE_CONTROL)])
def test_unit_within_15_cm_and_closer_controls(mtype, rule):
    m = marker("th", 0, mtype, 90, 100)
    s = world([stand("a", 0, 90, 90, "a1"), stand("b", 1, 90, 112, "b1")], [m])
    r = control(s, config(), markers=[m])
    assert r.control == {"th": 0} and r.rulings[0].verdict == "yes" and r.rulings[0].rule is rule


def test_exactly_15_cm_is_within():
    m = marker(*TH)
    r = control(world([stand("a", 0, 90, 84, "a1")], [m]), config(), markers=[m])
    assert r.rulings[0].measured == pytest.approx(15.0) and r.control == {"th": 0}
    r = control(world([stand("a", 0, 90, 83.99, "a1")], [m]), config(), markers=[m])
    assert r.control == {"th": None} and "beyond 15 cm" in r.rulings[0].outcome


def test_equal_distance_to_a_friendly_and_an_enemy_unit_is_not_closer():
    m = marker(*TH)
    s = world([stand("a", 0, 90, 90, "a1"), stand("b", 1, 90, 110, "b1")], [m])   # both 9 cm
    r = control(s, config(), markers=[m])
    assert r.control == {"th": None} and r.rulings[0].verdict == "no"
    assert "equally far" in r.rulings[0].outcome


def test_equal_distance_two_friendly_units_still_controls():
    m = marker(*TH)
    s = world([stand("a", 0, 90, 90, "a1"), stand("c", 0, 90, 110, "a2")], [m])
    assert control(s, config(), markers=[m]).control == {"th": 0}


def test_enemy_closer_denies_control():
    m = marker(*TH)
    s = world([stand("a", 0, 90, 90, "a1"), stand("b", 1, 90, 105, "b1")], [m])
    r = control(s, config(), markers=[m])
    assert r.control == {"th": None} and r.rulings[0].details["nearest_enemy"] == "b1"


def test_unit_distance_is_closest_stand():
    m = marker(*TH)
    # unit a1's far stand is 40 cm off; its near stand 5 cm: the unit is 5 cm away
    s = world([stand("a", 0, 90, 60, "a1"), stand("a'", 0, 90, 94, "a1"), stand("b", 1, 90, 108, "b1")], [m])
    r = control(s, config(), markers=[m])
    assert r.control == {"th": 0} and r.rulings[0].measured == pytest.approx(5.0)


def test_close_call_between_friend_and_enemy():
    m = marker(*TH)
    s = world([stand("a", 0, 90, 90, "a1", sigma_cm=0.2), stand("b", 1, 90, 110.1, "b1", sigma_cm=0.2)], [m])
    r = control(s, config(), markers=[m])
    assert r.rulings[0].verdict == "too close to call" and r.control == {"th": 0}


def test_only_the_owner_benefits():
    m = marker(*TH)
    s = world([stand("b", 1, 90, 95, "b1")], [m])       # only an enemy unit near side 0's marker
    r = control(s, config(), markers=[m])
    assert r.control == {"th": None} and "side 0 has no unit" in r.rulings[0].outcome
    assert q.OWN_OBJECTIVES in r.rulings[0].also


def test_markers_from_the_state_and_removed_markers():
    m = marker(*TH)
    s = world([stand("a", 0, 90, 95, "a1")], [m, marker("cap", 0, "capture", 10, 10)])
    assert control(s, config()).control == {"th": 0, "cap": None}
    assert control(s, config(), removed=["cap"]).control == {"th": 0}


def test_bunker_counts_as_enemy_unit_option():
    m = marker(*TH)
    bk = marker("bk", 0, "bunker", 95, 100)              # 5 cm from th; side 0's unit 9 cm away
    s = world([stand("a", 0, 90, 90, "a1")], [m, bk])
    assert control(s, config(), markers=[m, bk]).control == {"th": None}
    assert control(s, config(bunker_is_enemy_unit=False), markers=[m, bk]).control == {"th": 0}
    assert control(s, config(), markers=[m, bk], removed=["bk"]).control == {"th": 0}


def test_a_stand_of_unsure_side_that_decides_control_makes_it_too_close_to_call():
    """A stand whose rim the camera saw too little of (rival_sides) counts for the owner
    in the best case and against in the worst: where that changes control, the call is
    too close, naming the stand; where it does not, the call stands."""
    m = marker(*TH)
    a = stand("a", 0, 90, 85, "a1")                                       # side 0, 14 cm
    unsure_enemy = stand("b", 1, 90, 108, "b1", rival_sides=(0,))         # read as side 1, 7 cm
    r = control(world([a, unsure_enemy], [m]), config(), markers=[m]).rulings[0]
    assert r.verdict == "too close to call" and r.details["controller"] is None
    assert any("too little of the rim of b" in n and "perhaps 0" in n for n in r.notes), r.notes
    assert r.details["unsure_sides"] == [{"fighter": "b", "side": 1, "could_be": [0], "distance_cm": 7.0}]
    # The same stand read surely as side 1: a plain "no".
    sure = control(world([a, stand("b", 1, 90, 108, "b1")], [m]), config(), markers=[m]).rulings[0]
    assert sure.verdict == "no" and not sure.notes
    # Far off (20 cm, past the owner's 14 cm unit) it cannot change anything.
    far = control(world([a, stand("b", 1, 90, 121, "b1", rival_sides=(0,))], [m]), config(), markers=[m]).rulings[0]
    assert far.verdict == "yes" and not far.notes


def test_an_owner_stand_of_unsure_side_cannot_hold_a_marker_surely():
    m = marker("cap", 0, "capture", 90, 100, diameter_cm=4)
    touching = stand("a", 0, 90, 97, "a1", rival_sides=(1,))
    r = control(world([touching], [m]), config(), markers=[m])
    assert r.control == {"cap": 0} and r.rulings[0].verdict == "too close to call"


def test_a_doubt_near_a_marker_is_a_stand_of_either_side():
    from tracker.world import Doubt
    from tracker.epic import cm_to_in

    m = marker(*TH)
    s = world([stand("a", 0, 90, 88, "a1")], [m])                          # side 0, 11 cm: controls
    near = Doubt(cm_to_in(90), cm_to_in(106), 0.0, cm_to_in(1.5), sides=(0, 1))  # 4.5 cm from the marker
    r = control(type(s)(fighters=s.fighters, tokens=s.tokens, doubts=(near,)), config(), markers=[m]).rulings[0]
    assert r.verdict == "too close to call" and r.details["controller"] == 0
    assert any("could not name" in n for n in r.notes) and r.details["doubts"][0]["distance_cm"] == pytest.approx(4.5)
    far = Doubt(cm_to_in(90), cm_to_in(130), 0.0, cm_to_in(1.5), sides=(0, 1))
    r = control(type(s)(fighters=s.fighters, tokens=s.tokens, doubts=(far,)), config(), markers=[m]).rulings[0]
    assert r.verdict == "yes" and not r.notes


# --- control: Capture --------------------------------------------------------------------------
def test_capture_base_contact_with_stated_tolerance():
    m = marker("cap", 0, "capture", 90, 100, diameter_cm=4)            # rim 2 cm from the centre
    touching = world([stand("a", 0, 90, 97, "a1")], [m])                 # stand top at 98 cm: touching
    r = control(touching, config(), markers=[m])
    assert r.control == {"cap": 0} and r.rulings[0].rule is q.CAPTURE_CONTROL
    assert r.rulings[0].details["contact_tolerance_cm"] == 0.2
    near = world([stand("a", 0, 90, 96.8, "a1")], [m])                   # 0.2 cm gap: within tolerance
    assert control(near, config(), markers=[m]).control == {"cap": 0}
    apart = world([stand("a", 0, 90, 96.7, "a1")], [m])                  # 0.3 cm gap
    assert control(apart, config(), markers=[m]).control == {"cap": None}
    assert control(apart, config(contact_tolerance_cm=0.5), markers=[m]).control == {"cap": 0}


def test_capture_enemy_in_contact_does_not_control():
    m = marker("cap", 0, "capture", 90, 100)
    s = world([stand("b", 1, 90, 98, "b1")], [m])
    assert control(s, config(), markers=[m]).control == {"cap": None}


def test_capture_control_ignores_closer_enemy():
    m = marker("cap", 0, "capture", 90, 100, diameter_cm=4)
    s = world([stand("a", 0, 90, 97, "a1"), stand("b", 1, 90, 103, "b1")], [m])
    assert control(s, config(), markers=[m]).control == {"cap": 0}


# --- Rescue -------------------------------------------------------------------------------------
def _rescue_world(*stands):
    return world(stands, [marker("res", 0, "rescue", 90, 60)])


RES = Rescue("res", 0, 90.0, 60.0)


def test_owner_ground_unit_moving_onto_the_marker_picks_it_up():
    s = _rescue_world(stand("a", 0, 90, 60.5, "a1"))
    new, r = pick_up_rescue(RES, s, config(), "a1")
    assert r.verdict == "yes" and r.rule is q.RESCUE_PICK_UP
    assert new.escort == "a1" and new.escort_side == 0 and new.initial_pick_up_made and new.carrier == "a"
    assert RES.escort is None                                            # pure: input unchanged


def test_unit_not_onto_the_marker_cannot_pick_up():
    s = _rescue_world(stand("a", 0, 90, 62, "a1"))                      # stand reaches 61: 1 cm short
    new, r = pick_up_rescue(RES, s, config(), "a1")
    assert r.verdict == "no" and new == RES and r.measured == pytest.approx(1.0)


def test_opponent_pick_up_before_owners_first_is_refused():
    s = _rescue_world(stand("b", 1, 90, 60, "b1"))
    new, r = pick_up_rescue(RES, s, config(), "b1")
    assert r.verdict == "no" and r.rule is q.RESCUE_INITIAL_PICK_UP and new == RES


def test_non_ground_unit_cannot_pick_up():
    s = _rescue_world(stand("f", 0, 90, 60, "fly"))
    cfg = config()
    _, r = pick_up_rescue(RES, s, cfg, "fly")
    assert r.verdict == "no" and "not a ground unit" in r.outcome


def test_escorted_marker_cannot_be_picked_up_by_another():
    s = _rescue_world(stand("a", 0, 90, 60, "a1"), stand("c", 0, 92, 60, "a2"))
    held, _ = pick_up_rescue(RES, s, config(), "a1")
    new, r = pick_up_rescue(held, s, config(), "a2")
    assert r.verdict == "no" and new.escort == "a1"


def test_marker_travels_with_the_escort():
    s = _rescue_world(stand("a", 0, 90, 60, "a1"))
    held, _ = pick_up_rescue(RES, s, config(), "a1")
    moved = _rescue_world(stand("a", 0, 30, 40, "a1"))
    assert follow_escort(held, moved).xy == pytest.approx((30.0, 40.0))
    assert follow_escort(RES, moved) == RES                              # unescorted: stays


def test_escort_destroyed_leaves_marker_there_then_either_player_may_pick_up():
    s = _rescue_world(stand("a", 0, 90, 60, "a1"))
    held, _ = pick_up_rescue(RES, s, config(), "a1")
    before = world([stand("a", 0, 50, 70, "a1")])
    dropped, r = escort_destroyed(held, before, config())
    assert r.rule is q.RESCUE_ESCORT_DESTROYED and dropped.escort is None and dropped.xy == pytest.approx((50, 70))
    assert dropped.initial_pick_up_made
    later = world([stand("b", 1, 50, 70.5, "b1")])
    taken, r2 = pick_up_rescue(dropped, later, config(), "b1")           # the opponent may now
    assert r2.verdict == "yes" and taken.escort == "b1" and taken.escort_side == 1


def test_escort_destroyed_in_close_combat_enemy_in_base_contact_becomes_escort():
    s = _rescue_world(stand("a", 0, 90, 60, "a1"))
    held, _ = pick_up_rescue(RES, s, config(), "a1")
    before = world([stand("a", 0, 50, 70, "a1"), stand("b", 1, 50, 72, "b1")])   # edges touch at y = 71
    after = world([stand("b", 1, 50, 72, "b1")])
    new, r = escort_destroyed(held, before, config(), close_combat=True, new_escort="b1", after=after)
    assert r.verdict == "yes" and r.rule is q.RESCUE_CLOSE_COMBAT
    assert new.escort == "b1" and new.escort_side == 1 and new.xy == pytest.approx((50, 72))
    assert escorts_by_side([new]) == {1: 1}


def test_close_combat_claim_refused_when_not_in_contact_or_not_surviving_or_not_close_combat():
    s = _rescue_world(stand("a", 0, 90, 60, "a1"))
    held, _ = pick_up_rescue(RES, s, config(), "a1")
    before = world([stand("a", 0, 50, 70, "a1"), stand("b", 1, 50, 75, "b1"), stand("c", 0, 50, 68, "a2")])
    new, r = escort_destroyed(held, before, config(), close_combat=True, new_escort="b1")
    assert r.verdict == "no" and new.escort is None and "not in base contact" in r.outcome
    new, r = escort_destroyed(held, before, config(), close_combat=False, new_escort="b1")
    assert r.verdict == "no" and new.escort is None
    new, r = escort_destroyed(held, before, config(), close_combat=True, new_escort="a2")
    assert r.verdict == "no" and "not an enemy unit" in r.outcome
    touching = world([stand("a", 0, 50, 70, "a1"), stand("b", 1, 50, 72, "b1")])
    new, r = escort_destroyed(held, touching, config(), close_combat=True, new_escort="b1", after=world([]))
    assert r.verdict == "no" and "did not survive" in r.outcome and new.escort is None


# --- Bunker ----------------------------------------------------------------------------------------
def test_bunker_data_sheet():
    ds = BUNKER_DATA_SHEET
    assert (ds.unit, ds.type, ds.speed_cm, ds.range_cm, ds.firepower, ds.assault, ds.armour, ds.damage_capacity) == \
        ("Bunker", "WE", 0.0, 0.0, 0, 2, "6+", 3)
    b = Bunker("bk", 0)
    assert b.immobilised and b.speed_cm == 0.0 and b.damage_capacity_left == 3


def test_bunker_destroyed_at_damage_capacity_3():
    b, r = damage_bunker(Bunker("bk", 0), hits=2)
    assert not b.destroyed and r.verdict == "no"
    b, r = damage_bunker(b, hits=1)
    assert b.destroyed and r.verdict == "yes" and q.BUNKER_MORALE in r.also and q.REMOVE_MARKER in r.also
    again, r = damage_bunker(b, hits=1)
    assert again == b and r.verdict == "no"


def test_bunker_critical_damage_destroys_regardless_of_capacity():
    b, r = damage_bunker(Bunker("bk", 0), hits=0, critical=True)
    assert b.destroyed and r.rule is q.BUNKER_CRITICAL and "3 Damage Capacity left ignored" in r.outcome


def test_bunker_support_enemy_units_within_15_cm():
    bk = marker("bk", 0, "bunker", 90, 100)
    s = world([stand("b", 1, 90, 116, "b1"), stand("c", 1, 90, 117, "b2"), stand("a", 0, 90, 101, "a1")], [bk])
    rs = {r.details["unit"]: r for r in bunker_support(s, config(), bk)}
    assert set(rs) == {"b1", "b2"}                                      # the owner's own units are not "enemy units"
    assert rs["b1"].verdict == "yes" and rs["b1"].measured == pytest.approx(15.0)
    assert rs["b2"].verdict == "no"
    assert rs["b1"].details["engaged"] is False and rs["b1"].rule is q.BUNKER_SUPPORT
    assert q.TODO_BUNKER_SUPPORT in rs["b1"].also
    rs2 = {r.details["unit"]: r for r in bunker_support(s, config(bunker_support_engages=True), bk)}
    assert rs2["b1"].details["engaged"] is True and rs2["b2"].details["engaged"] is False


def test_rulings_are_json_able():
    m = marker(*TH)
    r = control(world([stand("a", 0, 90, 90, "a1")], [m]), config(), markers=[m])
    d = json.loads(json.dumps(r.to_dict()))
    assert d["control"] == {"th": 0} and d["rulings"][0]["details"]["units"] == "cm"
    assert "within 15 cm of your Take & Hold" in d["rulings"][0]["rule"]["quote"]
