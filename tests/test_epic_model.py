"""Epic game model: the config section, units of stands, grouping stands by the roster."""

from __future__ import annotations

import doctest
import json
import random

import pytest

import tracker.epic
from tracker.config import GameConfig
from tracker.epic import (
    EpicConfig, ObjectiveMarker, UnitSpec, cm_to_in, group_stands, in_to_cm, markers_in_state,
    parse_epic_section, units_in_state,
)
from tracker.errors import ConfigError
from tracker.world import Base, Fighter, Token, WorldState

from test_epic_helpers import SECTION, STAND, config, stand

GAME = {"kind": "epic", "sides": [{"index": 0, "colour": "red", "rim_bgr": [40, 38, 200]},
                                  {"index": 1, "colour": "blue", "rim_bgr": [190, 95, 25]}]}


def test_doctests():
    res = doctest.testmod(tracker.epic, optionflags=doctest.ELLIPSIS)
    assert res.attempted > 0 and res.failed == 0


def test_inch_is_exactly_2_54_cm():
    assert in_to_cm(1.0) == 2.54 and cm_to_in(2.54) == 1.0
    assert cm_to_in(180.0) == pytest.approx(70.866, abs=1e-3)


def test_game_config_reads_the_epic_section():
    cfg = GameConfig.from_dict({**GAME, "epic": SECTION})
    assert cfg.kind == "epic"
    e = cfg.epic
    assert e.table_cm == (180.0, 120.0)
    assert e.side(0).entry_edge == "south" and e.zone(1).contains((10.0, 100.0))
    assert e.unit_spec("fly").ground is False and e.unit_spec("a1").ground is True
    assert e.objective("cap").type == "capture" and e.opponents(0) == (1,)
    assert e.options.morale_timing == "after-game-end-check" and e.options.bunker_support_engages is False


def test_config_without_epic_section_is_unchanged():
    assert GameConfig.from_dict(GAME).epic is None


def test_epic_config_round_trips_through_json(tmp_path):
    p = tmp_path / "game.json"
    p.write_text(json.dumps({**GAME, "epic": SECTION}))
    assert GameConfig.load(p).epic == GameConfig.from_dict({**GAME, "epic": SECTION}).epic


@pytest.mark.parametrize("mutate, expected", [
    (lambda e: e.__setitem__("unitz", []), "config.epic: unknown key 'unitz' (did you mean 'units'?)"),
    (lambda e: e["sides"][0].__setitem__("entry_edge", "sout"), "config.epic.sides[0].entry_edge: 'sout' is not one of"),
    (lambda e: e["objectives"][0].__setitem__("type", "take and hold"), "(did you mean 'take-and-hold'?)"),
    (lambda e: e["units"][0].__setitem__("stands", 0), "at least one stand"),
    (lambda e: e["units"][0].__setitem__("side", 5), "config.epic.units[0].side: no side 5"),
    (lambda e: e["sides"][1].__setitem__("index", 7), "side 7 is not among config.sides"),
    (lambda e: e["sides"][0].__setitem__("deployment_zone", {"rect_cm": [0, 0, -1, 5]}), "x1 must exceed x0"),
    (lambda e: e["sides"][0].__setitem__("deployment_zone", {}), "give exactly one of"),
    (lambda e: e.__setitem__("options", {"morale_timing": "later"}), "'later' is not one of"),
])
def test_epic_section_mistakes_are_named(mutate, expected):
    sec = json.loads(json.dumps(SECTION))
    mutate(sec)
    with pytest.raises(ConfigError) as e:
        GameConfig.from_dict({**GAME, "epic": sec})
    assert expected in str(e.value)


def test_zone_forms():
    e = parse_epic_section({"sides": [
        {"index": 0, "deployment_zone": {"rect_cm": [0, 0, 60, 120]}},
        {"index": 1, "deployment_zone": {"polygon_cm": [[120, 0], [180, 0], [180, 120]]}}]})
    assert e.zone(0).contains((60.0, 50.0)) and not e.zone(0).contains((60.1, 50.0))
    assert e.zone(1).contains((179.0, 1.0)) and e.side(0).entry_edge is None


def test_play_area_from_table_section_in_inches():
    e = GameConfig.from_dict({**GAME, "table": {"play_area_in": [48.0, 48.0]},
                              "epic": {"sides": [{"index": 0, "deployment_zone": {"edge": "east", "depth_cm": 10}}]}}).epic
    assert e.table_cm == (pytest.approx(121.92), pytest.approx(121.92))
    assert e.zone(0).polygon_cm[0][0] == pytest.approx(111.92)


