"""Shared builders for the Epic tests (centimetres in, inches in the world state)."""

from __future__ import annotations

from tracker.epic import ObjectiveMarker, cm_to_in, parse_epic_section
from tracker.world import Base, Fighter, TerrainPiece, WorldState

# A 40 x 20 mm stand: half-width 2 cm along its own x, half-depth 1 cm along its own y.
STAND = Base("rect", cm_to_in(4.0), cm_to_in(2.0))

SECTION = {
    "sides": [
        {"index": 0, "entry_edge": "south", "deployment_zone": {"edge": "south", "depth_cm": 30}},
        {"index": 1, "entry_edge": "north", "deployment_zone": {"edge": "north", "depth_cm": 30}},
    ],
    "units": [
        {"id": "a1", "side": 0, "stands": 3, "stand_mm": [40, 20]},
        {"id": "a2", "side": 0, "stands": 3, "stand_mm": [40, 20]},
        {"id": "b1", "side": 1, "stands": 3, "stand_mm": [40, 20]},
        {"id": "b2", "side": 1, "stands": 3, "stand_mm": [40, 20]},
        {"id": "fly", "side": 1, "stands": 1, "stand_mm": [40, 20], "type": "aircraft"},
    ],
    "objectives": [
        {"id": "th", "owner": 0, "type": "take-and-hold"},
        {"id": "cl", "owner": 0, "type": "cleanse"},
        {"id": "cap", "owner": 0, "type": "capture"},
        {"id": "bk", "owner": 0, "type": "bunker"},
        {"id": "res", "owner": 0, "type": "rescue"},
    ],
}


def config(**options):
    sec = dict(SECTION)
    if options:
        sec["options"] = options
    return parse_epic_section(sec)


def stand(fid, side, x_cm, y_cm, unit=None, base=STAND, angle=0.0, sigma_cm=0.0, **kw) -> Fighter:
    b = Base(base.shape, base.width_in, base.depth_in, angle) if angle else base
    return Fighter(fid, side, cm_to_in(x_cm), cm_to_in(y_cm), 0.0, b, sigma_in=cm_to_in(sigma_cm),
                   unit=unit if unit is not None else fid, **kw)


def marker(mid, owner, mtype, x_cm, y_cm, sigma_cm=0.0, diameter_cm=2.54) -> ObjectiveMarker:
    return ObjectiveMarker(mid, owner, mtype, x_cm, y_cm, sigma_cm=sigma_cm, diameter_cm=diameter_cm)


def world(stands=(), markers=(), terrain=()) -> WorldState:
    return WorldState(fighters=tuple(stands), tokens=tuple(m.token() for m in markers), terrain=tuple(terrain))


def wood(pid, x0, y0, x1, y1, ptype="low") -> TerrainPiece:
    """A terrain piece given in cm (stored in inches)."""
    fp = tuple((cm_to_in(x), cm_to_in(y)) for x, y in ((x0, y0), (x1, y0), (x1, y1), (x0, y1)))
    return TerrainPiece(pid, ptype, fp, 1.0)
