"""The learned stand refiner (``tracker/vision/stand_refiner.py``) on an Epic table it was not
trained on (a tuning-split table past the ones ``scripts/train_stand_refiner.py`` reads):
guesses put off each true stand, along it and turned, come back near it; the crop it
reads lies along the guess; the detector takes its readings for every stand."""

import pickle

import numpy as np
import pytest
from conftest import _first_frame

from tracker.vision.base_crops import CROP_PX, camera_nadir
from tracker.vision.stand_refiner import CHANNELS, MODEL_PATH, StandRefiner, stand_axes, stand_crop, wrap_turn


@pytest.fixture(scope="module")
def unseen(epic_unseen_720p_table):
    return _first_frame(epic_unseen_720p_table)


def test_the_model_is_shipped_and_travels_pickled():
    assert MODEL_PATH.exists() and MODEL_PATH.stat().st_size < 2_000_000
    a, b = StandRefiner(), pickle.loads(pickle.dumps(StandRefiner()))
    crops = np.random.default_rng(0).random((2, CHANNELS, CROP_PX, CROP_PX), np.float32)
    outs = []
    for r in (a, b):
        r.net.setInput(crops)
        outs.append(r.net.forward("offset"))
    assert outs[0].shape == (2, 3) and np.allclose(outs[0], outs[1])


def test_the_crop_lies_along_the_guess(unseen):
    """A stand's crop at its true place and angle: its long side runs along the crop's
    columns (more of its rim colour along the middle row than down the middle column)."""
    pipe, frame, truth = unseen
    det = pipe.detector
    empty = det._background_bgr
    nadir = camera_nadir(det.camera)
    stands = [f for f in truth["fighters"] if f.get("shape") == "rect" and f["visible_fraction"] >= 0.95]
    assert len(stands) >= 6
    wider = 0
    for s in stands:
        c = stand_crop(det.camera, frame, empty, np.array([s["x"], s["y"]]), s["z"] + det.config.base_thickness_in,
                       s["angle_deg"], nadir, det.light.as_seen(det.config.sides[s["team"]].rim_bgr))
        diff = np.abs(c[..., 0:3] - c[..., 3:6]).sum(axis=2) > 0.15  # (not the empty table)
        m = CROP_PX // 2
        wider += diff[m - 2:m + 2, :].sum() > diff[:, m - 2:m + 2].sum()
        assert np.allclose(c[..., 9:], c[0, 0, 9:]) and abs(np.hypot(*c[0, 0, 9:]) - 1) < 1e-3
    assert wider >= 0.8 * len(stands), (wider, len(stands))


def test_guesses_off_each_stand_come_back(unseen):
    """Guesses 0.25 in off along each true stand and turned 8 degrees: read back to
    within a third of that, on a table the refiner never saw."""
    pipe, frame, truth = unseen
    det = pipe.detector
    stands = [f for f in truth["fighters"] if f.get("shape") == "rect" and f["visible_fraction"] >= 0.9]
    xy = np.array([[f["x"], f["y"]] for f in stands])
    sign = np.where(np.arange(len(stands)) % 2, 1.0, -1.0)
    along = np.array([stand_axes(f["angle_deg"])[0] for f in stands])
    guess = xy + 0.25 * sign[:, None] * along
    angle = np.array([f["angle_deg"] for f in stands]) + 8.0 * sign
    top = np.column_stack([guess, [f["z"] + det.config.base_thickness_in for f in stands]])
    got, turned = StandRefiner().read(det.camera, frame, det._background_bgr, top, angle, camera_nadir(det.camera),
                                      np.array([det.light.as_seen(det.config.sides[f["team"]].rim_bgr) for f in stands]))
    err = np.hypot(*(got - xy).T)
    turn = np.abs(wrap_turn(turned - np.array([f["angle_deg"] for f in stands])))
    assert np.sqrt(np.mean(err ** 2)) < 0.25 / 3, np.round(err, 3)
    assert np.sqrt(np.mean(turn ** 2)) < 8.0 / 2, np.round(turn, 1)


def test_the_detector_places_stands_where_the_refiner_reads_them(unseen):
    """The stands of a look, placed with the refiner and without: with it, nearer the
    true stands (RMS), none lost."""
    from evalsets import match

    pipe, frame, truth = unseen
    det = pipe.detector
    shown = [f for f in truth["fighters"] if f["visible_fraction"] >= 0.5]

    def rms_and_found():
        d = pipe.judge_still(frame, 0, 0.0).detections
        d = d[d.kind == 0]
        pairs = match([(f["x"], f["y"]) for f in shown], [tuple(p[:2]) for p in d.xyz], 0.75)
        return float(np.sqrt(np.mean([e ** 2 for _, _, e in pairs]))), len(pairs)

    refiner = det.stand_refiner
    try:
        det.stand_refiner = None
        without, n_without = rms_and_found()
    finally:
        det.stand_refiner = refiner
    with_, n_with = rms_and_found()
    assert n_with >= n_without
    assert with_ < 0.85 * without, (without, with_)
