"""The world-state JSON: checked field by field, read into a :class:`WorldState`.

Pure functions from dicts (the CLI reads the file). Every mistake is one line naming the
field, e.g. ``fighters[3].base.shape: 'squre' is not a base shape (round, oval, rect)``.
The format is documented in ``docs/world-state.md``; it is exactly what
``WorldState.to_dict()`` writes and ``WorldState.from_dict()`` reads.

>>> s = parse_world_state({"fighters": [{"id": "a", "side": 0, "x": 1, "y": 2, "z": 0,
...     "base": {"shape": "round", "width_in": 1.26, "depth_in": 1.26}}]})
>>> s.fighters[0].base.shape
'round'
>>> parse_world_state({"fighters": [{"id": "a", "side": 0, "x": 1, "y": 2, "z": 0,
...     "base": {"shape": "squre", "width_in": 1, "depth_in": 1}}]})
Traceback (most recent call last):
...
tracker.rules.schema.StateError: fighters[0].base.shape: 'squre' is not a base shape (round, oval, rect)
"""

from __future__ import annotations

import difflib
import math
from dataclasses import fields
from typing import Any, Mapping

from tracker.errors import UserError
from tracker.inputs import quote
from tracker.world import Base, Doubt, Fighter, HiddenArea, TerrainPart, TerrainPiece, Token, WorldState

BASE_SHAPES = ("round", "oval", "rect")
TOKEN_KINDS = ("objective", "treasure")
TERRAIN_TYPES = ("obstacle", "platform", "low", "deadly", "unscalable", "stairs", "ladder", "door", "archway")


# Every length and position is at most this many inches from the origin: far beyond any
# table, and far below what sends shapely/GEOS into overflow (1e308 crashed it).
MAX_IN = 10_000.0


def _finite(v: int | float) -> bool:
    try:
        return math.isfinite(float(v))
    except OverflowError:  # an integer of 400 digits
        return False


class StateError(UserError):
    """A world-state file or dict with a missing, misspelt or wrong field."""


def _names(cls: type) -> list[str]:
    return [f.name for f in fields(cls)]


class _R:
    """Reads one JSON object, remembering where it is for messages."""

    def __init__(self, d: Any, where: str, allowed: list[str]):
        if not isinstance(d, Mapping):
            raise StateError(f"{where}: expected an object, got {_kind(d)}")
        self.d, self.where = d, where
        for k in d:
            if k not in allowed:
                near = difflib.get_close_matches(str(k), allowed, n=1)
                hint = f" (did you mean '{near[0]}'?)" if near else f" (known: {', '.join(allowed)})"
                raise StateError(f"{self._at(k)}: unknown field{hint}")

    def _at(self, k: str) -> str:
        k = str(k) if len(str(k)) <= 60 else str(k)[:57] + "..."  # (a key of a megabyte: cut)
        return f"{self.where}.{k}" if self.where else k

    def has(self, k: str) -> bool:
        return k in self.d and self.d[k] is not None

    def raw(self, k: str, default: Any = ..., *, required: bool = False) -> Any:
        if k not in self.d or (self.d[k] is None and required):
            if required or default is ...:
                raise StateError(f"{self._at(k)}: missing (required)")
            return default
        return self.d[k]

    def num(self, k: str, default: Any = ..., *, minimum: float | None = None, positive: bool = False,
            required: bool = False, limit: float | None = MAX_IN) -> float:
        v = self.raw(k, default, required=required or default is ...)
        if v is None and default is None:
            return None  # type: ignore[return-value]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not _finite(v):
            raise StateError(f"{self._at(k)}: {quote(v)} is not a number")
        if limit is not None and abs(v) > limit:
            raise StateError(f"{self._at(k)}: {v:g} is beyond {limit:g} (inches); a table is a few feet across")
        v = float(v)
        if positive and v <= 0:
            raise StateError(f"{self._at(k)}: {v:g} must be greater than 0")
        if minimum is not None and v < minimum:
            raise StateError(f"{self._at(k)}: {v:g} must be at least {minimum:g}")
        return v

    def int_(self, k: str, default: Any = ..., *, minimum: int | None = None) -> int | None:
        v = self.raw(k, default, required=default is ...)
        if v is None:
            return None
        if isinstance(v, bool) or not (isinstance(v, int) or (isinstance(v, float) and v.is_integer())):
            raise StateError(f"{self._at(k)}: {quote(v)} is not a whole number")
        if minimum is not None and v < minimum:
            raise StateError(f"{self._at(k)}: {v} must be at least {minimum}")
        return int(v)

    def str_(self, k: str, default: Any = ..., *, choices: tuple[str, ...] | None = None, what: str = "") -> str | None:
        v = self.raw(k, default, required=default is ...)
        if v is None:
            return None
        if not isinstance(v, str) or (default is ... and not v):
            raise StateError(f"{self._at(k)}: {quote(v)} is not a {'non-empty ' if default is ... else ''}string")
        if choices is not None and v not in choices:
            raise StateError(f"{self._at(k)}: {quote(v)} is not a {what} ({', '.join(choices)})")
        return v

    def bool_(self, k: str, default: bool) -> bool:
        v = self.raw(k, default)
        if not isinstance(v, bool):
            raise StateError(f"{self._at(k)}: {quote(v)} is not true or false")
        return v

    def list_(self, k: str, default: Any = ...) -> list:
        v = self.raw(k, default, required=default is ...)
        if v is None:
            return default
        if not isinstance(v, (list, tuple)):
            raise StateError(f"{self._at(k)}: expected a list, got {_kind(v)}")
        return list(v)


