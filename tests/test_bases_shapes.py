"""Oval and rectangular bases (issue #4 item 1): the config, the renderer's prisms, and
detection + tracking on real renders (a Warcry table with oval, rectangular and round
bases of three sides, some on platforms; an Epic table with units of touching 40 x 20 mm
stands). Truth is read only to score."""

import math

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from tracker.annotate import Annotator
from tracker.base_shapes import SHAPE_NAMES, shape_polygon
from tracker.config import BaseSize, GameConfig
from tracker.detection import KIND_BASE, TableDetector
from tracker.errors import ConfigError
from tracker.synthetic.scene import MM, FighterLook, Renderer, Table, fighter_mover
from tracker.synthetic.camera import overhead_camera
from tracker.synthetic.shapes import ShapedRenderer, plan_epic, plan_shaped
from tracker.tracking import FighterTracker
from tracker.world import MM_PER_IN

SIDES = [{"index": 0, "colour": "red", "rim_bgr": [40, 38, 200]}, {"index": 1, "colour": "blue", "rim_bgr": [190, 95, 25]}]


def _cfg(bases):
    return GameConfig.from_dict({"kind": "epic", "sides": [{**SIDES[0], "bases_mm": bases}, SIDES[1]]})


# ----------------------------------------------------------------------------- config
def test_config_reads_round_oval_and_rect_bases():
    side = _cfg([32, {"shape": "oval", "mm": [60, 35]}, {"shape": "rect", "mm": [20, 40]},
                 {"shape": "round", "mm": 25}, "28.5"]).sides[0]
    assert side.bases_mm == (32.0, 25.0, 28.5)
    # width is the long side whichever order the sizes come in
    assert side.shaped == (BaseSize("oval", 60.0, 35.0), BaseSize("rect", 40.0, 20.0))
    plain = _cfg([25, 32]).sides[0]
    assert plain.bases_mm == (25.0, 32.0) and plain.shaped == ()
    # Each size once in ``shaped``; one per fighter, as listed, in ``shaped_roster``.
    stands = _cfg([{"shape": "rect", "mm": [40, 20]}] * 3 + [{"shape": "oval", "mm": [60, 35]}]).sides[0]
    assert stands.shaped == (BaseSize("rect", 40.0, 20.0), BaseSize("oval", 60.0, 35.0))
    assert stands.shaped_roster == (BaseSize("rect", 40.0, 20.0),) * 3 + (BaseSize("oval", 60.0, 35.0),)


@pytest.mark.parametrize("entry, message", [
    ({"shape": "rectangle", "mm": [40, 20]}, "did you mean 'rect'"),
    ({"shape": "rect", "mms": [40, 20]}, "unknown key 'mms' (did you mean 'mm'?)"),
    ({"shap": "rect", "mm": [40, 20]}, "unknown key 'shap' (did you mean 'shape'?)"),
    ({"shape": "rect", "mm": [40, 0]}, "positive"),
    ({"shape": "oval", "mm": [60]}, "two sizes [width, depth]"),
    ({"shape": "oval", "mm": 60}, "two sizes [width, depth]"),
    ({"shape": "rect"}, "missing required key 'mm'"),
    ({"shape": "round", "mm": -3}, "positive diameter"),
    ({"shape": "oval", "mm": [50, 50]}, "is round"),
    (-25, "positive"),
    ("big", "expected a diameter"),
])
def test_config_base_errors_say_where_and_what(entry, message):
    with pytest.raises(ConfigError) as e:
        _cfg([32, entry])
    assert "config.sides[0].bases_mm[1]" in str(e.value) and message in str(e.value)


