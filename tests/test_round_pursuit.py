"""Bases found as what is not the empty table (``TableDetector._pursued_outline``):
where a side's rims are near the mat's colour, its bases are still plain to see as
patches of a base's size.

First the pieces on drawn floors (the table's shadow left out of the foreground, the
boundary's offset measured on known bases, the size and centre from the circle along a
patch's boundary), then a Warcry table of the shared renderer at 720p whose white rims
lie on a pale mat (a tuning-split seed, rendered into pytest's cache): its frame judged
with and without the round pursuit, scored against the renderer's truth.
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from conftest import _first_frame
from evalsets import judged_bases, rules_only

from tracker.vision.colour import detector_lab
from tracker.vision.boundary import boundary, boundary_offset, outline_on_boundary
from tracker.vision.foreground import foreground, shadow
from tracker.vision.stands import Outline


def _pale_mat(h: int = 100, w: int = 160, seed: int = 5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    noise = cv2.GaussianBlur(rng.normal(0, 6, (h, w)).astype(np.float32), (0, 0), 1.5)
    return np.clip(np.dstack([200 + noise, 190 + noise, 215 + noise]), 0, 255).astype(np.uint8)


def test_a_shadow_on_the_mat_is_not_foreground_a_base_is():
    empty = _pale_mat()
    frame = empty.copy()
    # A miniature's shadow: the mat darker, its colour kept.
    frame[20:50, 20:60] = (frame[20:50, 20:60] * 0.6).astype(np.uint8)
    cv2.circle(frame, (110, 50), 14, (40, 60, 200), -1)  # a red-rimmed base
    lab, empty_lab = detector_lab(frame), detector_lab(empty)
    fg = foreground(lab, empty_lab, np.ones(frame.shape[:2], bool))
    lit = np.where(shadow(lab, empty_lab), 0.0, fg)
    assert fg[25:45, 25:55].mean() > 0.9  # the shadow is foreground to the plain test ...
    assert lit[25:45, 25:55].mean() < 0.05  # ... and not once shadow is left out
    assert lit[45:55, 105:115].mean() > 0.95  # the base is, either way


def test_a_black_miniature_is_not_a_shadow_for_the_mat_keeps_its_pattern_under_one():
    """A black miniature on a pale mat is darker than the mat and as grey: the colour
    test alone calls it a shadow. A shadow only dims the mat, whose mottling still shows;
    the miniature hides it (vision.foreground.keeps_pattern)."""
    rng = np.random.default_rng(3)
    noise = cv2.GaussianBlur(rng.normal(0, 20, (100, 160)).astype(np.float32), (0, 0), 0.8)
    empty = np.clip(np.dstack([200 + noise] * 3), 0, 255).astype(np.uint8)  # a pale grey mat, mottled
    frame = empty.copy()
    frame[20:50, 20:60] = (frame[20:50, 20:60] * 0.6).astype(np.uint8)  # a shadow
    cv2.circle(frame, (110, 50), 14, (30, 30, 30), -1)  # a black miniature over its base
    frame = np.clip(frame + rng.normal(0, 1.5, frame.shape), 0, 255).astype(np.uint8)  # (the camera's noise)
    lab, empty_lab = detector_lab(frame), detector_lab(empty)
    fg = foreground(lab, empty_lab, np.ones(frame.shape[:2], bool))
    by_colour = np.where(shadow(lab, empty_lab), 0.0, fg)
    by_pattern = np.where(shadow(lab, empty_lab, pattern=True), 0.0, fg)
    assert by_colour[45:55, 105:115].mean() < 0.05  # the colour test loses the miniature ...
    assert by_pattern[45:55, 105:115].mean() > 0.95  # ... the pattern keeps it
    assert by_pattern[25:45, 25:55].mean() < 0.05  # and the shadow is still left out


def test_a_patch_is_sized_by_its_boundary_not_its_shadow():
    """A 40 mm base's patch with its shadow spread to one side: its mean fits a larger
    outline; the circle along its boundary is its own size, at its own centre."""
    fg = np.zeros((100, 100), np.float32)
    cv2.circle(fg, (56, 50), 17, 0.9, -1)  # the shadow, offset to the right
    cv2.circle(fg, (50, 50), 17, 1.0, -1)  # the base's patch (a radius of 15 px + 2 px spread)
    radii = [12.0, 15.0, 19.0]  # 32, 40 and 50 mm at 19 px/in
    edge = boundary(fg)
    offset = boundary_offset(edge, np.array([[50.0, 50.0]]), np.array([15.0]))
    assert abs(offset - 2.0) <= 0.5  # (the shadow side's boundary lies farther out)
    k, col, row, _, share = outline_on_boundary(edge, 53.0, 50.0, [Outline("round", r, r) for r in radii], reach=5.0,
                                                offset=offset)
    assert k == 1 and abs(col - 50) <= 0.5 and abs(row - 50) <= 0.5 and share > 0.4


def test_the_boundary_offset_needs_known_bases():
    assert boundary_offset(np.zeros((40, 40), np.float32), np.zeros((0, 2)), np.zeros(0)) is None


# -- a rendered Warcry table at 720p: white rims on a pale mat -----------------------------
def _judged(pipe, frame, truth_frame, rounds: bool) -> dict:
    pipe.detector.pursue_rounds = rounds
    bases, vis, pairs = judged_bases(pipe, frame, truth_frame)
    sides = [vis[i]["team"] == bases.side[j] for i, j, _ in pairs]
    return {"recall": len(pairs) / len(vis), "precision": len(pairs) / max(len(bases), 1),
            "sides_wrong": len(sides) - sum(sides), "n_round_foreground": int((bases.from_foreground & (bases.shape == 0)).sum()),
            "sigma": bases.sigma_in[bases.from_foreground & (bases.shape == 0)]}


@pytest.mark.slow
def test_bases_with_rims_of_the_mats_colour_are_found_as_patches(white_rims):
    pipe, frame, truth_frame = white_rims
    try:
        without = _judged(pipe, frame, truth_frame, rounds=False)
        with_ = _judged(pipe, frame, truth_frame, rounds=True)
    finally:
        pipe.detector.pursue_rounds = True
    assert without["n_round_foreground"] == 0
    # Measured when written: 8 -> 9 of 11 fighters (a white 50 mm base), precision 1.0 and
    # no side wrong both; over this table's 8 frames 57 -> 62 of 88 fighter-frames.
    assert with_["recall"] > without["recall"], (without, with_)
    assert with_["precision"] == 1.0, with_
    assert with_["sides_wrong"] == 0, with_
    # Stated with the patch's uncertainty (PURSUED_ROUND_SIGMA_IN), over the calibration's.
    assert with_["n_round_foreground"] > 0 and np.all(with_["sigma"] >= 0.2), with_



@pytest.mark.slow
def test_a_patch_is_read_by_its_outline_on_the_side_facing_the_camera(white_rims):
    """A miniature and its base's wall lean away from the camera in a top-down view, so
    the patch's boundary follows the base's outline on the half facing the camera
    (``pursue_facing``). (Measured when written, every patch held to the roster's share
    of its boundary: 10 -> 11 of 11 fighters on this photo, 7 -> 11 with the benchmark's
    calibration; precision 1.0 both. The learned refiner's naming of patches is left out
    here: it names the patch this rule places, ``_doubts_read``.)"""
    pipe, frame, truth_frame = white_rims
    det = pipe.detector
    named, read = det.pursue_round_share_named, det.doubt_base_p
    try:
        det.pursue_round_share_named = det.pursue_round_share
        det.doubt_base_p = 2.0
        det.pursue_facing = False
        whole = _judged(pipe, frame, truth_frame, rounds=True)
        det.pursue_facing = True
        facing = _judged(pipe, frame, truth_frame, rounds=True)
    finally:
        det.pursue_facing, det.pursue_round_share_named, det.doubt_base_p = True, named, read
    assert facing["recall"] == 1.0 > whole["recall"], (whole, facing)
    assert facing["precision"] == 1.0, facing

@pytest.mark.slow
def test_patches_it_cannot_name_are_kept_as_doubts_where_fighters_were_missed(white_rims):
    """A base-sized patch the pursuit could not name (no rim side, an outline that does
    not follow its boundary) is a world.Doubt in the photo's state: where the camera
    missed a fighter, a ruling it could change says so. (Read on their whole outline:
    read on the half facing the camera, or on half the boundary where the rim names a
    side, every base of this photo is found; the learned refiner, left on, names every
    such doubt as the fighter it is: ``_doubts_read``. This table was one it learnt on,
    so that is only checked to be wired: tests/test_base_refiner.py has it on a public
    table.)"""
    pipe, frame, truth_frame = white_rims
    strict = dict(pursue_facing=False, pursue_round_share_named=pipe.detector.pursue_round_share, doubt_base_p=2.0)
    old = {k: getattr(pipe.detector, k) for k in strict}
    try:
        pipe.detector.__dict__.update(strict)
        state = pipe.judge_still(frame, 0).state
        clip = pipe.fresh()
        clip.detector.__dict__.update(strict)
        clip_state = clip.process(frame, 0, 0.0).state
        pipe.detector.doubt_base_p = old["doubt_base_p"]
        read = pipe.judge_still(frame, 0).state
    finally:
        pipe.detector.__dict__.update(old)
    assert state.doubts, "no doubt on a table whose white bases are half missed"
    found = [(f.x, f.y) for f in state.fighters]
    missed = [t for t in truth_frame["fighters"]
              if not any(np.hypot(t["x"] - x, t["y"] - y) < 0.75 for x, y in found)]
    on_a_miss = [q for q in state.doubts
                 if any(np.hypot(t["x"] - q.x, t["y"] - q.y) < 0.5 and t["team"] in q.sides for t in missed)]
    # Measured when written: 4 of 5 doubts on a missed fighter, its side among theirs (the
    # fifth on the play area's corner).
    assert len(on_a_miss) >= 0.75 * len(state.doubts), (state.doubts, missed)
    assert not any(np.hypot(f.x - q.x, f.y - q.y) < q.radius_in for f in state.fighters for q in state.doubts)
    # A clip's first look keeps them too (the tracker holds the last whole look's).
    assert clip_state.doubts
    # With the refiner reading them: a fighter of its side near each doubt on a missed one.
    for q in on_a_miss:
        t = min(missed, key=lambda t: np.hypot(t["x"] - q.x, t["y"] - q.y))
        assert any(f.side == t["team"] and np.hypot(t["x"] - f.x, t["y"] - f.y) < 0.3 for f in read.fighters), (t, q)


def test_a_patch_left_to_the_token_search_that_finds_no_token_stays_a_doubt(white_edge_720p_table):
    """A base's patch that a token's disc fits as well as the base's outline is left to the
    token search; where that finds no token, the patch is a doubt, not lost: every fighter
    the photo's state lacks lies under one, and the objective within 3" of such a white
    base is too close to call."""
    import json

    from evalsets import match

    from tracker.pipeline import Pipeline
    from tracker.rules.ruling import TOO_CLOSE
    from tracker.rules.warcry import objective_control

    folder, env = white_edge_720p_table
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        pipe = Pipeline.from_footage(folder)
    truth = json.loads((folder / "truth.json").read_text())["frames"][1]
    frame = cv2.imread(str(sorted((folder / "frames").iterdir())[1]))
    seen = [t for t in truth["fighters"] if t["visible_fraction"] >= 0.5]
    learnt = pipe.judge_still(frame, 1, 0.0).state
    with rules_only(pipe.detector):
        state = pipe.judge_still(frame, 1, 0.0).state
    got = {i for i, _, _ in match([(t["x"], t["y"]) for t in seen], [(f.x, f.y) for f in state.fighters], 0.75)}
    missed = [t for i, t in enumerate(seen) if i not in got]
    # The learned refiner names the doubts on missed fighters: more of them found.
    pairs = match([(t["x"], t["y"]) for t in seen], [(f.x, f.y) for f in learnt.fighters], 0.75)
    assert len(pairs) > len(got) and all(seen[i]["team"] == learnt.fighters[j].side for i, j, _ in pairs
                                         if i not in got), (len(got), len(pairs))
    # Measured when written: 4 of 14 missed (white and red rims on the pale mat), each under a doubt.
    assert missed and len(missed) <= 6, [t["id"] for t in missed]
    # A doubt whose patch touches a fighter found is taken by it (tracking._undoubted).
    # Since the straight-edge calibration, the red 32 mm base by the white 60 mm one reads,
    # with its shadow, as a 40 mm patch touching that base (found as 50 mm): no doubt
    # there. Every other missed fighter lies under one.
    bare = [t for t in missed if not any(np.hypot(q.x - t["x"], q.y - t["y"]) < 0.5 for q in state.doubts)]
    assert len(bare) <= 1, ([t["id"] for t in bare], state.doubts)
    (obj,) = [o for o in truth["tokens"] if o.get("tag_id") == 47]
    near = [t for t in missed if np.hypot(t["x"] - obj["x"], t["y"] - obj["y"]) - t["base_mm"] / 50.8 <= 3.0]
    assert near  # the white base by the edge, 2.2 in from it
    (ruling,) = [r for r in objective_control(state).rulings if r.subject == "objective-47"]
    assert ruling.verdict == TOO_CLOSE and ruling.details["doubts"], ruling.outcome


def test_a_token_beside_a_patch_it_cannot_name_leaves_the_doubt(hidden_oval_1080p_table):
    """A doubt is taken away only by what explains its patch: a base over it, a token on
    its middle. A tagged objective touching an oval whose miniature hides all but a thin
    crescent of its rim left that oval unnamed and unsaid. Found or not, the oval is never
    silently missing: a fighter there, or a doubt of its side, and control of the
    objective 0.3 in from its edge then too close to call. (Measured when written: missed,
    a doubt 0.3 in from its centre.)"""
    from evalsets import match

    from tracker.rules.ruling import TOO_CLOSE
    from tracker.rules.warcry import objective_control

    pipe, frame, truth = _first_frame(hidden_oval_1080p_table)
    state = pipe.judge_still(frame, 0, 0.0).state
    (oval,) = [t for t in truth["fighters"] if t.get("shape") == "oval" and t["team_colour"] == "red"]
    found = bool(match([(oval["x"], oval["y"])], [(f.x, f.y) for f in state.fighters], 0.75))
    doubted = any(np.hypot(q.x - oval["x"], q.y - oval["y"]) < 1.0 and oval["team"] in q.sides
                  for q in state.doubts)
    (ruling,) = [r for r in objective_control(state).rulings if r.subject == "objective-40"]
    assert found or (doubted and ruling.verdict == TOO_CLOSE and ruling.details["doubts"]), \
        (state.doubts, ruling.outcome)


@pytest.fixture(scope="module")
def lone_short(request, tmp_path_factory):
    """A 720p Warcry tuning table (seed 100090, one frame) where bases under large
    miniatures show as patches whose rims name no side: its pipeline, frame and truth."""
    from conftest import _tuning_table_cached

    return _first_frame(_tuning_table_cached(request, tmp_path_factory, 100090, "warcry", "lone-short"))


@pytest.mark.slow
def test_a_patch_only_one_side_lacks_is_that_sides_base_its_side_unsure(lone_short):
    """A base's patch whose rims name no side, of an outline one side alone lacks, is a
    fighter of that side with every other side a rival, not a doubt: a fighter the state
    holds (its side unsure, which the rulings name) rather than a "?" with none. (Measured
    when written: 12 of 17 fighters found before, 15 after; two of the three read as
    blue were yellow, both listing yellow.) Where more such patches than the side lacks
    are found they are doubts (``roster_side_guard``), and the learned refiner names
    them by what it sees: as many found (16 of 17 either way)."""
    from evalsets import match

    pipe, frame, truth = lone_short
    tf = [t for t in truth["fighters"] if t["visible_fraction"] >= 0.5]
    state = pipe.judge_still(frame, 0, 0.0).state
    assert len(match([(t["x"], t["y"]) for t in tf], [(f.x, f.y) for f in state.fighters], 0.75)) >= 15
    pipe.detector.roster_side_guard = False
    try:
        state = pipe.judge_still(frame, 0, 0.0).state
    finally:
        pipe.detector.roster_side_guard = True
    pairs = match([(t["x"], t["y"]) for t in tf], [(f.x, f.y) for f in state.fighters], 0.75)
    assert len(pairs) >= 15, f"{len(pairs)} of {len(tf)} found"
    everyone = {s.index for s in pipe.config.sides}
    by_roster = [f for f in state.fighters if set(f.rival_sides) == everyone - {f.side}]
    assert len(by_roster) >= 3, by_roster
    wrong = [(tf[i], state.fighters[j]) for i, j, _ in pairs if tf[i]["team"] != state.fighters[j].side]
    assert all(t["team"] in f.rival_sides for t, f in wrong if f in by_roster), wrong
    assert all(f.sigma_in >= 0.1 for f in by_roster)  # (a patch's place: stated as such)


@pytest.fixture(scope="module")
def dark_minis(request, tmp_path_factory):
    """A 720p Warcry tuning table (seed 100100, one frame): white-rimmed bases on a pale
    mat under dark miniatures, whose patches are plain to see."""
    from conftest import _tuning_table_cached

    return _first_frame(_tuning_table_cached(request, tmp_path_factory, 100100, "warcry", "dark-minis"))


@pytest.mark.slow
def test_bases_under_dark_miniatures_on_a_pale_mat_are_found(dark_minis):
    """The pursuit leaves the table's shadows out of the foreground; a shadow keeps the
    mat's pattern, a dark miniature does not, so the miniature's patch stays. (Measured
    when written: three of the six fighters found before, all six after.)"""
    from evalsets import match

    pipe, frame, truth = dark_minis
    state = pipe.judge_still(frame, 0, 0.0).state
    tf = [t for t in truth["fighters"] if t["visible_fraction"] >= 0.5]
    pairs = match([(t["x"], t["y"]) for t in tf], [(f.x, f.y) for f in state.fighters], 0.75)
    assert len(pairs) == len(tf) == 6, pairs
    assert len(state.fighters) == len(tf)  # none where no fighter stands
    white = [(tf[i], state.fighters[j]) for i, j, _ in pairs if tf[i]["team_colour"] == "white"]
    assert white and all(f.side == t["team"] or t["team"] in f.rival_sides for t, f in white), white


@pytest.fixture(scope="module")
def crowded_platform(request, tmp_path_factory):
    """A 720p Warcry tuning table (seed 100060, one frame): two fighters on a
    platform's top, their rims a pixel wide and faint."""
    from conftest import _tuning_table_cached

    return _first_frame(_tuning_table_cached(request, tmp_path_factory, 100060, "warcry", "crowded-platform"))


