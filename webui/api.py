"""The JSON API: live state, ending a battle round, the rulings log, judge measurements,
games and their export. Every error is ``{"error": "..."}`` with a 4xx (503 while no
frame has been processed or the player is off; 500 only for a server fault).

========================================  =============================================
GET  /api/state                           frame_index, time_s, game_id, battle_round,
                                          game_over, state (WorldState.to_dict()),
                                          control, projected_control, calibration_health,
                                          hands_over_table, fps{source,processing,
                                          processed,dropped,errors}, timings_ms,
                                          source{spec,live,running,error}, sides[],
                                          stream{width,height,scale,layers},
                                          pixels{fighters{id:[u,v,r]},tokens{id:[u,v]}},
                                          auth{token_required}, roster{fighters[],
                                          assignments{id:name}, corrections[]}
POST /api/round/end  {"battle_round"?: n}  201: id/ruling_id, game_id, ended_round,
                                          battle_round (now), game_over, frame_index,
                                          time_s, previous_control, control,
                                          rulings[Ruling.to_dict()], snapshot_url,
                                          warnings[]; 409 stale round / game over
GET  /api/rulings?game=current|all|N&limit&offset   {game_id, rulings[...], next_offset?} newest first
GET  /api/rulings/<id>                    one ruling, with the world state it was made on
GET  /api/rulings/<id>/snapshot.jpg       the JPEG evidence (whole frame, all layers)
GET  /api/measure?from=&to=&threshold=    distance_in, horizontal_in, vertical_in,
                                          margin_in (1 sigma), verdict (with threshold),
                                          from_point, to_point, pixels, cover (fighters)
GET  /api/fighter/<id>/rulings            treasure (nearest token: may it be picked up) and
                                          falling (must it test if targeted now) rulings
GET  /api/game, /api/games                the current game / every game
POST /api/game/new  {}                    201: a new game (round 1, no control)
GET  /api/games/<id>/export.json?embed=0|1  game + rulings (+ base64 snapshots)
GET  /api/openapi.json                    the OpenAPI 3 document of every /api route
                                          (kept in webui/openapi.yaml)
========================================  =============================================

Roster, assignments and judge corrections: :mod:`webui.judge_api`; the calibration page
and its API: :mod:`webui.calib`. The state served here, measured and ruled on is the
tracker's with the roster names and the corrections in force applied.

State-changing requests (POST) must be JSON and, when JUDGE_TOKEN is set, carry it.
"""

from __future__ import annotations

import base64
import functools
import json
import math
import sqlite3
from importlib import resources
from typing import Any

import numpy as np
from flask import Blueprint, Response, current_app, jsonify, request, url_for

from tracker.annotate import LAYERS, colour_hex
from tracker.calibrate import SOFT_PICTURE_PX, picture_warnings
from tracker.errors import UserError
from tracker.inputs import MAX_DEPTH, check_values, quote

from . import get_player
from .auth import token_required
from .db import control_of, current_game, get_db, new_game, now_iso
from .errors import ApiError
from .judge import fighter_rulings, measure, objective_control

bp = Blueprint("api", __name__, url_prefix="/api")


# -- helpers -------------------------------------------------------------------------
def jsonable(v: Any) -> Any:
    """Make world-state dicts safe for JSON (numpy scalars/arrays, NaN → None)."""
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset)):
        return [jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return jsonable(v.tolist())
    if isinstance(v, np.generic):
        return jsonable(v.item())
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, (str, int, bool)) or v is None:
        return v
    return str(v)


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def json_body() -> dict[str, Any]:
    """The request's JSON object ({} for an empty body); 400 for anything else: not JSON
    (NaN and Infinity included), nested too deep, a whole number beyond 64 bits (SQLite
    keeps no more), a string with a lone surrogate (no UTF-8 for it), each naming the
    field. (The body's size is bounded by MAX_CONTENT_LENGTH: 413.)"""
    raw = request.get_data(cache=True)
    if not raw.strip(b" \t\r\n"):  # (JSON's whitespace: bytes.strip() also takes \v and \f, which JSON refuses)
        return {}
    try:
        data = json.loads(raw, parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError):
        raise ApiError(400, "the request body is not valid JSON") from None
    except RecursionError:
        raise ApiError(400, f"the request body is nested more than {MAX_DEPTH} levels deep") from None
    if not isinstance(data, dict):
        raise ApiError(400, f"the request body must be a JSON object, not {type(data).__name__}")
    try:
        check_values(data)
    except UserError as e:
        raise ApiError(400, str(e)) from None
    return data


