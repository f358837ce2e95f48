"""A side's round bases against its roster (TableDetector._beyond_roster): a side fields
the bases its ``bases_mm`` lists, so where one side has more bases of a size found than
it lists and another side fewer (of any size), one of them was read as the wrong side,
and the rims alone could not say which: the least seen of the surplus get the short sides as rivals
(``Detections.rivals``; Warcry control then counts them surely for no side). On the
bundled Warcry game's real config."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from tracker.config import GameConfig
from tracker.detection import KIND_BASE, KIND_OBJECTIVE, Detections, TableDetector

WARCRY = Path(__file__).resolve().parents[1] / "sample_footage" / "warcry-demo"


@pytest.fixture(scope="module")
def config():
    return GameConfig.load(WARCRY)


def _bases(found: list[tuple[int, float, float]]) -> Detections:
    """(side, diameter mm, score) each, and a token."""
    rows = [{"xyz": (2.0 * k, 1.0, 0.0), "kind": KIND_BASE, "side": side, "base_mm": mm, "score": score}
            for k, (side, mm, score) in enumerate(found)]
    rows.append({"xyz": (20.0, 20.0, 0.0), "kind": KIND_OBJECTIVE})
    return Detections.from_rows(rows)


def _beyond(config, dets):
    det = SimpleNamespace(config=config)
    det._roster_and_found = lambda found: TableDetector._roster_and_found(det, found)
    return TableDetector._beyond_roster(det, dets)


def test_the_rosters(config):
    assert [sorted(s.bases_mm) for s in config.sides] == [[25, 32, 40, 50], [25, 28.5, 32, 50], [25, 32, 32, 32]]


def test_a_base_beyond_its_sides_roster_may_be_the_short_sides(config):
    # Side 1 (white) lists one 25 mm base; two were found. Side 0 (red) found all but its
    # 25 mm, side 2 (blue) all it lists.
    white = [(1, 25.0, 0.8), (1, 25.0, 0.4), (1, 28.5, 0.9), (1, 32.0, 0.9), (1, 50.0, 0.9)]
    red = [(0, 32.0, 0.9), (0, 40.0, 0.9), (0, 50.0, 0.9)]
    blue = [(2, 32.0, 0.9), (2, 32.0, 0.9), (2, 32.0, 0.9), (2, 25.0, 0.9)]
    rivals = _beyond(config, _bases(white + red + blue))
    assert rivals.tolist() == [0, 1 << 0] + [0] * 11  # the less seen white 25 mm: perhaps red's
    # Blue's 25 mm not found either: perhaps red's or blue's.
    rivals = _beyond(config, _bases(white + red + blue[:3]))
    assert rivals.tolist() == [0, (1 << 0) | (1 << 2)] + [0] * 10


def test_rosters_kept_or_no_side_short_say_nothing(config):
    # Every side within its roster (casualties: fewer found): nothing unsure.
    assert not _beyond(config, _bases([(1, 25.0, 0.8), (0, 25.0, 0.5), (2, 32.0, 0.3)])).any()
    # Side 2 has four 32 mm found for its three, but every other side found all it lists:
    # a base beyond a roster that no other side lacks is no side's read wrong.
    whole = [(0, 25.0, 0.9), (0, 32.0, 0.9), (0, 40.0, 0.9), (0, 50.0, 0.9),
             (1, 25.0, 0.9), (1, 28.5, 0.9), (1, 32.0, 0.9), (1, 50.0, 0.9)]
    dets = _bases([(2, 32.0, 0.9), (2, 32.0, 0.8), (2, 32.0, 0.7), (2, 32.0, 0.2), *whole])
    assert not _beyond(config, dets).any()
    # Side 1 short of its 50 mm: the extra 32 mm may be side 1's (a side and a size misread
    # together); without side 0's found either, each of them.
    dets = _bases([(2, 32.0, 0.9), (2, 32.0, 0.8), (2, 32.0, 0.7), (2, 32.0, 0.2), *whole[:7]])
    assert _beyond(config, dets)[:4].tolist() == [0, 0, 0, 1 << 1]
    dets = _bases([(2, 32.0, 0.9), (2, 32.0, 0.8), (2, 32.0, 0.7), (2, 32.0, 0.2)])
    assert _beyond(config, dets).tolist() == [0, 0, 0, (1 << 0) | (1 << 1), 0]


def test_sides_without_a_roster_say_nothing():
    sides = [SimpleNamespace(index=0, bases_mm=(25.0,), shaped_roster=()),
             SimpleNamespace(index=1, bases_mm=(), shaped_roster=())]
    dets = _bases([(0, 25.0, 0.9), (0, 25.0, 0.2)])
    assert not _beyond(SimpleNamespace(sides=sides, epic=None), dets).any()


@pytest.fixture(scope="module")
def pale_minis(request, tmp_path_factory):
    """A 720p Warcry table of the shared renderer (tuning seed 100042, one frame) where a
    yellow 25 mm base under a pale miniature reads as white, and a blue 40 mm one as a
    white 32 mm circle: its pipeline, frame and truth."""
    from conftest import _first_frame, _tuning_table_cached

    return _first_frame(_tuning_table_cached(request, tmp_path_factory, 100042, "warcry", "roster-sides"))


@pytest.mark.slow
def test_sides_read_wrong_beyond_the_roster_are_unsure_on_a_rendered_table(pale_minis):
    from evalsets import match, rules_only

    pipe, frame, truth = pale_minis
    with rules_only(pipe.detector):  # (the roster's rule alone: see the end)
        fighters = pipe.judge_still(frame, 0, 0.0).state.fighters
    tf = truth["fighters"]
    pairs = match([(t["x"], t["y"]) for t in tf], [(f.x, f.y) for f in fighters], 0.75)
    wrong = [(tf[i], fighters[j]) for i, j, _ in pairs if tf[i]["team"] != fighters[j].side]
    # Measured when written: 2 of 13 sides read wrong (both as white), neither said unsure.
    # White has a 25 mm and a 32 mm base beyond its roster: the yellow 25 mm base read as
    # white is the less seen of its two 25 mm and lists yellow; of its two 32 mm the real
    # white one is seen less than the blue 40 mm read as one, and it is the one flagged
    # (the roster says one of them is wrong, not which).
    assert len(wrong) == 2, [(t["team"], f.id, f.side, f.rival_sides) for t, f in wrong]
    yellow = next(f for t, f in wrong if t["team"] == 1)
    assert 1 in yellow.rival_sides, yellow
    whites_32 = [f for f in fighters if f.side == 2 and round(f.base.width_in * 25.4) == 32]
    assert len(whites_32) == 2 and sum(bool(f.rival_sides) for f in whites_32) >= 1, whites_32
    assert sum(bool(f.rival_sides) for f in fighters) <= 4
    # The learned refiner reads the yellow base's rim as yellow (_sides_read): fewer wrong.
    learnt = pipe.judge_still(frame, 0, 0.0).state.fighters
    again = match([(t["x"], t["y"]) for t in tf], [(f.x, f.y) for f in learnt], 0.75)
    assert sum(tf[i]["team"] != learnt[j].side for i, j, _ in again) < len(wrong)


def test_an_oval_beyond_its_sides_roster_may_be_a_short_sides():
    """Ovals and rectangles are held to the roster as round bases are, by outline: a white
    60 x 35 mm oval beyond white's two, while blue lacks its 90 x 52 mm ovals (one read as
    white's smaller oval)."""
    from tracker.base_shapes import SHAPE_CODES
    from tracker.config import BaseSize

    small, large = BaseSize("oval", 60.0, 35.0), BaseSize("oval", 90.0, 52.0)
    sides = [SimpleNamespace(index=0, bases_mm=(32.0,), shaped_roster=(large, large)),
             SimpleNamespace(index=1, bases_mm=(25.0,), shaped_roster=(small, small))]

    def oval(side, size, score):
        return {"xyz": (3.0 * score, 2.0, 0.0), "kind": KIND_BASE, "side": side, "base_mm": size[0],
                "score": score, "shape": SHAPE_CODES["oval"], "size_mm": size}

    found = [oval(1, (60.0, 35.0), 0.9), oval(1, (60.0, 35.0), 0.3), oval(1, (60.0, 35.0), 0.6),
             oval(0, (90.0, 52.0), 0.9), {"xyz": (9.0, 9.0, 0.0), "kind": KIND_BASE, "side": 0, "base_mm": 32.0,
                                          "score": 0.9}]
    rivals = _beyond(SimpleNamespace(sides=sides, epic=None), Detections.from_rows(found))
    assert rivals.tolist() == [0, 1 << 0, 0, 0, 0]
    # Blue's second oval found too: every side has what it lists or more, nothing is unsure.
    rivals = _beyond(SimpleNamespace(sides=sides, epic=None), Detections.from_rows(found + [oval(0, (90.0, 52.0), 0.8)]))
    assert not rivals.any()
