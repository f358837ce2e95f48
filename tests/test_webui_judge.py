"""Roster import and assignment, judge corrections: through Flask's test client on the
real pipeline playing the bundled footage, kept in a real SQLite file, applied to the
state served, the overlay and the rulings, and still there after a restart."""

from __future__ import annotations

import json
import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webui import create_app, get_player, stop_player

from test_webui import state_with

ROSTER_YAML = """\
# Warcry roster: two warbands
fighters:
  - {name: Ironjaw, side: 0, base: 40, runemarks: [leader, brute], move: 4, wounds: 30}
  - {name: Gutcutta, side: 0, base: 32mm, runemarks: "minion, mount", move: 5, wounds: 15}
  - name: Shieldbearer
    side: 1
    base: "32"
    runemarks: [bulwark]
    move: 4
    wounds: 20
"""


def _app(footage, pipeline, db_path, **over):
    cfg = {"SOURCE": str(footage), "FOOTAGE": str(footage), "PIPELINE": pipeline,
           "DATABASE": str(db_path), "JUDGE_TOKEN": None, "TESTING": True}
    cfg.update(over)
    return create_app(cfg)


@pytest.fixture(scope="module")
def db_path(tmp_path_factory):
    return tmp_path_factory.mktemp("judge") / "judge.sqlite"


@pytest.fixture(scope="module")
def app(calibrated, footage, db_path):
    app = _app(footage, calibrated.fresh(), db_path)
    player = get_player(app)
    assert player.wait_until(lambda x: len(x.result.state.fighters) >= 2, 90), player.last_error
    yield app
    stop_player(app)


@pytest.fixture
def client(app):
    return app.test_client()


def fighter_in(s: dict, fid: str) -> dict | None:
    return next((f for f in s["state"]["fighters"] if f["id"] == fid), None)


def test_roster_import_assign_and_rule(app, client, calibrated, footage, db_path):
    r = client.post("/api/roster", json={"text": ROSTER_YAML})
    assert r.status_code == 201, r.get_json()
    body = r.get_json()
    assert body["imported"] == 3
    iron = body["fighters"][0]
    assert iron == {"name": "Ironjaw", "side": 0, "base_mm": "40", "runemarks": ["brute", "leader"], "move": 4,
                    "wounds": 30, "assigned_to": None}
    assert body["fighters"][1]["runemarks"] == ["minion", "mount"]
    assert client.get("/api/roster").get_json()["fighters"][2]["name"] == "Shieldbearer"

    s = state_with(client, 2)
    f = next(f for f in s["state"]["fighters"] if f["side"] == 0)
    r = client.post("/api/roster/assign", json={"fighter": f["id"], "roster": "ironjaw", "by": "ref"})
    assert r.status_code == 200, r.get_json()
    a = r.get_json()
    assert a["roster"] == "Ironjaw" and a["state_fighter"]["name"] == "Ironjaw" and a["state_fighter"]["move"] == 4
    assert isinstance(a["warnings"], list)

    # every state served carries the name, runemarks and Move (while the base is seen)
    s = state_with(client, 2)
    served = fighter_in(s, f["id"])
    if served is not None:
        assert served["name"] == "Ironjaw" and served["runemarks"] == ["brute", "leader"] and served["move"] == 4
    assert s["roster"]["assignments"] == {f["id"]: "Ironjaw"}
    assert next(x for x in s["roster"]["fighters"] if x["name"] == "Ironjaw")["assigned_to"] == f["id"]

    # the world state kept with a ruling has it too
    client.post("/api/game/new", json={})
    state_with(client, 2, objectives=1)
    r = client.post("/api/round/end", json={})
    assert r.status_code == 201, r.get_json()
    kept = client.get(f"/api/rulings/{r.get_json()['ruling_id']}").get_json()["state"]
    named = [x for x in kept["fighters"] if x["id"] == f["id"]]
    assert not named or named[0]["name"] == "Ironjaw" and named[0]["move"] == 4

    # in SQLite, and applied by a restarted server on the same file
    con = sqlite3.connect(db_path)
    try:
        assert con.execute("SELECT roster_name, assigned_by FROM assignments WHERE fighter = ?",
                           (f["id"],)).fetchone() == ("Ironjaw", "ref")
    finally:
        con.close()
    app2 = _app(footage, calibrated.fresh(), db_path)
    try:
        p2 = get_player(app2)
        got = p2.wait_until(lambda x: any(g.id == f["id"] for g in p2.view_state(x).fighters), 60)
        assert got is not None
        again = next(g for g in p2.view_state(got).fighters if g.id == f["id"])
        assert again.name == "Ironjaw" and again.runemarks == frozenset({"leader", "brute"}) and again.move == 4
    finally:
        stop_player(app2)

    # a second assignment of the same roster fighter moves it; null unassigns
    other = next((g for g in state_with(client, 2)["state"]["fighters"] if g["id"] != f["id"]), None)
    if other is not None:
        r = client.post("/api/roster/assign", json={"fighter": other["id"], "roster": "Ironjaw"})
        assert r.status_code == 200 and any("moved" in w for w in r.get_json()["warnings"])
        assert r.get_json()["assignments"] == {other["id"]: "Ironjaw"}
        r = client.post("/api/roster/assign", json={"fighter": other["id"], "roster": None})
        assert r.status_code == 200 and r.get_json()["assignments"] == {}

    # re-importing a roster without Ironjaw drops its assignment
    client.post("/api/roster/assign", json={"fighter": f["id"], "roster": "Gutcutta"})
    r = client.post("/api/roster", json={"fighters": [{"name": "Shieldbearer", "side": "0", "base": 32}]})
    assert r.status_code == 201 and r.get_json()["dropped_assignments"] == [f["id"]]