def _kind(v: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "true/false", type(None): "null"}.get(
        type(v), type(v).__name__)


def _points(pts: list, where: str, what: str = "a footprint") -> list[list[float]]:
    """At least three finite [x, y] pairs, as floats."""
    if len(pts) < 3:
        raise StateError(f"{where}: {what} needs at least 3 points, got {len(pts)}")
    out = []
    for i, p in enumerate(pts):
        if (not isinstance(p, (list, tuple)) or len(p) != 2
                or any(isinstance(c, bool) or not isinstance(c, (int, float)) or not _finite(c) for c in p)):
            raise StateError(f"{where}[{i}]: {quote(p)} is not an [x, y] pair of numbers")
        if any(abs(c) > MAX_IN for c in p):
            raise StateError(f"{where}[{i}]: {quote(p)} lies beyond {MAX_IN:g} inches; a table is a few feet across")
        out.append([float(p[0]), float(p[1])])
    return out


def _polygon(pts: list, where: str) -> list[list[float]]:
    out = _points(pts, where)
    from shapely.geometry import Polygon
    poly = Polygon(out)
    if poly.area <= 0:
        raise StateError(f"{where}: the footprint has no area")
    if not poly.is_valid:
        raise StateError(f"{where}: the footprint crosses itself; list its corners in order round the edge")
    return out


def _base(d: Any, where: str) -> dict[str, Any]:
    r = _R(d, where, _names(Base))
    shape = r.str_("shape", choices=BASE_SHAPES, what="base shape")
    w = r.num("width_in", positive=True)
    dep = r.num("depth_in", w if shape == "round" else ..., positive=True)
    if shape == "round" and abs(w - dep) > 1e-9:
        raise StateError(f"{where}.depth_in: a round base has depth_in = width_in ({dep:g} != {w:g}); use 'oval'")
    return {"shape": shape, "width_in": w, "depth_in": dep, "angle_deg": r.num("angle_deg", 0.0),
            "thickness_in": r.num("thickness_in", 4.0 / 25.4, positive=True)}


def _side_list(r: "_R", key: str, where: str) -> list[int]:
    sides = r.list_(key, [])
    for i, si in enumerate(sides):
        if isinstance(si, bool) or not isinstance(si, int) or si < 0:
            raise StateError(f"{where}.{key}[{i}]: {quote(si)} is not a side index (an integer >= 0)")
    return sides


def _fighter(d: Any, where: str) -> dict[str, Any]:
    r = _R(d, where, _names(Fighter))
    marks = r.list_("runemarks", [])
    for i, m in enumerate(marks):
        if not isinstance(m, str):
            raise StateError(f"{where}.runemarks[{i}]: {quote(m)} is not a string")
    return {"id": r.str_("id"), "side": r.int_("side", minimum=0), "x": r.num("x"), "y": r.num("y"),
            "z": r.num("z", 0.0, minimum=0.0), "base": _base(r.raw("base", required=True), f"{where}.base"),
            "sigma_in": r.num("sigma_in", 0.0, minimum=0.0), "occluded": r.bool_("occluded", False),
            "name": r.str_("name", None), "runemarks": marks, "move": r.int_("move", None, minimum=0),
            "carrying": r.str_("carrying", None), "climbing": r.str_("climbing", None),
            "unit": r.str_("unit", None), "rival_sides": _side_list(r, "rival_sides", where)}


def _token(d: Any, where: str) -> dict[str, Any]:
    r = _R(d, where, _names(Token))
    return {"id": r.str_("id"), "kind": r.str_("kind", choices=TOKEN_KINDS, what="token kind"),
            "x": r.num("x"), "y": r.num("y"), "z": r.num("z", 0.0, minimum=0.0),
            "diameter_in": r.num("diameter_in", 1.0, positive=True), "tag_id": r.int_("tag_id", None),
            "sigma_in": r.num("sigma_in", 0.0, minimum=0.0), "occluded": r.bool_("occluded", False)}


def _part(d: Any, where: str) -> dict[str, Any]:
    r = _R(d, where, _names(TerrainPart))
    fp = _polygon(r.list_("footprint"), f"{where}.footprint")
    oe = r.raw("open_edges", None)
    if oe is not None:
        oe = r.list_("open_edges")
        for i, e in enumerate(oe):
            if isinstance(e, bool) or not isinstance(e, int) or not 0 <= e < len(fp):
                raise StateError(f"{where}.open_edges[{i}]: {quote(e)} is not an edge index (0 to {len(fp) - 1})")
    return {"id": r.str_("id"), "type": r.str_("type", choices=TERRAIN_TYPES, what="terrain type"),
            "footprint": fp, "height_in": r.num("height_in", minimum=0.0), "base_z": r.num("base_z", 0.0, minimum=0.0),
            "open_edges": oe, "closed": r.bool_("closed", False), "solid": r.bool_("solid", True)}