RULINGS_REPLY_BYTES = 1_000_000  # at most this much of rulings in one page of /api/rulings
MAX_ID = 64  # characters of an id a client names (a game config's are a few words at most)
_NOT_IN_IDS = frozenset(map(chr, [*range(0x20), *range(0x7f, 0xa0), 0x2028, 0x2029]))


def thing_id(value: Any, name: str) -> str:
    """An id a client names (a fighter, token, marker, terrain piece; in the path, the
    query or the body): text of 1 to MAX_ID characters, none a control character or a
    line break, else 400. Messages quote it in their 404s: short and on one line."""
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_ID or not _NOT_IN_IDS.isdisjoint(value):
        raise ApiError(400, f"'{name}' must be an id of 1-{MAX_ID} characters without control characters "
                            f"(as on the overlay, e.g. f3), not {quote(value, 80)}")
    return value


def only_fields(data: dict[str, Any], allowed, hint: str) -> None:
    """400 for the fields of ``data`` beyond ``allowed``, then ``hint`` (what to send).
    A field name is the client's text (newlines and all): each is quoted, cut, and at
    most five are named, so the message stays one short line."""
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        shown = ", ".join(quote(k, 40) for k in unknown[:5])
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        raise ApiError(400, f"unknown field(s) {shown}{more}; {hint}")


