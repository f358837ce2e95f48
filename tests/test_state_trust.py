"""A state the rules can trust (issue #28): a fighter the picture plainly shows gone
leaves the state at once; one that terrain or a hand may hide does not."""

import json

import numpy as np

from evalsets import eval_set, match
from tracker.pipeline import Pipeline
from tracker.sources import open_source


def test_fighters_gone_from_a_bare_place_leave_the_state_at_once():
    """warcry-3's eight pictures tracked as one clip: fighters jump inches between them.
    Each old place is bare table the next frame; without the bare-table test the old
    tracks stayed up to 1.5 s as fighters in sight where nothing stands (16 such
    fighter-frames here; with it, 2)."""
    folder = eval_set("warcry-3")
    pipe = Pipeline.from_footage(folder)
    pipe.full_every = 1
    scene = json.loads((folder / "truth.json").read_text())
    phantoms, found = 0, 0
    with open_source(folder) as src:
        for index, t, frame in src:
            state = pipe.process(frame, index, t).state
            seen = [f for f in state.fighters if not f.occluded]
            m = match([(f["x"], f["y"]) for f in scene["frames"][index]["fighters"]], [(f.x, f.y) for f in seen])
            phantoms += len(seen) - len(m)
            found += len(m)
    assert phantoms <= 4, phantoms
    assert found >= 75  # of 96 true fighter-frames; a new place waits one frame to be confirmed
    reasons = [e for e in pipe.tracker.events_as_dicts() if e.get("kind") == "removed"]
    assert any(e.get("reason") == "its place is bare table" for e in reasons), reasons[:3]


def test_bare_is_false_where_a_fighter_stands_or_terrain_hides_the_floor():
    folder = eval_set("warcry-2")
    pipe = Pipeline.from_footage(folder)
    det = pipe.detector
    scene = json.loads((folder / "truth.json").read_text())
    with open_source(folder) as src:
        _, _, frame = next(iter(src))
    fighters = scene["frames"][0]["fighters"]
    xyz = np.array([[f["x"], f["y"], f["z"]] for f in fighters])
    r = np.array([f["base_mm"] / 25.4 / 2 for f in fighters])
    assert not det.bare(frame, xyz, r).any()
    # Open floor far from every fighter and token is bare.
    W, D = det.config.table.play_area_in
    rng = np.random.default_rng(3)
    spots = []
    while len(spots) < 20:
        p = rng.uniform([1, 1], [W - 1, D - 1])
        near = [np.hypot(*(p - [o["x"], o["y"]])) for o in fighters + scene["frames"][0]["tokens"]]
        c = np.round(det.floor.to_pixel(p[None])[0]).astype(int)
        k = int(det.px_per_in)  # an inch round it clear of what terrain hides
        if min(near) > 2.5 and not det._terrain_mask_floor[c[1] - k:c[1] + k + 1, c[0] - k:c[0] + k + 1].any():
            spots.append(p)
    spots = np.c_[np.array(spots), np.zeros(len(spots))]
    assert det.bare(frame, spots, np.full(len(spots), 0.5)).all()
    # Next to a terrain piece, whose walls may hide a base from the camera: never bare.
    piece = next(p for p in det.terrain if p.type != "low")
    corner = np.asarray(piece.footprint, float)[0]
    assert not det.bare(frame, np.array([[*corner, 0.0]]), np.array([0.5]))[0]


def test_a_photo_whose_hand_hides_the_fighter_holding_an_objective_says_look_at_the_table(
        request, tmp_path_factory):
    """A judge's photo (a 720p mixed Warcry tuning table, seed 100025, its fifth frame)
    with a hand over the one fighter within 3" of an objective: the state lists the part
    of the table the hand hides, and control there is too close to call, not "no side"
    (measured when written: uncontrolled, called outright, without the hidden area)."""
    from dataclasses import replace

    from conftest import _first_frame, _tuning_table_cached

    from tracker.rules.warcry import objective_control

    pipe, frame, truth = _first_frame(_tuning_table_cached(request, tmp_path_factory, 100025, "warcry-mixed",
                                                           "hand-over-holder", frames=8), 4)
    state = pipe.judge_still(frame, 4, 0.0).state
    assert state.hidden and all(h.why == "hand" for h in state.hidden)
    obj = next(t for t in truth["tokens"] if t["kind"] == "objective" and abs(t["x"] - 26.33) < 0.1)
    seen = [t for t in state.objectives() if abs(t.x - obj["x"]) < 0.5 and abs(t.y - obj["y"]) < 0.5]
    assert len(seen) == 1

    def call(st):
        return next(r for r in objective_control(st).rulings if r.subject == seen[0].id)

    assert call(replace(state, hidden=())).verdict == "no"  # (the hidden fighter's side holds it)
    ruling = call(state)
    assert ruling.verdict == "too close to call"
    assert any("hand hides part of the table" in n for n in ruling.notes), ruling.notes
