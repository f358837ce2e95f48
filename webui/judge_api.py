"""Judge API: the roster, which detected base is which roster fighter, and corrections of
misdetections. Everything is kept in SQLite (committed before the answer) and applied to
the state the page shows, the overlay draws, and the rules core rules on.

========================================================  ================================
GET  /api/roster                                          {fighters[{name, side, base_mm,
                                                          runemarks[], move, wounds,
                                                          assigned_to}], assignments{id:name}}
POST /api/roster  {"fighters": [...]} | {"text": YAML/JSON}  201: same + imported (n), dropped
                                                          assignments[]; replaces the roster
POST /api/roster/assign {"fighter": "f3", "roster": "Ironjaw"|null}
                                                          200: fighter, roster, previous,
                                                          state_fighter (as served), warnings[]
GET  /api/corrections?game=current|all|N&active=0|1       {game_id, corrections[...]}
POST /api/corrections {"fighter": "f3", "action": "move", "x": 10.5, "y": 7, "z"?: 0,
                       "note"?: "...", "by"?: "name"}     201: the correction
                      {"fighter", "action": "remove"} | {"fighter", "action": "side", "side": 1|"red"}
POST /api/corrections/<id>/undo {"by"?: "name"}           200: the correction, undone
========================================================  ================================

A correction is in force until undone; "who" is the ``by`` field (or the
``X-Judge-Name`` header), else the client's address.
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict
from typing import Any

from flask import Blueprint, jsonify, request

from tracker.inputs import quote

from .adjust import ACTIONS, base_mismatch, fighter_id, parse_roster, parse_roster_text, parse_side
from .api import (float_arg, game_arg, json_body, jsonable, only_fields, refresh_adjustments, sides_json,
                  the_latest, the_player, this_game)
from .db import get_db, now_iso
from .errors import ApiError

bp = Blueprint("judge_api", __name__, url_prefix="/api")

#: One writer at a time between "write to SQLite" and "hand the new state to the player".
_write_lock = threading.Lock()


def who(data: dict[str, Any]) -> str:
    by = data.get("by", request.headers.get("X-Judge-Name"))
    if by is None or by == "":
        return f"judge@{request.remote_addr or 'unknown'}"
    if not isinstance(by, str) or len(by) > 40 or not by.strip():
        raise ApiError(400, f"'by' must be a name of 1-40 characters, not {quote(by)}")
    return by.strip()


def only(data: dict[str, Any], allowed: set[str], hint: str) -> None:
    only_fields(data, allowed, hint)


def roster_json(db) -> dict[str, Any]:
    from .adjust import roster_fighter, roster_rows

    assigned = {r["roster_name"]: r["fighter"] for r in db.execute("SELECT fighter, roster_name FROM assignments")}
    return {"fighters": [roster_fighter(r).to_dict() | {"assigned_to": assigned.get(r["name"])}
                         for r in roster_rows(db)],
            "assignments": {f: n for n, f in assigned.items()}}


def current_fighter(player, fid: str):
    """The fighter ``fid`` as the tracker has it now (404 when not on the table)."""
    st = the_latest(player).result.state
    for f in st.fighters:
        if f.id == fid:
            return f
    known = ", ".join(f.id for f in st.fighters) or "none"
    raise ApiError(404, f"no fighter '{fid}' on the table now (known: {known})")


# -- roster --------------------------------------------------------------------------
@bp.get("/roster")
def roster_get():
    return jsonify(roster_json(get_db()))


@bp.post("/roster")
def roster_post():
    data = json_body()
    if "text" in data:
        only(data, {"text"}, "send {\"text\": \"<the roster file's YAML or JSON>\"} or {\"fighters\": [...]}")
        if not isinstance(data["text"], str) or not data["text"].strip():
            raise ApiError(400, "'text' must be the roster file's content (YAML or JSON)")
        data = parse_roster_text(data["text"])
    fighters = parse_roster(data, sides_json())
    db = get_db()
    with _write_lock:
        db.execute("BEGIN IMMEDIATE")
        try:
            now = now_iso()
            names = [f.name for f in fighters]
            dropped = [r["fighter"] for r in db.execute(
                f"SELECT fighter FROM assignments WHERE roster_name NOT IN ({','.join('?' * len(names))})", names)]
            db.execute(f"DELETE FROM assignments WHERE roster_name NOT IN ({','.join('?' * len(names))})", names)
            db.execute(f"DELETE FROM roster WHERE name NOT IN ({','.join('?' * len(names))})", names)
            for i, f in enumerate(fighters):
                db.execute("INSERT INTO roster (name, side, base_mm, runemarks, move, wounds, position, imported_at) "
                           "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET side = excluded.side, "
                           "base_mm = excluded.base_mm, runemarks = excluded.runemarks, move = excluded.move, "
                           "wounds = excluded.wounds, position = excluded.position, imported_at = excluded.imported_at",
                           (f.name, f.side, f.base_mm, json.dumps(list(f.runemarks)), f.move, f.wounds, i, now))
            db.commit()
        except BaseException:
            db.rollback()
            raise
        refresh_adjustments(db)
    body = roster_json(db)
    body.update({"imported": len(fighters), "dropped_assignments": dropped})
    return jsonify(body), 201


@bp.post("/roster/assign")
def roster_assign():
    data = json_body()
    only(data, {"fighter", "roster", "by"}, "send {\"fighter\": \"f3\", \"roster\": \"<roster name>\" or null}")
    if "fighter" not in data or "roster" not in data:
        raise ApiError(400, "give 'fighter' (a detected base, e.g. \"f3\") and 'roster' (a roster name, or null "
                            "to unassign)")
    fid = fighter_id(data["fighter"])
    name = data["roster"]
    if name is not None and (not isinstance(name, str) or not name.strip() or len(name) > 40):
        raise ApiError(400, f"'roster' must be a roster fighter's name or null, not {quote(name)}")
    by = who(data)
    player = the_player()
    tracked = current_fighter(player, fid) if name is not None else None
    db = get_db()
    warnings: list[str] = []
    with _write_lock:
        db.execute("BEGIN IMMEDIATE")
        try:
            previous = db.execute("SELECT roster_name FROM assignments WHERE fighter = ?", (fid,)).fetchone()
            if name is None:
                db.execute("DELETE FROM assignments WHERE fighter = ?", (fid,))
            else:
                row = db.execute("SELECT * FROM roster WHERE name = ? COLLATE NOCASE", (name.strip(),)).fetchone()
                if row is None:
                    have = [r["name"] for r in db.execute("SELECT name FROM roster ORDER BY position")]
                    raise ApiError(404, f"no fighter {quote(name, 60)} in the roster (" +
                                   (f"it has: {', '.join(have)})" if have else "import a roster first: POST /api/roster)"))
                name = row["name"]
                other = db.execute("SELECT fighter FROM assignments WHERE roster_name = ?", (name,)).fetchone()
                if other is not None and other["fighter"] != fid:
                    warnings.append(f"{name} was on {other['fighter']}; moved to {fid}")
                db.execute("DELETE FROM assignments WHERE roster_name = ? OR fighter = ?", (name, fid))
                db.execute("INSERT INTO assignments (fighter, roster_name, assigned_at, assigned_by) VALUES (?, ?, ?, ?)",
                           (fid, name, now_iso(), by))
                from .adjust import roster_fighter

                rf = roster_fighter(row)
                if rf.side != tracked.side:
                    warnings.append(f"{name} is on side {rf.side} but {fid} was detected on side {tracked.side}: "
                                    f"correct the side if the detection is wrong")
                mismatch = base_mismatch(rf, tracked.base.size_mm)
                if mismatch:
                    warnings.append(mismatch)
            db.commit()
        except BaseException:
            db.rollback()
            raise
        refresh_adjustments(db)
    shown = next((f for f in player.view_state(player.latest()).fighters if f.id == fid), None)
    return jsonify({"fighter": fid, "roster": name, "previous": previous["roster_name"] if previous else None,
                    "state_fighter": jsonable(asdict(shown) | {"runemarks": sorted(shown.runemarks)}) if shown else None,
                    "assignments": roster_json(db)["assignments"], "warnings": warnings})


# -- corrections -----------------------------------------------------------------------
def correction_json(row) -> dict[str, Any]:
    return {"id": row["id"], "game_id": row["game_id"], "created_at": row["created_at"], "by": row["created_by"],
            "fighter": row["fighter"], "action": row["action"], **json.loads(row["params"]), "note": row["note"],
            "active": row["undone_at"] is None, "undone_at": row["undone_at"], "undone_by": row["undone_by"]}


def pixel_to_table(player, pixel: Any, fighter) -> tuple[float, float]:
    """A point of the streamed picture → table inches at the fighter's height."""
    import math

    import numpy as np

    if (not isinstance(pixel, list) or len(pixel) != 2
            or not all(isinstance(p, (int, float)) and not isinstance(p, bool) and math.isfinite(p) for p in pixel)):
        raise ApiError(400, f"'pixel' must be [u, v], a point of the streamed picture, not {quote(pixel)}")
    latest = the_latest(player)
    h, w = latest.small.shape[:2]
    if not (0 <= pixel[0] <= w and 0 <= pixel[1] <= h):
        raise ApiError(400, f"'pixel' {pixel} is outside the {w}x{h} picture")
    uv = np.array([[pixel[0] / latest.scale, pixel[1] / latest.scale]], float)
    xy = player.annotator.camera.unproject(uv, fighter.z)[0]
    if not np.all(np.isfinite(xy)):
        raise ApiError(400, f"'pixel' {pixel} does not look at the table")
    return round(float(xy[0]), 3), round(float(xy[1]), 3)


