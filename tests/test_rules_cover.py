"""Cover (warcry-terrain.txt, "Cover")."""

from __future__ import annotations

import random

import pytest

from tracker.rules.cover import LINE_WIDTH_IN, cover, cover_all_pairs
from tracker.world import Base, TerrainPiece

from test_rules_helpers import B1, box, fighter, part, piece, state

T = B1.thickness_in
WALL = TerrainPiece("wall", "obstacle", box(2.0, -2.0, 2.5, 2.0), 1.5)


def test_line_through_wall_gives_cover_and_plus_one_toughness():
    s = state([fighter("a", 0, 0, 0), fighter("t", 1, 5, 0)], terrain=[WALL])
    r = cover(s, "a", "t")
    assert r.verdict == "yes"
    assert r.details["toughness_bonus"] == 1
    assert r.rule.id == "cover-obstacle"
    assert "cover-toughness" in [x.id for x in r.also]
    (a, b) = r.details["line"]
    assert a == pytest.approx([0.5, 0, T / 2]) and b == pytest.approx([4.5, 0, T / 2])
    th = r.details["through"][0]
    assert th["part"] == "wall"
    assert th["from"][0] == pytest.approx(2.0 - LINE_WIDTH_IN / 2)
    assert r.details["width_in"] == pytest.approx(1 / 25.4)


def test_no_obstacle_no_cover():
    s = state([fighter("a", 0, 0, 0), fighter("t", 1, 5, 0)], terrain=[])
    r = cover(s, "a", "t")
    assert r.verdict == "no" and r.details["toughness_bonus"] == 0


def test_line_beside_the_wall_end_not_in_cover_but_1mm_width_counts():
    # wall ends at y = -2; fighters along y = -2 - 0.5mm - a hair: the 1mm line just misses
    y_miss = -2.0 - LINE_WIDTH_IN / 2 - 0.001
    s = state([fighter("a", 0, 0, y_miss), fighter("t", 1, 5, y_miss)], terrain=[WALL])
    assert cover(s, "a", "t").verdict == "no"
    # a line whose centre passes 0.3mm outside the wall end still touches it with its width
    y_hit = -2.0 - 0.3 / 25.4
    s = state([fighter("a", 0, 0, y_hit), fighter("t", 1, 5, y_hit)], terrain=[WALL])
    assert cover(s, "a", "t").verdict == "yes"


def test_line_grazing_the_top_is_over_not_through():
    # both fighters on 1.5" platforms (on legs); the line runs at z = 1.5 + T/2
    top = 1.5 + T / 2
    legs = dict(solid=False)
    terr = [piece("p1", part("p1", "platform", box(-1, -1, 1.5, 1), 1.5, **legs), ptype="platform"),
            piece("p2", part("p2", "platform", box(3, -1, 6, 1), 1.5, **legs), ptype="platform"),
            piece("w", part("w", "obstacle", box(2.0, -2, 2.5, 2), top))]
    s = state([fighter("a", 0, 0, 0, z=1.5), fighter("t", 1, 5, 0, z=1.5)], terrain=terr)
    r = cover(s, "a", "t")
    assert r.verdict == "no"
    assert [x["part"] for x in r.details["over"]] == ["w"]
    assert "cover-through-not-over" in [x.id for x in r.also]
    # a hair taller: the line passes through
    terr[2] = piece("w", part("w", "obstacle", box(2.0, -2, 2.5, 2), top + 0.01))
    assert cover(state(s.fighters, terrain=terr), "a", "t").verdict == "yes"


def test_sloping_line_over_a_wall_from_a_platform():
    # attacker 4" up on a tower; wall 1" tall halfway; target on the floor beyond
    tower = piece("tower", part("tower", "platform", box(-1, -1, 1, 1), 4.0), ptype="platform")
    wall = TerrainPiece("wall", "obstacle", box(2.0, -2.0, 2.2, 2.0), 1.0)
    s = state([fighter("a", 0, 0.5, 0, z=4.0), fighter("t", 1, 5.0, 0)], terrain=[tower, wall])
    r = cover(s, "a", "t")
    assert r.verdict == "no", r.details
    assert "wall" in [x["part"] for x in r.details["over"]]
    # target right behind the wall: the line dips into it
    s = state([fighter("a", 0, 0.5, 0, z=4.0), fighter("t", 1, 2.75, 0)], terrain=[tower, wall])
    assert cover(s, "a", "t").verdict == "yes"