@pytest.mark.slow
def test_bases_on_a_platforms_top_are_pursued_as_patches_too(crowded_platform):
    """The round pursuit looks at each platform's top as at the floor: a base its rim
    fit missed is a patch of its outline there, placed at the platform's height.
    (Measured when written: neither found without it, both with it; the hand rules
    alone, the learned refiner's naming of patches left out.)"""
    from evalsets import match

    pipe, frame, truth = crowded_platform
    up = [t for t in truth["fighters"] if t["z"] > 1.0 and t["visible_fraction"] >= 0.5]
    assert len(up) == 2

    def found_up() -> list:
        on_top = [f for f in pipe.judge_still(frame, 0, 0.0).state.fighters if f.z > 1.0]
        pairs = match([(t["x"], t["y"]) for t in up], [(f.x, f.y) for f in on_top], 0.75)
        return [(up[i], on_top[j]) for i, j, _ in pairs]

    try:
        pipe.detector.pursue_platforms = False
        learnt = found_up()
        # (Rules alone, and a patch its side alone lacks kept, not a doubt for the
        # refiner to name: roster_side_guard off.)
        pipe.detector.roster_side_guard = False
        with rules_only(pipe.detector):
            without = found_up()
            pipe.detector.pursue_platforms = True
            with_it = found_up()
    finally:
        pipe.detector.pursue_platforms = True
        pipe.detector.roster_side_guard = True
    assert len(with_it) == len(without) + 2 == 2, (len(without), len(with_it))
    assert all(abs(f.z - t["z"]) < 0.1 and (f.side == t["team"] or t["team"] in f.rival_sides) for t, f in with_it)
    # The patches the refiner is offered on a platform's top find them without the pursuit.
    assert len(learnt) == 2 and all(f.side == t["team"] for t, f in learnt), learnt