@pytest.mark.parametrize("body,words", [
    ({"text": "fighters: [name: x"}, "not valid YAML"),
    ({"text": "fighters: []"}, "list of fighters"),
    ({"text": 5}, "'text'"),
    ({"fighters": [{"name": "A", "side": 0}]}, "missing 'base'"),
    ({"fighters": [{"name": "A", "side": 9, "base": 32}]}, "no side"),
    ({"fighters": [{"name": "A", "side": "mauve", "base": 32}]}, "side index or colour"),
    ({"fighters": [{"name": "A", "side": 0, "base": "huge"}]}, "base size"),
    ({"fighters": [{"name": "A", "side": 0, "base": 500}]}, "10-200 mm"),
    ({"fighters": [{"name": "A", "side": 0, "base": 32, "move": 2.5}]}, "whole number"),
    ({"fighters": [{"name": "A", "side": 0, "base": 32, "wounds": True}]}, "whole number"),
    ({"fighters": [{"name": "A", "side": 0, "base": 32, "runemarks": [1]}]}, "runemarks"),
    ({"fighters": [{"name": "A", "side": 0, "base": 32, "speed": 4}]}, "unknown key"),
    ({"fighters": [{"name": "A", "side": 0, "base": 32}, {"name": "a", "side": 1, "base": 32}]}, "two fighters"),
    ({"fighters": ["A"]}, "expected a mapping"),
    ({"fighterz": []}, "unknown key"),
    ({"fighters": [{"name": "", "side": 0, "base": 32}]}, "name"),
])
def test_bad_rosters_are_400_json(client, body, words):
    before = client.get("/api/roster").get_json()
    r = client.post("/api/roster", json=body)
    assert r.status_code == 400 and words in r.get_json()["error"], r.get_json()
    assert client.get("/api/roster").get_json() == before


@pytest.mark.parametrize("body,status", [
    ({}, 400), ({"fighter": "f1"}, 400), ({"fighter": 3, "roster": "A"}, 400),
    ({"fighter": "f 1; drop", "roster": "A"}, 400), ({"fighter": "f1", "roster": 7}, 400),
    ({"fighter": "f1", "roster": "A", "extra": 1}, 400), ({"fighter": "f999", "roster": "Shieldbearer"}, 404),
])
def test_bad_assignments_are_4xx_json(client, body, status):
    r = client.post("/api/roster/assign", json=body)
    assert r.status_code == status and r.get_json()["error"]


