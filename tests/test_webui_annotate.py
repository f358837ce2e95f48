"""tracker.annotate on a real frame of the bundled footage, through the real camera
model: rings are the true 3" circles on the table, bases take their side's colour,
occluded fighters are drawn dashed and faded, layers switch drawing on and off."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from tracker.annotate import LAYERS, OBJECTIVE_RANGE_IN, Annotator
from tracker.sources import open_source


@pytest.fixture(scope="module")
def scene(calibrated, footage):
    from tracker.pipeline import Pipeline

    pipe = calibrated.fresh()
    with open_source(footage) as src:
        for index, t, frame in src:
            result = pipe.process(frame, index, t)
            if result.state.fighters and result.state.objectives():
                return pipe, result
            if index > 30:
                break
    pytest.fail("no frame of the bundled footage shows fighters and objectives")


def test_rings_are_true_3in_circles_in_the_controllers_colour(scene):
    pipe, result = scene
    state = result.state
    ann = Annotator(pipe.camera, pipe.config)
    side = pipe.config.sides[0]
    control = {tok.id: side.index for tok in state.objectives()}
    black = np.zeros_like(result.frame)
    img = ann.annotate(black, state, control, layers={"rings"})
    exact = np.all(img == np.array(side.rim_bgr, np.uint8), axis=2)
    assert exact.sum() > 200, "the rings are drawn in the controlling side's colour"
    lit = np.argwhere(img.max(axis=2) > 0)[:, ::-1].astype(float)  # (u, v)
    objectives = state.objectives()
    # each lit pixel, back on the table at each token's height: its distance to each token
    d = np.stack([np.hypot(*(np.asarray(pipe.camera.unproject(lit, t.z), float).reshape(-1, 2)
                             - (t.x, t.y)).T) for t in objectives])
    nearest_ring = np.argmin(np.abs(d - OBJECTIVE_RANGE_IN), axis=0)
    for k, tok in enumerate(objectives):
        mine = d[k][nearest_ring == k]
        ring = mine[(mine > 1.5) & (mine < 4.5)]  # leave out the centre cross and the label
        assert len(ring) > 50
        assert abs(np.median(ring) - OBJECTIVE_RANGE_IN) < 0.06
        assert np.percentile(np.abs(ring - OBJECTIVE_RANGE_IN), 95) < 0.2


def test_uncontrolled_ring_is_not_a_side_colour(scene):
    pipe, result = scene
    img = Annotator(pipe.camera, pipe.config).annotate(np.zeros_like(result.frame), result.state, {},
                                                       layers={"rings"})
    for s in pipe.config.sides:
        assert not np.all(img == np.array(s.rim_bgr, np.uint8), axis=2).any()


def test_occluded_fighters_are_dashed_and_faded(scene):
    pipe, result = scene
    f = result.state.fighters[0]
    ann = Annotator(pipe.camera, pipe.config)
    black = np.zeros_like(result.frame)
    seen = ann.annotate(black, result.state.with_fighters((replace(f, occluded=False),)), layers={"bases"})
    hidden = ann.annotate(black, result.state.with_fighters((replace(f, occluded=True),)), layers={"bases"})
    assert seen.any() and hidden.any()
    assert hidden.astype(np.int64).sum() < 0.6 * seen.astype(np.int64).sum()
    colour = np.array(pipe.config.side(f.side).rim_bgr, np.uint8)
    assert np.all(seen == colour, axis=2).any() and not np.all(hidden == colour, axis=2).any()


def test_layers(scene):
    pipe, result = scene
    ann = Annotator(pipe.camera, pipe.config)
    assert np.array_equal(ann.annotate(result.frame, result.state, layers=()), result.frame)
    full = ann.annotate(result.frame, result.state)
    assert not np.array_equal(full, result.frame)
    assert full is not result.frame and full.shape == result.frame.shape
    for layer in LAYERS:
        ann.annotate(result.frame, result.state, layers={layer})
    with pytest.raises(ValueError, match="lasers"):
        ann.annotate(result.frame, result.state, layers={"lasers"})


def test_fighter_pixels_match_a_resized_frame(scene):
    pipe, result = scene
    ann = Annotator(pipe.camera, pipe.config)
    h, w = result.frame.shape[:2]
    full = ann.fighter_pixels(result.state)
    half = ann.fighter_pixels(result.state, scale=0.5)
    assert full and set(full) == set(half)
    for fid, (u, v, r) in full.items():
        assert 0 <= u < w and 0 <= v < h and r > 2
        assert half[fid][0] == pytest.approx(u / 2, abs=0.1) and half[fid][2] == pytest.approx(r / 2, abs=0.2)


def test_edges_layer_draws_platform_open_edges_at_their_height(scene):
    from tracker.annotate import OPEN_EDGE_BGR

    pipe, result = scene
    state = result.state
    platforms = [p for p in state.terrain if p.type == "platform"]
    assert platforms, "the bundled table has platforms"
    ann = Annotator(pipe.camera, pipe.config)
    black = np.zeros_like(result.frame)
    img = ann.annotate(black, state, {}, layers={"edges"})
    orange = np.all(img == np.array(OPEN_EDGE_BGR, np.uint8), axis=2)
    assert orange.sum() > 100
    # drawn on the platform's top outline (projected at its height), not its footprint on the floor
    p = platforms[0]
    top = pipe.camera.project(np.array([(x, y, p.height_in) for x, y in p.footprint]))
    ys, xs = np.nonzero(orange)
    d = np.min(np.hypot(xs[:, None] - top[None, :, 0], ys[:, None] - top[None, :, 1]), axis=1)
    assert np.mean(d < 80) > 0.2
    assert not np.any(np.all(ann.annotate(black, state, {}, layers=set()) == np.array(OPEN_EDGE_BGR, np.uint8), axis=2))


def test_open_edges_follow_the_terrain_when_it_moves(scene):
    """The open edges are worked out once per terrain and kept: a piece moved (a judge
    re-typing or a re-pose) is drawn where it now is, and back again."""
    from tracker.annotate import OPEN_EDGE_BGR

    pipe, result = scene
    state = result.state
    ann = Annotator(pipe.camera, pipe.config)
    black = np.zeros_like(result.frame)

    def orange(st):
        return np.all(ann.annotate(black, st, {}, layers={"edges"}) == np.array(OPEN_EDGE_BGR, np.uint8), axis=2)

    before = orange(state)
    moved = tuple(replace(p, footprint=tuple((x + 3.0, y) for x, y in p.footprint),
                          parts=tuple(replace(q, footprint=tuple((x + 3.0, y) for x, y in q.footprint))
                                      for q in p.parts))
                  for p in state.terrain)
    after = orange(replace(state, terrain=moved))
    assert before.sum() > 100 and after.sum() > 100
    cols = lambda m: np.nonzero(m)[1].mean()  # noqa: E731
    assert cols(after) - cols(before) > 20  # 3" to the right: some 40 px at 720p
    assert np.array_equal(orange(state), before)


def test_a_faded_fighter_is_blended_as_a_whole_frame_blend_would(scene):
    """Occluded fighters are faded in a box round their outline only: the pixels are
    those of the whole frame copied, drawn and blended, here with the fighter moved
    half off the picture's edge too."""
    import cv2

    pipe, result = scene
    f = result.state.fighters[0]
    ann = Annotator(pipe.camera, pipe.config)
    frame = result.frame
    centre = pipe.camera.project(np.array([[f.x, f.y, f.z]]))[0]
    edge = np.asarray(pipe.camera.unproject(np.array([[0.0, centre[1]]]), f.z), float).reshape(2)
    for x, y in ((f.x, f.y), tuple(edge)):
        g = replace(f, x=x, y=y, occluded=True)
        got = ann.annotate(frame, result.state.with_fighters((g,)), layers={"bases"})
        outline = ann.project(ann.base_outline(g, n=ann.base_points))
        assert (outline[:, 0].min() < 0) == (x != f.x)  # the second straddles the picture's edge
        layer = frame.copy()
        ann._poly(layer, outline, ann.side_bgr(g.side), max(1, round(frame.shape[1] / 800)), dashed=True)
        want = cv2.addWeighted(layer, 0.55, frame, 0.45, 0)
        assert not np.array_equal(got, frame)
        assert np.array_equal(got, want)


