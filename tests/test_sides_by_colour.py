"""A fit's side by which side's colour its rim is (``TableDetector._sides_by_colour``,
``vision.pursuit.rim_shares``): a rim of a near hue shows a clean edge on another side's
evidence too, and the colour, not the edge, says whose it is. First a drawn rim, then
two tuning tables of the shared renderer: purple rims fitted on blue's evidence at 720p,
and crescents under miniatures painted another side's colour at 1080p."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from conftest import _first_frame

from tracker.vision.colour import detector_lab
from tracker.vision.pursuit import rim_shares
from tracker.vision.rim_evidence import RimColours
from tracker.vision.stands import Outline


def test_a_purple_rim_is_won_by_purple_though_blue_answers_to_it():
    mat = np.full((80, 80, 3), (170, 190, 200), np.uint8)
    frame = mat.copy()
    cv2.circle(frame, (40, 40), 20, (150, 45, 125), 3)  # a purple rim (BGR), 3 px wide
    cv2.circle(frame, (40, 40), 17, (60, 60, 60), -1)   # the base's dark top inside it
    purple, blue = detector_lab(np.uint8([[[150, 45, 125]]]))[0, 0], detector_lab(np.uint8([[[190, 95, 25]]]))[0, 0]
    lab = detector_lab(frame)
    ev_p, ev_b = RimColours(detector_lab(mat), [purple, blue]).evidence(lab)
    assert ev_b[40, 59] > 0.05  # blue's evidence answers to the purple rim ...
    shares = rim_shares({0: ev_p, 1: ev_b}, Outline("round", 21.5, 21.5), 40.0, 40.0, 0.0, inner=6.0)
    assert shares[0] > 0.8 and shares[1] == 0.0, shares  # ... the rim is purple's


def _sides(pipe, frame, truth, by_colour: bool, learnt: bool = False) -> tuple[int, int]:
    """(fighters matched, of them read as the wrong side), by the hand rules alone unless
    ``learnt`` (then the learned refiner reads weak bases' sides too)."""
    from contextlib import nullcontext

    from evalsets import match, rules_only

    pipe.detector.sides_by_colour = by_colour
    try:
        with nullcontext() if learnt else rules_only(pipe.detector):
            fighters = pipe.judge_still(frame, 0, 0.0).state.fighters
    finally:
        pipe.detector.sides_by_colour = True
    tf = [t for t in truth["fighters"] if t["visible_fraction"] >= 0.5]
    pairs = match([(t["x"], t["y"]) for t in tf], [(f.x, f.y) for f in fighters], 0.75)
    return len(pairs), sum(tf[i]["team"] != fighters[j].side for i, j, _ in pairs)


@pytest.fixture(scope="module")
def purple_and_blue(request, tmp_path_factory):
    """A 720p Warcry tuning table (seed 100122, one frame): purple and blue rims."""
    from conftest import _tuning_table_cached

    return _first_frame(_tuning_table_cached(request, tmp_path_factory, 100122, "warcry", "purple-blue"))


@pytest.mark.slow
def test_purple_rims_fitted_on_blues_evidence_are_purple(purple_and_blue):
    """(Measured when written: 3 of 17 fighters read blue for purple by their edges,
    none by their colour.)"""
    pipe, frame, truth = purple_and_blue
    n_edge, wrong_edge = _sides(pipe, frame, truth, by_colour=False)
    n_colour, wrong_colour = _sides(pipe, frame, truth, by_colour=True)
    assert wrong_edge >= 3 and wrong_colour == 0, (wrong_edge, wrong_colour)
    # (Found as many or one fewer: 18 of 19 on OpenCV 4.14 / numpy 2.4, 2026-12-07; as many when written.)
    assert n_colour >= n_edge - 1, (n_edge, n_colour)
    # The learned refiner, reading the rims the edges fitted, puts most of them right too.
    _, wrong_learnt = _sides(pipe, frame, truth, by_colour=False, learnt=True)
    assert wrong_learnt < wrong_edge, (wrong_edge, wrong_learnt)


@pytest.fixture(scope="module")
def painted_over(request, tmp_path_factory):
    """A 1080p Warcry tuning table (seed 100106, one frame): a red crescent beside a
    purple miniature, a yellow one beside a red miniature."""
    from conftest import _tuning_table_cached

    return _first_frame(_tuning_table_cached(request, tmp_path_factory, 100106, "warcry", "painted-over",
                                             size=(1920, 1080)))


@pytest.mark.slow
def test_a_miniatures_paint_over_the_rim_names_no_side(painted_over):
    """Paint that covers the rim goes on inward: it wins none of the rim, and the
    crescent's own side stands. (Measured when written on this frame of the benchmark's
    clip: no side wrong by the edges or by the colour; two by the colour read without
    the paint test.)"""
    pipe, frame, truth = painted_over
    n, wrong = _sides(pipe, frame, truth, by_colour=True)
    assert wrong == 0 and n == len([t for t in truth["fighters"] if t["visible_fraction"] >= 0.5]), (n, wrong)


@pytest.fixture(scope="module")
def blue_crescent(request, tmp_path_factory):
    """A 720p Warcry tuning table (seed 100110, one frame): a blue 32 mm base whose miniature
    hides nearly all of its rim; the side fielding purple fields no 32 mm base."""
    from conftest import _tuning_table_cached

    return _first_frame(_tuning_table_cached(request, tmp_path_factory, 100110, "warcry", "blue-crescent"))


@pytest.mark.slow
def test_a_patch_read_alike_under_two_near_rims_is_the_side_that_fields_its_size(blue_crescent):
    """The learned refiner reads the patch as a base under blue's rim colour and under
    purple's alike (1.0 and 0.99), and as 32 mm under each: blue fields 32 mm bases,
    purple none, so it is blue's (``doubt_side_by_size``; measured when written: not
    found without, found 0.07 in off with)."""
    from conftest import _judged_with

    pipe, frame, truth = blue_crescent
    t = next(f for f in truth["fighters"] if f["team"] == 1 and abs(f["x"] - 26.0) < 0.1 and abs(f["y"] - 7.05) < 0.1)

    def nearest(**tunables):
        d = _judged_with(pipe, frame, 0, **tunables)
        b = d[d.kind == 0]
        k = int(np.argmin(np.hypot(b.xyz[:, 0] - t["x"], b.xyz[:, 1] - t["y"])))
        return float(np.hypot(b.xyz[k, 0] - t["x"], b.xyz[k, 1] - t["y"])), int(b.side[k]), float(b.base_mm[k])

    off, _, _ = nearest(doubt_side_by_size=False)
    assert off > 0.75, off
    off, side, mm = nearest()
    assert off < 0.15 and side == 1 and mm == 32.0, (off, side, mm)
