"""Fighter state beside positions: activation, half-activation, damage, Wounds, carried
treasure (the pure model is :mod:`tracker.fighter_state`), with every change logged in
SQLite (table ``fighter_changes``, created here) together with the states after it.

Fighter ids are the tracker's ids in the live state; a fighter keeps its state when the
camera loses it (a taken-down model is removed from the table). Errors are
``{"error": "..."}``: 404 unknown fighter, 400 bad body / damage below zero, 409 a change
the fighter cannot make (already activated, taken down).

==============================================  =========================================
GET  /fighters                                  the fighter list page (phone/tablet)
GET  /api/fighters/state                        game_id, battle_round, frame_index,
                                                fighters[{id, side, activation, damage,
                                                wounds, wounds_left, taken_down, status,
                                                carrying, on_table, occluded, position}],
                                                still_ready[], reminders[], treasure[],
                                                recent[change]
GET  /api/fighters/log?limit=                   {game_id, changes[change]} newest first
GET  /api/fighters/control                      objective control if the round ended now,
                                                taken-down fighters left out
POST /api/fighters/<id>/activate       {}       200: change, events[], fighter, drop,
POST /api/fighters/<id>/half-activate  {}            state (as GET /api/fighters/state)
POST /api/fighters/<id>/damage    {"n": 1}      drop: the rules core's drop ruling (legal
POST /api/fighters/<id>/undamage  {"n": 1}            points in details.points) when a
POST /api/fighters/<id>/wounds    {"wounds": 8}       carrier is taken down, else null;
                                                drop_pixels: those points [u, v] in
                                                the streamed picture
POST /api/fighters/<id>/carry     {"treasure": "t1" | null}
POST /api/fighters/new-round           {}       reminders (fighters still ready), events
==============================================  =========================================

Every POST takes ``"by": "player" | "judge"`` (default: ``judge`` when the judge token
was presented, else ``player``). Ending a battle round with ``POST /api/round/end`` also
starts the next round here (the response gains ``fighters`` and the still-ready
reminders in ``warnings``).

Wounds come from app config ``FIGHTER_WOUNDS`` (a number for all, or ``{id: n}``), the
footage's ``game.yaml`` ``roster`` (``[{id: f1, wounds: 8}, ...]`` or ``{f1: 8}``), or
are set per fighter on the page.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

from flask import Blueprint, current_app, jsonify, render_template, request

from tracker.config import CONFIG_FILES
from tracker.fighter_state import (ActivationError, DamageError, FighterStateError, FighterStates, UnknownFighter,
                                   drop_offer, end_of_round_check, in_play)
from tracker.inputs import load_yaml, quote

from . import get_player
from .api import json_body, only_fields, thing_id
from .auth import presented_token
from .db import current_game, get_db, now_iso
from .errors import ApiError

log = logging.getLogger(__name__)

bp = Blueprint("fighters", __name__)

TABLE_KEY = "tabletracker.fighter_table"
WHO = ("player", "judge")

SCHEMA = """\
CREATE TABLE IF NOT EXISTS fighter_changes (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  game_id INTEGER NOT NULL,
  game_started_at TEXT NOT NULL,
  created_at TEXT NOT NULL,
  who TEXT NOT NULL,
  action TEXT NOT NULL,
  fighter_id TEXT,
  n INTEGER,
  battle_round INTEGER NOT NULL,
  frame_index INTEGER,
  events TEXT NOT NULL,
  states TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS fighter_changes_game ON fighter_changes (game_id, id);
"""


# -- storage -----------------------------------------------------------------------------
def fighter_db() -> sqlite3.Connection:
    """The request's connection, with this blueprint's table created (once per file)."""
    db = get_db()
    done = current_app.extensions.setdefault(TABLE_KEY, set())
    path = current_app.config["DATABASE"]
    if path not in done:
        db.executescript(SCHEMA)
        db.commit()
        done.add(path)
    return db


def the_game(db: sqlite3.Connection) -> sqlite3.Row:
    return current_game(db, source=current_app.config["SOURCE"], footage=current_app.config["FOOTAGE"])


def latest_world():
    """(WorldState, frame_index) of the player's latest frame, or (None, None)."""
    player = get_player(current_app)
    latest = player.latest() if player is not None else None
    if latest is None:
        return None, None
    view = getattr(player, "view_state", None)  # the judges' corrections, when that feature is there
    return (view(latest) if callable(view) else latest.result.state), latest.result.index


def roster_wounds() -> dict[str, int] | int | None:
    """Wounds per fighter id: app config ``FIGHTER_WOUNDS``, else the judges' roster
    (fighters assigned to roster entries with Wounds), else ``roster`` in game.yaml."""
    cfg = current_app.config.get("FIGHTER_WOUNDS")
    if cfg is not None:
        return cfg if isinstance(cfg, int) else {str(k): int(v) for k, v in dict(cfg).items()}
    cache = current_app.extensions.setdefault("tabletracker.roster_wounds", {})
    footage = str(current_app.config.get("FOOTAGE") or "")
    if footage not in cache:
        cache[footage] = _read_roster(footage)
    out = dict(cache[footage])
    adjust = getattr(get_player(current_app), "adjustments", None)
    try:
        for fid, name in dict(getattr(adjust, "assignments", None) or {}).items():
            rf = adjust.roster.get(name)
            if rf is not None and getattr(rf, "wounds", None):
                out[str(fid)] = int(rf.wounds)
    except Exception as e:  # noqa: BLE001 - the roster is another feature's; Wounds can be set by hand
        log.warning("roster Wounds not read: %s", e)
    return out


def _read_roster(footage: str) -> dict[str, int]:
    out: dict[str, int] = {}
    try:
        for name in CONFIG_FILES:
            p = Path(footage) / name
            if p.is_file():
                data = load_yaml(p.read_text(), str(p)) or {}  # (no aliases)
                roster = data.get("roster") if isinstance(data, dict) else None
                if isinstance(roster, dict):
                    out = {str(k): int(v["wounds"] if isinstance(v, dict) else v) for k, v in roster.items()}
                elif isinstance(roster, list):
                    out = {str(e["id"]): int(e["wounds"]) for e in roster
                           if isinstance(e, dict) and "id" in e and "wounds" in e}
                break
    except Exception as e:  # noqa: BLE001 - a roster we cannot read means "set Wounds by hand"
        log.warning("fighter roster in %s not read: %s", footage, e)
    return out


def stored_states(db: sqlite3.Connection, game: sqlite3.Row) -> FighterStates:
    row = db.execute("SELECT states FROM fighter_changes WHERE game_id = ? AND game_started_at = ? "
                     "ORDER BY id DESC LIMIT 1", (game["id"], game["started_at"])).fetchone()
    if row is None:
        return FighterStates(battle_round=int(game["battle_round"]))
    return FighterStates.from_dict(json.loads(row["states"]))


def current_states(db: sqlite3.Connection, game: sqlite3.Row, world, frame_index: int | None = None) -> FighterStates:
    """Stored states plus every fighter the camera sees now (fresh, ready), plus what
    the activation and damage tokens beside them say, on a table that reads them (the
    game config's ``state_tokens:``): that is logged as a change made by the camera."""
    states = stored_states(db, game)
    if world is not None:
        states = states.with_fighters([f.id for f in world.fighters], wounds=roster_wounds(),
                                      sides={f.id: f.side for f in world.fighters})
        spec = getattr(getattr(get_player(current_app), "pipeline", None), "config", None)
        spec = getattr(spec, "state_tokens", None)
        if spec is not None and world.state_tokens:
            from tracker.state_tokens import apply_to_states

            new, events = apply_to_states(states, world, spec)
            if events:
                record(db, game, new, who="camera", action="recognised", fighter_id=None, n=None,
                       events=[e.to_dict() for e in events], frame_index=frame_index)
                states = new
    elif roster_wounds():
        states = states.with_fighters([], wounds=roster_wounds())
    return states


def record(db: sqlite3.Connection, game: sqlite3.Row, states: FighterStates, *, who: str, action: str,
           fighter_id: str | None, n: int | None, events: list[dict], frame_index: int | None) -> sqlite3.Row:
    cur = db.execute(
        "INSERT INTO fighter_changes (game_id, game_started_at, created_at, who, action, fighter_id, n, "
        "battle_round, frame_index, events, states) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (game["id"], game["started_at"], now_iso(), who, action, fighter_id, n, states.battle_round, frame_index,
         json.dumps(events), json.dumps(states.to_dict())))
    return db.execute("SELECT * FROM fighter_changes WHERE id = ?", (cur.lastrowid,)).fetchone()


