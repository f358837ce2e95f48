"""Hands over the table (tracker.vision.hands): skin-coloured patches that reach in from
beyond the table, never a skin-coloured unit of stands standing on it."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from tracker.vision.colour import detector_lab
from tracker.vision.hands import hand_skin

MAT, SKIN, SLEEVE = (60, 120, 90), (125, 155, 205), (140, 90, 50)
S = 4.0  # pixels an inch of the drawn views


def _view(h: int = 120, w: int = 200) -> tuple[np.ndarray, np.ndarray]:
    empty = np.full((h, w, 3), MAT, np.uint8)
    return empty, empty.copy()


def test_hand_reaching_in_by_its_sleeve_is_found_and_an_island_of_skin_is_not():
    empty, frame = _view()
    cv2.ellipse(frame, (90, 60), (16, 12), 0, 0, 360, SKIN, -1)  # a palm, ~38 sq in at this scale
    cv2.rectangle(frame, (0, 52), (76, 68), SLEEVE, -1)  # its sleeve out to the view's edge
    cv2.rectangle(frame, (150, 30), (170, 50), SKIN, -1)  # flesh-painted stands, 25 sq in
    got = hand_skin(frame, detector_lab(empty), np.ones(frame.shape[:2], bool), S)
    assert got[60, 90] and not got[40, 160]
    # Without its sleeve the same palm is an island too: nothing reaches in.
    frame[52:69, 0:76] = MAT
    assert not hand_skin(frame, detector_lab(empty), np.ones(frame.shape[:2], bool), S).any()


def test_an_arm_from_where_the_camera_stops_seeing_the_table_reaches_in():
    empty, frame = _view()
    valid = np.ones(frame.shape[:2], bool)
    valid[:, :30] = False  # the camera does not see this strip of the view
    cv2.ellipse(frame, (90, 60), (16, 12), 0, 0, 360, SKIN, -1)
    cv2.rectangle(frame, (31, 52), (76, 68), SLEEVE, -1)  # the sleeve runs into the blind strip
    assert hand_skin(frame, detector_lab(empty), valid, S)[60, 90]


def test_the_hands_shadow_on_a_sand_mat_is_not_skin_though_it_links_the_hand():
    """A sand mat is skin-coloured; the hand's shadow on it is changed from the empty table
    but keeps the mat's chromaticity: not skin. The hand itself (another hue) still is."""
    sand, skin = (90, 150, 200), (150, 170, 230)
    empty = np.full((120, 200, 3), sand, np.uint8)
    frame = empty.copy()
    shade = tuple(int(c * 0.7) for c in sand)
    cv2.ellipse(frame, (110, 80), (30, 22), 0, 0, 360, shade, -1)  # the shadow, cast down-right
    cv2.ellipse(frame, (90, 60), (16, 12), 0, 0, 360, skin, -1)  # the palm
    cv2.rectangle(frame, (0, 52), (76, 68), SLEEVE, -1)  # its sleeve out to the view's edge
    valid = np.ones(frame.shape[:2], bool)
    without = hand_skin(frame, detector_lab(empty), valid, S)
    got = hand_skin(frame, detector_lab(empty), valid, S, empty_bgr=empty)
    assert without[95, 125] and not got[95, 125]  # the shadow: skin unless told the table's colours
    assert got[60, 90] and got[55, 100]  # the palm still


def test_too_little_skin_is_no_hand_and_without_the_empty_table_size_decides():
    empty, frame = _view()
    cv2.rectangle(frame, (0, 55), (7, 60), SKIN, -1)  # a sliver at the edge: 3 sq in
    assert not hand_skin(frame, detector_lab(empty), np.ones(frame.shape[:2], bool), S).any()
    cv2.rectangle(frame, (150, 30), (170, 50), SKIN, -1)
    assert hand_skin(frame, None, np.ones(frame.shape[:2], bool), S)[40, 160]


@pytest.fixture(scope="module")
def skin_unit(skin_unit_720p_table):
    from conftest import _first_frame

    return _first_frame(skin_unit_720p_table)


def test_a_skin_coloured_unit_of_stands_is_not_a_hand_and_its_stands_are_found(skin_unit):
    """The rendered table's yellow unit of four stands in a row reads as skin (its rims
    blurred with its miniatures) over more than a hand's least area; taken for a hand
    it had hidden all four from the search."""
    pipe, frame, truth = skin_unit
    assert truth["hand"] is None
    assert not pipe.detector.hand_mask(frame).any()
    d = pipe.detector.detect(frame)
    bases = d.xyz[d.kind == 0][:, :2]
    row = [f for f in truth["fighters"] if f["team_colour"] == "yellow" and f["visible_fraction"] > 0.9]
    found = [f for f in row if len(bases) and np.hypot(*(bases - (f["x"], f["y"])).T).min() < 0.4]
    assert len(row) >= 8 and len(found) >= len(row) - 2, (len(found), len(row))


@pytest.fixture(scope="module")
def hand_over_sand(sand_mat_720p_table):
    """The sand-mat Warcry table's second frame: a hand over the mat, its shadow falling
    beside a green-rimmed 40 mm base."""
    from conftest import _first_frame

    return _first_frame(sand_mat_720p_table, 1)


def test_a_hands_shadow_hides_no_base_and_its_skin_is_still_the_hand(hand_over_sand):
    """The hand's shadow on the sand mat had been read as skin (more of it than of the
    hand), and the 40 mm base at its edge was hidden from the search. Now the skin found
    lies on the hand and its sleeve, and the base is found where it stands."""
    from evalsets import match

    pipe, frame, truth = hand_over_sand
    det = pipe.detector
    view = det.floor_hands
    outline = np.array(truth["hand"]["world"], float)
    px = det.camera.project(outline)  # the hand (and sleeve) as the camera sees them
    drawn = np.zeros(frame.shape[:2], np.uint8)
    cv2.fillPoly(drawn, [px.round().astype(np.int32)], 255)
    on_hand = view.sample(np.dstack([drawn] * 3))[..., 0] > 127
    skin = hand_skin(view.sample(frame), det._bg_hands, view.valid, view.px_per_in, det._bg_hands_bgr)
    assert (skin & on_hand).sum() > 500  # the hand is found ...
    assert (skin & ~on_hand).sum() < 0.25 * (skin & on_hand).sum()  # ... and little else (was 185 %)
    d = pipe.fresh().judge_still(frame, 1, 0.0).detections
    base = [f for f in truth["fighters"] if f["id"] == 3][0]
    pairs = match([(base["x"], base["y"])], d.xyz[d.kind == 0][:, :2], gate=0.1)
    assert len(pairs) == 1
