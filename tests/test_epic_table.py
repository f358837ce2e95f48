"""tracker.epic_table: an Epic game followed frame by frame (units grouped from bare
stands, Rescue pick-up / carry / drop / close-combat claim, Rally phase and ledger)."""

from __future__ import annotations

import doctest
from dataclasses import replace

import pytest

import tracker.epic_table
from tracker.epic import cm_to_in
from tracker.epic_table import EpicTable
from tracker.rules.epic_morale import Dice, MoraleLedger
from tracker.world import Token, WorldState

from test_epic_helpers import SECTION, config, stand


def ground_only():
    """The test roster without its aircraft (so every stand here is a ground unit's)."""
    from tracker.epic import parse_epic_section

    return parse_epic_section({**SECTION, "units": [u for u in SECTION["units"] if u.get("type") != "aircraft"]})


def bare(*stands):
    """Stands as the tracker reports them: no unit yet."""
    return tuple(replace(s, unit=None) for s in stands)


def rescue_token(x_cm, y_cm):
    return Token("res", "objective", cm_to_in(x_cm), cm_to_in(y_cm))


def state(stands, tokens=(), frame=0, hands=False):
    return WorldState(frame_index=frame, fighters=tuple(stands), tokens=tuple(tokens), hands_over_table=hands)


def line(prefix, side, x_cm, y_cm, n=3):
    """n stands in base contact along x (40 mm wide each)."""
    return [stand(f"{prefix}{k}", side, x_cm + 4.0 * k, y_cm) for k in range(n)]


def test_doctest():
    assert doctest.testmod(tracker.epic_table).failed == 0


def test_stands_are_grouped_into_roster_units_and_stay_grouped_as_they_move():
    table = EpicTable(config())
    a, b = line("p", 0, 20, 20), line("q", 0, 120, 20)
    v = table.observe(state(bare(*a, *b)))
    units = {u.id: sorted(s.id for s in u.stands) for u in v.units}
    groups = sorted(units.values())
    assert groups == [["p0", "p1", "p2"], ["q0", "q1", "q2"]]
    first = {s.id: s.unit for s in v.state.fighters}
    # Both units move 30 cm toward each other: the grouping follows them.
    moved = [replace(s, x=s.x + cm_to_in(30)) for s in bare(*a)] + [replace(s, x=s.x - cm_to_in(30)) for s in bare(*b)]
    v2 = table.observe(state(moved, frame=1))
    assert {s.id: s.unit for s in v2.state.fighters} == first


def test_owner_picks_up_rescue_when_its_token_goes_from_under_a_stand_and_carries_it():
    table = EpicTable(config())
    a = line("p", 0, 50, 50)
    tok = rescue_token(54, 50)  # under p1
    table.observe(state(bare(*a), [tok]))
    v = table.observe(state(bare(*a), [], frame=1))
    r = v.rescues[0]
    assert r.escorted and r.carrier == "p1" and r.initial_pick_up_made
    assert [x.question for x in v.new_rulings] == ["rescue pick-up"]
    # It travels with the escort.
    moved = [replace(s, y=s.y + cm_to_in(20)) for s in bare(*a)]
    v = table.observe(state(moved, [], frame=2))
    assert v.rescues[0].y_cm == pytest.approx(70.0)
    marker = next(m for m in v.markers if m.id == "res")
    assert marker.y_cm == pytest.approx(70.0)


def test_token_gone_with_no_stand_over_it_is_not_a_pick_up():
    table = EpicTable(config())
    a = line("p", 0, 50, 50)
    table.observe(state(bare(*a), [rescue_token(90, 90)]))
    v = table.observe(state(bare(*a), [], frame=1))
    assert not v.rescues[0].escorted and not v.new_rulings


def test_a_hand_over_the_table_is_not_a_pick_up():
    table = EpicTable(config())
    a = line("p", 0, 50, 50)
    table.observe(state(bare(*a), [rescue_token(54, 50)]))
    v = table.observe(state(bare(*a), [], frame=1, hands=True))
    assert not v.rescues[0].escorted


def test_opponent_before_the_owners_first_pick_up_is_refused_once_and_the_marker_stays():
    table = EpicTable(ground_only())
    b = line("e", 1, 50, 50)
    table.observe(state(bare(*b), [rescue_token(54, 50)]))
    v = table.observe(state(bare(*b), [], frame=1))
    assert not v.rescues[0].escorted
    assert len(v.new_rulings) == 1 and v.new_rulings[0].verdict == "no"
    assert "initial pick up" in v.new_rulings[0].outcome
    v = table.observe(state(bare(*b), [], frame=2))
    assert not v.new_rulings  # said once, not every frame
    assert v.rescues[0].xy == pytest.approx((54.0, 50.0))


def test_escort_destroyed_drops_the_marker_where_it_was_carried_and_the_token_comes_back():
    table = EpicTable(config())
    a = line("p", 0, 50, 50)
    table.observe(state(bare(*a), [rescue_token(54, 50)]))
    table.observe(state(bare(*a), [], frame=1))
    moved = [replace(s, y=s.y + cm_to_in(10)) for s in bare(*a)]
    table.observe(state(moved, [], frame=2))
    # A hand takes the stands away: nothing is decided while it is there.
    v = table.observe(state([], [], frame=3, hands=True))
    assert v.rescues[0].escorted
    v = table.observe(state([], [], frame=4))
    r = v.rescues[0]
    assert not r.escorted and r.xy == pytest.approx((54.0, 60.0))
    assert v.new_rulings[0].question == "rescue escort destroyed"
    # The player puts the token back, a little off: the marker is where the token is.
    v = table.observe(state([], [rescue_token(54.5, 60.2)], frame=5))
    assert v.rescues[0].xy == pytest.approx((54.5, 60.2)) and not v.rescues[0].escorted


