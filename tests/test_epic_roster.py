"""A side's stands against its units' (TableDetector._within_epic_roster): units lose
stands in play and never gain them, so what the game's ``epic`` section lists is a
ceiling. Beyond it, the least seen stands are dropped, except as many as the other sides
lack, which are kept with those sides as rivals (perhaps theirs, read as this side's).
On the bundled Epic game's real config (12 stands a side)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from tracker.config import GameConfig
from tracker.detection import KIND_BASE, KIND_OBJECTIVE, Detections, TableDetector

EPIC = Path(__file__).resolve().parents[1] / "sample_footage" / "epic-demo"


@pytest.fixture(scope="module")
def config():
    return GameConfig.load(EPIC)


def _stands(counts: dict[int, int]) -> Detections:
    rows, k = [], 0
    for side, n in counts.items():
        for i in range(n):
            k += 1
            rows.append({"xyz": (2.0 * i, 3.0 * side, 0.0), "kind": KIND_BASE, "side": side, "base_mm": 40.0,
                         "score": 0.9 - 0.01 * i, "shape": 2, "size_mm": (40.0, 20.0)})
    rows.append({"xyz": (30.0, 30.0, 0.0), "kind": KIND_OBJECTIVE})  # a token is no stand
    return Detections.from_rows(rows)


def _within(config, dets):
    return TableDetector._within_epic_roster(SimpleNamespace(config=config), dets)


def test_the_units_stands_are_a_ceiling(config):
    most = {s.index: sum(u.stands for u in config.epic.units if u.side == s.index) for s in config.sides}
    assert most == {0: 12, 1: 12}
    keep, rivals = _within(config, _stands({0: 12, 1: 9}))  # casualties: fewer, all kept
    assert keep.all() and not rivals.any()
    dets = _stands({0: 14, 1: 12})
    keep, rivals = _within(config, dets)
    dropped = np.flatnonzero(~keep)
    assert len(dropped) == 2 and set(dets.side[dropped]) == {0}
    assert dets.score[dropped].max() < dets.score[keep & (dets.side == 0) & (dets.kind == KIND_BASE)].min()
    assert not rivals.any() and keep[dets.kind == KIND_OBJECTIVE].all()


def test_beyond_the_ceiling_as_many_as_another_side_lacks_may_be_theirs(config):
    dets = _stands({0: 15, 1: 10})  # side 1 lacks 2: two of side 0's three extra may be side 1's
    keep, rivals = _within(config, dets)
    extra = np.flatnonzero(dets.side == 0)[-3:]  # the least seen three
    assert list(keep[extra]) == [True, True, False]
    assert list(rivals[extra[:2]]) == [1 << 1, 1 << 1] and not rivals[~np.isin(np.arange(len(dets)), extra)].any()
    dets.rivals = rivals
    assert dets.rival_sides(int(extra[0])) == (1,)


@pytest.fixture(scope="module")
def paper_under_the_count(request, tmp_path_factory):
    """An Epic tuning table at 1080p (seed 100171, one frame) whose white side has its
    every stand in sight, and a tagged objective read as one more white stand until the
    token search takes its disc."""
    from conftest import _first_frame, _tuning_table_cached

    return _first_frame(_tuning_table_cached(request, tmp_path_factory, 100171, "epic", "paper-under-count",
                                             (1920, 1080)))


@pytest.mark.slow
def test_stands_are_counted_against_the_units_after_tokens_take_their_discs(paper_under_the_count):
    """A paper disc read as a stand of a side whose stands are all in sight put that side
    one over its units' count, and the least seen stand went: a real one (all stands found
    from foreground score alike). Counted once tokens have taken their discs, every stand
    in sight is kept (measured when written: one white stand in the open missed before)."""
    from evalsets import match

    pipe, frame, truth = paper_under_the_count
    d = pipe.judge_still(frame, 0).detections
    stands = d[d.kind == KIND_BASE]
    true = [f for f in truth["fighters"] if f["visible_fraction"] >= 0.5]
    pairs = match([(f["x"], f["y"]) for f in true], stands.xyz[:, :2])
    assert len(pairs) == len(true), (len(pairs), len(true))
    for t in truth["tokens"]:  # (and no token is a stand)
        assert not (np.hypot(*(stands.xyz[:, :2] - (t["x"], t["y"])).T) < 0.5).any(), t