def test_a_doubt_is_drawn_where_it_lies_in_the_colour_of_the_side_it_could_be(scene):
    """A place the camera could not name (world.Doubt) shows as a dashed ring of its size
    with a "?", in its one possible side's colour, on the bases layer only."""
    from tracker.world import Doubt

    pipe, result = scene
    side = pipe.config.sides[0]
    q = Doubt(10.0, 8.0, 0.0, 0.63, (side.index,))
    state = replace(result.state, fighters=(), tokens=(), terrain=(), doubts=(q,))
    ann = Annotator(pipe.camera, pipe.config)
    black = np.zeros_like(result.frame)
    img = ann.annotate(black, state, layers={"bases"})
    assert not ann.annotate(black, state, layers={"rings", "ids"}).any()
    lit = np.argwhere(np.all(img == np.array(side.rim_bgr, np.uint8), axis=2))[:, ::-1].astype(float)
    assert len(lit) > 20
    d = np.hypot(*(np.asarray(pipe.camera.unproject(lit, 0.0), float).reshape(-1, 2) - (q.x, q.y)).T)
    ring = d[d > 0.3]  # (leave out the "?")
    assert abs(np.median(ring) - q.radius_in) < 0.06


def test_a_fighter_of_unsure_side_is_drawn_in_both_colours(scene):
    """A fighter whose side the camera is not sure of (rival_sides) has its outline in its
    side's colour with every other stretch in the side it could be instead; one sure of
    its side shows no trace of the other's colour."""
    pipe, result = scene
    f = result.state.fighters[0]
    other = next(s for s in pipe.config.sides if s.index != f.side)
    ann = Annotator(pipe.camera, pipe.config)
    black = np.zeros_like(result.frame)
    sure = ann.annotate(black, result.state.with_fighters((replace(f, rival_sides=()),)), layers={"bases"})
    unsure = ann.annotate(black, result.state.with_fighters((replace(f, rival_sides=(other.index,)),)),
                          layers={"bases"})
    own = np.array(pipe.config.side(f.side).rim_bgr, np.uint8)
    theirs = np.array(other.rim_bgr, np.uint8)
    assert not np.all(sure == theirs, axis=2).any()
    assert np.all(unsure == theirs, axis=2).sum() > 10 and np.all(unsure == own, axis=2).sum() > 10