def test_close_combat_claim_by_an_enemy_unit_in_base_contact():
    table = EpicTable(ground_only())
    a = line("p", 0, 50, 50)
    e = line("e", 1, 50, 52)  # 2 cm north: long edges touching
    table.observe(state(bare(*a, *e), [rescue_token(54, 50)]))
    table.observe(state(bare(*a, *e), [], frame=1))
    v = table.observe(state(bare(*e), [], frame=2))
    assert not v.rescues[0].escorted
    enemy_unit = next(s.unit for s in v.state.fighters if s.id == "e0")
    ruling = table.close_combat_claim("res", enemy_unit)
    assert ruling.verdict == "yes" and table.rescues["res"].escort == enemy_unit
    assert table.rescues["res"].escort_side == 1


def test_close_combat_claim_refused_for_a_unit_not_in_contact_and_errors_for_bad_input():
    table = EpicTable(config())
    a = line("p", 0, 50, 50)
    far = line("e", 1, 120, 100)
    table.observe(state(bare(*a, *far), [rescue_token(54, 50)]))
    table.observe(state(bare(*a, *far), [], frame=1))
    v = table.observe(state(bare(*far), [], frame=2))
    enemy_unit = v.state.fighters[0].unit
    ruling = table.close_combat_claim("res", enemy_unit)
    assert ruling.verdict == "no" and not table.rescues["res"].escorted
    with pytest.raises(KeyError):
        table.close_combat_claim("nope", enemy_unit)
    table2 = EpicTable(config())
    table2.observe(state(bare(*a), [rescue_token(90, 90)]))
    with pytest.raises(ValueError):
        table2.close_combat_claim("res", "b1")


def test_end_of_rally_phase_applies_control_and_escorts_to_the_ledger():
    cfg = config()
    table = EpicTable(cfg)
    th = Token("th", "objective", cm_to_in(90), cm_to_in(60))
    cl = Token("cl", "objective", cm_to_in(20), cm_to_in(20))
    a = line("p", 0, 90, 70)  # 10 cm from th (stands reach 1 cm toward it: 9 cm)
    far_enemy = line("e", 1, 150, 110)
    table.observe(state(bare(*a, *far_enemy), [th, cl, rescue_token(150, 30)]))
    ledger = MoraleLedger.start({0: 10, 1: 10})
    new, ctl = table.end_rally_phase(ledger, state(bare(*a, *far_enemy), [th, cl, rescue_token(150, 30)], frame=1),
                                     1, Dice(entered={"th": 3}))
    assert ctl.control["th"] == 0 and ctl.control["cl"] is None
    assert new.morale == {0: 13, 1: 10}
    assert [c.marker_id for c in new.history[-1].changes] == ["th"]


def test_groups_get_roster_units_by_stand_count_and_a_destroyed_unit_is_not_refilled():
    from tracker.epic import parse_epic_section

    cfg = parse_epic_section({**SECTION, "units": [
        {"id": "four", "side": 0, "stands": 4}, {"id": "three", "side": 0, "stands": 3},
        {"id": "five", "side": 0, "stands": 5}]})
    table = EpicTable(cfg)
    four, three, five = line("a", 0, 10, 20, 4), line("b", 0, 80, 20, 3), line("c", 0, 10, 90, 5)
    for k in range(4):  # settle
        v = table.observe(state(bare(*four, *three, *five), frame=k))
    unit_of = {s.id: s.unit for s in v.state.fighters}
    assert {unit_of[s.id] for s in four} == {"four"} and {unit_of[s.id] for s in three} == {"three"}
    assert {unit_of[s.id] for s in five} == {"five"}
    # "four" is destroyed: its room is not given to stands of the other units, which keep theirs.
    for k in range(4, 8):
        v = table.observe(state(bare(*three, *five), frame=k))
    assert {s.id: s.unit for s in v.state.fighters} == {s.id: unit_of[s.id] for s in (*three, *five)}
    # A stand the tracker lost and found again under a new id rejoins its unit.
    back = replace(bare(five[0])[0], id="c0-again")
    v = table.observe(state(bare(*three, *five[1:]) + (back,), frame=9))
    assert next(s.unit for s in v.state.fighters if s.id == "c0-again") == "five"


def test_pick_up_counts_a_stand_that_was_over_the_marker_just_before_the_token_went():
    """The tracker keeps a token a moment after it is last seen: by then the unit may be
    moving off with it. A stand over it within 2 s counts; long before does not."""
    table = EpicTable(config())
    a = line("p", 0, 50, 50)
    tok = rescue_token(54, 50)
    table.observe(replace(state(bare(*a), [tok]), time_s=0.0))
    away = [replace(s, y=s.y + cm_to_in(8)) for s in bare(*a)]
    v = table.observe(replace(state(away, [], frame=1), time_s=0.5))
    assert v.rescues[0].escorted and v.rescues[0].y_cm == pytest.approx(58.0)
    late = EpicTable(config())
    late.observe(replace(state(bare(*a), [tok]), time_s=0.0))
    late.observe(replace(state(away, [tok], frame=1), time_s=0.5))  # moved off, token still there
    v = late.observe(replace(state(away, [], frame=2), time_s=3.0))
    assert not v.rescues[0].escorted
