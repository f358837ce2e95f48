"""Plain tokens against the game's count of them (TableDetector._settle_discs).

A 1 in token and a 25 mm base look alike from above. Where more plain discs are found
than the game has plain tokens (and tags not read now), the discs with the flat face of a
configured untagged colour take the untagged places, the others the unread tags' places;
a disc left over is no token, and a base it was taken to be the edge of is a base again.
On two rendered tuning-split tables (real OpenCV, real renders)."""

from __future__ import annotations

import math

import pytest

from conftest import _first_frame


@pytest.fixture(scope="module")
def pale_mini(pale_mini_1080p_table):
    return _first_frame(pale_mini_1080p_table)


@pytest.fixture(scope="module")
def blue_disc(blue_disc_720p_table):
    return _first_frame(blue_disc_720p_table)


def _near(things, x: float, y: float, gate: float = 0.4) -> list:
    return [t for t in things if math.hypot(t.x - x, t.y - y) < gate]


def test_a_pale_miniature_on_a_white_25mm_base_stays_a_fighter(pale_mini):
    pipe, frame, truth = pale_mini
    state = pipe.judge_still(frame, 0, 0.0).state
    white_token = [t for t in truth["tokens"] if t.get("style") == "white"]
    assert len(white_token) == 1
    assert len(_near(state.objectives(), white_token[0]["x"], white_token[0]["y"])) == 1  # the real one is found
    bases = [f for f in truth["fighters"] if f["team_colour"] == "white" and f["base_mm"] == 25.0
             and f["visible_fraction"] >= 0.99]
    assert bases
    for f in bases:
        assert len(_near(state.fighters, f["x"], f["y"])) == 1, f["id"]
        assert not _near(state.tokens, f["x"], f["y"]), f["id"]
    plain = [t for t in state.objectives() if t.tag_id is None]
    assert len(plain) <= pipe.config.tokens["objective"].untagged


def test_a_plain_objective_of_its_colour_takes_the_untagged_place(blue_disc):
    pipe, frame, truth = blue_disc
    state = pipe.judge_still(frame, 0, 0.0).state
    blue = [t for t in truth["tokens"] if t["kind"] == "objective" and t.get("style") == "blue"]
    assert len(blue) == 1
    found = _near(state.objectives(), blue[0]["x"], blue[0]["y"])
    assert len(found) == 1 and found[0].tag_id is None
    for t in truth["tokens"]:
        assert not _near(state.fighters, t["x"], t["y"], 0.5), t  # a token is never a fighter


@pytest.fixture(scope="module")
def yellow_oval(request, tmp_path_factory):
    """A 720p mixed Warcry tuning table (seed 100017, one frame): a yellow miniature on a
    yellow-rimmed 60 x 35 mm oval, found only as a patch of its outline."""
    from conftest import _tuning_table_cached

    return _first_frame(_tuning_table_cached(request, tmp_path_factory, 100017, "warcry-mixed", "yellow-oval"))


@pytest.mark.slow
def test_a_disc_in_a_large_bases_patch_does_not_take_it(yellow_oval):
    """A base found only as a patch of its outline gives way to a token found on it only
    where the token's disc could be that patch (it fills half its outline or more): a
    60 x 35 mm oval's yellow miniature read as a gold disc took the oval for its own,
    and the fighter was lost with nothing said. (Measured when written: missed.)"""
    pipe, frame, truth = yellow_oval
    state = pipe.judge_still(frame, 0, 0.0).state
    oval = next(f for f in truth["fighters"] if f.get("shape") == "oval" and f["team_colour"] == "yellow"
                and math.hypot(f["x"] - 4.70, f["y"] - 15.97) < 0.1)
    got = _near(state.fighters, oval["x"], oval["y"], 0.75)
    assert len(got) == 1 and got[0].side == oval["team"], got
    # and no treasure is left where the miniature was taken for one
    assert not [t for t in truth["tokens"] if math.hypot(t["x"] - oval["x"], t["y"] - oval["y"]) < 1.5]
    assert not _near([t for t in state.tokens if t.kind == "treasure"], oval["x"], oval["y"], 1.2)