@pytest.fixture(scope="module")
def crescents(request, tmp_path_factory):
    """A 720p Warcry tuning table (seed 100122, one frame): blue-rimmed 25 mm bases under
    grey and black miniatures, a blue crescent left showing on each."""
    from conftest import _tuning_table_cached

    return _first_frame(_tuning_table_cached(request, tmp_path_factory, 100122, "warcry", "crescents"))


@pytest.mark.slow
def test_a_crescent_names_its_side_on_the_half_facing_the_camera(crescents, monkeypatch):
    """A miniature leans away from the camera in the picture and hides the far half of
    its base's rim first: the crescent left lies on the near half, whose median names
    the side where the whole outline's median (under half of it rim) reads nothing.
    (Measured when written: the two blue 25 mm bases missed with the whole outline
    alone, both found, blue, with the near half. With sides re-read by the rims' colour,
    the whole outline alone finds them too, as patches whose side the roster guessed,
    every other side a rival: the near half names them sure.)"""
    import tracker.detection.patches as patches
    from evalsets import match

    pipe, frame, truth = crescents
    blue25 = [t for t in truth["fighters"] if t["team_colour"] == "blue" and t["base_mm"] == 25.0
              and t["visible_fraction"] >= 0.5 and t["z"] < 0.05]
    assert len(blue25) == 2

    def found() -> list:
        fighters = pipe.judge_still(frame, 0, 0.0).state.fighters
        pairs = match([(t["x"], t["y"]) for t in blue25], [(f.x, f.y) for f in fighters], 0.75)
        return [(blue25[i], fighters[j]) for i, j, _ in pairs]

    whole_only = patches.along_outline
    monkeypatch.setattr(patches, "along_outline", lambda *a, **k: whole_only(*a, **{**k, "facing": None}))
    without = found()
    monkeypatch.undo()
    with_ = found()
    assert len(with_) == 2 and all(f.side == t["team"] for t, f in with_), with_
    # (Since the camera was calibrated better, 0.018 -> 0.003 in on this table, one of the
    # two is read a little differently: still blue, green its rival.)
    sure = sum(not f.rival_sides for _, f in with_)
    assert sure >= 1 and sure > sum(not f.rival_sides and f.side == t["team"] for t, f in without), (with_, without)