def _near_wall(apart):
    # attacker at x=0 (edge 0.5); wall 0.2"-0.3" from the attacker's base; target `apart` away
    wall = TerrainPiece("w", "obstacle", box(0.7, -2, 0.8, 2), 2.0)
    return state([fighter("a", 0, 0, 0), fighter("t", 1, 0.5 + apart + 0.5, 0)], terrain=[wall])


def test_obstacle_near_attacker_counts_at_0_9_apart():
    r = cover(_near_wall(0.9), "a", "t")
    assert r.verdict == "yes"
    assert r.details["near_attacker_radius_in"] is None


def test_obstacle_near_attacker_ignored_at_1_1_apart():
    r = cover(_near_wall(1.1), "a", "t")
    assert r.verdict == "no"
    assert [x["part"] for x in r.details["exempt"]] == ["w"]
    assert "cover-near-attacker" in [x.id for x in r.also]


def test_exactly_one_inch_apart_is_not_more_than_one():
    assert cover(_near_wall(1.0), "a", "t").verdict == "yes"


def test_near_rule_is_only_for_the_attacker():
    s = _near_wall(1.1)
    assert cover(s, "t", "a").verdict == "yes"   # the wall is near the target, not the attacker


def test_obstacle_beyond_half_inch_counts():
    wall = TerrainPiece("w", "obstacle", box(1.1, -2, 1.2, 2), 2.0)   # 0.6" from the attacker
    s = state([fighter("a", 0, 0, 0), fighter("t", 1, 3, 0)], terrain=[wall])
    assert cover(s, "a", "t").verdict == "yes"


def test_exempt_whole_parts_option():
    # a wall along the line, starting 0.2" from the attacker and running on for 2"
    wall = TerrainPiece("w", "obstacle", box(0.7, -0.05, 2.7, 0.05), 2.0)
    s = state([fighter("a", 0, 0, 0), fighter("t", 1, 4, 0)], terrain=[wall])
    assert cover(s, "a", "t").verdict == "yes"                     # only its first ½" is ignored
    assert cover(s, "a", "t", exempt_whole_parts=True).verdict == "no"


def test_low_terrain_never_gives_cover():
    rubble = TerrainPiece("r", "obstacle", box(2.0, -2, 2.5, 2), 0.99)
    s = state([fighter("a", 0, 0, 0), fighter("t", 1, 5, 0)], terrain=[rubble])
    assert cover(s, "a", "t").verdict == "no"


def test_open_door_and_archway_do_not_block_closed_door_does():
    for kind, closed, want in (("door", True, "yes"), ("door", False, "no"), ("archway", False, "no")):
        d = piece("d", part("d", kind, box(2.0, -2, 2.2, 2), 2.0, closed=closed))
        s = state([fighter("a", 0, 0, 0), fighter("t", 1, 5, 0)], terrain=[d])
        assert cover(s, "a", "t").verdict == want, kind


def test_platform_cover_two_inches_or_more_below():
    # the target stands at the very edge of a solid 2" block: only platform cover applies
    plat = piece("p", part("p", "platform", box(4, -2, 8, 2), 2.0), ptype="platform")
    s = state([fighter("a", 0, 0, 0), fighter("t", 1, 4.5, 0, z=2.0)], terrain=[plat])
    r = cover(s, "t", "a")
    assert r.verdict == "no"    # the attacker is above: no platform cover for the floor fighter
    r = cover(s, "a", "t")
    assert r.verdict == "yes" and r.details["platform_cover"] and not r.details["obstacle_cover"]
    assert r.rule.id == "cover-platform" and r.measured == pytest.approx(2.0)
    plat19 = piece("p", part("p", "platform", box(4, -2, 8, 2), 1.9), ptype="platform")
    s = state([fighter("a", 0, 0, 0), fighter("t", 1, 4.5, 0, z=1.9)], terrain=[plat19])
    r = cover(s, "a", "t")
    assert r.verdict == "no"
    assert not r.details["platform_cover"] and r.measurements[1].measured == pytest.approx(1.9)