def int_arg(value: Any, name: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    # (Unbounded, a whole number is still one SQLite can keep: 64 bits, else OverflowError.)
    minimum = -(2 ** 63) if minimum is None else minimum
    maximum = 2 ** 63 - 1 if maximum is None else maximum
    if isinstance(value, bool):
        raise ApiError(400, f"'{name}' must be a whole number, not {quote(value)}")
    if isinstance(value, str):
        value = value.strip()
        if not value.lstrip("-").isdecimal():  # (what int() reads: not "¹", which isdigit passes)
            raise ApiError(400, f"'{name}' must be a whole number, not {quote(value)}")
        if len(value) > 20:  # beyond 64 bits (and int() refuses 4,300 digits: a ValueError)
            raise ApiError(400, f"'{name}' must be between {minimum} and {maximum}, not {quote(value, 40)}")
        value = int(value)
    if not isinstance(value, int):
        raise ApiError(400, f"'{name}' must be a whole number, not {quote(value)}")
    if value < minimum or value > maximum:
        raise ApiError(400, f"'{name}' must be between {minimum} and {maximum}, not {quote(value, 40)}")
    return value


def float_arg(value: Any, name: str, *, minimum: float = 0.0, maximum: float = 1000.0) -> float:
    try:
        if isinstance(value, bool):
            raise ValueError
        f = float(value)
    except (TypeError, ValueError):
        raise ApiError(400, f"'{name}' must be a number of inches, not {quote(value)}") from None
    if not math.isfinite(f) or not minimum <= f <= maximum:
        raise ApiError(400, f"'{name}' must be between {minimum:g} and {maximum:g} inches, not {quote(value)}")
    return f


def the_player():
    player = get_player(current_app)
    if player is None:
        raise ApiError(503, "the live player is not running (START_PLAYER is off); start the server with a source")
    return player


def the_latest(player):
    latest = player.latest()
    if latest is None:
        msg = "no frame has been processed yet; wait a moment and retry"
        if player.last_error:
            msg += f" (last error: {player.last_error})"
        raise ApiError(503, msg)
    return latest


def this_game(db: sqlite3.Connection) -> sqlite3.Row:
    return current_game(db, source=current_app.config["SOURCE"], footage=current_app.config["FOOTAGE"])


def game_json(row: sqlite3.Row) -> dict[str, Any]:
    return {"id": row["id"], "started_at": row["started_at"], "ended_at": row["ended_at"],
            "battle_round": row["battle_round"], "over": row["ended_at"] is not None,
            "max_rounds": int(current_app.config["MAX_ROUNDS"]), "control": control_of(row),
            "source": row["source"], "footage": row["footage"]}


def ruling_json(row: sqlite3.Row, *, with_state: bool = False, external: bool = False) -> dict[str, Any]:
    d = {"id": row["id"], "game_id": row["game_id"], "battle_round": row["battle_round"],
         "created_at": row["created_at"], "frame_index": row["frame_index"], "time_s": row["time_s"],
         "previous_control": json.loads(row["previous_control"]), "control": json.loads(row["control"]),
         "rulings": json.loads(row["rulings"]),
         "snapshot_url": url_for("api.snapshot", ruling_id=row["id"], _external=external)
         if row["snapshot"] is not None else None}
    if with_state:
        d["state"] = json.loads(row["state"])
    return d


def refresh_adjustments(db: sqlite3.Connection, game_id: int | None = None):
    """Reload the roster, assignments and corrections in force from SQLite and hand
    them to the live player; returns them."""
    from .adjust import load

    adjust = load(db, this_game(db)["id"] if game_id is None else game_id)
    player = get_player(current_app)
    if player is not None:
        player.set_adjustments(adjust)
    return adjust


def roster_summary(player) -> dict[str, Any]:
    adjust = player.adjustments
    if adjust is None:
        return {"fighters": [], "assignments": {}, "corrections": []}
    return {"fighters": [rf.to_dict() | {"assigned_to": next((k for k, v in adjust.assignments.items()
                                                                 if v == rf.name), None)}
                         for rf in adjust.roster.values()],
            "assignments": dict(adjust.assignments),
            "corrections": [{"id": c.id, "fighter": c.fighter, "action": c.action, **c.params}
                            for c in adjust.corrections]}


def sides_json() -> list[dict[str, Any]]:
    player = get_player(current_app)
    if player is None:
        return []
    return [{"index": s.index, "colour": s.colour, "hex": colour_hex(s.rim_bgr)}
            for s in player.pipeline.config.sides]


# -- routes --------------------------------------------------------------------------
def picture_json(player) -> dict:
    """How soft the live picture is (``Pipeline.picture_blur``, read off the table markers
    as the game goes on), and whether it is softer than set-up accepts."""
    blur = player.pipeline.picture_blur
    return {"blur_px": None if blur is None else round(blur[1], 3),
            "blur_in": None if blur is None else round(blur[0], 4),
            "soft": blur is not None and blur[1] > SOFT_PICTURE_PX}


def round_warnings(st, player) -> list[str]:
    """What a judge should check before trusting a round's rulings made on ``st``: hands
    over the table, the calibration's health, a picture gone soft (an autofocus
    wandering) and fighters counted where they were last seen."""
    warnings = []
    if st.hands_over_table:
        warnings.append("hands were over the table in this frame: check the picture")
    if st.calibration_health != "ok":
        warnings.append(f"calibration health is '{st.calibration_health}': measurements may be off")
    warnings.extend(picture_warnings(player.pipeline.picture_blur, lead="the picture is soft now"))
    occluded = [f.id for f in st.fighters if f.occluded]
    if occluded:
        warnings.append(f"hidden fighters counted at their last seen position: {', '.join(occluded)}")
    return warnings


@bp.get("/state")
def state():
    player = the_player()
    latest = the_latest(player)
    r = latest.result
    st = player.view_state(latest)
    game = this_game(get_db())
    control = control_of(game)
    pkey = ("projected", json.dumps(control, sort_keys=True), player._version())
    projected = latest.cache.get(pkey)
    if projected is None:
        try:
            projected, _ = objective_control(st, control, game["battle_round"])
        except ApiError:
            projected = None  # no rules core
        latest.cache[pkey] = projected
    body = {
        "frame_index": r.index,
        "time_s": round(float(r.time_s), 4),
        "game_id": game["id"],
        "battle_round": game["battle_round"],
        "game_over": game["ended_at"] is not None,
        "state": jsonable(st.to_dict()),
        "control": control,
        "projected_control": projected,
        "calibration_health": st.calibration_health,
        "hands_over_table": st.hands_over_table,
        "picture": picture_json(player),
        "fps": {"source": round(player.fps_source, 2), "processing": round(player.processing_fps, 2),
                "processed": player.processed, "dropped": player.dropped, "errors": player.errors},
        "timings_ms": jsonable(r.timings_ms),
        "source": {"spec": player.source_spec, "live": bool(player.source.is_live),
                   "running": player.running, "error": player.last_error},
        "sides": sides_json(),
        "stream": {"width": int(latest.small.shape[1]), "height": int(latest.small.shape[0]),
                   "scale": latest.scale, "layers": list(LAYERS)},
        "pixels": {"fighters": player.fighter_pixels(latest), "tokens": player.token_pixels(latest)},
        "auth": {"token_required": token_required()},
        "roster": roster_summary(player),
    }
    return jsonify(body)


@bp.post("/round/end")
def end_round():
    """End the current battle round: compute objective control with the rules core,
    keep the rulings with a JPEG of the table, advance the round. An Epic-scale game
    ends its Rally phase instead (webui.epic_api)."""
    if getattr(the_player().pipeline, "epic", None) is not None:
        from .epic_api import end_rally

        return end_rally()
    data = json_body()
    only_fields(data, {"battle_round"}, "the only field is 'battle_round'")
    player = the_player()
    latest = the_latest(player)
    db = get_db()
    game = this_game(db)
    rnd, max_rounds = round_to_end(game, data)
    previous = control_of(game)
    st = player.view_state(latest)  # with the roster and the judges' corrections
    # Fighters taken down (damage reached their Wounds, #8) leave the control counts.
    from tracker.fighter_state import in_play

    from .fighters_api import current_states, fighter_db
    st = in_play(st, current_states(fighter_db(), game, st))
    control, rulings = objective_control(st, previous, rnd)
    snapshot = player.evidence_jpeg(latest, control, state=st)
    state_json = json.dumps(jsonable(st.to_dict()))
    row = store_round(db, game, rnd, latest, previous, control, rulings, state_json, snapshot)
    player.set_control(control)
    body = ruling_json(row)
    body.update({"ruling_id": row["id"], "ended_round": rnd, "warnings": round_warnings(st, player),
                 "battle_round": rnd if rnd >= max_rounds else rnd + 1, "game_over": rnd >= max_rounds})
    return jsonify(body), 201



def round_to_end(game: sqlite3.Row, data: dict[str, Any]) -> tuple[int, int]:
    """(the battle round a round-end request ends, the game's last round): 409 when the
    game is over or the request names another round than the current one."""
    max_rounds = int(current_app.config["MAX_ROUNDS"])
    if game["ended_at"] is not None:
        raise ApiError(409, f"game {game['id']} ended after battle round {game['battle_round']}; "
                            f"start a new game (POST /api/game/new)")
    rnd = game["battle_round"]
    if "battle_round" in data:
        asked = int_arg(data["battle_round"], "battle_round", minimum=1, maximum=max_rounds)
        if asked != rnd:
            raise ApiError(409, f"battle round {asked} is not the current round ({rnd}); reload the page")
    return rnd, max_rounds


def store_round(db: sqlite3.Connection, game: sqlite3.Row, rnd: int, latest, previous: dict, control: dict,
                rulings: list, state_json: str, snapshot: bytes, also=None) -> sqlite3.Row:
    """In one transaction: the round's rulings with the picture of the table, ``also(db)``
    (e.g. the Epic ledger), and the game moved to the next round (or ended after the
    last). 409 when another request has just ended this round."""
    max_rounds = int(current_app.config["MAX_ROUNDS"])
    db.execute("BEGIN IMMEDIATE")
    try:
        again = db.execute("SELECT battle_round, ended_at FROM games WHERE id = ?", (game["id"],)).fetchone()
        if again["battle_round"] != rnd or again["ended_at"] is not None:
            raise ApiError(409, f"battle round {rnd} was just ended by another request; reload the page")
        cur = db.execute(
            "INSERT INTO rulings (game_id, battle_round, created_at, frame_index, time_s, previous_control,"
            " control, rulings, state, snapshot) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (game["id"], rnd, now_iso(), int(latest.result.index), float(latest.result.time_s),
             json.dumps(previous), json.dumps(control), json.dumps(jsonable(rulings)), state_json, snapshot))
        if also is not None:
            also(db)
        if rnd >= max_rounds:
            db.execute("UPDATE games SET control = ?, ended_at = ? WHERE id = ?",
                       (json.dumps(control), now_iso(), game["id"]))
        else:
            db.execute("UPDATE games SET control = ?, battle_round = ? WHERE id = ?",
                       (json.dumps(control), rnd + 1, game["id"]))
        db.commit()
    except BaseException:
        db.rollback()
        raise
    return db.execute("SELECT * FROM rulings WHERE id = ?", (cur.lastrowid,)).fetchone()


