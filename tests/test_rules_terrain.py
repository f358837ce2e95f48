"""Terrain (warcry-terrain.txt): obstacles, low terrain, platforms, falling, deadly,
unscalable, stairs and ladders, archways and doors."""

from __future__ import annotations

import pytest

from tracker.rules import terrain as T
from tracker.world import Base, TerrainPiece

from test_rules_helpers import box, fighter, part, piece, state


# --- obstacles and low terrain -------------------------------------------------------------
@pytest.mark.parametrize("h,kind", [(1.0, "obstacle"), (0.999, "low terrain"), (3.0, "obstacle"), (0.2, "low terrain")])
def test_obstacle_is_one_inch_or_more(h, kind):
    p = part("w", "obstacle", box(0, 0, 3, 0.2), h)
    assert T.terrain_kind(p) == kind
    assert T.is_obstacle(p) == (kind == "obstacle")
    r = T.classify(p)
    assert r.measured == h and r.threshold == 1.0
    assert r.rule.id == ("obstacle" if kind == "obstacle" else "low-terrain")


def test_obstacle_height_measured_from_the_platform_it_stands_on():
    # a 1.2" wall standing on a 3" floor: 1.2" tall, so an obstacle; a 0.5" crate up there is low terrain
    assert T.terrain_kind(part("w", "obstacle", box(0, 0, 3, 0.2), 1.2, base_z=3.0)) == "obstacle"
    assert T.terrain_kind(part("c", "obstacle", box(0, 0, 1, 1), 0.5, base_z=3.0)) == "low terrain"


def test_low_terrain_is_part_of_the_floor_for_treasure_drops():
    from tracker.rules.treasure import drop_point
    rubble = piece("r", part("r", "low", box(1, -1, 3, 1), 0.5))
    s = state([fighter("f", 0, 0, 0)], terrain=[rubble])
    assert drop_point(s, "f", (1.2, 0, 0.5)).verdict == "no"          # higher than the fighter
    s = state([fighter("f", 0, 0, 0, z=0.5)], terrain=[rubble])
    r = drop_point(s, "f", (1.2, 0.0, 0.5))
    assert r.verdict == "yes" and "low terrain" in r.details["surface"]


# --- platforms -----------------------------------------------------------------------------
def test_platform_larger_than_one_by_one():
    assert T.is_platform(part("p", "platform", box(0, 0, 1.2, 1.2), 3))
    assert not T.is_platform(part("p", "platform", box(0, 0, 1.0, 1.0), 3))     # not larger
    assert not T.is_platform(part("p", "platform", box(0, 0, 5.0, 0.9), 3))     # a beam: too narrow
    assert T.terrain_kind(part("p", "platform", box(0, 0, 5.0, 0.9), 3)) == "obstacle"
    diamond = ((0, -1), (1, 0), (0, 1), (-1, 0))                                  # a 1.41" square turned 45 degrees
    assert T.is_platform(part("p", "platform", diamond, 3))
    assert T.classify(part("p", "platform", box(0, 0, 2, 2), 3)).outcome == "platform"


def test_open_edges_explicit_and_inferred():
    floor = part("f", "platform", box(0, 0, 4, 4), 3.0, open_edges=(0,))
    assert T.open_edges(floor).length == pytest.approx(4.0)
    floor = part("f", "platform", box(0, 0, 4, 4), 3.0)
    wall = part("w", "obstacle", box(-0.1, 3.9, 4.1, 4.1), 2.0, base_z=3.0)
    low_wall = part("lw", "obstacle", box(3.9, -0.1, 4.1, 4.1), 0.5, base_z=3.0)  # low terrain: not enclosing
    rim = T.open_edges(floor, [wall, low_wall])
    assert rim.length == pytest.approx(16 - 4 - 0.2 - 0.2)


def _ruin(**kw):
    floor = part("floor", "platform", box(0, 0, 4, 4), 3.0, **kw)
    wall = part("wall", "obstacle", box(-0.1, 3.9, 4.1, 4.1), 2.0, base_z=3.0)
    return piece("ruin", floor, wall, ptype="platform")


@pytest.mark.parametrize("y,want", [(1.0, "yes"), (0.5 + 0.5, "yes"), (1.0001, "no"), (2.0, "no"), (3.2, "no")])
def test_falling_test_within_half_inch_of_open_edge(y, want):
    # the 1" base's edge is y - 0.5 from the open edge y = 0; the wall encloses y = 4
    s = state([fighter("t", 1, 2.0, y, z=3.0)], terrain=[_ruin()])
    r = T.falling_test(s, "t")
    assert r.verdict == want
    assert r.measured == pytest.approx(min(y - 0.5, 1.5))   # the side edges x = 0, x = 4 are 1.5" away


