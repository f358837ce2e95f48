"""Property tests: rulings do not depend on where the table is or how it is turned;
distance is symmetric; a tie never changes control."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from tracker.rules.cover import cover
from tracker.rules.measure import closest, distance
from tracker.rules.warcry import objective_control
from tracker.world import Base, Fighter, TerrainPiece, Token, WorldState

coord = st.floats(min_value=0.0, max_value=20.0, allow_nan=False)
angle = st.floats(min_value=0.0, max_value=360.0, allow_nan=False)
heights = st.sampled_from([0.0, 0.0, 0.0, 1.5, 3.0])


@st.composite
def bases(draw):
    shape = draw(st.sampled_from(["round", "oval", "rect"]))
    w = draw(st.floats(min_value=0.8, max_value=3.0))
    d = w if shape == "round" else draw(st.floats(min_value=0.6, max_value=3.0))
    return Base(shape, w, d, 0.0 if shape == "round" else draw(angle))


@st.composite
def fighters(draw, n_min=1, n_max=5, sigma=0.0):
    n = draw(st.integers(n_min, n_max))
    return tuple(Fighter(f"f{k}", draw(st.integers(0, 1)), draw(coord), draw(coord), draw(heights), draw(bases()),
                         sigma_in=sigma) for k in range(n))


@st.composite
def walls(draw, n_max=3):
    out = []
    for k in range(draw(st.integers(0, n_max))):
        x, y = draw(coord), draw(coord)
        w, d = draw(st.floats(0.2, 4.0)), draw(st.floats(0.2, 4.0))
        out.append(TerrainPiece(f"w{k}", "obstacle", ((x, y), (x + w, y), (x + w, y + d), (x, y + d)),
                                draw(st.floats(0.5, 4.0))))
    return tuple(out)


def _move(state: WorldState, theta_deg: float, dx: float, dy: float) -> WorldState:
    c, s = math.cos(math.radians(theta_deg)), math.sin(math.radians(theta_deg))

    def p(x, y):
        return (c * x - s * y + dx, s * x + c * y + dy)

    fs = tuple(replace(f, x=p(f.x, f.y)[0], y=p(f.x, f.y)[1],
                       base=replace(f.base, angle_deg=f.base.angle_deg + theta_deg)) for f in state.fighters)
    ts = tuple(replace(t, x=p(t.x, t.y)[0], y=p(t.x, t.y)[1]) for t in state.tokens)
    terr = tuple(replace(t, footprint=tuple(p(*q) for q in t.footprint),
                         parts=tuple(replace(pt, footprint=tuple(p(*q) for q in pt.footprint)) for pt in t.parts))
                 for t in state.terrain)
    return replace(state, fighters=fs, tokens=ts, terrain=terr)


moves = st.tuples(angle, st.floats(-50, 50), st.floats(-50, 50))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fs=fighters(1, 6, sigma=1e-6), objs=st.lists(st.tuples(coord, coord), min_size=1, max_size=3), mv=moves,
       prev=st.sampled_from([None, 0, 1]))
def test_control_unchanged_by_translation_and_rotation(fs, objs, mv, prev):
    s = WorldState(fighters=fs, tokens=tuple(Token(f"o{k}", "objective", x, y) for k, (x, y) in enumerate(objs)))
    previous = {t.id: prev for t in s.tokens}
    a = objective_control(s, previous)
    b = objective_control(_move(s, *mv), previous)
    for ra, rb in zip(a.rulings, b.rulings):
        for ma, mb in zip(ra.measurements, rb.measurements):
            assert ma.measured == pytest.approx(mb.measured, abs=1e-6)
        assume(ra.verdict != "too close to call" and rb.verdict != "too close to call")
        assert ra.verdict == rb.verdict
    assert a.control == b.control


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fs=fighters(2, 4, sigma=1e-4), terr=walls(), mv=moves)
def test_cover_unchanged_by_translation_and_rotation(fs, terr, mv):
    s = WorldState(fighters=fs, terrain=terr)
    m = _move(s, *mv)
    for att in fs[:2]:
        for tgt in fs:
            if att.id == tgt.id:
                continue
            ra, rb = cover(s, att.id, tgt.id), cover(m, att.id, tgt.id)
            if "too close to call" in (ra.verdict, rb.verdict):
                continue
            assert ra.verdict == rb.verdict, (att.id, tgt.id)
            assert ra.details["distance"] == pytest.approx(rb.details["distance"], abs=1e-6)


@settings(max_examples=150, deadline=None)
@given(fs=fighters(2, 2))
# Square bases a hundredth of a degree off parallel, 3 in apart: their closest pairs one
# way round and the other were 1.2e-4 in apart (each end of the stretch taken by one).
@example(fs=(Fighter("f0", 0, 0.0, 0.0, 0.0, Base("rect", 1.0, 1.0, 1.125)),
             Fighter("f1", 0, 0.0, 4.0, 0.0, Base("rect", 1.0, 1.0, 1.109375))))
# An oval's end 0.0005 in from another oval's side: alternating projections stopped after
# 100 steps 8e-5 in short of the gap, a different amount each way round.
@example(fs=(Fighter("f0", 0, 0.0, 0.0, 0.0, Base("oval", 3.0, 1.0, 1.0)),
             Fighter("f1", 0, 3.0, 0.0, 0.0, Base("oval", 3.0, 2.0, 0.0))))
def test_distance_is_symmetric(fs):
    a, b = fs
    b = replace(b, id="other")
    ab, ba = closest(a, b), closest(b, a)
    assert ab.distance == pytest.approx(ba.distance, abs=1e-7)
    assert ab.distance >= 0
    # the closest points lie on their bodies, the distance apart (parallel rectangle edges
    # have a stretch of closest pairs; the middle one is taken, whichever way round)
    assert closest(a, ab.a).distance < 1e-7 and closest(b, ab.b).distance < 1e-7
    assert math.dist(ab.a, ab.b) == pytest.approx(ab.distance, abs=1e-7)
    if ab.distance > 1e-6:
        assert math.dist(ab.a, ba.b) < 1e-4 and math.dist(ab.b, ba.a) < 1e-4


@settings(max_examples=100, deadline=None)
@given(n=st.integers(0, 3), sides=st.integers(2, 3), far=st.integers(0, 4), prev=st.sampled_from([None, 0, 1, 2]),
       data=st.data())
def test_control_never_changes_on_a_tie(n, sides, far, prev, data):
    ox, oy = 10.0, 10.0
    fs = []
    for side in range(sides):
        for k in range(n):  # n fighters of every side within 3": a tie
            r = data.draw(st.floats(0.0, 2.4))
            a = data.draw(angle)
            fs.append(Fighter(f"s{side}n{k}", side, ox + (r + 0.5) * math.cos(math.radians(a)),
                              oy + (r + 0.5) * math.sin(math.radians(a)), 0.0, Base("round", 1.0, 1.0)))
    for k in range(far):  # others well out of range
        a = data.draw(angle)
        fs.append(Fighter(f"far{k}", data.draw(st.integers(0, sides - 1)), ox + 4.0 * math.cos(math.radians(a)),
                          oy + 4.0 * math.sin(math.radians(a)), 0.0, Base("round", 1.0, 1.0)))
    s = WorldState(fighters=tuple(fs), tokens=(Token("o", "objective", ox, oy),))
    r = objective_control(s, {"o": prev})
    assert r.control == {"o": prev}
    assert r.rulings[0].details["gained_by"] is None


def test_distance_symmetric_for_tokens_and_fighters():
    f = Fighter("f", 0, 1.0, 2.0, 3.0, Base("oval", 2.0, 1.0, 20.0))
    t = Token("t", "objective", 4.0, 4.0)
    assert distance(f, t) == pytest.approx(distance(t, f))
