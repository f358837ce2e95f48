"""Detection on our own 1080p render of a Warcry game (seed 11, as the speed benchmark's
clip): every fighter in view is found at its own size and side, including the hardest
rim there, a green one on the green mat whose miniature leaves only a thin arc of it."""

import json

import pytest

from evalsets import match
from tracker.detection import KIND_BASE
from tracker.pipeline import Pipeline
from tracker.sources import open_source


@pytest.fixture(scope="module")
def game(tmp_path_factory):
    from tracker.synthetic import render_set

    # The first second of benchmarks/speed_video.py's bench-1080p clip (same seed, same
    # table and fighters; fewer calibration views).
    folder = render_set(tmp_path_factory.mktemp("seed11"), seed=11, width=1920, height=1080, seconds=1.0, fps=15,
                        n_calib_views=8)
    return folder, json.loads((folder / "truth.json").read_text())


def test_every_fighter_in_view_found_at_its_size_even_a_green_rim_on_green_mat(game):
    """Every look of the clip's second (15 frames): each fighter in view found, at its side
    and place; at its size too, but for the green crescent's at most once. Its arc is too
    thin for its curvature to tell its 32 mm from the side's 40 mm every time (shares of
    the two circles through it 0.25 and 0.28 in the look that reads 40; measured when
    written: one look of 15 at 40 mm, and before the straight-edge calibration, two)."""
    folder, truth = game
    pipe = Pipeline.from_footage(folder)
    green = [f for f in truth["frames"][0]["fighters"] if f["team_colour"] == "green" and f["base_mm"] == 32.0
             and abs(f["x"] - 28.5) < 0.1]
    assert len(green) == 1  # the scene is the one described above
    crescent_wrong = 0
    for i, _, frame in open_source(folder):
        d = pipe.detector.detect(frame)
        b = d[d.kind == KIND_BASE]
        fr = truth["frames"][i]
        seen = [f for f in fr["fighters"] if not f["occluded"] and f["visible_fraction"] >= 0.9]
        pairs = match([(f["x"], f["y"]) for f in seen], b.xyz)
        found = {seen[k]["id"]: (int(b.side[j]), float(b.base_mm[j]), dist) for k, j, dist in pairs}
        assert len(found) == len(seen) == len(b), (i, found)
        for f in seen:
            side, mm, dist = found[f["id"]]
            assert side == f["team"], (i, f["id"], side)
            assert dist < 0.15, (i, f["id"], dist)
            if f["id"] == green[0]["id"]:
                crescent_wrong += mm != f["base_mm"]
            else:
                assert mm == f["base_mm"], (i, f["id"], mm)
    assert i == 14 and crescent_wrong <= 1, (i, crescent_wrong)


def test_a_base_seen_by_a_thin_arc_of_rim_is_stated_with_the_margin_its_error_needs(game):
    """The green crescent's visible arc is mostly the base's painted side wall, on the side
    facing the camera: the rim fit alone is 0.09 in off, and the calibration alone would
    state 0.024 in. Its stated sigma must cover that error within the 2 sigma rulings
    allow, while a base whose rim is seen whole keeps a small one; and so it must once
    the learned refiner has moved the crescent (nearer: 0.04 in)."""
    folder, truth = game
    pipe = Pipeline.from_footage(folder)
    _, _, frame = next(iter(open_source(folder)))
    seen = [f for f in truth["frames"][0]["fighters"] if not f["occluded"]]
    crescent = next(f["id"] for f in seen if f["team_colour"] == "green" and abs(f["x"] - 28.5) < 0.1)
    refiner = pipe.detector.refiner
    errs = []
    for pipe.detector.refiner in (None, refiner):
        d = pipe.detector.detect(frame)
        b = d[d.kind == KIND_BASE]
        pairs = {seen[k]["id"]: (j, dist) for k, j, dist in match([(f["x"], f["y"]) for f in seen], b.xyz)}
        j, err = pairs[crescent]
        assert b.score[j] < 0.4  # the case described: a thin arc
        errs.append(err)
        assert err <= 2 * b.sigma_in[j], (err, b.sigma_in[j])
        whole = [b.sigma_in[j] for j, _ in pairs.values() if b.score[j] >= 0.85]
        assert whole and max(whole) < 0.5 * b.sigma_in[pairs[crescent][0]]
        for fid, (j, dist) in pairs.items():  # no base's error beyond its stated margin
            assert dist <= 2 * b.sigma_in[j], (fid, dist, b.sigma_in[j], b.score[j])
    assert errs[0] > 0.06 and errs[1] < errs[0]  # well off by its rim alone; the refiner nearer