def test_no_falling_test_for_fly_or_floor_fighters():
    s = state([fighter("t", 1, 2.0, 0.8, z=3.0, runemarks=frozenset({"Fly"}))], terrain=[_ruin()])
    r = T.falling_test(s, "t")
    assert r.verdict == "no" and r.rule.id == "falling-fly"
    s = state([fighter("t", 1, 2.0, -0.8, z=0.0)], terrain=[_ruin()])
    assert T.falling_test(s, "t").verdict == "no"


def test_falling_too_close_to_call():
    s = state([fighter("t", 1, 2.0, 1.02, z=3.0, sigma_in=0.02)], terrain=[_ruin()])
    assert T.falling_test(s, "t").verdict == "too close to call"


def test_stairs_and_ladders_falling_test_and_no_fall():
    ladder = piece("l", part("l", "ladder", box(5, 0, 5.2, 1), 3.0))
    s = state([fighter("t", 1, 5.7, 0.5, z=1.5)], terrain=[ladder])       # found by geometry
    assert T.falling_test(s, "t").verdict == "yes"
    assert T.falling_test(s, "t").rule.id == "stairs-falling-test"
    assert T.stairs_no_fall(s, "t").verdict == "yes"
    s = state([fighter("t", 1, 9, 0.5, z=0.0, climbing="l")], terrain=[ladder])  # said by the tracker
    assert T.falling_test(s, "t").verdict == "yes"
    s = state([fighter("t", 1, 9, 0.5, z=0.0)], terrain=[ladder])
    assert T.stairs_no_fall(s, "t").verdict == "no"
    assert T.is_obstacle(ladder.parts[0])


# --- deadly and unscalable ------------------------------------------------------------------
def test_deadly_climb_and_fall():
    spikes = part("s", "deadly", box(2, -1, 2.3, 1), 1.5)
    f = fighter("f", 0, 0, 0)
    r = T.deadly_climb(f, spikes)
    assert r.verdict == "yes" and r.details["damage"] == "D6"
    assert T.can_climb(f, spikes).verdict == "yes"
    s = state([fighter("f", 0, 1.0, 0)], terrain=[piece("x", spikes)])             # edge at 1.5: 0.5" away
    assert T.deadly_after_fall(s, "f").verdict == "yes"
    s = state([fighter("f", 0, 0.5, 0)], terrain=[piece("x", spikes)])             # exactly 1.0"
    assert T.deadly_after_fall(s, "f").measured == pytest.approx(1.0)
    assert T.deadly_after_fall(s, "f").verdict == "yes"
    s = state([fighter("f", 0, 0.4, 0)], terrain=[piece("x", spikes)])
    assert T.deadly_after_fall(s, "f").verdict == "no"
    assert T.deadly_climb(f, part("w", "obstacle", box(0, 0, 1, 1), 2)).verdict == "no"


def test_deadly_after_fall_is_three_dimensional():
    spikes = part("s", "deadly", box(2, -1, 2.3, 1), 1.0)
    s = state([fighter("f", 0, 1.0, 0, z=1.8)], terrain=[piece("x", spikes)])   # 0.5" across, 0.8" up
    assert T.deadly_after_fall(s, "f").measured == pytest.approx((0.5**2 + 0.8**2) ** 0.5)


def test_unscalable_cannot_climb_and_ending_on_it():
    statue = part("st", "unscalable", box(0, 0, 2, 2), 3.0)
    f = fighter("f", 0, 5, 5)
    assert T.can_climb(f, statue).verdict == "no"
    assert T.is_obstacle(statue)
    s = state([fighter("f", 0, 1, 1, z=3.0)], terrain=[piece("x", statue)])
    r = T.on_unscalable(s, "f")
    assert r.verdict == "yes" and "impact damage" in r.outcome
    s = state([fighter("f", 0, 4, 4, z=0.0)], terrain=[piece("x", statue)])
    assert T.on_unscalable(s, "f").verdict == "no"


def test_mount_may_climb_stairs_only():
    mount = fighter("m", 0, 0, 0, runemarks=frozenset({"Mount"}))
    assert T.can_climb(mount, part("s", "stairs", box(0, 0, 1, 3), 3)).verdict == "yes"
    assert T.can_climb(mount, part("l", "ladder", box(0, 0, 1, 3), 3)).verdict == "no"
    assert T.can_climb(mount, part("l", "ladder", box(0, 0, 1, 3), 3), mounts_climb_only_stairs=False).verdict == "yes"
    assert T.can_climb(fighter("x"), part("l", "ladder", box(0, 0, 1, 3), 3)).verdict == "yes"