def change_json(row: sqlite3.Row) -> dict[str, Any]:
    return {"id": row["id"], "game_id": row["game_id"], "created_at": row["created_at"], "who": row["who"],
            "action": row["action"], "fighter": row["fighter_id"], "n": row["n"],
            "battle_round": row["battle_round"], "frame_index": row["frame_index"],
            "events": json.loads(row["events"])}


# -- request helpers ---------------------------------------------------------------------
def body(allowed: set[str]) -> dict[str, Any]:
    data = json_body()  # (400 for what no body may hold: too deep, too large a number...)
    only_fields(data, allowed | {"by"}, f"expected {', '.join(sorted(allowed | {'by'}))}")
    return data


def who_of(data: dict[str, Any]) -> str:
    by = data.get("by")
    if by is None:
        return "judge" if current_app.config.get("JUDGE_TOKEN") and presented_token() else "player"
    if by not in WHO:
        raise ApiError(400, f"'by' must be 'player' or 'judge', not {quote(by)}")
    return by


MAX_WOUNDS = 200  # (as a roster's Wounds): damage and Wounds beyond it are no fighter's


def whole(data: dict[str, Any], name: str, default: int | None = None) -> int:
    v = data.get(name, default)
    if v is None:
        raise ApiError(400, f"give '{name}', a whole number")
    if isinstance(v, bool) or not isinstance(v, int):
        raise ApiError(400, f"'{name}' must be a whole number, not {quote(v)}")
    if v > MAX_WOUNDS:  # (below 1: the fighter model's own message)
        raise ApiError(400, f"'{name}' must be at most {MAX_WOUNDS}, not {quote(v, 40)}")
    return v