def game_arg(db: sqlite3.Connection) -> int | None:
    """The ``?game=current|all|N`` query argument: a game id, or None for every game."""
    arg = request.args.get("game", "current")
    if arg == "current":
        return this_game(db)["id"]
    if arg == "all":
        return None
    game_id = int_arg(arg, "game", minimum=1)
    if db.execute("SELECT 1 FROM games WHERE id = ?", (game_id,)).fetchone() is None:
        raise ApiError(404, f"no game {game_id}")
    return game_id


@bp.get("/rulings")
def rulings():
    db = get_db()
    game_id = game_arg(db)
    limit = int_arg(request.args.get("limit", "100"), "limit", minimum=1, maximum=1000)
    offset = int_arg(request.args.get("offset", "0"), "offset", minimum=0, maximum=10**9)
    if game_id is None:
        rows = db.execute("SELECT * FROM rulings ORDER BY id DESC LIMIT ? OFFSET ?", (limit, offset)).fetchall()
    else:
        rows = db.execute("SELECT * FROM rulings WHERE game_id = ? ORDER BY id DESC LIMIT ? OFFSET ?",
                          (game_id, limit, offset)).fetchall()
    # A page is cut short once it holds RULINGS_REPLY_BYTES of rulings (each carries its
    # state's details, ~12 KB: a thousand would be 12 MB); next_offset says where the rest start.
    out, size = [], 0
    for r in rows:
        j = ruling_json(r)
        size += len(json.dumps(j))
        if out and size > RULINGS_REPLY_BYTES:
            return jsonify({"game_id": game_id, "rulings": out, "next_offset": offset + len(out)})
        out.append(j)
    return jsonify({"game_id": game_id, "rulings": out})


