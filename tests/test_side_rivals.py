"""How sure a fighter's side is (TableDetector._side_rivals, Fighter.rival_sides): a base
whose rim was seen on under a quarter of its outline, or not fitted at all, lists the
other sides whose rim evidence along its outline is at least half its own side's. On a
rendered 720p tuning-split table (real OpenCV, a real render) where rims are read as
each other's: a side read wrong there lists the true one, while the bases seen well say
nothing of other sides."""

from __future__ import annotations

import pytest

from conftest import _first_frame


@pytest.fixture(scope="module")
def unsure(unsure_sides_720p_table):
    return _first_frame(unsure_sides_720p_table)


def test_a_side_read_from_a_thin_rim_names_the_sides_it_could_be(unsure):
    from evalsets import match, rules_only

    from tracker.detection import KIND_BASE, SIDE_SURE_SCORE

    pipe, frame, truth = unsure
    with rules_only(pipe.detector):  # (the rivals rule alone: see the end)
        result = pipe.judge_still(frame, 0, 0.0)
    dets = result.detections
    bases = dets[dets.kind == KIND_BASE]
    well_seen = (bases.score >= SIDE_SURE_SCORE) & ~bases.from_foreground
    assert well_seen.any() and not bases.rivals[well_seen].any()  # a rim seen well: its side is sure
    fighters = result.state.fighters
    tf = truth["fighters"]
    pairs = match([(t["x"], t["y"]) for t in tf], [(f.x, f.y) for f in fighters], 0.75)
    wrong = [(tf[i], fighters[j]) for i, j, _ in pairs if tf[i]["team"] != fighters[j].side]
    # Measured when written: 3 of 13 fighters read as another side, one from a thin rim,
    # whose rival is its true side; 2 read right with rivals.
    assert wrong, "no side read wrong: the table no longer shows what this test is about"
    unsure_wrong = [(t, f) for t, f in wrong if f.rival_sides]
    assert unsure_wrong and all(t["team"] in f.rival_sides for t, f in unsure_wrong), unsure_wrong
    with_rivals = [f for f in fighters if f.rival_sides]
    assert len(with_rivals) <= 0.4 * len(fighters), with_rivals
    assert all(f.side not in f.rival_sides for f in with_rivals)
    # The learned refiner reads the thin rims' sides itself (_sides_read): fewer wrong.
    learnt = pipe.judge_still(frame, 0, 0.0).state.fighters
    again = match([(t["x"], t["y"]) for t in tf], [(f.x, f.y) for f in learnt], 0.75)
    assert sum(tf[i]["team"] != learnt[j].side for i, j, _ in again) < len(wrong)