def fighter_json(states: FighterStates, fid: str, world) -> dict[str, Any]:
    d = states[fid].to_dict()
    wf = next((f for f in world.fighters if f.id == fid), None) if world is not None else None
    d["status"] = "removed" if d["taken_down"] else d["activation"]
    d["on_table"] = wf is not None
    d["occluded"] = bool(wf.occluded) if wf is not None else None
    d["position"] = [round(float(wf.x), 3), round(float(wf.y), 3), round(float(wf.z), 3)] if wf is not None else None
    return d


def state_json(db: sqlite3.Connection, game: sqlite3.Row, states: FighterStates, world, frame_index) -> dict[str, Any]:
    carried = {f.carrying for f in states.fighters if f.carrying}
    treasure = sorted({t.id for t in world.treasure()} | carried) if world is not None else sorted(carried)
    rows = db.execute("SELECT * FROM fighter_changes WHERE game_id = ? AND game_started_at = ? "
                      "ORDER BY id DESC LIMIT 10", (game["id"], game["started_at"])).fetchall()
    return {"game_id": game["id"], "battle_round": states.battle_round, "game_battle_round": game["battle_round"],
            "game_over": game["ended_at"] is not None, "frame_index": frame_index,
            "live": world is not None,
            "fighters": [fighter_json(states, fid, world) for fid in states.ids],
            "still_ready": list(states.still_ready()), "taken_down": list(states.taken_down()),
            "reminders": list(end_of_round_check(states)), "treasure": treasure,
            "recent": [change_json(r) for r in rows]}