@bp.get("/rulings/<int:ruling_id>")
def ruling(ruling_id: int):
    row = get_db().execute("SELECT * FROM rulings WHERE id = ?", (ruling_id,)).fetchone()
    if row is None:
        raise ApiError(404, f"no ruling {ruling_id}")
    return jsonify(ruling_json(row, with_state=True))


@bp.get("/rulings/<int:ruling_id>/snapshot.jpg")
def snapshot(ruling_id: int):
    row = get_db().execute("SELECT snapshot FROM rulings WHERE id = ?", (ruling_id,)).fetchone()
    if row is None or row["snapshot"] is None:
        raise ApiError(404, f"no snapshot for ruling {ruling_id}")
    return Response(bytes(row["snapshot"]), mimetype="image/jpeg",
                    headers={"Cache-Control": "public, max-age=86400, immutable"})


@bp.get("/measure")
def measure_route():
    """Judge tool: ``?from=<fighter id>&to=<fighter or token id>[&threshold=<inches>]``."""
    a = request.args.get("from", "").strip()
    b = request.args.get("to", "").strip()
    if not a or not b:
        raise ApiError(400, "give 'from' (a fighter id) and 'to' (a fighter or token id), e.g. ?from=f1&to=o1")
    a, b = thing_id(a, "from"), thing_id(b, "to")
    threshold = request.args.get("threshold")
    thr = None if threshold in (None, "") else float_arg(threshold, "threshold")
    player = the_player()
    latest = the_latest(player)
    out = measure(player.view_state(latest), a, b, thr)
    out["frame_index"] = latest.result.index
    # where the measured segment lies in the streamed picture (for the page to draw it)
    uv = player.annotator.project(np.array([out["from_point"], out["to_point"]], float), latest.scale)
    out["pixels"] = uv.round(1).tolist() if np.all(np.isfinite(uv)) else None
    # the obstacle parts the cover line passes through, outlined at their tops, for the page
    # to highlight
    out["cover_pixels"] = []
    cover = out.get("cover") or {}
    if cover.get("details", {}).get("through"):
        from tracker.rules.terrain import terrain_parts

        parts = {p.id: p for p in terrain_parts(player.view_state(latest))}
        for hit in cover["details"]["through"]:
            part = parts.get(hit.get("part"))
            if part is None:
                continue
            top = np.array([(x, y, part.top_z) for x, y in part.footprint], float)
            puv = player.annotator.project(top, latest.scale)
            if np.all(np.isfinite(puv)):
                out["cover_pixels"].append({"part": part.id, "outline": puv.round(1).tolist()})
    return jsonify(jsonable(out))


