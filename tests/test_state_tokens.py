"""State tokens (issue #8, recognition): the config section, the pure attachment rule,
its hysteresis over frames, recognised fighter state, and the real pipeline on a real
render with tagged activation / damage tokens beside fighters and untagged clutter."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tracker.config import GameConfig, StateTokens, StateTokenSpec
from tracker.detection import KIND_OBJECTIVE, KIND_STATE, KIND_TREASURE
from tracker.errors import ConfigError
from tracker.fighter_state import FighterStates
from tracker.state_tokens import StateTokenTracker, apply_to_states, attach, edge_distance, recognised
from tracker.world import Base, Fighter, StateToken, WorldState

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.state_tokens import _match, score  # noqa: E402

SIDES = [{"index": 0, "colour": "red", "rim_bgr": [40, 38, 200]}, {"index": 1, "colour": "blue", "rim_bgr": [190, 95, 25]}]


def cfg(section, **more):
    return GameConfig.from_dict({"kind": "warcry", "sides": SIDES, "state_tokens": section, **more})


# ---------------------------------------------------------------------------- config
def test_config_section_read_and_absent_means_off():
    c = cfg({"diameter_in": 0.9, "tags": {80: "activated", "81": "half-activated", 83: {"meaning": "damage", "count": 3}}})
    st = c.state_tokens
    assert st.diameter_in == 0.9 and st.reach_in == 1.0
    assert st.meaning(80) == StateTokenSpec(80, "activated", 1)
    assert st.meaning(81).meaning == "half-activated" and st.meaning(83).count == 3
    assert st.meaning(82) is None
    assert GameConfig.from_dict({"kind": "warcry", "sides": SIDES}).state_tokens is None


@pytest.mark.parametrize("section, more, words", [
    ({"tags": {79: "activated"}}, {}, ["79", "outside 80-99"]),
    ({"tags": {100: "activated"}}, {}, ["100", "outside 80-99"]),
    ({"tags": {"eighty": "activated"}}, {}, ["eighty", "80 to 99"]),
    ({"tags": {80: "activatd"}}, {}, ["activatd", "did you mean 'activated'"]),
    ({"tags": {80: "wounded"}}, {}, ["wounded", "activated, half-activated, damage"]),
    ({"tagz": {80: "activated"}}, {}, ["unknown key 'tagz'", "did you mean 'tags'"]),
    ({"tags": {80: {"meaning": "damage", "cont": 2}}}, {}, ["unknown key 'cont'", "did you mean 'count'"]),
    ({"tags": {80: {"meaning": "activated", "count": 2}}}, {}, ["count", "activation token counts 1"]),
    ({"tags": {80: {"meaning": "damage", "count": 0}}}, {}, ["count", "1 or more"]),
    ({"tags": {80: 3}}, {}, ["expected a meaning"]),
    ({"tags": {}}, {}, ["at least one tag"]),
    ({"tags": {80: "activated"}, "diameter_in": 7}, {}, ["diameter_in", "0.3 to 2"]),
    ({"tags": {85: "activated"}}, {"tokens": {"objective": {"tag_ids": [85]}}}, ["85", "objective", "its own id"]),
])
def test_config_errors_name_the_problem_and_the_fix(section, more, words):
    with pytest.raises(ConfigError) as e:
        cfg(section, **more)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("config.state_tokens")
    for w in words:
        assert w in msg, (w, msg)


def test_config_loads_from_yaml_file(tmp_path):
    (tmp_path / "game.yaml").write_text(
        "kind: warcry\nsides:\n  - {index: 0, colour: red, rim_bgr: [40, 38, 200]}\n"
        "  - {index: 1, colour: blue, rim_bgr: [190, 95, 25]}\n"
        "state_tokens:\n  tags:\n    80: activated\n    90: {meaning: damage, count: 2}\n    99: half-actived\n")
    with pytest.raises(ConfigError, match=r"game.yaml: config.state_tokens.tags.99: 'half-actived' .*did you mean "
                                          r"'half-activated'"):
        GameConfig.load(tmp_path)


# ---------------------------------------------------------------------------- attachment
def F(fid, x, y, d=1.0, **kw):
    return Fighter(fid, 0, float(x), float(y), 0.0, Base("round", d, d), **kw)


def test_exactly_one_inch_from_the_edge_is_within():
    a = F("a", 0, 0)  # radius 0.5: edge at x = 0.5
    assert attach([a], 1.5, 0.0) == attach([a], 1.5, 0.0)
    got = attach([a], 1.5, 0.0)
    assert got.fighter == "a" and got.distance_in == pytest.approx(1.0)
    assert attach([a], 1.5 + 1e-6, 0.0).fighter is None
    assert attach([a], 1.5 + 1e-6, 0.0, reach_in=1.1).fighter == "a"


def test_measured_from_the_base_edge_not_the_centre():
    small, big = F("small", 0, 0, d=1.0), F("big", 4.2, 0, d=2.36)  # 60 mm base: edge at x = 3.02
    # 1.8 from small's centre (1.3 from its edge), 2.4 from big's centre (1.22 from its edge)
    got = attach([small, big], 1.8, 0.0, reach_in=1.5)
    assert got.fighter == "big" and got.distance_in == pytest.approx(1.22)


def test_equidistant_is_ambiguous_and_independent_of_order():
    a, b = F("a", 0, 0), F("b", 3, 0)
    one, two = attach([a, b], 1.5, 0.0), attach([b, a], 1.5, 0.0)
    assert one == two
    assert one.fighter == "a" and one.ambiguous == ("b",)
    # Clearly nearer one: not ambiguous.
    assert attach([a, b], 1.2, 0.0).ambiguous == ()
    # Within measuring error (tie_in) of each other: ambiguous.
    assert attach([a, b], 1.47, 0.0, reach_in=1.5).ambiguous == ("b",)  # 0.97 and 1.03 from the edges
    assert attach([a, b], 1.47, 0.0, reach_in=1.5, tie_in=0.05).ambiguous == ()
    # The other fighter as near but beyond reach is not a rival.
    assert attach([a, b], 1.45, 0.0).ambiguous == ()  # 0.95 and 1.05


def test_oval_and_rect_bases_are_measured_to_their_edge():
    oval = Fighter("o", 0, 0.0, 0.0, 0.0, Base("oval", 2.36, 1.38, angle_deg=90.0))  # long axis along y
    assert edge_distance(oval, 0.0, 2.18) == pytest.approx(1.0, abs=1e-6)
    assert edge_distance(oval, 1.69, 0.0) == pytest.approx(1.0, abs=1e-6)
    rect = Fighter("r", 0, 0.0, 0.0, 0.0, Base("rect", 2.0, 1.0))
    assert edge_distance(rect, 2.0, 0.0) == pytest.approx(1.0) and edge_distance(rect, 0.2, 0.1) == 0.0


SPEC = StateTokens({80: StateTokenSpec(80, "activated"), 81: StateTokenSpec(81, "half-activated"),
                    82: StateTokenSpec(82, "damage"), 83: StateTokenSpec(83, "damage", 3)})


def test_tracker_hysteresis_switches_only_when_clearly_nearer_twice():
    tr = StateTokenTracker(SPEC)
    a, b = F("a", 0, 0), F("b", 2.5, 0)  # edges at x = 0.5 and x = 2.0
    (t,) = tr.update([(80, 1.0, 0.0, 0.0)], [a, b])
    assert t.fighter == "a" and t.id == "state-80-1" and t.distance_in == pytest.approx(0.5)
    # Now marginally nearer b (0.8 and 0.7: within the switch margin): stays with a.
    (t,) = tr.update([(80, 1.3, 0.0, 0.0)], [a, b])
    assert t.fighter == "a" and t.ambiguous == ("b",)
    # Clearly nearer b (1.0 and 0.5) in one look: still a; in two looks running: b.
    (t,) = tr.update([(80, 1.5, 0.0, 0.0)], [a, b])
    assert t.fighter == "a"
    (t,) = tr.update([(80, 1.5, 0.0, 0.0)], [a, b])
    assert t.fighter == "b" and t.ambiguous == ()
    assert [e["kind"] for e in tr.events] == ["state token moved"]


def test_tracker_token_rides_with_its_fighter_and_survives_a_hand():
    tr = StateTokenTracker(SPEC)
    a = F("a", 5, 5)
    (t,) = tr.update([(82, 6.2, 5.0, 0.0)], [a])
    assert t.fighter == "a" and t.meaning == "damage"
    # The fighter moves 3 in between looks: its token goes with it.
    a2 = F("a", 8, 5)
    (t,) = tr.update([], [a2], looked=False)
    assert (t.x, t.y) == pytest.approx((9.2, 5.0)) and t.fighter == "a"
    # Seen there at the next look: the same token.
    (t,) = tr.update([(82, 9.21, 5.01, 0.0)], [a2])
    assert t.id == "state-82-1" and t.fighter == "a"
    # A hand over it: held (occluded), however many looks.
    for _ in range(4):
        (t,) = tr.update([], [a2], hands=True, hand_over=lambda x, y: True)
        assert t.occluded and t.fighter == "a"
    # Gone with no hand over it: removed after two looks.
    assert len(tr.update([], [a2])) == 1
    assert tr.update([], [a2]) == ()
    assert tr.events[-1]["kind"] == "state token removed"


def test_tracker_same_id_tokens_are_told_apart_and_unattached_far_away():
    tr = StateTokenTracker(SPEC)
    a, b = F("a", 0, 0), F("b", 10, 0)
    toks = tr.update([(80, 1.2, 0.0, 0.0), (80, 8.8, 0.0, 0.0), (80, 5.0, 5.0, 0.0)], [a, b])
    by_x = sorted(toks, key=lambda s: s.x)
    assert [s.fighter for s in by_x] == ["a", None, "b"]
    assert len({s.id for s in toks}) == 3
    # Seen before its fighter is confirmed: attached as soon as it is, even between looks.
    tr2 = StateTokenTracker(SPEC)
    (t,) = tr2.update([(81, 1.2, 0.0, 0.0)], [])
    assert t.fighter is None
    (t,) = tr2.update([], [a], looked=False)
    assert t.fighter == "a"


def test_recognised_state_goes_into_fighter_states():
    a, b, c = F("a", 0, 0), F("b", 10, 0), F("c", 20, 0, occluded=True)
    toks = (StateToken("state-81-1", 81, "half-activated", 1.2, 0, fighter="a"),
            StateToken("state-83-1", 83, "damage", -1.2, 0, count=3, fighter="a"),
            StateToken("state-82-1", 82, "damage", 0, 1.2, fighter="a"),
            StateToken("state-80-1", 80, "activated", 11.2, 0, fighter="b", ambiguous=("c",)),
            StateToken("state-80-2", 80, "activated", 21.2, 0, fighter="c"))
    w = WorldState(fighters=(a, b, c), state_tokens=toks)
    r = recognised(w, SPEC)
    assert r["a"].activation == "half-activated" and r["a"].damage == 4
    assert r["b"].activation is None and r["b"].damage == 0  # its token is ambiguous: no reading
    states = FighterStates.of(["a", "b", "c"], wounds=6)
    new, ev = apply_to_states(states, w, SPEC)
    assert new["a"].activation == "half-activated" and new["a"].damage == 4
    assert new["b"] == states["b"] and new["c"] == states["c"]  # ambiguous; under a hand
    assert [e.kind for e in ev] == ["half-activated", "damaged"]
    # Activation never goes back within a round; damage follows the tokens both ways.
    act = new.activate("a").states
    w2 = WorldState(fighters=(a, b, c), state_tokens=(toks[2],))
    new2, ev2 = apply_to_states(act, w2, SPEC)
    assert new2["a"].activation == "activated" and new2["a"].damage == 1
    assert [e.kind for e in ev2] == ["damage-removed"]
    # A table without damage tokens leaves damage to the players.
    only_act = StateTokens({80: StateTokenSpec(80, "activated")})
    assert recognised(w, only_act)["a"].damage is None


def test_world_state_json_round_trip_and_schema():
    from tracker.rules.schema import parse_world_state

    w = WorldState(fighters=(F("a", 0, 0, state_tokens=("state-80-1",)),),
                   state_tokens=(StateToken("state-80-1", 80, "activated", 1.2, 0.0, fighter="a", distance_in=0.7,
                                            ambiguous=("b",)),))
    d = json.loads(json.dumps(w.to_dict()))
    assert d["fighters"][0]["state_tokens"] == ["state-80-1"]
    assert d["state_tokens"][0]["meaning"] == "activated"
    assert WorldState.from_dict(d) == w
    # The rules core accepts the tracker's output; state tokens do not reach its rulings.
    assert [f.id for f in parse_world_state(d).fighters] == ["a"]


# ---------------------------------------------------------------------------- real render
@pytest.fixture(scope="module")
def game(tmp_path_factory):
    from tracker.pipeline import Pipeline
    from tracker.sources import open_source
    from tracker.synthetic import render_set

    folder = render_set(tmp_path_factory.mktemp("state"), seed=11, width=1280, height=720, seconds=4.0, fps=5,
                        n_calib_views=8, n_fighters=10, side_colours=("red", "white", "blue"), state_tokens=8,
                        clutter=8)
    truth = json.loads((folder / "truth.json").read_text())
    pipe = Pipeline.from_footage(folder)
    frames = list(open_source(folder))
    results = [pipe.process(frame, i, t) for i, t, frame in frames]
    return folder, truth, pipe, frames, results


def test_render_has_tokens_beside_fighters_and_clutter(game):
    folder, truth, pipe, _, _ = game
    assert pipe.config.state_tokens is not None and set(pipe.config.state_tokens.tags) == {80, 81, 82, 83}
    first = truth["frames"][0]
    assert len(first["state_tokens"]) >= 6 and len(first["clutter"]) >= 6
    assert {c["kind"] for c in first["clutter"]} == {"damage", "die"}
    fighters = {f["id"]: f for f in first["fighters"]}
    for s in first["state_tokens"]:
        f = fighters[s["fighter"]]
        gap = np.hypot(s["x"] - f["x"], s["y"] - f["y"]) - f["base_mm"] / 25.4 / 2
        assert 0.5 < gap <= 1.0  # beside the base, its centre within 1" of the edge


def test_each_tagged_token_attached_to_its_fighter_and_no_clutter_reported(game):
    _, truth, _, _, results = game
    s = score(truth, results)
    assert s["visible_token_frames"] >= 100, s
    assert s["attachment_rate"] >= 0.99, s
    assert s["false_fighters"] == 0 and s["false_objectives_or_treasure"] == 0, s
    assert s["raw_false_state_detections"] == 0, s
    # Per fighter in the world state: the ids of its tokens, each a token on the table.
    last = results[-1].state
    ids = {t.id for t in last.state_tokens}
    assert any(f.state_tokens for f in last.fighters)
    assert all(set(f.state_tokens) <= ids for f in last.fighters)
    assert all(t.meaning in ("activated", "half-activated", "damage") for t in last.state_tokens)
    # Never objectives or treasure.
    assert all(r.detections is None or not np.isin(r.detections.tag_id[np.isin(
        r.detections.kind, [KIND_OBJECTIVE, KIND_TREASURE])], np.arange(80, 100)).any() for r in results)


def test_with_recognition_off_state_tags_are_still_never_tokens(game):
    from tracker.pipeline import Pipeline

    _, truth, pipe, frames, _ = game
    off = Pipeline(replace(pipe.config, state_tokens=None), pipe.setup, fps=pipe.fps, full_every=1)
    for i, t, frame in frames[:3]:
        res = off.process(frame, i, t)
        assert not (res.detections.kind == KIND_STATE).any()
        assert res.state.state_tokens == () and all(f.state_tokens == () for f in res.state.fighters)
        props = truth["frames"][i]["state_tokens"] + truth["frames"][i]["clutter"]
        for tok in res.state.tokens:
            assert all(np.hypot(tok.x - p["x"], tok.y - p["y"]) > 0.4 for p in props), tok


def test_the_web_app_takes_the_tokens_as_each_fighters_state_and_logs_it_as_the_cameras(game, tmp_path):
    """On the live app: a fighter with an "activated" token beside it is activated in
    /api/fighters/state, the change is in the log made by "camera"; a fighter without
    one stays ready."""
    from webui import create_app, get_player, stop_player

    folder, _, pipe, _, _ = game
    app = create_app({"SOURCE": str(folder), "FOOTAGE": str(folder), "JUDGE_TOKEN": None,
                      "PIPELINE": pipe.fresh(), "DATABASE": str(tmp_path / "tokens.sqlite")})
    try:
        player = get_player(app)
        latest = player.wait_until(lambda x: any(t.fighter and t.meaning == "activated" and not t.ambiguous
                                                 for t in x.result.state.state_tokens), 120)
        assert latest is not None, f"no activated token attached in 120 s ({player.last_error})"
        client = app.test_client()
        body = client.get("/api/fighters/state").get_json()
        world = player.view_state(player.latest())
        by_id = {f["id"]: f for f in body["fighters"]}
        activated = {t.fighter for t in world.state_tokens if t.meaning == "activated" and t.fighter and not t.ambiguous}
        assert activated and all(by_id[f]["activation"] == "activated" for f in activated if f in by_id)
        bare = [f.id for f in world.fighters if not f.state_tokens and f.id in by_id]
        assert bare and all(by_id[f]["activation"] == "ready" for f in bare)
        log = client.get("/api/fighters/log").get_json()
        assert any(c["who"] == "camera" and c["action"] == "recognised" for c in log["changes"])
    finally:
        stop_player(app)


# ---------------------------------------------------------------------------- a token in shadow
@pytest.fixture(scope="module")
def shadowed(tmp_path_factory):
    """Seed 21's table: token state-3 (an 83, "damage" x3) lies half in a miniature's
    shadow from the first frame, where its tag cannot be read at the first look."""
    from tracker.synthetic import render_set

    folder = render_set(tmp_path_factory.mktemp("shadow"), seed=21, width=1280, height=720, seconds=2.0, fps=5,
                        n_calib_views=8, n_fighters=12, side_colours=("red", "white", "blue"), state_tokens=12,
                        clutter=12)
    return folder, json.loads((folder / "truth.json").read_text())


def _run(folder, face_test: bool = True):
    from tracker.pipeline import Pipeline
    from tracker.sources import open_source

    pipe = Pipeline.from_footage(folder)
    if not face_test:
        pipe.detector.tag_face_min = np.inf
    out = []
    for i, t, frame in open_source(folder):
        res = pipe.process(frame, i, t)
        out.append((res, pipe.look, [xy for xy, read in pipe.detector._paper_discs if not read]))
    return out


def test_a_token_in_shadow_is_never_a_fighter_and_is_attached_by_the_second_full_look(shadowed):
    folder, truth = shadowed
    tok0 = next(s for s in truth["frames"][0]["state_tokens"] if s["id"] == "state-3")
    assert tok0["tag_id"] == 83 and tok0["visible_fraction"] >= 0.95
    runs = _run(folder)
    # The case is real: at the first look the tag is not read, only seen as a tag's face.
    res0, look0, unread0 = runs[0]
    assert look0 == "full" and any(np.hypot(*(xy - (tok0["x"], tok0["y"]))) < 0.2 for xy in unread0), unread0
    assert not any(s.tag_id == 83 and np.hypot(s.x - tok0["x"], s.y - tok0["y"]) < 0.5
                   for s in res0.state.state_tokens)
    full_looks = [i for i, (_, look, _) in enumerate(runs) if look == "full"]
    attached_at = None
    for i, ((res, _, _), fr) in enumerate(zip(runs, truth["frames"])):
        tok = next(s for s in fr["state_tokens"] if s["id"] == "state-3")
        # Never a fighter (nor a raw base detection) where the token lies, in any frame.
        assert not any(np.hypot(f.x - tok["x"], f.y - tok["y"]) < 0.5 for f in res.state.fighters), i
        d = res.detections
        assert not any(d.kind[k] == 0 and np.hypot(d.xyz[k, 0] - tok["x"], d.xyz[k, 1] - tok["y"]) < 0.5
                       for k in range(len(d))), i
        owner = [f for f in res.state.fighters
                 if any(np.hypot(f.x - g["x"], f.y - g["y"]) < 0.3 for g in fr["fighters"] if g["id"] == tok["fighter"])]
        near = [s for s in res.state.state_tokens if s.tag_id == 83 and np.hypot(s.x - tok["x"], s.y - tok["y"]) < 0.5]
        if near and owner and near[0].fighter == owner[0].id:
            attached_at = i if attached_at is None else attached_at
        elif attached_at is not None:
            raise AssertionError(f"token lost its fighter at frame {i}")
    assert attached_at is not None and attached_at <= full_looks[1], (attached_at, full_looks)
    s = score(truth, [r for r, _, _ in runs])
    assert s["attachment_rate"] >= 0.99 and s["false_fighters"] == 0 and s["raw_false_base_detections"] == 0, s
    # Every fighter in view is still tracked (white-rimmed 25 mm ones included).
    last, fr = runs[-1][0].state, truth["frames"][-1]
    for g in fr["fighters"]:
        if g["visible_fraction"] >= 0.95:
            assert any(np.hypot(f.x - g["x"], f.y - g["y"]) < 0.3 for f in last.fighters), g


def test_without_the_tag_face_test_the_shadowed_token_would_be_a_fighter(shadowed, monkeypatch):
    """The test above can fail: with the tag-face test off, the paper disc's edge is read
    as a white side's 25 mm rim and reported as a fighter until its tag is read. (The
    tag search now reads this tag at once; with its grid's shifts held to 2 px and no
    second reading centred on the disc's edge, as before, the tag stays unread for some
    looks, as a tag under a deeper shadow would.)"""
    import tracker.vision.tag_reader as tag_reader
    import tracker.vision.tags as tags

    folder, truth = shadowed
    monkeypatch.setattr(tags, "SEARCH_SHIFT_IN", 0.0)
    monkeypatch.setattr(tag_reader, "disc_centre", lambda *args: None)
    tags._search_grids.cache_clear()
    try:
        runs = _run(folder, face_test=False)
    finally:
        tags._search_grids.cache_clear()
    s = score(truth, [r for r, _, _ in runs])
    assert s["raw_false_base_detections"] > 0, s


# ---------------------------------------------------------------------------- dice and paper never bases
# Seed 8 (3 s at 5 fps): a white die (die-5, a 0.6 in cube) beside a white side's
# fighters fits a 25 mm white rim. Seed 5 (10 s at 1.5 fps: the table of the 10 s
# benchmark render): the arcs of two paper tokens side by side close a white 32 mm "rim"
# round bare mat, and the tokens beside it were attached to that phantom.
CLUTTERED = {5: (10.0, 1.5), 8: (3.0, 5.0)}


@pytest.fixture(scope="module", params=sorted(CLUTTERED))
def cluttered(request, tmp_path_factory):
    from tracker.synthetic import render_set

    seconds, fps = CLUTTERED[request.param]
    folder = render_set(tmp_path_factory.mktemp(f"clutter{request.param}"), seed=request.param, width=1280,
                        height=720, seconds=seconds, fps=fps, n_calib_views=8, n_fighters=12,
                        side_colours=("red", "white", "blue"), state_tokens=12, clutter=12)
    return request.param, folder, json.loads((folder / "truth.json").read_text())


def _run_body(folder, body_test: bool = True):
    from tracker.pipeline import Pipeline
    from tracker.sources import open_source

    pipe = Pipeline.from_footage(folder)
    if not body_test:  # _base_body's two tests off: any rim fit of a base's size is a base
        pipe.detector.bare_middle_max, pipe.detector.solid_middle_min = 0.0, np.inf
        pipe.detector.token_edges_explain = False  # (nor is a rim on token discs' edges taken away)
    return [pipe.process(frame, i, t) for i, t, frame in open_source(folder)]


def test_no_die_damage_disc_or_token_is_ever_a_fighter_and_tokens_attach(cluttered):
    seed, folder, truth = cluttered
    results = _run_body(folder)
    s = score(truth, results)
    assert s["visible_token_frames"] >= 100, s
    assert s["attachment_rate"] >= 0.99 and s["attached_wrong"] == 0, s
    assert s["false_fighters"] == 0 and s["raw_false_base_detections"] == 0, s
    assert s["false_objectives_or_treasure"] == 0, s
    stood = np.zeros((0, 2))
    for res, fr in zip(results, truth["frames"]):
        # No fighter anywhere a fighter has not stood (phantoms between tokens included):
        # one picked up is held where it was last seen.
        stood = np.vstack([stood, [(g["x"], g["y"]) for g in fr["fighters"]]])
        for f in res.state.fighters:
            assert np.hypot(stood[:, 0] - f.x, stood[:, 1] - f.y).min() < 0.75, (seed, fr["frame"], f)
    # Every fighter in view at the end is tracked: white-rimmed 25 mm ones, and the red
    # 25 mm one on seed 5's platform whose miniature barely shows, included.
    last, fr = results[-1].state, truth["frames"][-1]
    for g in fr["fighters"]:
        if g["visible_fraction"] >= 0.95:
            assert any(np.hypot(f.x - g["x"], f.y - g["y"]) < 0.3 for f in last.fighters), (seed, g)


def test_without_the_base_body_tests_the_die_or_the_phantom_comes_back(cluttered):
    """The test above can fail: without _base_body (and without the token discs taking
    their edges from weak rims, _on_token_edges) the die is a white 25 mm fighter (seed
    8), and the phantom between two tokens takes their attachment (seed 5)."""
    seed, folder, truth = cluttered
    s = score(truth, _run_body(folder, body_test=False))
    if seed == 8:
        assert s["false_fighters"] > 0, s
    else:
        assert s["attachment_rate"] < 0.99 and s["attached_wrong"] > 0, s


# ---------------------------------------------------------------------------- a side short of a base
@pytest.fixture(scope="module")
def short_side(tmp_path_factory):
    """Seed 21 (10 s at 1.5 fps: the table of the 10 s benchmark render, fewer frames):
    from its 13th frame a blue fighter is out of sight, and the blue side is one 25 mm
    base short while dice and red damage counters lie on the table."""
    from tracker.synthetic import render_set

    folder = render_set(tmp_path_factory.mktemp("short-side"), seed=21, width=1280, height=720, seconds=10.0,
                        fps=1.5, n_calib_views=8, n_fighters=12, side_colours=("red", "white", "blue"),
                        state_tokens=12, clutter=12)
    return folder, json.loads((folder / "truth.json").read_text())


def _fighters_on_props_by_roster(folder, truth, guard: bool) -> list[tuple]:
    """(frame, prop id) of each fighter not matched to a true one, standing on a die, a
    damage counter or a state token, whose side only the roster gave (``rival_sides``)."""
    from tracker.pipeline import Pipeline
    from tracker.sources import open_source

    pipe = Pipeline.from_footage(folder)
    pipe.detector.roster_side_guard = guard
    out = []
    for (i, t, frame), fr in zip(open_source(folder), truth["frames"]):
        st = pipe.process(frame, i, t).state
        real = set(_match([(g["x"], g["y"]) for g in fr["fighters"]], [(f.x, f.y) for f in st.fighters]).values())
        props = fr.get("clutter", []) + fr.get("state_tokens", [])
        for j, f in enumerate(st.fighters):
            near = [p["id"] for p in props if np.hypot(p["x"] - f.x, p["y"] - f.y) < 0.4]
            if j not in real and near and f.rival_sides:
                out.append((fr["frame"], near[0]))
    return out


def test_a_side_short_of_a_base_never_takes_a_die_or_a_damage_counter_for_it(short_side):
    """With one blue fighter out of sight, every die and damage counter was a patch of a
    25 mm base's size that only the blue side lacked: each became a blue fighter, its
    side unsure (measured when written: 14 such fighter-frames in frames 12-14 without
    ``roster_side_guard``). More such patches than the side lacks are doubts. (White dice
    the learned refiner names white by what it sees are not this rule's: still two
    fighters there, issue #28.)"""
    folder, truth = short_side
    assert _fighters_on_props_by_roster(folder, truth, guard=True) == []
    assert len(_fighters_on_props_by_roster(folder, truth, guard=False)) >= 5