def apply(action: str, fid: str | None, allowed: set[str], op):
    """Run one change: read the states in a write transaction, apply ``op(states, data)``
    (a Change), keep the new states with the change, answer with it all."""
    if fid is not None:
        thing_id(fid, "fid")
    data = body(allowed)
    who = who_of(data)
    db = fighter_db()
    game = the_game(db)
    world, frame_index = latest_world()
    if db.in_transaction:
        db.commit()
    db.execute("BEGIN IMMEDIATE")  # one change at a time: no lost updates between requests
    try:
        states = current_states(db, game, world, frame_index)
        if fid is not None and fid not in states:
            raise UnknownFighter(f"no fighter {quote(fid)} on the table or in this game "
                                 f"(known: {', '.join(states.ids) or 'none'})")
        try:
            new, events = op(states, data)
        except UnknownFighter as e:
            raise ApiError(404, str(e)) from None
        except ActivationError as e:
            raise ApiError(409, str(e)) from None
        except DamageError as e:
            raise ApiError(400, str(e)) from None
        except FighterStateError as e:
            raise ApiError(409 if "already" in str(e) or "not carrying" in str(e) else 400, str(e)) from None
        ev = [e.to_dict() for e in events]
        drop = None
        for e in events:
            if e.kind == "treasure-dropped" and new[e.fighter].taken_down and world is not None:
                player = get_player(current_app)
                seen = player.last_seen(e.fighter) if hasattr(player, "last_seen") else None
                drop = drop_offer(world, e.fighter, e.details["treasure"], last_seen=seen).to_dict()
            elif e.kind == "treasure-dropped" and new[e.fighter].taken_down:
                drop = {"question": "drop", "subject": f"{e.fighter} drops {e.details['treasure']}",
                        "verdict": "no", "outcome": "no live view: place the treasure by hand",
                        "details": {"fighter": e.fighter, "treasure": e.details["treasure"], "points": []}}
        if drop is not None:
            ev.append({"kind": "drop-offered", "fighter": drop["details"]["fighter"],
                       "battle_round": new.battle_round, "text": drop["outcome"], "details": {"ruling": drop}})
        n = data.get("n") if action in ("damage", "undamage") else data.get("wounds") if action == "wounds" else None
        row = record(db, game, new, who=who, action=action, fighter_id=fid, n=n, events=ev, frame_index=frame_index)
        db.commit()
    except UnknownFighter as e:
        db.rollback()
        raise ApiError(404, str(e)) from None
    except BaseException:
        db.rollback()
        raise
    out = {"change": change_json(row), "events": ev,
           "fighter": fighter_json(new, fid, world) if fid is not None else None, "drop": drop,
           "drop_pixels": drop_pixels(drop["details"]["points"]) if drop is not None else None,
           "state": state_json(db, game, new, world, frame_index)}
    return out


def drop_pixels(points: list) -> list[list[float]]:
    """Where the legal drop points lie in the streamed picture ([u, v] each), for the
    overlay page to mark them; [] without a live view."""
    player = get_player(current_app)
    latest = player.latest() if player is not None else None
    if latest is None or not points:
        return []
    import numpy as np

    uv = player.annotator.project(np.array([p[:3] for p in points], float), latest.scale)
    return [[round(float(u), 1), round(float(v), 1)] for u, v in uv if np.isfinite(u) and np.isfinite(v)]


# -- routes ------------------------------------------------------------------------------
@bp.get("/fighters")
def page():
    return render_template("fighters.html")


@bp.get("/api/fighters/state")
def state():
    db = fighter_db()
    game = the_game(db)
    world, frame_index = latest_world()
    states = current_states(db, game, world, frame_index)
    if db.in_transaction:
        db.commit()  # what the camera recognised is kept
    return jsonify(state_json(db, game, states, world, frame_index))


@bp.get("/api/fighters/log")
def change_log():
    db = fighter_db()
    game = the_game(db)
    raw = request.args.get("limit", "100")
    if not raw.isdecimal() or not 1 <= int(raw) <= 1000:
        raise ApiError(400, f"'limit' must be a whole number from 1 to 1000, not {quote(raw)}")
    rows = db.execute("SELECT * FROM fighter_changes WHERE game_id = ? AND game_started_at = ? "
                      "ORDER BY id DESC LIMIT ?", (game["id"], game["started_at"], int(raw))).fetchall()
    return jsonify({"game_id": game["id"], "changes": [change_json(r) for r in rows]})


@bp.get("/api/fighters/control")
def control():
    """Objective control if the round ended now, counting only fighters still in play."""
    from .db import control_of
    from .judge import objective_control

    db = fighter_db()
    game = the_game(db)
    world, frame_index = latest_world()
    if world is None:
        raise ApiError(503, "no frame has been processed yet (or the live player is off); retry in a moment")
    states = current_states(db, game, world)
    ctl, rulings = objective_control(in_play(world, states), control_of(game), game["battle_round"])
    return jsonify({"frame_index": frame_index, "battle_round": game["battle_round"], "control": ctl,
                    "left_out": list(states.taken_down()), "rulings": rulings})