@bp.get("/fighter/<fighter_id>/rulings")
def fighter_rulings_route(fighter_id: str):
    """Judge tool: click a fighter → treasure eligibility and the falling test."""
    thing_id(fighter_id, "fighter_id")
    player = the_player()
    latest = the_latest(player)
    out = fighter_rulings(player.view_state(latest), fighter_id)
    out["frame_index"] = latest.result.index
    return jsonify(jsonable(out))


@bp.get("/games")
def games():
    rows = get_db().execute("SELECT * FROM games ORDER BY id DESC LIMIT 200").fetchall()
    return jsonify({"games": [game_json(r) for r in rows]})


@bp.get("/game")
def game():
    return jsonify(game_json(this_game(get_db())))


@bp.post("/game/new")
def game_new():
    only_fields(json_body(), (), "send {}")
    row = new_game(get_db(), source=current_app.config["SOURCE"], footage=current_app.config["FOOTAGE"])
    player = get_player(current_app)
    if player is not None:
        player.set_control({})
    refresh_adjustments(get_db(), row["id"])  # corrections belong to a game; the roster stays
    return jsonify(game_json(row)), 201


def export_data(game_id: int, *, external: bool = True) -> dict[str, Any]:
    db = get_db()
    row = db.execute("SELECT * FROM games WHERE id = ?", (game_id,)).fetchone()
    if row is None:
        raise ApiError(404, f"no game {game_id}")
    rows = db.execute("SELECT * FROM rulings WHERE game_id = ? ORDER BY battle_round, id", (game_id,)).fetchall()
    return {"format": "tabletracker-game/1", "exported_at": now_iso(), "game": game_json(row),
            "rulings": [ruling_json(r, with_state=True, external=external) for r in rows]}


@bp.get("/games/<int:game_id>/export.json")
def export_json(game_id: int):
    """The game and every ruling with its world state; ``?embed=1`` puts each snapshot
    in the file (base64 JPEG) so the export stands on its own."""
    embed = request.args.get("embed", "0")
    if embed not in ("0", "1"):
        raise ApiError(400, "'embed' must be 0 or 1")
    data = export_data(game_id)
    if embed == "1":
        db = get_db()
        for r in data["rulings"]:
            row = db.execute("SELECT snapshot FROM rulings WHERE id = ?", (r["id"],)).fetchone()
            r["snapshot_jpeg_base64"] = base64.b64encode(bytes(row["snapshot"])).decode() if row["snapshot"] else None
    resp = jsonify(data)
    resp.headers["Content-Disposition"] = f'attachment; filename="tabletracker-game-{game_id}.json"'
    return resp


@functools.cache
def openapi_document() -> dict[str, Any]:
    """webui/openapi.yaml, the one description of the JSON API (a test keeps it and the
    app's /api routes the same). Our own file: its YAML anchors are fine here."""
    import yaml

    return yaml.safe_load(resources.files(__package__).joinpath("openapi.yaml").read_text(encoding="utf-8"))


@bp.get("/openapi.json")
def openapi():
    return jsonify(openapi_document())