def test_platform_edge_blocks_when_target_stands_back():
    plat = piece("p", part("p", "platform", box(4, -2, 8, 2), 2.0), ptype="platform")
    s = state([fighter("a", 0, 0, 0, z=0), fighter("t", 1, 6.5, 0, z=2.5)], terrain=[plat])
    # t is not on the platform (z 2.5): the block's side is an obstacle the line passes through
    r = cover(s, "a", "t")
    assert r.details["obstacle_cover"] and r.details["through"][0]["part"] == "p"


def test_platform_cover_needs_target_on_a_platform():
    ladder = piece("l", part("l", "ladder", box(4, -0.2, 4.2, 0.2), 4.0))
    s = state([fighter("a", 0, 0, 0), fighter("t", 1, 4.8, 0, z=2.5, climbing="l")], terrain=[ladder])
    r = cover(s, "a", "t")
    assert not r.details["platform_cover"]


def test_too_close_to_call_near_a_corner():
    y = -2.0 - LINE_WIDTH_IN / 2 - 0.01     # misses by 0.01"
    s = state([fighter("a", 0, 0, y, sigma_in=0.02), fighter("t", 1, 5, y, sigma_in=0.02)], terrain=[WALL])
    r = cover(s, "a", "t")
    assert r.verdict == "too close to call"
    assert r.margin == pytest.approx((2 * 0.02**2) ** 0.5)
    s = state([fighter("a", 0, 0, 0, sigma_in=0.02), fighter("t", 1, 5, 0, sigma_in=0.02)], terrain=[WALL])
    assert cover(s, "a", "t").verdict == "yes"


def test_ruling_json_has_line_and_part():
    import json
    s = state([fighter("a", 0, 0, 0), fighter("t", 1, 5, 0)], terrain=[WALL])
    d = json.loads(json.dumps(cover(s, "a", "t").to_dict()))
    assert d["details"]["line"][0] == pytest.approx([0.5, 0, T / 2], abs=1e-6)
    assert d["details"]["through"][0]["part"] == "wall"


def _random_state(seed, n=12, shapes=False):
    rnd = random.Random(seed)
    fs = []
    for k in range(n):
        if shapes and k % 3 == 1:
            base = Base("oval", 1.5, 0.9, rnd.uniform(0, 180))
        elif shapes and k % 3 == 2:
            base = Base("rect", 1.2, 0.8, rnd.uniform(0, 180))
        else:
            base = Base.round_mm(rnd.choice([25, 32, 40, 50]))
        z = rnd.choice([0.0, 0.0, 0.0, 3.0])
        fs.append(fighter(f"f{k}", k % 2, rnd.uniform(0, 30), rnd.uniform(0, 22), z=z, base=base))
    terr = []
    for k in range(8):
        x, y = rnd.uniform(0, 28), rnd.uniform(0, 20)
        w, d = rnd.uniform(0.2, 3), rnd.uniform(0.2, 3)
        terr.append(TerrainPiece(f"t{k}", "obstacle", box(x, y, x + w, y + d), rnd.uniform(0.5, 4)))
    terr.append(piece("plat", part("plat", "platform", box(10, 10, 16, 14), 3.0), ptype="platform"))
    return state(fs, terrain=terr)


@pytest.mark.parametrize("seed", range(4))
def test_all_pairs_agrees_with_single_cover(seed):
    s = _random_state(seed, shapes=seed % 2 == 1)
    fast = cover_all_pairs(s)
    assert fast
    for (a, t), v in fast.items():
        assert (cover(s, a, t).verdict == "yes") == v, (a, t)
