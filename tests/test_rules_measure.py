"""Measuring: closest points of bases, token centres, 3D, "within" as <=."""

from __future__ import annotations

import math

import pytest
import shapely

from tracker.rules.measure import closest, distance, footprint, horizontal_distance, vertical_gap
from tracker.rules.ruling import combined_sigma, distance_verdict
from tracker.world import Base

from test_rules_helpers import B1, fighter, objective, part, box


def test_round_bases_closest_points():
    c = closest(fighter("a", x=0), fighter("b", x=4))
    assert c.distance == pytest.approx(3.0)
    assert c.a == pytest.approx((0.5, 0.0, B1.thickness_in / 2))
    assert c.b == pytest.approx((3.5, 0.0, B1.thickness_in / 2))


def test_rect_bases_rotated():
    r = Base("rect", 2.0, 1.0, angle_deg=90.0)   # now 1 wide in x, 2 deep in y
    assert distance(fighter("a", base=r), fighter("b", x=3)) == pytest.approx(3 - 0.5 - 0.5)
    assert distance(fighter("a", base=r), fighter("b", y=3)) == pytest.approx(3 - 1.0 - 0.5)


def test_rect_corner_to_round():
    r = Base("rect", 2.0, 2.0)
    d = distance(fighter("a", base=r), fighter("b", x=3, y=3))
    assert d == pytest.approx(math.hypot(2, 2) - 0.5)


@pytest.mark.parametrize("angle", [0, 17, 45, 90, 133])
def test_oval_to_oval_matches_dense_polygons(angle):
    a = fighter("a", base=Base("oval", 90 / 25.4, 52 / 25.4, angle))
    b = fighter("b", x=3.1, y=1.3, base=Base("oval", 60 / 25.4, 35 / 25.4, 2 * angle + 10))
    dense = shapely.distance(footprint(a, 4000), footprint(b, 4000))
    assert distance(a, b) == pytest.approx(dense, abs=2e-6)


def test_oval_to_rect_matches_dense_polygon():
    a = fighter("a", base=Base("oval", 3.0, 1.5, 30))
    b = fighter("b", x=3, y=2, base=Base("rect", 1.5, 0.8, 70))
    assert distance(a, b) == pytest.approx(shapely.distance(footprint(a, 4000), footprint(b)), abs=2e-6)


def test_overlapping_bases_are_zero_apart():
    assert distance(fighter("a"), fighter("b", x=0.8)) == 0.0


def test_token_measured_to_centre():
    assert distance(fighter("a"), objective(x=2.5)) == pytest.approx(2.0)
    # a point inside the base is at distance 0
    assert distance(fighter("a"), objective(x=0.2)) == 0.0


def test_three_dimensional_between_fighters():
    low = fighter("a", x=0)
    high = fighter("b", x=4, z=3.0)
    c = closest(low, high)
    assert c.horizontal == pytest.approx(3.0)
    assert c.vertical == pytest.approx(3.0 - B1.thickness_in)   # top of the lower base to bottom of the upper
    assert c.distance == pytest.approx(math.hypot(3.0, 3.0 - B1.thickness_in))
    assert horizontal_distance(low, high) == pytest.approx(3.0)
    assert vertical_gap(low, high) == pytest.approx(3.0)


def test_distance_to_terrain_part_prism():
    wall = part("w", "obstacle", box(2, -1, 2.5, 1), 2.0)
    assert distance(fighter("a"), wall) == pytest.approx(1.5)
    on_top = fighter("a", x=0, z=3.0)
    assert distance(on_top, wall) == pytest.approx(math.hypot(1.5, 1.0))


def test_within_is_inclusive_and_too_close_band():
    assert distance_verdict(3.0, 3.0, 0.0) == "yes"
    assert distance_verdict(3.0000001, 3.0, 0.0) == "no"
    assert distance_verdict(3.1, 3.0, 0.05) == "too close to call"   # exactly 2 sigma
    assert distance_verdict(3.1001, 3.0, 0.05) == "no"
    assert distance_verdict(2.8999, 3.0, 0.05) == "yes"
    assert combined_sigma(0.0, 0.0) == 0.0


def test_unknown_shape_rejected():
    with pytest.raises(ValueError, match="not a base shape"):
        distance(fighter("a", base=Base("squre", 1, 1)), fighter("b", x=3))