def test_assign_to_an_unknown_roster_name_is_404(client):
    client.post("/api/roster", json={"fighters": [{"name": "Shieldbearer", "side": 1, "base": 32}]})
    for _ in range(5):  # a fighter may leave the table between the two requests: ask again
        fid = state_with(client, 1)["state"]["fighters"][0]["id"]
        r = client.post("/api/roster/assign", json={"fighter": fid, "roster": "Nobody"})
        if not (r.status_code == 404 and "on the table" in r.get_json()["error"]):
            break
    assert r.status_code == 404 and "Shieldbearer" in r.get_json()["error"]


def test_corrections_move_remove_side_logged_and_undone(app, client):
    client.post("/api/game/new", json={})
    s = state_with(client, 2)
    a, b = s["state"]["fighters"][0], s["state"]["fighters"][1]
    other_side = next(sd["index"] for sd in s["sides"] if sd["index"] != a["side"])
    px_before = s["pixels"]["fighters"][b["id"]]

    r = client.post("/api/corrections", json={"fighter": a["id"], "action": "side", "side": other_side,
                                              "note": "rim misread", "by": "judge Ann"})
    assert r.status_code == 201, r.get_json()
    side_c = r.get_json()
    assert side_c["action"] == "side" and side_c["side"] == other_side and side_c["by"] == "judge Ann"
    assert side_c["active"] and side_c["created_at"] and side_c["was"]["side"] == a["side"]

    r = client.post("/api/corrections", json={"fighter": b["id"], "action": "move", "x": 2.0, "y": 3.0})
    assert r.status_code == 201, r.get_json()
    move_c = r.get_json()
    assert move_c["by"].startswith("judge@")

    s = state_with(client, 2)
    fa, fb = fighter_in(s, a["id"]), fighter_in(s, b["id"])
    if fa:
        assert fa["side"] == other_side
    if fb:
        assert (fb["x"], fb["y"]) == (2.0, 3.0)
        # the overlay draws it where the judge put it
        assert s["pixels"]["fighters"][b["id"]][:2] != px_before[:2]
    assert {c["id"] for c in s["roster"]["corrections"]} == {side_c["id"], move_c["id"]}

    # measuring and ruling use the corrected state
    if fa and fb:
        m = client.get(f"/api/measure?from={b['id']}&to={a['id']}").get_json()
        assert m["from_point"][0] == pytest.approx(2.0, abs=1.5) and m["from_point"][1] == pytest.approx(3.0, abs=1.5)

    r = client.post("/api/corrections", json={"fighter": a["id"], "action": "remove"})
    assert r.status_code == 201
    rm_c = r.get_json()
    s = state_with(client, 1)
    assert fighter_in(s, a["id"]) is None
    state_with(client, 1, objectives=1)
    rr = client.post("/api/round/end", json={})
    assert rr.status_code == 201
    kept = client.get(f"/api/rulings/{rr.get_json()['ruling_id']}").get_json()["state"]
    assert a["id"] not in {x["id"] for x in kept["fighters"]}
    assert kept["extra"]["corrections"] == [side_c["id"], move_c["id"], rm_c["id"]]

    # the log lists them, newest first; undo puts the fighter back
    log = client.get("/api/corrections").get_json()
    assert [c["id"] for c in log["corrections"]][:3] == [rm_c["id"], move_c["id"], side_c["id"]]
    r = client.post(f"/api/corrections/{rm_c['id']}/undo", json={"by": "judge Bob"})
    assert r.status_code == 200 and r.get_json()["active"] is False and r.get_json()["undone_by"] == "judge Bob"
    assert client.post(f"/api/corrections/{rm_c['id']}/undo", json={}).status_code == 409
    assert [c["id"] for c in client.get("/api/corrections?active=1").get_json()["corrections"]] == \
        [move_c["id"], side_c["id"]]
    assert client.get("/api/state").get_json()["roster"]["corrections"][-1]["id"] == move_c["id"]

    # corrections belong to a game: a new game starts with none in force
    client.post("/api/game/new", json={})
    assert client.get("/api/state").get_json()["roster"]["corrections"] == []
    assert client.get("/api/corrections?game=all").get_json()["corrections"]


