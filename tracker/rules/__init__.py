"""The rules core: world state in, rulings out. Pure Python (shapely, numpy); no I/O
(except :mod:`tracker.rules.cli`, which reads the state file).

>>> from tracker.rules import objective_control, cover, Ruling
"""

from .quotes import ALL_RULES, Rule
from .ruling import Measurement, Ruling, Verdict, combined_sigma, distance_verdict
from .measure import Closest, closest, distance, footprint, horizontal_distance, vertical_gap
from .warcry import CONTROL_RANGE_IN, ControlResult, gainer, objective_control
from .terrain import (
    can_climb, classify, deadly_after_fall, deadly_climb, falling_test, is_low_terrain, is_obstacle,
    is_platform, on_unscalable, open_edges, passage, platform_under, stairs_no_fall, terrain_kind, terrain_parts,
)
from .cover import cover, cover_all_pairs
from .treasure import (
    can_carry, can_disengage, can_fly, carrying_move, drop_point, drop_points, move_after_pick_up,
    move_when_carrying, pick_up, touching_treasure,
)
from .schema import StateError, parse_control, parse_world_state

__all__ = [
    "ALL_RULES", "Rule", "Measurement", "Ruling", "Verdict", "combined_sigma", "distance_verdict",
    "Closest", "closest", "distance", "footprint", "horizontal_distance", "vertical_gap",
    "CONTROL_RANGE_IN", "ControlResult", "gainer", "objective_control",
    "can_climb", "classify", "deadly_after_fall", "deadly_climb", "falling_test", "is_low_terrain", "is_obstacle",
    "is_platform", "on_unscalable", "open_edges", "passage", "platform_under", "stairs_no_fall", "terrain_kind",
    "terrain_parts", "cover", "cover_all_pairs",
    "can_carry", "can_disengage", "can_fly", "carrying_move", "drop_point", "drop_points", "move_after_pick_up",
    "move_when_carrying", "pick_up", "touching_treasure",
    "StateError", "parse_control", "parse_world_state",
]
