"""Property tests: Epic rulings do not depend on where the table is or how it is turned;
centimetre/inch conversion round-trips."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tracker.epic import (
    CM_PER_IN, DeploymentZone, EpicConfig, EpicSide, ObjectiveMarker, cm_to_in, group_stands, in_to_cm,
)
from tracker.rules.epic import control, placement
from tracker.world import Base, Fighter, WorldState

from test_epic_helpers import config

cm = st.floats(min_value=0.0, max_value=180.0, allow_nan=False)
angle = st.floats(min_value=0.0, max_value=360.0, allow_nan=False)
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings(max_examples=300, deadline=None)
@given(x=st.floats(min_value=-1e6, max_value=1e6, allow_nan=False))
def test_cm_inch_round_trip(x):
    assert cm_to_in(in_to_cm(x)) == pytest.approx(x, rel=1e-15, abs=1e-12)
    assert in_to_cm(cm_to_in(x)) == pytest.approx(x, rel=1e-15, abs=1e-12)
    assert in_to_cm(x) == pytest.approx(x * CM_PER_IN)


@settings(max_examples=100, deadline=None)
@given(x=cm, y=cm, s=st.floats(0, 1))
def test_marker_token_round_trip(x, y, s):
    m = ObjectiveMarker("m", 0, "cleanse", x, y, sigma_cm=s)
    back = ObjectiveMarker.from_token(m.token(), 0, "cleanse")
    assert back.x_cm == pytest.approx(x, abs=1e-9) and back.y_cm == pytest.approx(y, abs=1e-9)
    assert back.sigma_cm == pytest.approx(s, abs=1e-12)


@st.composite
def stands(draw, n_min=1, n_max=6):
    n = draw(st.integers(n_min, n_max))
    out = []
    for k in range(n):
        w, d = draw(st.sampled_from([(40, 20), (20, 40), (50, 25), (40, 40)]))
        b = Base("rect", w / 25.4, d / 25.4, draw(angle))
        out.append(Fighter(f"s{k}", draw(st.integers(0, 1)), cm_to_in(draw(st.floats(60, 120))),
                           cm_to_in(draw(st.floats(30, 90))), 0.0, b, sigma_in=1e-6,
                           unit=f"u{draw(st.integers(0, 3))}"))
    return tuple(out)


def _move(state: WorldState, theta: float, dx: float, dy: float) -> WorldState:
    c, s = math.cos(math.radians(theta)), math.sin(math.radians(theta))

    def p(x, y):
        return (c * x - s * y + dx, s * x + c * y + dy)

    fs = tuple(replace(f, x=p(f.x, f.y)[0], y=p(f.x, f.y)[1], base=replace(f.base, angle_deg=f.base.angle_deg + theta))
               for f in state.fighters)
    ts = tuple(replace(t, x=p(t.x, t.y)[0], y=p(t.x, t.y)[1]) for t in state.tokens)
    return replace(state, fighters=fs, tokens=ts)


@FAST
@given(fs=stands(), objs=st.lists(st.tuples(st.floats(60, 120), st.floats(30, 90),
                                            st.sampled_from(["take-and-hold", "cleanse", "capture"])),
                                  min_size=1, max_size=3),
       mv=st.tuples(angle, st.floats(-20, 20), st.floats(-20, 20)))
def test_control_unchanged_by_translation_and_rotation(fs, objs, mv):
    ms = [ObjectiveMarker(f"o{k}", k % 2, t, x, y, diameter_cm=3.0) for k, (x, y, t) in enumerate(objs)]
    s = WorldState(fighters=fs, tokens=tuple(m.token() for m in ms))
    moved = _move(s, *mv)
    ms2 = [replace(ObjectiveMarker.from_token(t, m.owner, m.type), diameter_cm=3.0) for t, m in zip(moved.tokens, ms)]
    a, b = control(s, config(), markers=ms), control(moved, config(), markers=ms2)
    for ra, rb in zip(a.rulings, b.rulings):
        if ra.measured is not None:
            assert ra.measured == pytest.approx(rb.measured, abs=1e-6)
        assume(ra.verdict != "too close to call" and rb.verdict != "too close to call")
        assert ra.verdict == rb.verdict
        assert ra.details["controller"] == rb.details["controller"]


FLIP = {"south": "north", "north": "south", "east": "west", "west": "east"}


def _turned_config(cfg: EpicConfig) -> EpicConfig:
    """The same table turned 180 degrees about its centre."""
    W, D = cfg.table_cm
    sides = tuple(EpicSide(s.index, DeploymentZone(s.index, tuple((W - x, D - y) for x, y in s.zone.polygon_cm)),
                           FLIP.get(s.entry_edge, None)) for s in cfg.sides)
    return replace(cfg, sides=sides)


@FAST
@given(pts=st.lists(st.tuples(cm, st.floats(0, 120), st.sampled_from(["take-and-hold", "cleanse", "bunker", "capture"]),
                              st.integers(0, 1)), min_size=1, max_size=4))
def test_placement_unchanged_by_turning_the_table(pts):
    cfg = config()
    W, D = cfg.table_cm
    ms = [ObjectiveMarker(f"m{k}", o, t, x, y) for k, (x, y, t, o) in enumerate(pts)]
    turned = [replace(m, x_cm=W - m.x_cm, y_cm=D - m.y_cm) for m in ms]
    tcfg = _turned_config(cfg)
    for m, tm in zip(ms, turned):
        a, b = placement(m, cfg, ms), placement(tm, tcfg, turned)
        assert [r.verdict for r in a.rulings] == [r.verdict for r in b.rulings]
        for ra, rb in zip(a.rulings, b.rulings):
            if ra.measured is not None:
                assert ra.measured == pytest.approx(rb.measured, abs=1e-6)


@FAST
@given(pts=st.lists(st.tuples(st.floats(40, 140), st.floats(40, 80)), min_size=2, max_size=4),
       dx=st.floats(-10, 10), dy=st.floats(-10, 10))
def test_own_marker_spacing_unchanged_by_moving_all_markers(pts, dx, dy):
    cfg = config()
    ms = [ObjectiveMarker(f"m{k}", 0, "take-and-hold", x, y) for k, (x, y) in enumerate(pts)]
    moved = [replace(m, x_cm=m.x_cm + dx, y_cm=m.y_cm + dy) for m in ms]
    for m, mm in zip(ms, moved):
        ra = next(r for r in placement(m, cfg, ms).rulings if r.question == "placement: own markers")
        rb = next(r for r in placement(mm, cfg, moved).rulings if r.question == "placement: own markers")
        assert ra.measured == pytest.approx(rb.measured, abs=1e-9)
        assume(abs(ra.measured - 15.0) > 1e-6)
        assert ra.verdict == rb.verdict


@FAST
@given(centres=st.lists(st.tuples(st.floats(20, 160), st.floats(20, 100)), min_size=2, max_size=2),
       mv=st.tuples(angle, st.floats(-20, 20), st.floats(-20, 20)))
def test_grouping_unchanged_by_translation_and_rotation(centres, mv):
    (ax, ay), (bx, by) = centres
    assume(math.dist((ax, ay), (bx, by)) > 30)
    b = Base("rect", 40 / 25.4, 20 / 25.4)
    fs = tuple(Fighter(f"s{k}", 0, cm_to_in(cx + 5 * j), cm_to_in(cy), 0.0, b)
               for k, (cx, cy, j) in enumerate([(ax, ay, 0), (ax, ay, 1), (ax, ay, 2), (bx, by, 0), (bx, by, 1), (bx, by, 2)]))
    roster = config().units
    a = {f.id: f.unit for f in group_stands(fs, roster)}
    moved = _move(WorldState(fighters=fs), *mv).fighters
    m = {f.id: f.unit for f in group_stands(moved, roster)}
    # the partition into units is the same (which roster id each group gets may differ)
    part = lambda d: sorted(sorted(k for k in d if d[k] == u) for u in set(d.values()))
    assert part(a) == part(m)


stand = st.tuples(st.floats(0.0, 12.0), st.floats(0.0, 12.0), st.sampled_from(["rect", "oval", "round"]),
                  st.sampled_from([(1.6, 0.8), (2.0, 1.0), (1.26, 1.26), (0.98, 0.98)]), angle,
                  st.sampled_from([0.0, 3.0]), st.floats(0.0, 0.05))


@settings(max_examples=400, deadline=None)
@given(stands=st.lists(stand, min_size=1, max_size=8), tx=st.floats(-3.0, 15.0), ty=st.floats(-3.0, 15.0),
       tz=st.sampled_from([0.0, 3.0]), mirror=st.booleans())
def test_a_units_distance_to_a_marker_is_its_nearest_stands_of_all(stands, tx, ty, tz, mirror):
    """_unit_to_marker measures only the stands that could be nearest; it answers as
    measuring every stand does: the least distance, and of stands at that distance the
    first (a mirrored pair straddling the marker ties)."""
    from tracker.rules.epic import _unit_to_marker
    from tracker.rules.measure import closest
    from tracker.rules.ruling import combined_sigma
    from tracker.world import Token

    fs = [Fighter(f"s{k}", 0, x, y, z, Base.round_mm(w * 25.4) if shape == "round" else Base(shape, w, d, a),
                  sigma_in=sg) for k, (x, y, shape, (w, d), a, z, sg) in enumerate(stands)]
    if mirror:  # the first stand's mirror image through the marker: both at one distance
        f = fs[0]
        fs.append(replace(f, id="mirror", x=2 * tx - f.x, y=2 * ty - f.y,
                          base=replace(f.base, angle_deg=f.base.angle_deg + 180.0)))
    tok = Token("m", "objective", tx, ty, tz, sigma_in=0.02)

    class Unit:
        stands = fs

    want = None
    for s in fs:  # every stand measured
        d = in_to_cm(closest(s, tok).distance)
        if want is None or d < want[0]:
            want = (d, in_to_cm(combined_sigma(s.sigma_in, tok.sigma_in)), s)
    got = _unit_to_marker(Unit(), tok)
    assert got[0] == want[0] and got[1] == want[1] and got[2] is want[2]