# ----------------------------------------------------------------------------- renderer
@pytest.mark.parametrize("shape", ["rect", "oval"])
def test_prism_base_is_drawn_where_opencv_projects_it(shape):
    """A bare base (no model) in a clean render covers exactly its projected outline."""
    rng = np.random.default_rng(4)
    table = Table.random(rng, n_terrain=0, n_platforms=0)
    cam = overhead_camera(rng, 640, 360)
    look = FighterLook(1.0, (40, 38, 200), 1.5 * MM, (40, 60, 75), [], 0.3, shape, (1.1, 0.6), math.radians(35))
    r = Renderer(table, cam, 2)
    empty = r.render([])[0]
    img = r.render([fighter_mover(1, look, 14.0, 10.0, 0.0, 4 * MM)])[0]
    changed = np.abs(img - empty).sum(axis=2) > 30
    import cv2

    top = np.array(shape_polygon(shape, 2.2, 1.2, 14.0, 10.0, 35.0).exterior.coords)
    mask = np.zeros(changed.shape, np.uint8)
    cv2.fillPoly(mask, [np.round(cam.project(np.column_stack([top, np.full(len(top), 4 * MM)]))).astype(np.int32)], 1)
    inside = cv2.erode(mask, np.ones((3, 3), np.uint8)) > 0
    assert inside.sum() > 150 and changed[inside].mean() > 0.99  # the top face, all drawn
    hull = np.zeros(changed.shape, np.uint8)
    allp = np.vstack([cam.project(np.column_stack([top, np.full(len(top), z)])) for z in (0.0, 4 * MM)])
    cv2.fillConvexPoly(hull, cv2.convexHull(np.round(allp).astype(np.int32)), 1)
    hull = cv2.dilate(hull, np.ones((5, 5), np.uint8)) > 0
    # Nothing rim-coloured outside the prism (its shadow is darker, not red).
    rim_like = changed & (img[..., 2] > img[..., 1] + 60)
    assert rim_like[hull].sum() > 30 and not rim_like[~hull].any()


# ----------------------------------------------------------------------------- detection
def _score(bases, dets):
    """Match truth to detections (<= 0.5 in): pairs, misses, false detections."""
    d = dets[dets.kind == KIND_BASE]
    tx = np.array([[b.x, b.y] for b in bases])
    C = np.linalg.norm(tx[:, None, :] - d.xyz[None, :, :2], axis=2)
    C = np.where(C < 0.5, C, 1e6)
    ri, ci = linear_sum_assignment(C)
    pairs = [(i, j) for i, j in zip(ri, ci) if C[i, j] < 1e6]
    return d, pairs


def _check(sc, dets, floor_rms=0.03, platform_rms=0.05, max_angle=2.0):
    d, pairs = _score(sc.bases, dets)
    assert len(pairs) == len(sc.bases), "every base found"
    assert len(d) == len(sc.bases), "no doubles, no false bases"
    floor, up, angle = [], [], []
    for i, j in pairs:
        b = sc.bases[i]
        assert d.side[j] == b.side
        assert SHAPE_NAMES[int(d.shape[j])] == b.shape
        assert tuple(d.size_mm[j]) == pytest.approx(b.size_mm)
        assert d.xyz[j, 2] == pytest.approx(b.z, abs=1e-6)
        e = float(np.hypot(d.xyz[j, 0] - b.x, d.xyz[j, 1] - b.y))
        (up if b.z > 0 else floor).append(e)
        if b.shape != "round":
            angle.append(abs((d.angle_deg[j] - b.angle_deg + 90) % 180 - 90))
    assert math.sqrt(np.mean(np.square(floor))) <= floor_rms
    if up:
        assert math.sqrt(np.mean(np.square(up))) <= platform_rms
    assert max(angle) <= max_angle
    return floor, up, angle


@pytest.fixture(scope="module")
def mixed():
    sc = plan_shaped(np.random.default_rng(1))
    r = ShapedRenderer(sc, 1280, 720, seed=1)
    return sc, r


@pytest.fixture(scope="module")
def epic():
    sc = plan_epic(np.random.default_rng(2), formations=("block", "line", "loose"))
    r = ShapedRenderer(sc, 1920, 1080, seed=2)
    return sc, r


def _detector(sc, r):
    cfg = GameConfig.from_dict(sc.config(r.camera.width, r.camera.height))
    return TableDetector(cfg, r.camera, background=r.empty(), terrain=sc.terrain())


def test_mixed_table_oval_rect_and_round_bases_of_three_sides(mixed):
    sc, r = mixed
    assert {b.shape for b in sc.bases} == {"oval", "rect", "round"} and any(b.z > 0 for b in sc.bases)
    det = _detector(sc, r)
    _check(sc, det.detect(r.frame()))


def test_epic_units_of_touching_stands(epic):
    sc, r = epic
    assert len(sc.bases) == 12 and len({b.side for b in sc.bases}) == 3
    # stands of a unit really touch (long edge to long edge, or end to end) or nearly
    gaps = [a.polygon().distance(b.polygon()) for k, a in enumerate(sc.bases) for b in sc.bases[k + 1:]]
    assert sum(g < 1e-3 for g in gaps) >= 6 and sum(g < 0.1 for g in gaps) == 9
    det = _detector(sc, r)
    _check(sc, det.detect(r.frame()))


