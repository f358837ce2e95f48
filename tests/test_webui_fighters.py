"""The fighter-state API (webui/fighters_api.py) on the real app playing the bundled
footage, with a real SQLite file: the scripted game through HTTP, the change log, the
round-end hook, and the 4xx answers."""

from __future__ import annotations

import json
import sqlite3



def post(client, url, body=None, **kw):
    return client.post(url, json={} if body is None else body, **kw)


def rows(path):
    db = sqlite3.connect(path)
    db.row_factory = sqlite3.Row
    try:
        return db.execute("SELECT * FROM fighter_changes ORDER BY id").fetchall()
    finally:
        db.close()


def test_scripted_game_through_the_api(live_app, tmp_path):
    app = live_app(FIGHTER_WOUNDS={})
    dbfile = app.config["DATABASE"]
    c = app.test_client()
    st = c.get("/api/fighters/state").get_json()
    assert st["live"] and st["battle_round"] == 1 and len(st["fighters"]) >= 3
    assert all(f["status"] == "ready" and f["damage"] == 0 for f in st["fighters"])
    on_floor = [f for f in st["fighters"] if f["on_table"] and f["position"][2] == 0.0]
    a, b, carrier = st["fighters"][0]["id"], st["fighters"][1]["id"], on_floor[-1]["id"]
    assert len({a, b, carrier}) == 3
    treasure = st["treasure"][0]

    r = post(c, f"/api/fighters/{a}/activate")
    assert r.status_code == 200
    assert r.get_json()["fighter"]["activation"] == "activated"
    assert r.get_json()["change"]["who"] == "player"
    r = post(c, f"/api/fighters/{b}/half-activate", {"by": "judge"})
    assert r.get_json()["fighter"]["status"] == "half-activated" and r.get_json()["change"]["who"] == "judge"
    assert post(c, f"/api/fighters/{b}/half-activate").status_code == 409
    assert post(c, f"/api/fighters/{b}/activate").get_json()["fighter"]["activation"] == "activated"
    assert post(c, f"/api/fighters/{a}/activate").status_code == 409

    # the carrier: Wounds 3, treasure, damage until taken down
    assert post(c, f"/api/fighters/{carrier}/wounds", {"wounds": 3}).get_json()["fighter"]["wounds"] == 3
    assert post(c, f"/api/fighters/{carrier}/carry", {"treasure": treasure}).get_json()["fighter"]["carrying"] == treasure
    r = post(c, f"/api/fighters/{carrier}/damage", {"n": 1}).get_json()
    assert (r["fighter"]["damage"], r["fighter"]["wounds_left"], r["drop"]) == (1, 2, None)
    assert post(c, f"/api/fighters/{carrier}/undamage", {"n": 1}).get_json()["fighter"]["damage"] == 0
    r = post(c, f"/api/fighters/{carrier}/damage", {"n": 4}).get_json()
    assert [e["kind"] for e in r["events"]] == ["damaged", "taken-down", "treasure-dropped", "drop-offered"]
    f = r["fighter"]
    assert f["taken_down"] and f["status"] == "removed" and f["damage"] == 3 and f["carrying"] is None
    drop = r["drop"]
    assert drop["question"] == "drop" and drop["verdict"] == "yes" and drop["rule"]["id"] == "drop-taken-down"
    pts = drop["details"]["points"]
    assert pts and all(p[2] <= f["position"][2] + 1e-6 for p in pts)
    x, y = f["position"][:2]
    assert all(((p[0] - x) ** 2 + (p[1] - y) ** 2) ** 0.5 < 2.0 for p in pts)  # within 1" of the base edge
    assert carrier in r["state"]["taken_down"] and carrier not in r["state"]["still_ready"]
    assert post(c, f"/api/fighters/{carrier}/activate").status_code == 409

    # control if the round ended now leaves the taken-down fighter out
    ctl = c.get("/api/fighters/control").get_json()
    assert ctl["left_out"] == [carrier]
    for ruling in ctl["rulings"]:
        assert not any(m["subject"].startswith(carrier + " ") for m in ruling["measurements"])

    # the end-of-round check: fighters still ready; the new round resets activations
    r = post(c, "/api/fighters/new-round").get_json()
    ready_before = set(r["reminders"])
    assert f"{a} has not activated in battle round 1" not in ready_before
    assert not any(x.startswith(f"{b} ") for x in ready_before)
    assert r["state"]["battle_round"] == 2
    after = {f["id"]: f for f in r["state"]["fighters"]}
    assert after[a]["activation"] == after[b]["activation"] == "ready"
    assert after[carrier]["status"] == "removed"

    # ending the battle round on the overlay (api.end_round) also starts round 3 here
    # (the game's own round is 1: it goes to 2, which is not later than ours, so no reset)
    post(c, f"/api/fighters/{a}/activate")
    end = post(c, "/api/round/end").get_json()
    assert end["fighters"]["battle_round"] == 2 and a not in end["fighters"]["still_ready"]
    assert any("still ready" in w for w in end["warnings"])
    end = post(c, "/api/round/end").get_json()
    assert end["fighters"]["battle_round"] == 3
    st = c.get("/api/fighters/state").get_json()
    assert st["battle_round"] == 3 and {f["id"]: f for f in st["fighters"]}[a]["activation"] == "ready"

    # every change is in the SQLite file, with who, when and the states after it
    log = rows(dbfile)
    actions = [r["action"] for r in log]
    assert actions == ["activate", "half-activate", "activate", "wounds", "carry", "damage", "undamage", "damage",
                       "new-round", "activate", "round-end", "round-end"]
    assert [r["who"] for r in log][:2] == ["player", "judge"]
    assert all(r["created_at"].startswith("20") for r in log)
    states = json.loads(log[7]["states"])
    assert {f["id"]: f for f in states["fighters"]}[carrier]["damage"] == 3
    got = c.get("/api/fighters/log?limit=3").get_json()["changes"]
    assert [x["action"] for x in got] == ["round-end", "round-end", "activate"]


