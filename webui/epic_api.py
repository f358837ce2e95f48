"""Epic-scale games on the web page: units, markers with their 15 cm rings, Rescue
escorts, and the Army Morale ledger applied at the end of each Rally phase.

``GET  /api/epic``              the table now: units, markers (controller if the Rally
                                phase ended now), Rescue escorts, placement checks, ledger
``POST /api/epic/rally``        end the Rally phase of the current battle round: control
                                (with rulings), then every Morale effect; dice entered
                                ``{"dice": {"marker id": score}}`` or rolled by the tool
                                (seeded by the game and round, logged); Capture markers
                                need ``{"capture_choices": {"id": "capture"|"destroy"}}``
``POST /api/epic/close-combat`` ``{"marker": id, "new_escort": unit}``: the escort died in
                                close combat and the enemy unit in base contact claims it
``GET  /api/epic/ledger``       the ledger: Army Morale per side and its history per round
``POST /api/epic/bunker``       ``{"marker": id, "hits": n, "critical": bool, "die": 1-6}``:
                                damage a Bunker objective (Damage Capacity 3); destroyed,
                                the opponent loses D6 Army Morale at once (die entered or
                                rolled) and the marker leaves play

The Rally phase end is stored like a Warcry round end (the ``rulings`` table, with a JPEG
of the table), so the log, the timeline and the export show it; the ledger is kept in
its own table (``epic_ledger``, webui/db.py), written in the same transaction.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from flask import Blueprint, jsonify

from tracker.inputs import quote

from .api import (int_arg, json_body, jsonable, only_fields, round_to_end, round_warnings, ruling_json, sides_json,
                  store_round, the_latest, the_player, thing_id, this_game)
from .db import control_of, get_db, now_iso
from .errors import ApiError

bp = Blueprint("epic", __name__, url_prefix="/api/epic")

def _epic(player):
    table = getattr(player.pipeline, "epic", None)
    if table is None:
        raise ApiError(409, f"this table plays '{player.pipeline.config.kind}', not an Epic-scale game; "
                            f"give a game config with kind: epic and an epic: section")
    return table


def load_ledger(db: sqlite3.Connection, game_id: int, config):
    """The game's ledger (a fresh one at each side's starting Army Morale if none yet)."""
    from tracker.rules.epic_morale import MoraleLedger

    row = db.execute("SELECT ledger FROM epic_ledger WHERE game_id = ?", (game_id,)).fetchone()
    start = MoraleLedger.start({s.index: s.army_morale for s in config.sides}, config.options.morale_timing)
    if row is None:
        return start, None
    return start, json.loads(row["ledger"])


def _ledger_dict(db: sqlite3.Connection, game_id: int, config) -> dict[str, Any]:
    start, stored = load_ledger(db, game_id, config)
    return stored if stored is not None else start.to_dict()


def _ledger_obj(db: sqlite3.Connection, game_id: int, config):
    """The ledger to apply the next Rally phase to, from the stored one."""
    from dataclasses import replace

    start, stored = load_ledger(db, game_id, config)
    if stored is None:
        return start
    # The history stays in the stored JSON (each round's changes with their dice); the
    # ledger object only needs the values and the markers removed from play.
    return replace(start, morale={int(k): int(v) for k, v in stored["morale"].items()},
                   removed=frozenset(stored.get("removed", ())))


def _save_ledger(db: sqlite3.Connection, game_id: int, ledger: dict) -> None:
    db.execute("INSERT INTO epic_ledger (game_id, ledger, updated_at) VALUES (?, ?, ?) "
               "ON CONFLICT (game_id) DO UPDATE SET ledger = excluded.ledger, updated_at = excluded.updated_at",
               (game_id, json.dumps(jsonable(ledger)), now_iso()))


@bp.get("")
def view():
    from tracker.rules.epic import bunker_support

    player = the_player()
    latest = the_latest(player)
    table = _epic(player)
    view = latest.result.epic
    db = get_db()
    game = this_game(db)
    body = {"frame_index": latest.result.index, "battle_round": game["battle_round"], "sides": sides_json(),
            "game_over": game["ended_at"] is not None,
            "view": jsonable(view.to_dict()) if view is not None else None,
            "table_rulings": [r.to_dict() for r in table.rulings[-20:]],
            # Which enemy units are within 15 cm of each bunker, and so may lend support.
            "bunker_support": {m.id: [r.to_dict() for r in bunker_support(view.state, table.config, m)]
                               for m in (view.markers if view is not None else ()) if m.type == "bunker"},
            "ledger": _ledger_dict(db, game["id"], table.config)}
    return jsonify(body)


@bp.get("/ledger")
def ledger():
    player = the_player()
    table = _epic(player)
    db = get_db()
    game = this_game(db)
    return jsonify(_ledger_dict(db, game["id"], table.config))


def _dice(data: dict[str, Any], game_id: int, rnd: int):
    from tracker.rules.epic_morale import Dice

    entered = data.get("dice", {})
    if not isinstance(entered, dict):
        raise ApiError(400, "'dice' must be an object: marker id -> the score rolled")
    scores = {thing_id(k, "dice: a marker id"): int_arg(v, f"dice.{k}", minimum=1, maximum=6)
              for k, v in entered.items()}
    return Dice(seed=seed_arg(data, game_id), entered=scores)


def seed_arg(data: dict[str, Any], game_id: int) -> str | int:
    """The dice's seed: text of up to 200 characters or a whole number (default game<id>).
    (It is kept in the ledger, served with every Epic view: bounded.)"""
    seed = data.get("seed", f"game{game_id}")
    if not isinstance(seed, (str, int)) or isinstance(seed, bool) or isinstance(seed, str) and len(seed) > 200:
        raise ApiError(400, f"'seed' must be text of up to 200 characters or a whole number, not {quote(seed, 60)}")
    return seed


@bp.post("/rally")
def end_rally():
    """End the Rally phase of the current battle round (see the module docstring)."""
    from tracker.errors import UserError

    data = json_body()
    only_fields(data, {"battle_round", "dice", "seed", "capture_choices"},
                "use battle_round, dice, seed, capture_choices")
    choices = data.get("capture_choices", {})
    if not isinstance(choices, dict):
        raise ApiError(400, "'capture_choices' must be an object: Capture marker id -> 'capture' or 'destroy'")
    for k, v in choices.items():
        thing_id(k, "capture_choices: a marker id")
        if v not in ("capture", "destroy"):
            raise ApiError(400, f"'capture_choices.{k}' must be 'capture' or 'destroy', not {quote(v, 60)}")
    player = the_player()
    latest = the_latest(player)
    table = _epic(player)
    db = get_db()
    game = this_game(db)
    rnd, max_rounds = round_to_end(game, data)
    dice = _dice(data, game["id"], rnd)
    before = _ledger_obj(db, game["id"], table.config)
    st = player.view_state(latest)
    try:
        new, ctl = player.call_in_pipeline(
            lambda _pipeline: table.end_rally_phase(before, st, rnd, dice, {str(k): v for k, v in choices.items()}))
    except UserError as e:  # a die out of range, a missing Capture choice
        raise ApiError(400, str(e)) from None
    stored = _ledger_dict(db, game["id"], table.config)
    ledger = new.to_dict()
    # This round's record also lists what happened at once since the last Rally phase
    # (bunkers destroyed), kept as "pending" in the stored ledger until now.
    ledger["history"][-1]["changes"] = list(stored.get("pending", [])) + ledger["history"][-1]["changes"]
    ledger["history"] = list(stored.get("history", [])) + ledger["history"]
    ledger["pending"] = []
    ledger["bunkers"] = stored.get("bunkers", {})
    previous = control_of(game)
    control = dict(ctl.control)
    rulings = [r.to_dict() for r in ctl.rulings] + [
        {"question": "army morale", "subject": c["marker"], "verdict": "yes", "outcome":
         f"side {c['side']} {c['delta']:+d} ({c['effect']}" + (f", {c['die']} = {c['roll']} {c['source']}" if c["die"] else "")
         + ")", "rule": c["rule"], "details": c}
        for c in (ledger["history"][-1]["changes"] if ledger["history"] else [])]
    snapshot = player.evidence_jpeg(latest, control, state=st)
    row = store_round(db, game, rnd, latest, previous, control, rulings, json.dumps(jsonable(st.to_dict())),
                      snapshot, also=lambda conn: _save_ledger(conn, game["id"], ledger))
    player.set_control(control)
    body = ruling_json(row)
    body.update({"ruling_id": row["id"], "ended_round": rnd, "ledger": ledger,
                 "battle_round": rnd if rnd >= max_rounds else rnd + 1, "game_over": rnd >= max_rounds,
                 "warnings": round_warnings(st, player)})
    return jsonify(body), 201


@bp.post("/close-combat")
def close_combat():
    data = json_body()
    unknown = set(data) - {"marker", "new_escort"}
    if unknown or not isinstance(data.get("marker"), str) or not isinstance(data.get("new_escort"), str):
        raise ApiError(400, "give {\"marker\": Rescue marker id, \"new_escort\": unit id}")
    thing_id(data["marker"], "marker")
    thing_id(data["new_escort"], "new_escort")
    player = the_player()
    table = _epic(player)

    def claim(_pipeline):
        return table.close_combat_claim(data["marker"], data["new_escort"])
    try:
        ruling = player.call_in_pipeline(claim)
    except KeyError:
        raise ApiError(404, f"no Rescue marker '{data['marker']}' on this table; "
                            f"markers: {', '.join(sorted(table.rescues)) or 'none yet'}") from None
    except ValueError as e:
        raise ApiError(409, str(e)) from None
    return jsonify(jsonable(ruling.to_dict()))


@bp.post("/bunker")
def bunker():
    """Damage a Bunker objective; when it is destroyed, its Morale effect at once."""
    from tracker.rules.epic import Bunker, damage_bunker
    from tracker.rules.epic_morale import Dice, MoraleError

    data = json_body()
    only_fields(data, {"marker", "hits", "critical", "die", "seed"}, "use marker, hits, critical, die, seed")
    player = the_player()
    table = _epic(player)
    bunkers = {o.id: o for o in table.config.objectives if o.type == "bunker"}
    mid = data.get("marker")
    if not isinstance(mid, str):  # (a list or an object: unhashable, a TypeError below)
        raise ApiError(400, f"'marker' must be a Bunker objective's id (a string); "
                            f"bunkers: {', '.join(sorted(bunkers)) or 'none'}")
    thing_id(mid, "marker")
    if mid not in bunkers:
        raise ApiError(404, f"no Bunker objective {quote(mid)} in this game's config; "
                            f"bunkers: {', '.join(sorted(bunkers)) or 'none'}")
    hits = int_arg(data.get("hits", 0), "hits", minimum=0, maximum=10)
    critical = data.get("critical", False)
    if not isinstance(critical, bool):
        raise ApiError(400, "'critical' must be true or false")
    if hits == 0 and not critical:
        raise ApiError(400, "give 'hits' (1 or more) or 'critical': true")
    db = get_db()
    game = this_game(db)
    stored = _ledger_dict(db, game["id"], table.config)
    state = stored.get("bunkers", {}).get(mid, {"damage": 0, "destroyed": False})
    spec = bunkers[mid]
    before = Bunker(mid, spec.owner, damage=int(state["damage"]), destroyed=bool(state["destroyed"]))
    after, ruling = damage_bunker(before, hits, critical)
    ledger = dict(stored)
    ledger["bunkers"] = {**stored.get("bunkers", {}), mid: {"damage": after.damage, "destroyed": after.destroyed}}
    if after.destroyed and not before.destroyed:
        die = data.get("die")
        entered = {} if die is None else {mid: int_arg(die, "die", minimum=1, maximum=6)}
        dice = Dice(seed=seed_arg(data, game["id"]), entered=entered)
        try:
            new = _ledger_obj(db, game["id"], table.config).bunker_destroyed(game["battle_round"], mid, spec.owner,
                                                                            table.config, dice)
        except MoraleError as e:
            raise ApiError(409, str(e)) from None
        nd = new.to_dict()
        ledger.update(morale=nd["morale"], removed=nd["removed"],
                      pending=list(stored.get("pending", [])) + nd["pending"])
    db.execute("BEGIN IMMEDIATE")
    try:
        _save_ledger(db, game["id"], ledger)
        db.commit()
    except BaseException:
        db.rollback()
        raise
    return jsonify({"ruling": jsonable(ruling.to_dict()), "bunker": ledger["bunkers"][mid], "ledger": ledger})
