import doctest
import json
import re

import pytest

import tracker.config
import tracker.tracking
import tracker.world
from tracker.config import GameConfig
from tracker.errors import ConfigError

from evalsets import eval_set


def test_doctests():
    for mod in (tracker.config, tracker.world, tracker.tracking):
        failed, tried = doctest.testmod(mod)
        assert tried > 0 and failed == 0


def test_eval_setup_json_loads_as_a_game_config():
    cfg = GameConfig.load(eval_set("warcry-2"))
    assert cfg.kind == "warcry"
    assert [s.colour for s in cfg.sides] == ["green", "purple", "red"]
    assert cfg.token_kind_for_tag(47) == "objective"
    assert cfg.terrain_spec(33).type == "platform"
    assert cfg.table.markers[2].centre_in == (31.5, 23.5)


def test_marker_corners_follow_the_physical_spec():
    cfg = GameConfig.load(eval_set("warcry-1"))
    m0 = cfg.table.markers[0]
    # TL, TR, BR, BL of the marker image; top edge faces +y.
    assert m0.corners_in() == [(-2.5, -0.5, 0.0), (-0.5, -0.5, 0.0), (-0.5, -2.5, 0.0), (-2.5, -2.5, 0.0)]


@pytest.mark.parametrize("mutate, expected", [
    (lambda d: d.__setitem__("sidez", d.pop("sides")), "unknown key 'sidez' (did you mean 'sides'?)"),
    (lambda d: d["sides"][0].__setitem__("rim_bgr", [1, 2]), "config.sides[0].rim_bgr: give three numbers"),
    (lambda d: d["terrain_library"][0].__setitem__("type", "platfrom"), "(did you mean 'platform'?)"),
    (lambda d: d["table"].__setitem__("play_area_in", "big"), "config.table.play_area_in: expected list"),
    (lambda d: d.__setitem__("kind", "chess"), "'chess' is not a game"),
    (lambda d: d.__setitem__("sides", d["sides"][:1]), "at least two sides"),
])
def test_config_mistakes_are_named(tmp_path, mutate, expected):
    data = json.loads((eval_set("warcry-1") / "setup.json").read_text())
    mutate(data)
    p = tmp_path / "game.json"
    p.write_text(json.dumps(data))
    with pytest.raises(ConfigError) as e:
        GameConfig.load(p)
    assert expected in str(e.value)
    assert "\n" not in str(e.value)


def test_yaml_syntax_error_names_the_line(tmp_path):
    p = tmp_path / "game.yaml"
    p.write_text("kind: warcry\nsides:\n  - {index: 0, colour: red\n")
    with pytest.raises(ConfigError, match=r"not valid YAML at line \d"):
        GameConfig.load(p)


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match="no game.yaml or setup.json"):
        GameConfig.load(tmp_path)


def test_eval_setup_keys_of_every_kind_load():
    """setup.json of the shared renderer's newer sets: each kind's untagged token colours,
    and per side one base (shape and size) per fighter."""
    cfg = GameConfig.from_dict({
        "kind": "warcry",
        "sides": [
            {"index": 0, "colour": "red", "rim_bgr": [40, 38, 200], "bases_mm": [32.0, 60.0, 60.0],
             "bases": [{"shape": "round", "size_mm": [32.0, 32.0]}, {"shape": "oval", "size_mm": [60.0, 35.0]},
                       {"shape": "rect", "size_mm": [60.0, 35.0]}],
             "units": [{"id": 1, "stands": 3}]},
            {"index": 1, "colour": "blue", "rim_bgr": [190, 95, 25], "bases_mm": [40.0]}],
        "untagged_token_styles": {"objective": [{"name": "red", "bgr": [40, 40, 200]},
                                                {"name": "black", "bgr": [35, 35, 35]}],
                                  "treasure": [{"name": "gold", "bgr": [45, 165, 210]}]}})
    red = cfg.side(0)
    assert red.bases_mm == (32.0,)  # the 60 mm entries of bases_mm are the oval's and the rect's larger size
    assert {(b.shape, b.width_mm, b.depth_mm) for b in red.shaped} == {("oval", 60.0, 35.0), ("rect", 60.0, 35.0)}
    assert [s.name for s in cfg.tokens["objective"].untagged_styles] == ["red", "black"]
    assert cfg.tokens["treasure"].untagged_styles[0].bgr == (45, 165, 210)


@pytest.mark.parametrize("bad, needle", [
    ({"untagged_token_styles": {"objective": [{"name": "red", "bgr": [1, 2]}]}}, "untagged_token_styles.objective[0].bgr"),
    ({"untagged_token_styles": {"objectiv": []}}, "did you mean 'objective'"),
    ({"sides_bases": [{"shape": "hex", "size_mm": [40, 40]}]}, "is not one of round, oval, rect"),
    ({"sides_bases": [{"shape": "round", "size_mm": [32, 32]}, {"shape": "round", "size_mm": [32, 32]}]},
     "2 bases but bases_mm lists 1"),
])
def test_eval_setup_key_mistakes_name_the_key(bad, needle):
    sides = [{"index": 0, "colour": "red", "rim_bgr": [40, 38, 200], "bases_mm": [32.0]},
             {"index": 1, "colour": "blue", "rim_bgr": [190, 95, 25]}]
    d = {"kind": "warcry", "sides": sides}
    if "sides_bases" in bad:
        sides[0]["bases"] = bad["sides_bases"]
    else:
        d.update(bad)
    with pytest.raises(ConfigError, match=re.escape(needle)):
        GameConfig.from_dict(d)