@bp.post("/api/fighters/<fid>/activate")
def activate(fid: str):
    return jsonify(apply("activate", fid, set(), lambda s, d: s.activate(fid)))


@bp.post("/api/fighters/<fid>/half-activate")
def half_activate(fid: str):
    return jsonify(apply("half-activate", fid, set(), lambda s, d: s.half_activate(fid)))


@bp.post("/api/fighters/<fid>/damage")
def damage(fid: str):
    return jsonify(apply("damage", fid, {"n"}, lambda s, d: s.add_damage(fid, whole(d, "n", 1))))


@bp.post("/api/fighters/<fid>/undamage")
def undamage(fid: str):
    return jsonify(apply("undamage", fid, {"n"}, lambda s, d: s.remove_damage(fid, whole(d, "n", 1))))


@bp.post("/api/fighters/<fid>/wounds")
def wounds(fid: str):
    return jsonify(apply("wounds", fid, {"wounds"}, lambda s, d: s.set_wounds(fid, whole(d, "wounds"))))


@bp.post("/api/fighters/<fid>/carry")
def carry(fid: str):
    def op(s: FighterStates, d: dict[str, Any]):
        if "treasure" not in d:
            raise ApiError(400, "give 'treasure': a treasure token id, or null to drop it")
        t = d["treasure"]
        if t is None:
            return s.drop_treasure(fid)
        if not isinstance(t, str) or not t.strip():
            raise ApiError(400, f"'treasure' must be a treasure token id or null, not {quote(t)}")
        return s.pick_up(fid, thing_id(t.strip(), "treasure"))

    return jsonify(apply("carry", fid, {"treasure"}, op))


@bp.post("/api/fighters/new-round")
def new_round():
    reminders: list[str] = []

    def op(s: FighterStates, d: dict[str, Any]):
        reminders.extend(end_of_round_check(s))
        return s.new_battle_round()

    out = apply("new-round", None, set(), op)
    out["reminders"] = reminders
    return jsonify(out)


# -- the end of a battle round (POST /api/round/end, another blueprint's route) ---------
@bp.after_app_request
def after_round_end(response):
    """When a battle round ends, start the next one here too and add the reminders
    (fighters still ready) to the answer. Never breaks the round end itself."""
    if request.endpoint != "api.end_round" or response.status_code != 201 or not response.is_json:
        return response
    try:
        data = response.get_json()
        db = fighter_db()
        game = the_game(db)
        world, frame_index = latest_world()
        if db.in_transaction:
            db.commit()
        db.execute("BEGIN IMMEDIATE")
        try:
            states = current_states(db, game, world)
            reminders = list(end_of_round_check(states))
            events: list[dict] = [{"kind": "round-ended", "fighter": None, "battle_round": states.battle_round,
                                   "text": f"battle round {data.get('ended_round')} ended", "details": {
                                       "still_ready": list(states.still_ready()), "reminders": reminders}}]
            nxt = int(data.get("battle_round", 0))
            if not data.get("game_over") and nxt > states.battle_round:
                states, evs = states.new_battle_round(nxt)
                events += [e.to_dict() for e in evs]
            record(db, game, states, who=who_of({}), action="round-end", fighter_id=None, n=None,
                   events=events, frame_index=frame_index)
            db.commit()
        except BaseException:
            db.rollback()
            raise
        data["fighters"] = {"battle_round": states.battle_round, "still_ready": events[0]["details"]["still_ready"],
                            "reminders": reminders}
        if isinstance(data.get("warnings"), list) and reminders:
            data["warnings"] = data["warnings"] + [f"fighters still ready (never activated) in battle round "
                                                   f"{data.get('ended_round')}: "
                                                   + ", ".join(events[0]["details"]["still_ready"])]
        response.set_data(json.dumps(data))
    except Exception:  # noqa: BLE001
        log.exception("fighter states not advanced at the round end")
    return response