def test_world_state_keeps_inches_and_the_unit_field():
    f = stand("s1", 0, 25.4, 50.8, unit="a1")
    assert (f.x, f.y) == (10.0, 20.0)
    back = WorldState.from_dict(WorldState(fighters=(f,)).to_dict()).fighters[0]
    assert back == f and back.unit == "a1"
    assert Fighter("x", 0, 0, 0, 0, STAND).unit is None   # optional, additive


def test_marker_token_round_trip():
    m = ObjectiveMarker("o", 1, "bunker", 33.3, 77.7, sigma_cm=0.3)
    back = ObjectiveMarker.from_token(m.token(), 1, "bunker")
    assert back.x_cm == pytest.approx(33.3) and back.y_cm == pytest.approx(77.7) and back.sigma_cm == pytest.approx(0.3)


def test_markers_in_state_match_by_id_or_tag():
    cfg = parse_epic_section({**SECTION, "objectives": [{"id": "th", "owner": 0, "type": "take-and-hold", "tag_id": 41}]})
    s = WorldState(tokens=(Token("tag41", "objective", 10.0, 10.0, tag_id=41), Token("other", "objective", 1, 1)))
    ms = markers_in_state(s, cfg)
    assert [(m.id, m.owner, m.type) for m in ms] == [("th", 0, "take-and-hold")]
    assert ms[0].x_cm == pytest.approx(25.4)


def test_unit_distance_is_its_closest_stands():
    cfg = config()
    s = WorldState(fighters=(stand("p", 0, 0, 0, "a1"), stand("q", 0, 0, 40, "a1"), stand("r", 0, 0, 80, "a1")))
    (u,) = units_in_state(s, cfg)
    assert len(u.stands) == 3
    d = u.distance_cm((0.0, cm_to_in(50.0), 0.0))
    assert d == pytest.approx(9.0)       # stand q at y=40, half-depth 1 cm
    assert u.closest_stand((0.0, cm_to_in(50.0), 0.0))[0].id == "q"


def test_ground_units_versus_others():
    us = {u.id: u for u in units_in_state(WorldState(fighters=(stand("f", 1, 0, 0, "fly"), stand("t", 1, 9, 9, "b1"))),
                                          config())}
    assert us["fly"].ground is False and us["fly"].type == "aircraft"
    assert us["b1"].ground is True


def _two_clumps(side=0, rng=None):
    pts = [(20 + 5 * k, 20) for k in range(3)] + [(120 + 5 * k, 60) for k in range(3)]
    return [Fighter(f"s{k}", side, cm_to_in(x), cm_to_in(y), 0.0, STAND) for k, (x, y) in enumerate(pts)]


def test_group_stands_into_roster_units():
    roster = config().units
    fs = _two_clumps()
    out = group_stands(fs, roster)
    units = [f.unit for f in out]
    assert len(set(units[:3])) == 1 and len(set(units[3:])) == 1 and units[0] != units[3]
    assert set(units) == {"a1", "a2"}


def test_group_stands_follows_previous_centres():
    out = group_stands(_two_clumps(), config().units, previous={"a2": (cm_to_in(25), cm_to_in(20)),
                                                                "a1": (cm_to_in(125), cm_to_in(60))})
    assert [f.unit for f in out] == ["a2"] * 3 + ["a1"] * 3


def test_group_stands_is_order_independent():
    fs = _two_clumps()
    base = {f.id: f.unit for f in group_stands(fs, config().units)}
    for seed in range(5):
        sh = list(fs)
        random.Random(seed).shuffle(sh)
        assert {f.id: f.unit for f in group_stands(sh, config().units)} == base


def test_group_stands_respects_side_size_and_capacity():
    roster = (UnitSpec("inf", 0, 2, (40, 20)), UnitSpec("tank", 0, 1, (50, 25)), UnitSpec("foe", 1, 1, (40, 20)))
    big = Base("rect", cm_to_in(2.5), cm_to_in(5.0))            # 50 x 25 mm, turned: still a tank stand
    fs = [Fighter("i1", 0, 1, 1, 0, STAND), Fighter("i2", 0, 2, 1, 0, STAND), Fighter("i3", 0, 3, 1, 0, STAND),
          Fighter("t", 0, 1.5, 1, 0, big), Fighter("e", 1, 1.2, 1, 0, STAND),
          Fighter("odd", 0, 1, 2, 0, Base("round", 1.0, 1.0))]
    out = {f.id: f.unit for f in group_stands(fs, roster)}
    assert out["t"] == "tank" and out["e"] == "foe" and out["odd"] is None
    assert sorted(str(v) for k, v in out.items() if k.startswith("i")) == ["None", "inf", "inf"]   # only 2 slots