def _terrain(d: Any, where: str) -> dict[str, Any]:
    r = _R(d, where, _names(TerrainPiece))
    parts = [_part(p, f"{where}.parts[{i}]") for i, p in enumerate(r.list_("parts", []))]
    # A piece may also be "unknown": found without a tag and not typed yet (rules ignore it).
    return {"id": r.str_("id"), "type": r.str_("type", choices=TERRAIN_TYPES + ("unknown",), what="terrain type"),
            "footprint": _polygon(r.list_("footprint"), f"{where}.footprint"),
            "height_in": r.num("height_in", minimum=0.0), "tag_id": r.int_("tag_id", None), "parts": parts}


def _doubt(d: Any, where: str) -> dict[str, Any]:
    r = _R(d, where, _names(Doubt))
    sides = _side_list(r, "sides", where)
    return {"x": r.num("x"), "y": r.num("y"), "z": r.num("z", 0.0, minimum=0.0),
            "radius_in": r.num("radius_in", minimum=0.0), "sides": sides}


def _hidden(d: Any, where: str) -> dict[str, Any]:
    r = _R(d, where, _names(HiddenArea))
    # (A hand's outline may cross itself where it was simplified: not held to a footprint's rules.)
    return {"outline": _points(r.list_("outline"), f"{where}.outline", "an outline"), "why": r.str_("why", "hand")}


def _ids(items: list, where: str) -> list[str]:
    for i, v in enumerate(items):
        if not isinstance(v, str) or not v:
            raise StateError(f"{where}[{i}]: {quote(v)} is not an objective id (a non-empty string)")
    return list(items)


def parse_world_state(d: Any) -> WorldState:
    """Check a world-state dict (as ``WorldState.to_dict()`` writes it) and read it.
    Raises :class:`StateError` (a UserError) naming the first bad field."""
    r = _R(d, "", _names(WorldState))
    fighters = [_fighter(f, f"fighters[{i}]") for i, f in enumerate(r.list_("fighters", []))]
    tokens = [_token(t, f"tokens[{i}]") for i, t in enumerate(r.list_("tokens", []))]
    terrain = [_terrain(t, f"terrain[{i}]") for i, t in enumerate(r.list_("terrain", []))]
    seen: dict[str, str] = {}
    for kind, items in (("fighters", fighters), ("tokens", tokens)):
        for i, it in enumerate(items):
            if it["id"] in seen:
                raise StateError(f"{kind}[{i}].id: '{it['id']}' is used twice (also {seen[it['id']]})")
            seen[it["id"]] = f"{kind}[{i}]"
    part_ids: dict[str, str] = {}
    for i, t in enumerate(terrain):
        for j, p in enumerate(t["parts"] or [dict(id=t["id"])]):
            w = f"terrain[{i}].parts[{j}].id" if t["parts"] else f"terrain[{i}].id"
            if p["id"] in part_ids:
                raise StateError(f"{w}: '{p['id']}' is used twice (also {part_ids[p['id']]})")
            part_ids[p["id"]] = w
    extra = r.raw("extra", {})
    if not isinstance(extra, Mapping):
        raise StateError(f"extra: expected an object, got {_kind(extra)}")
    clean = {"frame_index": r.int_("frame_index", 0, minimum=0), "time_s": r.num("time_s", 0.0, limit=None),
             "fighters": fighters, "tokens": tokens, "terrain": terrain,
             "calibration_health": r.str_("calibration_health", "ok"),
             "hands_over_table": r.bool_("hands_over_table", False),
             "doubts": [_doubt(q, f"doubts[{i}]") for i, q in enumerate(r.list_("doubts", []))],
             "unseen_objectives": _ids(r.list_("unseen_objectives", []), "unseen_objectives"),
             "hidden": [_hidden(h, f"hidden[{i}]") for i, h in enumerate(r.list_("hidden", []))], "extra": dict(extra)}
    return WorldState.from_dict(clean)


def parse_control(d: Any, where: str = "previous") -> dict[str, int | None]:
    """Check a control map: objective id -> side index or null. Accepts the map itself or
    an object with a ``control`` field (what ``ControlResult.to_dict()`` writes).

    >>> parse_control({"control": {"obj1": 0, "obj2": None}})
    {'obj1': 0, 'obj2': None}
    """
    if isinstance(d, Mapping) and "control" in d and isinstance(d["control"], Mapping):
        d, where = d["control"], f"{where}.control"
    if not isinstance(d, Mapping):
        raise StateError(f"{where}: expected an object of objective id -> side, got {_kind(d)}")
    out: dict[str, int | None] = {}
    for k, v in d.items():
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
            raise StateError(f"{where}.{k if len(str(k)) <= 60 else str(k)[:57] + '...'}: {quote(v)} is not a side index (0, 1, ...) or null")
        out[str(k)] = v
    return out
