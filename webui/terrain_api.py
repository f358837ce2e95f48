"""Typing untagged terrain: the judge says what each piece found by its footprint is.

Calibration reports terrain pieces without a tag as type ``"unknown"`` (ids
``untagged-N``, see :mod:`tracker.footprints`); rulings ignore them until typed. A judge
gives each one a type (one of :data:`tracker.config.TERRAIN_TYPES`) and a height; the
choice is kept in SQLite (``terrain_types`` in ``webui/db.py``, per footage folder, i.e. per table set-up)
and applied to the live pipeline, so every later world state carries the typed piece.
A stored type is only applied to a piece whose centre is within ``MATCH_IN`` of where the
typed piece was (a re-calibration that numbers the pieces differently does not move a
type onto another piece).

============================================  ===========================================
GET  /api/terrain                             {types[], pieces[{id, type, typed, height_in,
                                              footprint[[x, y]...], area_sq_in,
                                              centre_in[x, y], typed_at, typed_by}]}
POST /api/terrain/<id>  {"type": "obstacle",  200: the piece as now typed. 404 unknown id;
     "height_in": 2.5, "by"?: "name"}         400 unknown type / bad height / bad JSON
============================================  ===========================================
"""

from __future__ import annotations

import math
import threading
from typing import Any

from flask import Blueprint, current_app, jsonify
from shapely.geometry import Polygon

from tracker.config import TERRAIN_TYPES
from tracker.footprints import UNKNOWN, apply_types
from tracker.inputs import quote

from .api import json_body, only_fields, the_player, thing_id
from .db import get_db, now_iso
from .errors import ApiError

bp = Blueprint("terrain_api", __name__, url_prefix="/api")

#: A stored type applies to a piece whose centre is within this of the typed one's.
MATCH_IN = 1.0
MAX_HEIGHT_IN = 24.0

_write_lock = threading.Lock()


def _centre(piece) -> tuple[float, float]:
    c = Polygon(piece.footprint).centroid
    return float(c.x), float(c.y)


def stored_types(db, footage: str, untagged) -> dict[str, dict[str, Any]]:
    """The judge's types for the pieces found now: {piece id: row as dict}."""
    rows = {r["piece"]: dict(r) for r in db.execute("SELECT * FROM terrain_types WHERE footage = ?", (footage,))}
    out = {}
    for p in untagged:
        r = rows.get(p.id)
        if r is None:
            continue
        cx, cy = _centre(p)
        if math.hypot(cx - r["centre_x"], cy - r["centre_y"]) <= MATCH_IN:
            out[p.id] = r
    return out


def apply_to_pipeline(player, types: dict[str, dict[str, Any]]) -> None:
    """Hand the typed terrain to the live pipeline (between two frames)."""
    mapping = {k: (v["type"], float(v["height_in"])) for k, v in types.items()}

    def change(pipe):
        pipe.set_terrain(apply_types(pipe.setup.terrain, mapping))

    player.call_in_pipeline(change, timeout=20.0)


def apply_stored(app, player) -> None:
    """On start: apply the types stored for this footage folder to ``player``."""
    untagged = getattr(player.pipeline.setup, "untagged", ())
    if not untagged:
        return
    from .db import connect

    db = connect(app.config["DATABASE"])
    try:
        types = stored_types(db, str(app.config["FOOTAGE"]), untagged)
    finally:
        db.close()
    if types:
        apply_to_pipeline(player, types)


def _piece_json(p, row: dict[str, Any] | None) -> dict[str, Any]:
    cx, cy = _centre(p)
    return {"id": p.id, "type": row["type"] if row else UNKNOWN, "typed": row is not None,
            "height_in": float(row["height_in"]) if row else None,
            "footprint": [[round(float(x), 3), round(float(y), 3)] for x, y in p.footprint],
            "area_sq_in": round(float(Polygon(p.footprint).area), 2), "centre_in": [round(cx, 3), round(cy, 3)],
            "typed_at": row["typed_at"] if row else None, "typed_by": row["typed_by"] if row else None}


@bp.get("/terrain")
def list_terrain():
    player = the_player()
    untagged = getattr(player.pipeline.setup, "untagged", ())
    types = stored_types(get_db(), str(current_app.config["FOOTAGE"]), untagged)
    return jsonify({"types": list(TERRAIN_TYPES), "pieces": [_piece_json(p, types.get(p.id)) for p in untagged]})


@bp.post("/terrain/<piece_id>")
def type_piece(piece_id: str):
    data = json_body()
    only_fields(data, {"type", "height_in", "by"}, "send type, height_in (and by)")
    thing_id(piece_id, "piece_id")
    player = the_player()
    untagged = {p.id: p for p in getattr(player.pipeline.setup, "untagged", ())}
    if piece_id not in untagged:
        known = ", ".join(sorted(untagged)) or "none on this table"
        raise ApiError(404, f"no untagged terrain piece '{piece_id}' (untagged pieces: {known})")
    ttype = data.get("type")
    if not isinstance(ttype, str) or ttype not in TERRAIN_TYPES:
        raise ApiError(400, f"'type' must be one of {', '.join(TERRAIN_TYPES)}, not {quote(ttype)}")
    h = data.get("height_in")
    if isinstance(h, bool) or not isinstance(h, (int, float)) or not math.isfinite(h):
        raise ApiError(400, f"'height_in' must be a number of inches, not {quote(h)}")
    if h < 0 or h > MAX_HEIGHT_IN:
        raise ApiError(400, f"'height_in' must be 0 to {MAX_HEIGHT_IN:g} inches, not {h:g}")
    by = data.get("by", "judge")
    if not isinstance(by, str) or not by.strip() or len(by) > 40:
        raise ApiError(400, f"'by' must be a name of 1-40 characters, not {quote(by)}")
    footage = str(current_app.config["FOOTAGE"])
    piece = untagged[piece_id]
    cx, cy = _centre(piece)
    with _write_lock:
        db = get_db()
        db.execute("INSERT OR REPLACE INTO terrain_types (footage, piece, type, height_in, centre_x, centre_y, "
                   "typed_at, typed_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                   (footage, piece_id, ttype, float(h), cx, cy, now_iso(), by.strip()))
        db.commit()
        types = stored_types(db, footage, untagged.values())
        try:
            apply_to_pipeline(player, types)
        except TimeoutError as e:
            raise ApiError(503, f"stored, but the live pipeline did not take it yet: {e}") from None
    return jsonify(_piece_json(piece, types.get(piece_id)))