def test_tracking_and_follow_carry_shape_and_angle(epic):
    """Frame 0: the whole table; then one unit moves 0.25 in a frame and is only
    followed. Fighters keep their ids and carry rect bases turned as the stands are;
    the annotator's outline of each is the stand's."""
    sc, r = epic
    det = _detector(sc, r)
    tracker = FighterTracker(det.config, confirm_hits=1)
    state = tracker.update(det.detect(r.frame()), 0, 0.0)
    ids = {f.id for f in state.fighters}
    assert len(ids) == 12
    unit = [b.id for b in sc.bases if b.side == 0]
    for k in (1, 2):
        off = {i: (0.25 * k, -0.15 * k) for i in unit}
        tracks = [(float(t.xyz[0]), float(t.xyz[1]), float(t.xyz[2]), t.side, t.base_mm, t.shape, *t.size_mm,
                   t.angle_deg) for t in tracker.tracks]
        dets = det.follow(r.frame(off, k=k + 1), tracks)
        assert len(dets) == 12
        state = tracker.update(dets, k, k / 15)
    assert {f.id for f in state.fighters} == ids
    for b in sc.bases:
        dx, dy = (0.5, -0.3) if b.id in unit else (0.0, 0.0)
        f = min(state.fighters, key=lambda f: math.hypot(f.x - b.x - dx, f.y - b.y - dy))
        assert math.hypot(f.x - b.x - dx, f.y - b.y - dy) < 0.05
        assert f.base.shape == "rect" and f.base.size_mm == (40.0, 20.0)
        assert abs((f.base.angle_deg - b.angle_deg + 90) % 180 - 90) < 2.0
        outline = Annotator.base_outline(f)[:, :2]
        truth = shape_polygon("rect", 40 / MM_PER_IN, 20 / MM_PER_IN, b.x + dx, b.y + dy, b.angle_deg)
        from shapely.geometry import Polygon

        got = Polygon(outline)
        assert got.intersection(truth).area / got.union(truth).area > 0.9


def test_round_only_config_looks_for_no_shapes():
    cfg = _cfg([25, 32])
    cam = overhead_camera(np.random.default_rng(0), 320, 180)
    det = TableDetector(cfg, cam)
    assert det._shaped == []
    assert [sizes for _, _, sizes in det._side_lab()] == [(25.0, 32.0), (25.0, 32.0)]


def test_fit_sees_both_shared_rims_of_the_middle_stand_of_a_packed_block():
    """Three stands touching long edge to long edge (a rim's width of evidence each,
    the shared rims one band of twice that): the middle stand's fit finds its place and
    sees its outline all round, long sides included (their inner edges hold)."""
    import cv2

    from tracker.base_shapes import fit_shapes

    S = 16.0
    hx, hy = 20 / MM_PER_IN * S, 10 / MM_PER_IN * S
    ev = np.zeros((80, 120), np.float32)
    yy, xx = np.mgrid[0:80, 0:120].astype(np.float32)
    rim = 2.5 / MM_PER_IN * S
    cx0, cy = 60.0, 40.0
    for k in (-1, 0, 1):  # long axis along rows: the stands sit side by side along columns
        cx = cx0 + k * 2 * hy
        u, v = np.abs(yy - cy), np.abs(xx - cx)
        inside = (u <= hx) & (v <= hy)
        ev[inside & ((u > hx - rim) | (v > hy - rim))] = 0.8
    ev = cv2.GaussianBlur(ev, (0, 0), 0.7)
    fit = fit_shapes(ev, "rect", hx, hy, np.array([cx0 + 1.0]), np.array([cy - 1.0]), np.array([math.pi / 2 + 0.05]),
                     px_per_in=S, bias=0.8)[0]
    assert fit is not None
    assert math.hypot(fit.cx - cx0, fit.cy - cy) < 0.3 and abs((fit.theta - math.pi / 2 + math.pi / 2) % math.pi - math.pi / 2) < 0.03
    assert fit.score >= 0.6 and min(fit.sides) >= 0.5, (fit.score, fit.sides)