def test_a_green_rim_on_the_green_mat_is_fitted_from_its_own_arc(game):
    """Set-up warns that the green side's rims are close to the mat's colour. Their edge
    lies further out the further from the nadir (the colour's own blur: 0.6 px near it,
    2 px 14 in out), so the edge offset the side learns from its whole rims, near the
    nadir, is wrong for its crescents far out: their centres come from their own arcs,
    not from a circle of the side's learnt radius. The green 60 mm base 14 in out, its
    miniature hiding the far side of its rim, is placed within 0.035 in over the second
    (borrowing the learnt radius put it 0.046-0.05 in off)."""
    import numpy as np

    folder, truth = game
    pipe = Pipeline.from_footage(folder)
    green = next(s.index for s in pipe.config.sides if s.colour == "green")
    assert green in pipe.detector._rim_warned
    assert pipe.detector._prior_weight([green]).tolist() == [0.0]
    errs = []
    for i, t, frame in open_source(folder):
        state = pipe.process(frame, i, t).state
        f = next(f for f in truth["frames"][i]["fighters"] if f["team_colour"] == "green" and f["base_mm"] == 60.0)
        if i >= 5:
            errs.append(min(np.hypot(g.x - f["x"], g.y - f["y"]) for g in state.fighters))
    assert len(errs) == 10 and np.median(errs) < 0.035, errs


def test_a_fighter_beside_a_hand_is_still_followed():
    """The bundled clip, frames 296-314: a hand reaches past fighter 7 (76-95 % of it
    in sight, the grown hand mask over its centre). Following it up to the skin itself,
    not the mask grown 0.3 in round it for full looks, finds it where it is; masked with
    the grown mask it was lost for 8 of those frames."""
    import cv2
    import numpy as np

    from pathlib import Path

    folder = Path(__file__).resolve().parents[1] / "sample_footage" / "warcry-demo"
    truth = json.loads((folder / "truth.json").read_text())
    det = Pipeline.from_footage(folder).detector
    cap = cv2.VideoCapture(str(folder / "clip.mp4"))
    checked = 0
    for i in range(315):
        ok, frame = cap.read()
        assert ok
        if i not in (296, 298, 299, 304, 314):
            continue
        f = next(x for x in truth["frames"][i]["fighters"] if x["id"] == 7)
        assert not f["occluded"]
        got = det.follow(frame, [(f["x"], f["y"], f["z"], f["team"], f["base_mm"])])
        assert got.hand_over(f["x"], f["y"])  # the grown mask is over it: a hand is that near
        bases = got[got.kind == KIND_BASE]
        assert len(bases) == 1, i
        assert np.hypot(bases.xyz[0, 0] - f["x"], bases.xyz[0, 1] - f["y"]) < 0.03, i
        checked += 1
    assert checked == 5


def test_painted_walls_are_learnt_only_for_sides_that_stand_out_from_the_mat(game):
    """Our renderer paints its bases' side walls, and its config says so. A look learns
    from its whole rims how much of the wall each side shows as rim, but not for the green
    side on the green mat (its edge runs into the mat's greens); with the config saying
    ``ring`` nothing is learnt and no wall is taken off."""
    import dataclasses

    folder, truth = game
    pipe = Pipeline.from_footage(folder)
    det = pipe.detector
    sides = {s.colour: s for s in det.config.sides}
    assert {s.rim_style for s in sides.values()} == {"painted_edge"}
    _, _, frame = next(iter(open_source(folder)))
    det.detect(frame)
    det.detect(frame)
    seen = {c: len(det._wall_share_seen.get(s.index, ())) for c, s in sides.items()}
    assert seen["green"] == 0 and seen["white"] >= 3, seen
    assert 0.0 <= det._wall_share(sides["white"].index) <= 1.0
    assert det._wall_px(sides["green"].index, [[28.5, 6.7]], 0.0) is None  # (not learnt: nothing taken off)

    ring = Pipeline.from_footage(folder).detector
    ring.config = dataclasses.replace(ring.config, sides=tuple(dataclasses.replace(s, rim_style="ring")
                                                               for s in ring.config.sides))
    ring.detect(frame)
    ring.detect(frame)
    assert not ring._wall_share_seen
    assert ring._wall_px(sides["white"].index, [[28.5, 6.7]], 0.0) is None