def test_4xx_answers(live_app):
    app = live_app()
    c = app.test_client()
    fid = c.get("/api/fighters/state").get_json()["fighters"][0]["id"]
    cases = [
        (post(c, "/api/fighters/nobody/activate"), 404, "no fighter 'nobody'"),
        (post(c, "/api/fighters/nobody/damage", {"n": 1}), 404, "no fighter"),
        (post(c, f"/api/fighters/{fid}/damage", {"n": -1}), 400, "at least 1"),
        (post(c, f"/api/fighters/{fid}/undamage", {"n": 1}), 400, "below zero"),
        (post(c, f"/api/fighters/{fid}/damage", {"n": "two"}), 400, "whole number"),
        (post(c, f"/api/fighters/{fid}/damage", {"n": 1.5}), 400, "whole number"),
        (post(c, f"/api/fighters/{fid}/damage", {"n": 1, "extra": 2}), 400, "unknown field"),
        (post(c, f"/api/fighters/{fid}/activate", {"by": "spectator"}), 400, "'by'"),
        (post(c, f"/api/fighters/{fid}/wounds", {"wounds": 0}), 400, "Wounds"),
        (post(c, f"/api/fighters/{fid}/carry", {}), 400, "treasure"),
        (post(c, f"/api/fighters/{fid}/carry", {"treasure": None}), 409, "not carrying"),
        (c.post(f"/api/fighters/{fid}/damage", data="{n: 1", content_type="application/json"), 400, "not valid JSON"),
        (c.post(f"/api/fighters/{fid}/damage", data="[1]", content_type="application/json"), 400, "JSON object"),
        (c.post(f"/api/fighters/{fid}/activate", data="n=1", content_type="application/x-www-form-urlencoded"),
         415, "JSON"),
        (c.get("/api/fighters/log?limit=0"), 400, "limit"),
    ]
    for r, status, text in cases:
        assert r.status_code == status, (r.status_code, r.get_json())
        assert text in r.get_json()["error"] and "\n" not in r.get_json()["error"]
    # nothing was logged by the refused requests
    assert c.get("/api/fighters/log").get_json()["changes"] == []


def test_judge_token_and_no_live_view(tmp_path, footage):
    from webui import create_app

    dbfile = tmp_path / "noplayer.sqlite"
    app = create_app({"SOURCE": str(footage), "FOOTAGE": str(footage), "START_PLAYER": False,
                      "JUDGE_TOKEN": "s3cret", "DATABASE": str(dbfile)})
    c = app.test_client()
    st = c.get("/api/fighters/state").get_json()
    assert st["live"] is False and st["fighters"] == []
    assert c.get("/fighters").status_code == 200 and b"fighters.js" in c.get("/fighters").data
    assert post(c, "/api/fighters/new-round").status_code == 403
    r = post(c, "/api/fighters/new-round", headers={"X-Judge-Token": "s3cret"})
    assert r.status_code == 200 and r.get_json()["change"]["who"] == "judge"
    assert post(c, "/api/fighters/f1/activate", headers={"X-Judge-Token": "s3cret"}).status_code == 404
    assert c.get("/api/fighters/control").status_code == 503
    log = rows(dbfile)
    assert [(r["action"], r["who"], r["battle_round"]) for r in log] == [("new-round", "judge", 2)]


def test_a_fighter_taken_down_leaves_the_round_end_control_counts(live_app):
    app = live_app(FIGHTER_WOUNDS={})
    c = app.test_client()
    fighters = c.get("/api/fighters/state").get_json()["fighters"]
    victim = next(f for f in fighters if f["on_table"])["id"]
    assert post(c, f"/api/fighters/{victim}/wounds", {"wounds": 1}).status_code == 200
    assert post(c, f"/api/fighters/{victim}/damage", {"n": 1}).get_json()["fighter"]["taken_down"]
    r = post(c, "/api/round/end")
    assert r.status_code == 201
    stored = c.get(f"/api/rulings/{r.get_json()['ruling_id']}").get_json()
    ids = {f["id"] for f in stored["state"]["fighters"]}
    assert victim not in ids and ids  # ruled on without the taken-down fighter, with the others
