import doctest
import json

import pytest

import tracker.config
import tracker.world
from tracker.config import GameConfig
from tracker.errors import ConfigError

from evalsets import eval_set


def test_doctests():
    for mod in (tracker.config, tracker.world):
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