def test_follow_keeps_touching_stands_when_their_unit_moves_a_stand_width_a_frame(epic):
    """A packed block slides along its row by more than a stand's width in one frame;
    the tracker's predictions (the unit slowing) fall 0.15 in short. Each stand is still
    re-found, at its own place: the neighbours' predicted places are a depth away, not
    inside it."""
    sc, r = epic
    det = _detector(sc, r)
    block = [b for b in sc.bases if b.side == 0]
    row = np.array([block[-1].x - block[0].x, block[-1].y - block[0].y])
    row /= np.linalg.norm(row)
    step, short = 0.95 * row, 0.15 * row
    off = {b.id: tuple(step) for b in block}
    tracks = []
    for b in sc.bases:
        mv = (step - short) if b.side == 0 else np.zeros(2)
        tracks.append((b.x + mv[0], b.y + mv[1], b.z, b.side, 40.0, "rect", 40.0, 20.0, b.angle_deg))
    dets = det.follow(r.frame(off, k=3), tracks)
    moved = [(b.x + off.get(b.id, (0, 0))[0], b.y + off.get(b.id, (0, 0))[1]) for b in sc.bases]
    assert len(dets) == len(sc.bases)
    for x, y in moved:
        assert np.min(np.hypot(dets.xyz[:, 0] - x, dets.xyz[:, 1] - y)) < 0.05


def test_a_base_in_a_hands_shadow_is_still_followed(mixed):
    """A hand 7 in above the table, up-light of a 25 mm base: its soft shadow covers the
    base, the hand itself covers none of it. In shadow the yellow rim reads as no rim
    colour against the lit empty table, and the follow lost the base; the window is now
    lifted by the mat's darkening round the base first."""
    from tracker.synthetic.game import BASE_THICKNESS_IN
    from tracker.synthetic.scene import ID_FIGHTER, hand_mover

    sc, r = mixed
    det = _detector(sc, r)
    b = next(q for q in sc.bases if q.id == 13)
    assert b.shape == "round" and b.z == 0.0
    L = sc.table.light_dir
    palm = np.array([b.x + 7.0 * L[0] / L[2], b.y + 7.0 * L[1] / L[2], 7.0])  # its shadow falls on the base
    movers = [fighter_mover(q.id, q.look, q.x, q.y, q.z, BASE_THICKNESS_IN) for q in sc.bases]
    hand = hand_mover(0, palm, math.atan2(L[1], L[0]), (150, 180, 225), (60, 60, 60))
    img, info = r.renderer.render(movers + [hand])
    frame = r._out(img, 3)
    silhouette, visible, _ = info[ID_FIGHTER + b.id]
    assert visible / silhouette > 0.95  # the hand is not over it
    lit, shaded = (det.floor.sample(det.relight(f)).astype(float).sum(axis=2)
                   for f in (r._out(r.renderer.render(movers)[0], 3), frame))
    ring = b.size_mm[0] / 25.4 / 2 + 0.4  # the mat round it, in inches from its centre
    at = np.rint(det.floor.to_pixel(np.array([[b.x + ring * math.cos(a), b.y + ring * math.sin(a)]
                                              for a in np.linspace(0, 2 * math.pi, 24, endpoint=False)]))).astype(int)
    assert np.median(shaded[at[:, 1], at[:, 0]] / lit[at[:, 1], at[:, 0]]) < 0.8  # in shadow
    got = det.follow(frame, [(b.x, b.y, b.z, b.side, b.size_mm[0])])
    assert got.hands
    got = got[got.kind == KIND_BASE]
    assert len(got) == 1
    assert np.hypot(got.xyz[0, 0] - b.x, got.xyz[0, 1] - b.y) < 0.03


def test_an_oval_whose_rim_its_miniature_parts_in_two_arcs_is_found():
    """A blue 60 x 35 mm oval (mixed table, seed 102) under a long grey miniature that
    covers both ends of its rim: the rim shows as two arcs, each as long as the base but
    thinner than its depth. Candidates were looked for only in patches of the side's colour
    at least 1.5 half-depths each way, so the oval was never tried; a white 25 mm circle
    in the miniature was reported 0.32 in off instead. Now the oval is found at its place,
    turned as it is, and nothing else over it."""
    sc = plan_shaped(np.random.default_rng(102), n_per_side=6)
    r = ShapedRenderer(sc, 1920, 1080, seed=102)
    det = _detector(sc, r)
    frame = r.frame()
    det.detect(frame)
    d = det.detect(frame)
    d = d[d.kind == KIND_BASE]
    oval = sc.bases[9]
    assert (oval.shape, oval.side, oval.size_mm) == ("oval", 1, (60.0, 35.0))
    near = np.hypot(d.xyz[:, 0] - oval.x, d.xyz[:, 1] - oval.y) < 0.6
    assert near.sum() == 1
    j = int(np.flatnonzero(near)[0])
    assert SHAPE_NAMES[int(d.shape[j])] == "oval" and d.side[j] == 1
    assert np.hypot(d.xyz[j, 0] - oval.x, d.xyz[j, 1] - oval.y) < 0.03
    assert abs((d.angle_deg[j] - oval.angle_deg + 90) % 180 - 90) < 2.0