@pytest.mark.parametrize("body,status", [
    ({}, 400), ({"fighter": "f1"}, 400), ({"fighter": "f1", "action": "teleport"}, 400),
    ({"fighter": "f1", "action": "move", "x": 1}, 400), ({"fighter": "f1", "action": "move", "x": 1, "y": "far"}, 400),
    ({"fighter": "f1", "action": "move", "x": 1, "y": 500}, 400), ({"fighter": "f1", "action": "move", "x": "nan", "y": 1}, 400),
    ({"fighter": "f1", "action": "side"}, 400), ({"fighter": "f1", "action": "side", "side": 7}, 400),
    ({"fighter": "f1", "action": "remove", "x": 1}, 400), ({"fighter": "f1", "action": "remove", "by": 5}, 400),
    ({"fighter": "f1", "action": "remove", "note": ["x"]}, 400), ({"fighter": "zz9", "action": "remove"}, 404),
])
def test_bad_corrections_are_4xx_json(client, body, status):
    n = len(client.get("/api/corrections?game=all").get_json()["corrections"])
    r = client.post("/api/corrections", json=body)
    assert r.status_code == status and r.get_json()["error"], r.get_json()
    assert len(client.get("/api/corrections?game=all").get_json()["corrections"]) == n


def test_correction_queries_are_checked(client):
    assert client.get("/api/corrections?game=x").status_code == 400
    assert client.get("/api/corrections?game=99999").status_code == 404
    assert client.get("/api/corrections?active=2").status_code == 400
    assert client.post("/api/corrections/99999/undo", json={}).status_code == 404
    assert client.post("/api/corrections/1/undo", data="x", content_type="text/plain").status_code == 415


def test_judge_token_guards_roster_and_corrections(footage, tmp_path):
    app = _app(footage, None, tmp_path / "tok.sqlite", START_PLAYER=False, JUDGE_TOKEN="s3cret")
    c = app.test_client()
    body = {"fighters": [{"name": "A", "side": 0, "base": 32}]}
    assert c.post("/api/roster", json=body).status_code == 403
    assert c.post("/api/roster/assign", json={"fighter": "f1", "roster": "A"}).status_code == 403
    assert c.post("/api/corrections", json={"fighter": "f1", "action": "remove"}).status_code == 403
    assert c.post("/api/corrections/1/undo", json={}).status_code == 403
    assert c.post("/api/calibration/table", json={}).status_code == 403
    assert c.post("/api/roster", json=body, headers={"X-Judge-Token": "s3cret"}).status_code == 201
    assert c.get("/api/roster").get_json()["fighters"][0]["name"] == "A"  # viewers read freely
    assert c.get("/api/corrections").status_code == 200


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.dictionaries(st.sampled_from(["fighter", "action", "x", "y", "z", "side", "pixel", "roster", "by",
                                             "note", "text", "fighters"]),
                            st.none() | st.booleans() | st.integers(-5, 50) | st.floats(allow_nan=True)
                            | st.text(max_size=12) | st.lists(st.integers(-5, 2000), max_size=3)
                            | st.lists(st.dictionaries(st.sampled_from(["name", "side", "base", "move"]),
                                                       st.text(max_size=4) | st.integers(-1, 300), max_size=4),
                                       max_size=2),
                            max_size=5),
       path=st.sampled_from(["/api/roster", "/api/roster/assign", "/api/corrections"]))
def test_fuzzed_judge_bodies_never_500(client, body, path):
    r = client.post(path, data=json.dumps(body), content_type="application/json")
    assert r.status_code < 500 and r.is_json, (path, body, r.status_code, r.get_data()[:300])
    if r.status_code >= 400:
        assert r.get_json()["error"]