@pytest.fixture(scope="module")
def half_seen(request, tmp_path_factory):
    """The second frame of the white-rims table (tuning seed 100002, 720p): two bases
    whose blurred edges and shadows leave half their outlines' boundary unseen."""
    from conftest import WHITE_RIMS_720P_SEED, _tuning_table_cached

    return _first_frame(_tuning_table_cached(request, tmp_path_factory, WHITE_RIMS_720P_SEED, "warcry", "half-seen",
                                             frames=2), index=1)


@pytest.mark.slow
def test_a_patch_whose_rim_names_its_side_needs_only_half_its_outline(half_seen):
    """A patch is a base on ``pursue_round_share_named`` of its outline's boundary when
    its rim names its side; the roster alone still needs ``pursue_round_share``.
    (Measured when written: 9 of 11 fighters with the one share, all 11 with the two,
    none extra, no side wrong.)"""
    from evalsets import match

    pipe, frame, truth = half_seen
    det = pipe.detector
    tf = [t for t in truth["fighters"] if t["visible_fraction"] >= 0.5]

    def judged(share_named: float) -> tuple[int, int, int]:
        old, det.pursue_round_share_named = det.pursue_round_share_named, share_named
        try:
            with rules_only(det):
                fighters = pipe.judge_still(frame, 1, 1 / 8).state.fighters
        finally:
            det.pursue_round_share_named = old
        pairs = match([(t["x"], t["y"]) for t in tf], [(f.x, f.y) for f in fighters], 0.75)
        return len(pairs), len(fighters), sum(tf[i]["team"] != fighters[j].side for i, j, _ in pairs)

    assert judged(det.pursue_round_share_named) == (11, 11, 0) and len(tf) == 11
    assert judged(det.pursue_round_share)[0] == 9


