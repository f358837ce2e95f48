"""The Epic API on the live app playing the bundled Epic clip through a real pipeline,
rulings and the ledger in a real SQLite file: the table view (units, 15 cm markers,
escorts), ending the Rally phase (control, Morale effects with entered or rolled dice,
stored with the round), and bad input."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

EPIC = Path(__file__).resolve().parents[1] / "sample_footage" / "epic-demo"


@pytest.fixture
def epic_app(epic_pipeline, tmp_path):
    from webui import create_app, get_player, stop_player

    app = create_app({"SOURCE": str(EPIC), "FOOTAGE": str(EPIC), "JUDGE_TOKEN": None,
                      "PIPELINE": epic_pipeline.fresh(), "DATABASE": str(tmp_path / "epic.sqlite")})
    player = get_player(app)
    # Wait until the units have been seen and grouped (a few frames in).
    if player.wait_until(lambda x: x.result.epic is not None and len(x.result.epic.units) >= 5, 120) is None:
        stop_player(app)
        pytest.fail(f"the live player never saw the Epic units ({player.last_error or 'no error'})")
    yield app
    stop_player(app)


def test_epic_view_lists_units_markers_with_15cm_rings_and_the_ledger(epic_app):
    body = epic_app.test_client().get("/api/epic").get_json()
    view = body["view"]
    assert view["ring_cm"] == 15.0
    ids = {m["id"] for m in view["markers"]}
    assert {"red-take-and-hold", "white-take-and-hold", "red-cleanse", "white-cleanse"} <= ids
    assert {u["id"] for u in view["units"]} >= {"red-infantry-a", "white-infantry-a", "red-tanks", "white-tanks"}
    assert body["ledger"]["morale"] == {"0": 0, "1": 0} and body["ledger"]["history"] == []
    # The overlay draws from the same summary, carried in the world state.
    st = epic_app.test_client().get("/api/state").get_json()
    assert st["state"]["extra"]["epic"]["ring_cm"] == 15.0


def test_end_of_rally_phase_applies_morale_and_is_stored_with_the_round(epic_app, tmp_path):
    client = epic_app.test_client()
    view = client.get("/api/epic").get_json()["view"]
    dice = {m["id"]: 2 for m in view["markers"] if m["type"] == "take-and-hold"}
    r = client.post("/api/epic/rally", json={"battle_round": 1, "dice": dice})
    assert r.status_code == 201, r.get_data(as_text=True)
    body = r.get_json()
    assert body["ended_round"] == 1 and body["battle_round"] == 2
    control = body["control"]
    changes = body["ledger"]["history"][0]["changes"]
    expect = {"0": 0, "1": 0}
    for mid, side in control.items():
        spec = next(m for m in view["markers"] if m["id"] == mid)
        if side is not None:
            expect[str(side)] += {"take-and-hold": 2, "cleanse": 1}[spec["type"]]
    assert body["ledger"]["morale"] == expect
    assert all(c["source"] in ("entered", "fixed") for c in changes)
    # Kept in SQLite with the round and a picture, and the ledger beside it.
    db = sqlite3.connect(str(tmp_path / "epic.sqlite"))
    row = db.execute("SELECT control, length(snapshot) FROM rulings WHERE battle_round = 1").fetchone()
    assert json.loads(row[0]) == control and row[1] > 10_000
    stored = json.loads(db.execute("SELECT ledger FROM epic_ledger").fetchone()[0])
    assert stored["morale"] == expect
    # The next round rolls its own dice (seeded, logged) when none are entered.
    r2 = client.post("/api/round/end", json={})
    assert r2.status_code == 201
    led = client.get("/api/epic/ledger").get_json()
    assert [h["battle_round"] for h in led["history"]] == [1, 2]
    rolled = [c for c in led["history"][1]["changes"] if c["die"]]
    assert all(c["source"] == "rolled" and c["seed"] is not None and 1 <= c["roll"] <= 3 for c in rolled)


def test_bad_input_gets_a_4xx_with_a_message(epic_app):
    client = epic_app.test_client()
    r = client.post("/api/epic/rally", data="{not json", content_type="application/json")
    assert r.status_code == 400 and "JSON" in r.get_json()["error"]
    r = client.post("/api/epic/rally", json={"dice": {"red-take-and-hold": 9}})
    assert r.status_code == 400 and "between 1 and 6" in r.get_json()["error"]
    r = client.post("/api/epic/rally", json={"dise": {}})
    assert r.status_code == 400 and "dise" in r.get_json()["error"]
    r = client.post("/api/epic/close-combat", json={"marker": "nope", "new_escort": "white-infantry-b"})
    assert r.status_code == 404 and "nope" in r.get_json()["error"]
    r = client.post("/api/epic/close-combat", json={"marker": 3})
    assert r.status_code == 400
    # Nothing was stored by the refused requests.
    assert client.get("/api/epic/ledger").get_json()["history"] == []


def test_a_warcry_table_has_no_epic_endpoints(live_app):
    r = live_app().test_client().get("/api/epic")
    assert r.status_code == 409 and "kind: epic" in r.get_json()["error"]


@pytest.fixture
def bunker_app(tmp_path):
    """The Epic clip with white's Cleanse marker (tag 45) re-typed as a Bunker objective."""
    import shutil

    import yaml

    from tracker.pipeline import Pipeline
    from webui import create_app, get_player, stop_player

    folder = tmp_path / "epic-bunker"
    shutil.copytree(EPIC, folder)
    cfg = yaml.safe_load((folder / "game.yaml").read_text())
    for o in cfg["epic"]["objectives"]:
        if o["id"] == "white-cleanse":
            o.update(id="white-bunker", type="bunker")
    (folder / "game.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    app = create_app({"SOURCE": str(folder), "FOOTAGE": str(folder), "JUDGE_TOKEN": None,
                      "PIPELINE": Pipeline.from_footage(folder), "DATABASE": str(tmp_path / "bunker.sqlite")})
    if get_player(app).wait_until(lambda x: x.result.epic is not None and x.result.epic.units, 120) is None:
        stop_player(app)
        pytest.fail("the live player never saw the Epic units")
    yield app
    stop_player(app)


