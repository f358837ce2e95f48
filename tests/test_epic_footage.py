"""The bundled Epic-scale clip (sample_footage/epic-demo: 180 x 120 cm, units of
40 x 20 mm stands) tracked end to end by the same pipeline as Warcry, checked against
its truth: stands found, grouped into the roster's units, control at the end as the
rules core computes it on the true positions, and the Rescue marker's story (picked up
by its owner's unit, carried, dropped where the escort was destroyed)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from tracker.epic import cm_to_in
from tracker.synthetic.epic_game import truth_world_state

EPIC = Path(__file__).resolve().parents[1] / "sample_footage" / "epic-demo"


@pytest.fixture(scope="module")
def epic_run():
    """Every frame of the Epic clip through a real pipeline: (truth, results)."""
    from tracker.pipeline import Pipeline
    from tracker.sources import footage_video, open_source

    if not (EPIC / "game.yaml").exists() or footage_video(EPIC) is None:
        pytest.fail(f"{EPIC}: the bundled Epic footage is missing; run `tabletracker make-sample --epic`")
    truth = json.loads((EPIC / "truth.json").read_text())
    pipe = Pipeline.from_footage(EPIC)
    results = []
    with open_source(footage_video(EPIC)) as src:
        for index, t, frame in src:
            r = pipe.process(frame, index, t)
            r.frame = None  # keep memory small
            results.append(r)
    return truth, results, pipe


def _match(truth_xy: np.ndarray, got_xy: np.ndarray, gate: float = 0.4):
    if not len(truth_xy) or not len(got_xy):
        return []
    d = np.linalg.norm(truth_xy[:, None, :] - got_xy[None, :, :], axis=2)
    rows, cols = linear_sum_assignment(d)
    return [(int(r), int(c), float(d[r, c])) for r, c in zip(rows, cols) if d[r, c] <= gate]


def test_stands_found_with_their_sides_and_no_phantoms(epic_run):
    truth, results, _ = epic_run
    found = total = phantoms = reported = wrong_side = 0
    errors = []
    for ft, r in zip(truth["frames"], results):
        tf = [f for f in ft["fighters"] if not f["occluded"]]
        got = [f for f in r.state.fighters if not f.occluded]
        m = _match(np.array([(f["x"], f["y"]) for f in tf]).reshape(-1, 2),
                   np.array([(f.x, f.y) for f in got]).reshape(-1, 2))
        total += len(tf)
        found += len(m)
        reported += len(got)
        all_true = np.array([(f["x"], f["y"]) for f in ft["fighters"]]).reshape(-1, 2)
        for f in got:  # a phantom: nothing true near it, hidden or not
            if not len(all_true) or np.min(np.linalg.norm(all_true - (f.x, f.y), axis=1)) > 0.6:
                phantoms += 1
        for i, j, d in m:
            errors.append(d)
            wrong_side += tf[i]["team"] != got[j].side
    assert found / total >= 0.98, f"stands found {found}/{total}"
    assert phantoms <= 0.005 * reported, f"{phantoms} phantom stands in {reported}"
    assert wrong_side == 0
    assert float(np.sqrt(np.mean(np.square(errors)))) <= 0.06, "position RMS (in)"


def test_a_stand_that_has_just_stopped_is_followed_not_held_where_its_last_step_left_it(epic_run):
    """Frames 42-49 of the bundled clip: stand 15's unit has halted. Its last fit while
    moving was 0.094 in off, and the change gate, seeing a still picture round it, held
    it there until the next whole look. A fighter that moved is now followed until seen
    still three times: it settles on its rim."""
    truth, results, _ = epic_run
    for k in range(42, 50):
        t = next(f for f in truth["frames"][k]["fighters"] if f["id"] == 15)
        prev = next(f for f in truth["frames"][k - 1]["fighters"] if f["id"] == 15)
        assert (t["x"], t["y"]) == (prev["x"], prev["y"]) and not t["occluded"]  # still, in sight
        got = min(np.hypot(f.x - t["x"], f.y - t["y"]) for f in results[k].state.fighters if not f.occluded)
        assert got < 0.08, (k, got)


def test_a_still_stand_is_not_pulled_onto_its_neighbours_rim(epic_run):
    """Frames 3-5 of the bundled clip: stand 5 stands still, its rim faint. A follow's fit
    2 px over, on its neighbour's rim, saw 7 % more of its outline and won; the stand
    was then taken to be moving and held 0.15 in off. A fit that far off course must
    now see twice as much more to win."""
    truth, results, _ = epic_run
    for k in range(3, 6):
        t = next(f for f in truth["frames"][k]["fighters"] if f["id"] == 5)
        assert not t["occluded"]
        got = min(np.hypot(f.x - t["x"], f.y - t["y"]) for f in results[k].state.fighters if not f.occluded)
        assert got < 0.06, (k, got)


def test_no_stand_swaps_ids_with_another_even_in_a_fast_slide(epic_run):
    """Each true stand keeps one track id from frame to frame (matched within 0.4 in,
    as above). At 8 frames/s a unit here slides up to 1.4 in a frame, more than its
    stands' 1.15 in spacing: one stand found a little off then predicts its next place
    wrongly, the follows find it at its neighbour's, and ids swap inside the unit unless
    the unit is taken to move as one (10 swaps before)."""
    truth, results, _ = epic_run
    last, swaps = {}, []
    for ft, r in zip(truth["frames"], results):
        tf = [f for f in ft["fighters"] if not f["occluded"]]
        got = [f for f in r.state.fighters if not f.occluded]
        for i, j, _ in _match(np.array([(f["x"], f["y"]) for f in tf]).reshape(-1, 2),
                              np.array([(f.x, f.y) for f in got]).reshape(-1, 2)):
            stand, track = tf[i]["id"], got[j].id
            if last.get(stand, track) != track:
                swaps.append((ft["frame"], stand, last[stand], track))
            last[stand] = track
    assert len(last) >= 20
    assert not swaps, swaps


def test_stands_are_grouped_into_their_roster_units(epic_run):
    truth, results, _ = epic_run
    unit_of = {s["id"]: s["unit"] for s in truth["stands"]}
    ft, r = truth["frames"][-1], results[-1]
    tf = ft["fighters"]
    got = list(r.state.fighters)
    m = _match(np.array([(f["x"], f["y"]) for f in tf]), np.array([(f.x, f.y) for f in got]))
    assert len(m) == len(tf)
    wrong = [(tf[i]["id"], unit_of[tf[i]["id"]], got[j].unit) for i, j, _ in m if unit_of[tf[i]["id"]] != got[j].unit]
    assert not wrong, f"stands in the wrong unit: {wrong}"


def test_control_at_the_end_matches_the_rules_on_the_true_positions(epic_run):
    from tracker.config import GameConfig
    from tracker.rules.epic import control

    truth, results, pipe = epic_run
    cfg = GameConfig.load(EPIC).epic
    want = control(truth_world_state(truth, truth["frames"][-1]), cfg).control
    got = results[-1].epic.control.control
    assert got == want
    # The clip is built so that both sides hold something and something is contested.
    assert 0 in want.values() and 1 in want.values() and None in want.values()


def test_rescue_is_picked_up_by_its_owner_carried_and_dropped_where_the_escort_fell(epic_run):
    truth, results, pipe = epic_run
    ev = truth["epic_events"]
    table = pipe.epic
    picks = [r for r in table.rulings if r.question == "rescue pick-up" and r.details.get("escort")]
    assert picks and picks[0].details["unit"] == ev["rescue_pick_up"]["unit"]
    # Carried: while the truth has it escorted, the tracked marker is on the carrying stand,
    # from 1.5 s after the pick-up (a token is taken for gone half a second after it was
    # last seen, and tokens are looked for on full looks only).
    settle = ev["rescue_pick_up"]["time_s"] + 1.5
    carried = [(ft, r) for ft, r in zip(truth["frames"], results) if ft["rescue"][0]["escort"] and ft["time_s"] >= settle]
    near = 0
    for ft, r in carried:
        rescue = next(x for x in r.epic.rescues if x.marker_id == ft["rescue"][0]["marker"])
        tx, ty = ft["rescue"][0]["x_in"], ft["rescue"][0]["y_in"]
        near += rescue.escort == ft["rescue"][0]["escort"] and math.dist((cm_to_in(rescue.x_cm), cm_to_in(rescue.y_cm)), (tx, ty)) < 0.3
    assert len(carried) > 20 and near >= 0.95 * len(carried), f"marker with its escort in {near}/{len(carried)} carried frames"
    # Dropped: after the escort is destroyed, the marker is on the ground where it fell.
    drops = [r for r in table.rulings if r.question == "rescue escort destroyed"]
    assert drops, "the escort's destruction was seen"
    last = results[-1].epic.rescues[0]
    fx, fy = truth["frames"][-1]["rescue"][0]["x_in"], truth["frames"][-1]["rescue"][0]["y_in"]
    assert not last.escorted and math.dist((cm_to_in(last.x_cm), cm_to_in(last.y_cm)), (fx, fy)) < 0.3


def test_every_marker_placement_is_legal(epic_run):
    _, results, _ = epic_run
    view = results[5].epic
    assert {p.marker_id: p.verdict for p in view.placements} == {m.id: "yes" for m in view.markers}


def _fresh_detector_at(index: int):
    """The clip's truth, a detector calibrated from the clip's own views (no tracking
    history), and frame ``index``."""
    import cv2

    from tracker.pipeline import Pipeline
    from tracker.sources import footage_video

    truth = json.loads((EPIC / "truth.json").read_text())
    det = Pipeline.from_footage(EPIC).detector
    cap = cv2.VideoCapture(str(footage_video(EPIC)))
    for _ in range(index + 1):
        ok, frame = cap.read()
        assert ok
    return truth, det, frame


def test_a_stand_whose_rim_shows_weaker_than_its_neighbours_takes_its_own_edge():
    """Frame 10 of the bundled clip: the middle stand of a line (stand 5) shows its rim
    faintly, and the next stand's rim, 2 px past its edge, shows stronger. Taking each
    profile's highest peak lent that rim to its outline: found 0.15 in off. The band
    nearest where the rim is expected is its own."""
    from tracker.detection import KIND_BASE

    truth, det, frame = _fresh_detector_at(10)
    stands = det.detect(frame)
    stands = stands[stands.kind == KIND_BASE]
    for sid in (4, 5, 6):  # the line of three, each 0.3 in from the next
        t = truth["frames"][10]["fighters"][sid]
        err = np.hypot(stands.xyz[:, 0] - t["x"], stands.xyz[:, 1] - t["y"]).min()
        assert err < 0.07, (sid, err)


def test_a_stand_slowing_to_a_halt_is_found_where_it_stopped_not_where_its_step_would_take_it():
    """Frame 77 of the bundled clip: the unit stops. Stand 6's track, its angle 3 degrees
    off, predicts it 0.35 in on (a full step) where it moved 0.15; the fit started there
    stays on the neighbour's side, 0.17 in off, and was chosen as the one nearest the
    prediction (then held for 4 still frames). Judged by its distance from the course
    between its last place and the prediction, the fit on the stand is taken."""
    from tracker.detection import KIND_BASE

    truth, det, frame = _fresh_detector_at(77)
    t = next(f for f in truth["frames"][77]["fighters"] if f["id"] == 6)
    t_before = next(f for f in truth["frames"][76]["fighters"] if f["id"] == 6)
    step = np.array([t["x"] - t_before["x"], t["y"] - t_before["y"]])
    assert 0.1 < np.hypot(*step) < 0.2  # slowing: the step before was 0.35 in
    predicted = np.array([t["x"], t["y"]]) + step / np.hypot(*step) * 0.2  # where the last step carries it
    spec = (float(predicted[0]), float(predicted[1]), 0.0, t["team"], 40.0, "rect", 40.0, 20.0, 95.9,
            (t_before["x"], t_before["y"]))
    got = det.follow(frame, [spec])
    got = got[got.kind == KIND_BASE]
    assert len(got) == 1
    assert np.hypot(got.xyz[0, 0] - t["x"], got.xyz[0, 1] - t["y"]) < 0.05