@bp.get("/corrections")
def corrections_get():
    db = get_db()
    game_id = game_arg(db)
    active = request.args.get("active", "0")
    if active not in ("0", "1"):
        raise ApiError(400, "'active' must be 0 (every correction) or 1 (those in force)")
    sql = "SELECT * FROM corrections WHERE 1=1"
    args: list[Any] = []
    if game_id is not None:
        sql += " AND game_id = ?"
        args.append(game_id)
    if active == "1":
        sql += " AND undone_at IS NULL"
    rows = db.execute(sql + " ORDER BY id DESC LIMIT 500", args).fetchall()
    return jsonify({"game_id": game_id, "corrections": [correction_json(r) for r in rows]})


@bp.post("/corrections")
def corrections_post():
    data = json_body()
    only(data, {"fighter", "action", "x", "y", "z", "pixel", "side", "note", "by"},
         "send {\"fighter\": \"f3\", \"action\": \"move\"|\"remove\"|\"side\", ...}")
    if "fighter" not in data or "action" not in data:
        raise ApiError(400, "give 'fighter' (e.g. \"f3\") and 'action': move (with x, y), remove, or side (with side)")
    fid = fighter_id(data["fighter"])
    action = data["action"]
    if action not in ACTIONS:
        raise ApiError(400, f"'action' must be one of {', '.join(ACTIONS)}, not {quote(action)}")
    note = data.get("note", "")
    if not isinstance(note, str) or len(note) > 200:
        raise ApiError(400, "'note' must be text of up to 200 characters")
    by = who(data)
    player = the_player()
    params: dict[str, Any] = {}
    if action == "move" and "pixel" in data:  # where the judge clicked on the streamed picture
        if "x" in data or "y" in data:
            raise ApiError(400, "give either 'pixel' [u, v] or 'x' and 'y', not both")
        data = dict(data)
        data["x"], data["y"] = pixel_to_table(player, data["pixel"], current_fighter(player, fid))
        data.pop("pixel")
    if action == "move":
        if "x" not in data or "y" not in data:
            raise ApiError(400, "a move needs 'x' and 'y': where the base really is, in inches on the table")
        W, D = player.pipeline.config.table.play_area_in
        params["x"] = round(float_arg(data["x"], "x", minimum=-3.0, maximum=W + 3.0), 4)
        params["y"] = round(float_arg(data["y"], "y", minimum=-3.0, maximum=D + 3.0), 4)
        if data.get("z") is not None:
            params["z"] = round(float_arg(data["z"], "z", minimum=0.0, maximum=30.0), 4)
        extra = {"side"} & set(data)
    elif action == "side":
        if "side" not in data:
            raise ApiError(400, "a side correction needs 'side': the side index or colour the fighter is really on")
        params["side"] = parse_side(data["side"], sides_json(), "side")
        extra = {"x", "y", "z", "pixel"} & set(data)
    else:
        extra = {"x", "y", "z", "side", "pixel"} & set(data)
    if extra:
        raise ApiError(400, f"field(s) {', '.join(sorted(extra))} do not go with action '{action}'")
    tracked = current_fighter(player, fid)
    params["was"] = {"x": round(float(tracked.x), 3), "y": round(float(tracked.y), 3), "side": int(tracked.side)}
    db = get_db()
    with _write_lock:
        game = this_game(db)
        cur = db.execute("INSERT INTO corrections (game_id, created_at, created_by, fighter, action, params, note) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?)",
                         (game["id"], now_iso(), by, fid, action, json.dumps(params), note))
        db.commit()
        refresh_adjustments(db, game["id"])
    row = db.execute("SELECT * FROM corrections WHERE id = ?", (cur.lastrowid,)).fetchone()
    return jsonify(correction_json(row)), 201


@bp.post("/corrections/<int:correction_id>/undo")
def corrections_undo(correction_id: int):
    data = json_body()
    only(data, {"by"}, "send {} (or {\"by\": \"<name>\"})")
    by = who(data)
    db = get_db()
    with _write_lock:
        row = db.execute("SELECT * FROM corrections WHERE id = ?", (correction_id,)).fetchone()
        if row is None:
            raise ApiError(404, f"no correction {correction_id}")
        if row["undone_at"] is not None:
            raise ApiError(409, f"correction {correction_id} was already undone at {row['undone_at']} by {row['undone_by']}")
        db.execute("UPDATE corrections SET undone_at = ?, undone_by = ? WHERE id = ?", (now_iso(), by, correction_id))
        db.commit()
        refresh_adjustments(db)
    return jsonify(correction_json(db.execute("SELECT * FROM corrections WHERE id = ?", (correction_id,)).fetchone()))