def test_bunker_damage_destruction_and_its_morale_effect(bunker_app):
    client = bunker_app.test_client()
    view = client.get("/api/epic").get_json()
    assert "white-bunker" in view["bunker_support"]  # who may lend support in an assault on it
    r = client.post("/api/epic/bunker", json={"marker": "white-bunker", "hits": 2}).get_json()
    assert r["bunker"] == {"damage": 2, "destroyed": False} and r["ruling"]["verdict"] == "no"
    assert r["ledger"]["morale"] == {"0": 0, "1": 0}
    r = client.post("/api/epic/bunker", json={"marker": "white-bunker", "hits": 1, "die": 4}).get_json()
    assert r["bunker"] == {"damage": 3, "destroyed": True} and r["ruling"]["verdict"] == "yes"
    # The owner (white, side 1) destroyed their bunker: red deducts the D6 at once.
    assert r["ledger"]["morale"] == {"0": -4, "1": 0} and "white-bunker" in r["ledger"]["removed"]
    again = client.post("/api/epic/bunker", json={"marker": "white-bunker", "hits": 1}).get_json()
    assert again["ruling"]["verdict"] == "no" and again["ledger"]["morale"] == {"0": -4, "1": 0}
    # The Rally phase's record lists it, and the bunker is out of play.
    rally = client.post("/api/epic/rally", json={"dice": {}}).get_json()
    changes = rally["ledger"]["history"][0]["changes"]
    assert any(c["marker"] == "white-bunker" and c["delta"] == -4 and c["side"] == 0 for c in changes)
    assert "white-bunker" not in rally["control"]
    for bad, status in (({"marker": "nope", "hits": 1}, 404), ({"marker": "white-bunker", "hits": -1}, 400),
                        ({"marker": "white-bunker"}, 400), ({"marker": "white-bunker", "hits": 1, "dye": 3}, 400)):
        resp = client.post("/api/epic/bunker", json=bad)
        assert resp.status_code == status and resp.get_json()["error"]