# --- archways and doors -----------------------------------------------------------------------
def _door_state(f, kind="archway", closed=False):
    # a 0.25"-thick opening in a wall along x = 5, 2" wide, centred at y = 0
    d = part("d", kind, box(4.875, -1, 5.125, 1), 2.5, closed=closed)
    return state([f], terrain=[piece("d", d)])


def test_archway_distance_through_the_centre():
    # base touching the arch: centre at 4.875 - 0.5; must pass 0.25 + 1.0 to be placed beyond
    s = _door_state(fighter("f", 0, 4.375, 0))
    r = T.passage(s, "f", "d", move_remaining=1.25)
    assert r.measured == pytest.approx(1.25) and r.verdict == "yes"
    assert T.passage(s, "f", "d", move_remaining=1.2).verdict == "no"
    # from 2" back it needs 2" more
    s = _door_state(fighter("f", 0, 2.375, 0))
    assert T.passage(s, "f", "d", move_remaining=3.25).verdict == "yes"
    assert T.passage(s, "f", "d", move_remaining=3.0).verdict == "no"
    # from the other side, same distance
    s = _door_state(fighter("f", 0, 5.625, 0))
    assert T.passage(s, "f", "d", move_remaining=1.25).measured == pytest.approx(1.25)


def test_passage_with_large_oval_base_uses_its_length_along_the_line():
    oval = Base("oval", 3.0, 2.0, angle_deg=0.0)   # 3" along x, the way through
    s = _door_state(fighter("f", 0, 4.875 - 1.5, 0, base=oval))
    assert T.passage(s, "f", "d", move_remaining=10).measured == pytest.approx(0.25 + 3.0)


@pytest.mark.parametrize("mark,arch,closed_door,open_door", [
    ("Monster", "no", "no", "yes"), ("Mount", "no", "no", "yes"), ("Beast", "yes", "no", "yes"), ("Hero", "yes", "yes", "yes")])
def test_archway_and_door_restrictions(mark, arch, closed_door, open_door):
    f = fighter("f", 0, 4.375, 0, runemarks=frozenset({mark}))
    assert T.passage(_door_state(f, "archway"), "f", "d", 10).verdict == arch
    assert T.passage(_door_state(f, "door", closed=True), "f", "d", 10).verdict == closed_door
    assert T.passage(_door_state(f, "door", closed=False), "f", "d", 10).verdict == open_door
    r = T.passage(_door_state(f, "door", closed=True), "f", "d", 10)
    if closed_door == "no":
        assert r.rule.id == "door-restriction"


def test_open_door_as_archway_option():
    f = fighter("f", 0, 4.375, 0, runemarks=frozenset({"Monster"}))
    assert T.passage(_door_state(f, "door", closed=False), "f", "d", 10, open_door_as_archway=True).verdict == "no"


def test_piece_without_parts_is_one_part():
    s = state([], terrain=[TerrainPiece("w", "obstacle", box(0, 0, 1, 1), 2.0)])
    (p,) = T.terrain_parts(s)
    assert p.id == "w" and p.type == "obstacle" and p.top_z == 2.0 and p.base_z == 0.0


def test_passage_ignores_the_opening_size_but_not_other_fighters():
    big = Base("round", 4.0, 4.0)                      # 4" base, 2" opening: still passes
    s = _door_state(fighter("f", 0, 4.875 - 2.0, 0, base=big))
    r = T.passage(s, "f", "d", move_remaining=10)
    assert r.verdict == "yes" and r.details["opening_width_in"] == pytest.approx(2.0)
    assert r.measured == pytest.approx(0.25 + 4.0)
    # another fighter standing just beyond the door: cannot be placed there
    s = _door_state(fighter("f", 0, 4.375, 0))
    s = state([s.fighters[0], fighter("g", 1, 6.0, 0)], terrain=s.terrain)
    r = T.passage(s, "f", "d", move_remaining=10)
    assert r.verdict == "no" and "g" in r.outcome


def test_falling_test_roll():
    assert T.falls(1) and not any(T.falls(k) for k in range(2, 7))
    with pytest.raises(ValueError):
        T.falls(7)


def test_deadly_and_unscalable_are_obstacles_for_cover():
    from tracker.rules.cover import cover
    for kind in ("deadly", "unscalable", "stairs", "ladder"):
        p = piece("x", part("x", kind, box(2.0, -2, 2.3, 2), 1.5))
        s = state([fighter("a", 0, 0, 0), fighter("t", 1, 5, 0)], terrain=[p])
        assert T.is_obstacle(p.parts[0]) and cover(s, "a", "t").verdict == "yes", kind