@pytest.fixture(scope="module")
def faint_patch(pale_mini_1080p_table):
    """Tuning seed 100078 at 1080p, first frame: a green-rimmed 40 mm base under a
    yellow-green miniature on the green mat, 2 in from an objective, whose patch responds
    too faintly (0.36) to be placed as a base; its side's roster lacks a 40 mm base."""
    return _first_frame(pale_mini_1080p_table)


@pytest.mark.slow
def test_a_faint_patch_of_an_outline_a_side_lacks_is_a_doubt_for_that_side(faint_patch):
    """A patch placed under ``pursue_threshold`` but above ``doubt_threshold``, of an
    outline a side is short of, is that side's doubt: the objective beside the missed
    fighter is too close to call rather than called outright for the wrong side.
    (Measured when written: no doubt and a wrong call without it.)"""
    from tracker.rules.ruling import TOO_CLOSE
    from tracker.rules.warcry import objective_control

    pipe, frame, truth = faint_patch
    det = pipe.detector
    fighter = next(f for f in truth["fighters"] if f["id"] == 8)

    # The learned refiner names the faint patch as the fighter it is (_doubts_read).
    learnt = pipe.judge_still(frame, 0, 0.0).state
    assert any(np.hypot(f.x - fighter["x"], f.y - fighter["y"]) < 0.3 and f.side == fighter["team"]
               for f in learnt.fighters)

    def judged(doubt_threshold: float):
        kept, det.doubt_threshold = det.doubt_threshold, doubt_threshold
        try:
            with rules_only(det):
                state = pipe.judge_still(frame, 0, 0.0).state
        finally:
            det.doubt_threshold = kept
        assert not any(np.hypot(f.x - fighter["x"], f.y - fighter["y"]) < 0.75 for f in state.fighters)
        near = [q for q in state.doubts if np.hypot(q.x - fighter["x"], q.y - fighter["y"]) < 0.6]
        ruling = next(r for r in objective_control(state).rulings
                      if np.hypot(r.details["token"][0] - 1.9, r.details["token"][1] - 13.1) < 0.5)
        return near, ruling

    near, ruling = judged(det.pursue_threshold)  # (no doubt under the pursuit's own threshold)
    assert not near and ruling.verdict != TOO_CLOSE, (near, ruling.verdict)
    near, ruling = judged(0.35)
    assert len(near) == 1 and near[0].sides == (fighter["team"],), near
    assert ruling.verdict == TOO_CLOSE, ruling
