"""The ``rule`` command and the world-state schema."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from tracker.errors import UserError
from tracker.rules.cli import main, rule
from tracker.rules.schema import StateError, parse_control, parse_world_state
from tracker.world import Base, Fighter, TerrainPart, TerrainPiece, Token, WorldState

from test_rules_helpers import box


def _state() -> WorldState:
    floor = TerrainPart("floor", "platform", box(10, 10, 14, 13), 3.0, open_edges=(0,))
    return WorldState(
        fighters=(Fighter("a", 0, 0.0, 0.0, 0.0, Base("round", 1.0, 1.0), sigma_in=0.01),
                  Fighter("b", 1, 5.0, 0.0, 0.0, Base("oval", 2.36, 1.38, 30.0), carrying="t9"),
                  Fighter("c", 1, 12.0, 10.6, 3.0, Base.round_mm(32), runemarks=frozenset({"Beast"}))),
        tokens=(Token("obj1", "objective", 0.5, 2.0), Token("obj2", "objective", 25.0, 20.0),
                Token("t1", "treasure", 1.4, 0.3)),
        terrain=(TerrainPiece("wall", "obstacle", box(2, -2, 2.5, 2), 1.5),
                 TerrainPiece("ruin", "platform", floor.footprint, 3.0, parts=(floor,))))


def _write(tmp_path, d, name="state.json"):
    p = tmp_path / name
    p.write_text(json.dumps(d))
    return str(p)


def test_to_dict_round_trips_through_the_schema():
    s = _state()
    assert parse_world_state(json.loads(json.dumps(s.to_dict()))) == s


def test_cli_all_text(tmp_path):
    res = CliRunner().invoke(rule, [_write(tmp_path, _state().to_dict())])
    assert res.exit_code == 0, res.output
    out = res.output
    assert "control after battle round 1: obj1: side 0, obj2: nobody" in out
    assert "[cover] a->b: YES" in out
    assert "[falling] c: YES" in out          # 0.6 - 0.63 < 0 from the open edge y = 10
    assert "[pick-up] a picks up t1: YES" in out
    assert "[drop] b drops t9" in out


def test_cli_cover_json_with_previous(tmp_path):
    st = _write(tmp_path, _state().to_dict())
    prev = _write(tmp_path, {"control": {"obj1": 1, "obj2": 1}}, "control.json")
    res = CliRunner().invoke(rule, [st, "--question", "control", "--previous", prev, "--json", "--round", "2"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["control"] == {"obj1": 0, "obj2": 1}   # side 0 gains obj1; nobody near obj2: kept
    assert doc["rulings"][0]["details"]["battle_round"] == 2
    res = CliRunner().invoke(rule, [st, "--question", "cover", "--attacker", "a", "--target", "b", "--json"])
    doc = json.loads(res.output)
    assert len(doc["rulings"]) == 1 and doc["rulings"][0]["details"]["through"][0]["part"] == "wall"


def _bad(tmp_path, mutate):
    d = _state().to_dict()
    mutate(d)
    with pytest.raises(UserError) as e:
        CliRunner().invoke(rule, [_write(tmp_path, d)], catch_exceptions=False)
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def test_malformed_shape_names_the_field(tmp_path):
    def m(d):
        d["fighters"][1]["base"]["shape"] = "squre"
    assert _bad(tmp_path, m) == "fighters[1].base.shape: 'squre' is not a base shape (round, oval, rect)"


@pytest.mark.parametrize("mutate,expect", [
    (lambda d: d["fighters"][0].pop("x"), "fighters[0].x: missing (required)"),
    (lambda d: d["fighters"][0].update(sigma_in="big"), "fighters[0].sigma_in: 'big' is not a number"),
    (lambda d: d["fighters"][0].update(sidee=1), "fighters[0].sidee: unknown field (did you mean 'side'?)"),
    (lambda d: d["tokens"][0].update(kind="goal"), "tokens[0].kind: 'goal' is not a token kind (objective, treasure)"),
    (lambda d: d["terrain"][0].update(footprint=[[0, 0], [1, 1]]), "terrain[0].footprint: a footprint needs at least 3 points, got 2"),
    (lambda d: d["terrain"][1]["parts"][0].update(type="flor"), "terrain[1].parts[0].type: 'flor' is not a terrain type"),
    (lambda d: d["fighters"][2].update(id="a"), "fighters[2].id: 'a' is used twice (also fighters[0])"),
    (lambda d: d.update(fighers=[]), "fighers: unknown field (did you mean 'fighters'?)"),
    (lambda d: d["terrain"][1]["parts"][0].update(open_edges=[7]), "terrain[1].parts[0].open_edges[0]: 7 is not an edge index (0 to 3)"),
])
def test_malformed_fields(tmp_path, mutate, expect):
    assert _bad(tmp_path, mutate).startswith(expect)


def test_bad_json_and_missing_file(tmp_path, capsys):
    p = tmp_path / "s.json"
    p.write_text("{ not json")
    assert main([str(p)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "not valid JSON (line 1" in err and "\n" not in err
    assert main([str(tmp_path / "nope.json")]) == 2
    assert "file not found" in capsys.readouterr().err


def test_unknown_attacker_and_half_pair(tmp_path):
    st = _write(tmp_path, _state().to_dict())
    with pytest.raises(UserError, match="--attacker zz: no such fighter"):
        CliRunner().invoke(rule, [st, "--attacker", "zz"], catch_exceptions=False)
    with pytest.raises(UserError, match="needs both"):
        CliRunner().invoke(rule, [st, "--question", "cover", "--attacker", "a"], catch_exceptions=False)


def test_parse_control():
    assert parse_control({"o": 0, "p": None}) == {"o": 0, "p": None}
    with pytest.raises(StateError, match=r"previous.o: 'x' is not a side index"):
        parse_control({"o": "x"})


def test_documented_example_parses_and_rules():
    import pathlib
    import re
    doc = pathlib.Path(__file__).resolve().parents[1] / "docs" / "world-state.md"
    block = re.search(r"```json\n(.*?)```", doc.read_text(encoding="utf-8"), re.S).group(1)
    s = parse_world_state(json.loads(block))
    assert [f.id for f in s.fighters] == ["a", "b", "c"]
    assert parse_world_state(json.loads(json.dumps(s.to_dict()))) == s
    from tracker.rules import cover, falling_test
    assert cover(s, "a", "b").verdict == "yes"
    assert falling_test(s, "c").verdict == "yes"


def test_terrain_types_match_the_game_config():
    from tracker import config
    from tracker.rules import schema
    assert set(schema.TERRAIN_TYPES) == set(config.TERRAIN_TYPES)


def test_rule_reads_what_track_and_the_api_write(tmp_path):
    """``rule`` takes a ``track --out`` file (its last frame, or ``--frame N``) and the
    ``/api/state`` body as served, as well as a world state itself."""
    s = _state().to_dict()
    moved = json.loads(json.dumps(s))
    moved["frame_index"] = 7
    moved["fighters"][0]["x"] = 20.0  # away from obj1: nobody controls it in frame 7
    track = _write(tmp_path, {"frames": [s, moved], "events": [], "skipped_frames": []}, "track.json")
    api = _write(tmp_path, {"frame_index": 0, "game_id": 1, "state": s, "control": {}}, "api.json")

    def control(*args):
        res = CliRunner().invoke(rule, [*args, "--question", "control", "--json"])
        assert res.exit_code == 0, res.output
        return json.loads(res.stdout)["control"], res.stderr

    assert control(track)[0]["obj1"] is None and "last frame (7)" in control(track)[1]
    assert control(track, "--frame", "0")[0]["obj1"] == 0
    assert control(api)[0]["obj1"] == 0
    res = CliRunner().invoke(rule, [track, "--frame", "3"])
    assert res.exit_code != 0 and "no frame 3 (it holds frames 0 to 7)" in str(res.exception)
    res = CliRunner().invoke(rule, [api, "--frame", "0"])
    assert res.exit_code != 0 and "leave --frame out" in str(res.exception)