def _mixed_table_bases(seed: int):
    """A 1920x1080 mixed Warcry table of six bases a side (as benchmarks/bases_shapes.py
    renders them) and the bases one full look finds on it."""
    sc = plan_shaped(np.random.default_rng(seed), n_per_side=6)
    r = ShapedRenderer(sc, 1920, 1080, seed=seed)
    d = _detector(sc, r).detect(r.frame())
    return sc, d[d.kind == KIND_BASE]


def _found_alone(sc, d, i, shape, side, size_mm, within=0.03):
    """Base ``i`` is found as itself, within ``within`` in, and nothing else lies
    within 1.2 in of it."""
    b = sc.bases[i]
    assert (b.shape, b.side, b.size_mm) == (shape, side, size_mm)
    near = np.flatnonzero(np.hypot(d.xyz[:, 0] - b.x, d.xyz[:, 1] - b.y) < 1.2)
    assert len(near) == 1, [(round(float(d.xyz[j, 0]), 2), round(float(d.xyz[j, 1]), 2)) for j in near]
    j = int(near[0])
    assert SHAPE_NAMES[int(d.shape[j])] == shape and d.side[j] == side
    assert np.hypot(d.xyz[j, 0] - b.x, d.xyz[j, 1] - b.y) < within
    if shape != "round":
        assert abs((d.angle_deg[j] - b.angle_deg + 90) % 180 - 90) < 2.0


def test_a_circle_on_the_rim_of_a_better_seen_base_is_no_second_base():
    """Mixed table seed 100: a white 25 mm base whose miniature holds a white spear out
    beside it. A 25 mm circle through the spear and 8 of the base's own rim points (23 %
    of its circle, 18 % needed) was a second white base, 0.93 in from the first: bases do
    not overlap, so the points on the kept base's rim are that base's, and what is left
    (15 %) is no base."""
    sc, d = _mixed_table_bases(100)
    _found_alone(sc, d, 13, "round", 2, (25.0, 25.0))


def test_an_oval_whose_miniature_hides_one_long_side_is_found():
    """Mixed table seed 107: a cavalry model's body over one long side of a blue 60 x 35
    mm oval. Its ends and other side show (64 % of the outline), but a bare long side was
    taken for a fit borrowing a neighbour's edge, and the oval was lost."""
    sc, d = _mixed_table_bases(107)
    _found_alone(sc, d, 7, "oval", 1, (60.0, 35.0))


@pytest.mark.parametrize("seed, i, side, size_mm, within", [(7, 6, 1, (50.0, 25.0), 0.03),
                                                            (9, 14, 2, (40.0, 20.0), 0.05)])
def test_an_outline_seen_all_round_is_a_base_whatever_lies_through_its_middle(seed, i, side, size_mm, within):
    """Mixed tables: a blue 50 x 25 mm rectangle under a miniature painted near blue
    (seed 7, 81 % of its outline seen), and a white 40 x 20 mm one under a white head
    (seed 9, 80 %). The rim evidence through their middles was taken for two touching
    stands' shared rims: the first was lost, the second read as a 25 mm circle 0.32 in
    off (now 0.037 in: the white head pulls its outline's edge in by 0.8 px)."""
    sc, d = _mixed_table_bases(seed)
    _found_alone(sc, d, i, "rect", side, size_mm, within)


def test_a_stand_half_under_terrain_is_found():
    """Mixed table seed 106: a white 40 x 20 mm rectangle with one long side under a
    terrain piece. Its other side and both ends show, but the covered side was taken for
    a bare one (a fit borrowing a neighbour's edge), and a 25 mm circle was fitted in
    its visible half instead, 0.47 in off."""
    sc, d = _mixed_table_bases(106)
    _found_alone(sc, d, 14, "rect", 2, (40.0, 20.0))
